"""Streaming reads: a store tailed commit by commit, as Delta's table source streams a table.

``spark.readStream.format("state_store").load("rates")`` streams, for each new commit, the rows
the store holds after it for the keys it wrote: the change feed's ``insert`` and
``update_postimage`` rows (``catalog.operations.change_feed``) without its change columns, in
the store's read schema. That is the batch schema, so ``DataSource.schema`` (which Spark asks
before it says whether a read is a stream) is right for both, and every row streamed for commit
N is a row of the batch read ``versionAsOf`` N. A row a commit leaves equal is not streamed
again, an overwrite's included (it streams what it changed: ``overwrite_as_diff``). A versioned store's rows are its latest view (``valid_to`` null): a version written
behind a key's latest one leaves that view as it was and is not streamed (a batch read with
``versions=all`` shows it).

Deletes (tombstones, the windows and sessions a commit expires, what an overwrite removes) have
no row as the store holds it: a plain stream skips them, as Delta's ``ignoreDeletes``, which is
the default here; with ``ignoreDeletes=false`` the query fails at the first commit that deletes
(``DELETE_IN_STREAM``, naming ``readChangeFeed``).

With ``.option("readChangeFeed", "true")`` the stream is the change feed itself, in its schema.

Both: offsets are commit ids (``{"version": N}``: commits up to N were read), so a query resumes
from its checkpoint exactly where it stopped. It starts after ``startingVersion - 1`` or, without
it, at the latest commit (new commits only). Admission control: ``maxRowsPerTrigger`` (by the
rows commits wrote) or ``maxCommitsPerTrigger``; a micro-batch always takes at least one commit.
``Trigger.AvailableNow`` reads up to the commit that was latest when the query started. A range
that crosses a schema overwrite is refused (SCHEMA_CHANGED).

Spark 4.0 and 4.1 have no admission control for Python sources (``ReadLimit`` came in 4.2,
``datasource.spark_features``): there each micro-batch reads every new commit, Spark's own
wrapper gives ``Trigger.AvailableNow`` the commit latest at the start, and the two options are
refused (SPARK_TOO_OLD).

Errors: Spark 4.3's streaming source runner (``pyspark.sql.streaming
.python_streaming_source_runner``) builds the reader inside ``try: ... finally: reader.stop()``,
so an error raised while the reader is built is replaced by an ``UnboundLocalError`` and shows
only as its context, in the middle of a traceback. The reader is therefore built from the raw
options and never fails; the options are parsed and the store is loaded by the first hook Spark
calls (``getDefaultReadLimit``, ``initialOffset``, ...), whose errors Spark reports as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from catalog.catalog import Catalog, StoreTable
from catalog.log.spec import StoreSpec
from catalog.operations.change_feed import CHANGE_COLUMNS, partition_changes
from datasource.errors import surface_errors
from datasource.options import COMMIT_OPTIONS, StoreOptions
from datasource.spark_features import ADMISSION_CONTROL
from stores.errors import InvalidOptionError

if TYPE_CHECKING or ADMISSION_CONTROL.available:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxFiles,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

#: The change types that are rows as the store holds them after their commit.
POST_IMAGES = pa.array(["insert", "update_postimage"])


@dataclass(frozen=True)
class StreamPlan:
    """What a stream reads, settled by the first hook Spark calls."""

    root: str
    spec: StoreSpec
    #: The record holding ``spec``: commits read must be after it.
    spec_commit: int
    #: The offset a query without a checkpoint starts from (commits up to it are not read).
    initial: int
    max_rows: int | None
    max_commits: int | None
    change_feed: bool
    #: A plain stream's deletes: skipped (True) or fatal (False).
    ignore_deletes: bool


@dataclass(frozen=True)
class ChangeRange(InputPartition):  # type: ignore[misc]
    """One store partition's commits ``first..last``, with all a task needs to read them."""

    plan: StreamPlan
    partition: int
    first: int
    last: int


def plan_stream(raw: Mapping[str, str]) -> StreamPlan:
    """Parse a stream's options and pin its store (see module doc).

    Raises:
        StoreNotFoundError: the store does not exist.
        InvalidOptionError: an option that does not apply to a stream (naming it), a
            ``startingVersion`` after the commits that exist.
    """
    from datasource.reader import check_creation_options, load_table

    options = StoreOptions.parse(raw)
    _refuse_batch_options(options)
    for name, value in (
        ("maxRowsPerTrigger", options.max_rows_per_trigger),
        ("maxCommitsPerTrigger", options.max_commits_per_trigger),
    ):
        if value is not None:
            ADMISSION_CONTROL.require(f"option {name!r}")
    table = load_table(options)
    check_creation_options(options, table)
    latest = table.log.latest_id()
    start = options.starting_version
    if start is not None and start > latest + 1:
        raise InvalidOptionError(
            f"option 'startingVersion' is {start} but store {options.store!r} has commits 1 "
            f"to {latest}"
        )
    return StreamPlan(
        root=table.catalog.root,
        spec=table.spec,
        spec_commit=table.spec_commit,
        initial=latest if start is None else max(start - 1, 0),
        max_rows=options.max_rows_per_trigger,
        max_commits=options.max_commits_per_trigger,
        change_feed=options.read_change_feed,
        ignore_deletes=options.ignore_deletes is not False,
    )


