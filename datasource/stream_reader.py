"""Streaming reads: a store's change feed, tailed commit by commit.

``spark.readStream.format("state_store").option("readChangeFeed", "true").load("rates")``
streams what each new commit changes, in the change feed's schema (``catalog.operations.change_feed``).
Offsets are commit ids (``{"version": N}``: commits up to N were read), so a query resumes from
its checkpoint exactly where it stopped. It starts after ``startingVersion - 1`` or, without
it, at the latest commit (new commits only). Admission control: ``maxRowsPerTrigger`` (by the
rows commits wrote) or ``maxCommitsPerTrigger``; a micro-batch always takes at least one
commit. ``Trigger.AvailableNow`` reads up to the commit that was latest when the query started.

Spark asks a source for its schema before it says whether the read is a stream, so a stream
states ``readChangeFeed`` (as Delta's change-feed streams do).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from catalog.catalog import Catalog, StoreTable
from catalog.log.spec import StoreSpec
from catalog.operations.change_feed import partition_changes
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from stores.errors import InvalidOptionError


@dataclass(frozen=True)
class ChangeRange(InputPartition):  # type: ignore[misc]
    """One store partition's changes of commits ``first..last``."""

    partition: int
    first: int
    last: int


@surface_errors
class ChangeFeedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See module doc. Holds only picklable configuration."""

    def __init__(self, options: StoreOptions) -> None:
        if not options.read_change_feed:
            raise InvalidOptionError(
                f"a stream of store {options.store!r} is its change feed: add "
                ".option('readChangeFeed', 'true') (Spark asks for the schema before it says a "
                "read is a stream)",
                code="MISSING_OPTION",
            )
        for name, value in (
            ("endingVersion", options.ending_version),
            ("endingTimestamp", options.ending_timestamp_ms),
            ("startingTimestamp", options.starting_timestamp_ms),
        ):
            if value is not None:
                raise InvalidOptionError(
                    f"option {name!r} does not apply to a stream; a stream starts at "
                    "'startingVersion' (default: after the latest commit) and does not end"
                )
        from datasource.reader import load_table

        table = load_table(options)
        self.root = table.catalog.root
        self.spec: StoreSpec = table.spec
        self.spec_commit = table.spec_commit
        latest = table.log.latest_id()
        if options.starting_version is not None and options.starting_version > latest + 1:
            raise InvalidOptionError(
                f"option 'startingVersion' is {options.starting_version} but store "
                f"{options.store!r} has commits 1 to {latest}"
            )
        start = options.starting_version
        self.initial = latest if start is None else max(start - 1, 0)
        self.max_rows = options.max_rows_per_trigger
        self.max_commits = options.max_commits_per_trigger
        self.target: int | None = None  # Trigger.AvailableNow's last commit

    def _table(self) -> StoreTable:
        return StoreTable(Catalog(self.root), self.spec)

    def initialOffset(self) -> dict:  # type: ignore[type-arg]
        return {"version": self.initial}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        if self.max_commits is not None:
            return ReadMaxFiles(self.max_commits)  # a commit counts as one "file"
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._table().log.latest_id()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # type: ignore[type-arg]
        log = self._table().log
        first = int(start["version"])
        last = log.latest_id() if self.target is None else min(self.target, log.latest_id())
        if isinstance(limit, ReadMaxFiles):
            last = min(last, first + max(limit.max_files, 1))
        elif isinstance(limit, ReadMaxRows):
            rows = 0
            for commit_id in range(first + 1, last + 1):
                rows += int(log.read(commit_id).summary.get("rows", 0))
                if rows > limit.max_rows and commit_id > first + 1:
                    last = commit_id - 1
                    break
        return {"version": max(first, last)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:  # type: ignore[type-arg]
        first, last = int(start["version"]) + 1, int(end["version"])
        if last < first:
            return []
        in_force = self._table().log.read(last).spec_commit
        if in_force != self.spec_commit:
            raise InvalidOptionError(
                f"commit {in_force} of store {self.spec.name!r} replaced its schema "
                "(overwriteSchema) after this stream started; its columns no longer fit the "
                f"stream: start a new query with a new checkpoint (startingVersion {in_force + 1})",
                code="SCHEMA_CHANGED",
            )
        return [ChangeRange(p, first, last) for p in range(self.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ChangeRange)
        yield from partition_changes(self._table(), partition.partition, partition.first,
                                     partition.last)  # fmt: skip

    def commit(self, end: dict) -> None:  # type: ignore[type-arg]
        pass  # commits are immutable: nothing to release