def _refuse_batch_options(options: StoreOptions) -> None:
    routes = (
        ("readHistory", options.read_history),
        ("list", options.list_what is not None),
        ("readAs", options.read_as is not None),
        ("kafkaStateDir", options.kafka_state_dir is not None),
    )
    for name, given in routes:
        if given:
            raise InvalidOptionError(
                f"option {name!r} applies to batch reads (spark.read), not to a stream"
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
    shaping = list(dict.fromkeys([*options.instant_options(), *options.reads]))
    if shaping:
        instead = (
            "start it at a commit with 'startingVersion'"
            if shaping[0] in COMMIT_OPTIONS
            else "filter the stream instead (.where(...))"
        )
        raise InvalidOptionError(
            f"option {shaping[0]!r} shapes a batch read and does not apply to a stream, which "
            f"streams the rows of each new commit: {instead}"
        )
    if options.read_change_feed and options.ignore_deletes is not None:
        raise InvalidOptionError(
            "option 'ignoreDeletes' applies to a plain stream; a change feed shows deletes as "
            "rows (_change_type 'delete'): drop the option, or filter them out with "
            ".where(\"_change_type != 'delete'\")"
        )


class _StoreStreamReader(DataSourceStreamReader):
    """See module doc. Holds only picklable configuration (the raw options, then the plan)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)
        self.plan: StreamPlan | None = None
        self.target: int | None = None  # Trigger.AvailableNow's last commit

    def _planned(self) -> StreamPlan:
        if self.plan is None:
            self.plan = plan_stream(self.options)
        return self.plan

    def _table(self) -> StoreTable:
        plan = self._planned()
        return StoreTable(Catalog(plan.root), plan.spec)

    def initialOffset(self) -> dict:  # type: ignore[type-arg]
        return {"version": self._planned().initial}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:  # type: ignore[type-arg]
        plan = self._planned()
        first, last = int(start["version"]) + 1, int(end["version"])
        if last < first:
            return []
        log = self._table().log
        in_force = log.read(last).spec_commit
        if in_force != plan.spec_commit or (in_force > 1 and first <= in_force):
            raise InvalidOptionError(
                f"commit {in_force} of store {plan.spec.name!r} replaced its schema "
                "(overwriteSchema), and this stream reads commits on both sides of it; one set "
                "of columns cannot show them: start a new query with a new checkpoint "
                f"(startingVersion {in_force + 1})",
                code="SCHEMA_CHANGED",
            )
        if first < log.history_start() <= last:
            raise log.expired(first)
        return [ChangeRange(plan, p, first, last) for p in range(plan.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ChangeRange)
        plan = partition.plan
        table = StoreTable(Catalog(plan.root), plan.spec)
        changes = partition_changes(
            table, partition.partition, partition.first, partition.last,
            overwrite_as_diff=not plan.change_feed,
        )  # fmt: skip
        if plan.change_feed:
            yield from changes
        else:
            yield from post_images(changes, plan, partition.partition)

    def commit(self, end: dict) -> None:  # type: ignore[type-arg]
        pass  # commits are immutable: nothing to release


if TYPE_CHECKING or ADMISSION_CONTROL.available:

    @surface_errors
    class StoreStreamReader(_StoreStreamReader, SupportsTriggerAvailableNow):
        """A store's stream with admission control (Spark 4.2 on)."""

        def getDefaultReadLimit(self) -> ReadLimit:
            plan = self._planned()
            if plan.max_rows is not None:
                return ReadMaxRows(plan.max_rows)
            if plan.max_commits is not None:
                return ReadMaxFiles(plan.max_commits)  # a commit counts as one "file"
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

else:

    @surface_errors
    class StoreStreamReader(_StoreStreamReader):  # type: ignore[no-redef]
        """A store's stream on Spark 4.0 and 4.1: each micro-batch reads every new commit."""

        def latestOffset(self) -> dict:  # type: ignore[type-arg]
            self._planned()  # the options are checked by the first hook, whichever it is
            return {"version": self._table().log.latest_id()}


def post_images(
    changes: Iterator[pa.RecordBatch], plan: StreamPlan, partition: int
) -> Iterator[pa.RecordBatch]:
    """The rows of ``changes`` (change-feed batches) that the store holds after their commit,
    without the change columns; deletes skipped, or refused when ``plan.ignore_deletes`` is
    False.

    Raises:
        InvalidOptionError: DELETE_IN_STREAM, a delete when deletes are not ignored.
    """
    schema: pa.Schema | None = None
    for batch in changes:
        kept = batch.num_columns - len(CHANGE_COLUMNS)
        types = batch.column(kept)
        if not plan.ignore_deletes:
            deletes = pc.equal(types, "delete")
            if pc.any(deletes).as_py():
                raise _deletes_refused(batch.filter(deletes), plan, partition)
        rows = batch.filter(pc.is_in(types, value_set=POST_IMAGES))
        if rows.num_rows:
            if schema is None:
                schema = pa.schema(list(batch.schema)[:kept])
            yield pa.RecordBatch.from_arrays(rows.columns[:kept], schema=schema)


def _deletes_refused(
    deletes: pa.RecordBatch, plan: StreamPlan, partition: int
) -> InvalidOptionError:
    commit = deletes.column("_commit_version")[0].as_py()
    key = repr(deletes.column("key")[0].as_py())
    key = key if len(key) <= 60 else key[:57] + "..."
    return InvalidOptionError(
        f"commit {commit} of store {plan.spec.name!r} deletes {deletes.num_rows} row(s) in "
        f"partition {partition} (the first of key {key}), and option 'ignoreDeletes' is false; "
        "a plain stream shows rows as the store holds them after each commit and has no row "
        "for a delete: stream the change feed (.option('readChangeFeed', 'true'), deletes as "
        "_change_type 'delete') to see them, or drop 'ignoreDeletes' to skip them",
        code="DELETE_IN_STREAM",
    )
