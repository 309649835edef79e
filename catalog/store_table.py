"""One store as users see it (``StoreTable``): a ``catalog.table.Table`` whose commits are
followed by the compaction its catalog asks for, with the store's Kafka Streams routes
(``catalog.kafka``). ``catalog.catalog.Catalog`` opens and creates them.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any, Protocol

import pyarrow as pa

from catalog.kafka import ImportResult, import_changelog, kafka_offsets, routes, write_state_dir
from catalog.kafka.move import check_topic_exists, produce_records, write_records
from catalog.kafka.records import changelog_topic
from catalog.kafka.rescale import rescale
from catalog.kafka.task_dirs import app_dir_of  # the application id checked: never a path
from catalog.kafka.tombstones import erase_tombstones
from catalog.log.records import ChangelogFile, CommitRecord, OffsetsUpdate, Txn
from catalog.log.spec import StoreSpec
from catalog.operations import compaction
from catalog.operations.erase import ErasureReport, erase, erasures_of
from catalog.operations.erase import serialized_keys as _serialized
from catalog.operations.python_write import delete_keys, write_rows
from catalog.table import Table, Warehouse
from stores.errors import InvalidOptionError


class StoreCatalog(Warehouse, Protocol):
    """What a ``StoreTable`` needs of its catalog (``catalog.catalog.Catalog``)."""

    @property
    def compact_after_files(self) -> int:
        """Compact after a commit the partitions a fresh cache would replay more files for
        (0: never)."""


class StoreTable(Table):
    """One store as users see it: a ``Table`` (spec, log, writes, reads) whose ``commit`` is
    followed by the compaction its catalog asks for (``compact_after_files``)."""

    catalog: StoreCatalog

    def commit(
        self,
        files: list[ChangelogFile],
        *,
        overwrite: bool = False,
        write_id: str | None = None,
        txn: Txn | None = None,
        creates: bool = False,
        new_spec: StoreSpec | None = None,
        spec_commit: int | None = None,
        kafka_offsets: OffsetsUpdate | None = None,
        read_version: int | None = None,
        planned_at: int | None = None,
    ) -> CommitRecord | None:
        """Publish staged files as the next commit (``Table.commit``: the arguments, returns
        and raises are its), then compact the partitions that a fresh cache would have to
        replay more than ``Catalog.compact_after_files`` changelog files for
        (``catalog.operations.compaction.maybe_compact``: a failure there is logged, the
        commit stands).
        """
        record = super().commit(
            files, overwrite=overwrite, write_id=write_id, txn=txn, creates=creates,
            new_spec=new_spec, spec_commit=spec_commit, kafka_offsets=kafka_offsets,
            read_version=read_version, planned_at=planned_at,
        )  # fmt: skip
        if record is not None and self.catalog.compact_after_files:
            compaction.maybe_compact(self, self.catalog.compact_after_files)
        return record

    # -- writes from Python (``catalog.operations.python_write``) --------------------------------

    def append(
        self, data: Any, *, txn_app_id: str | None = None, txn_version: int | None = None
    ) -> CommitRecord | None:
        """Add ``data``'s rows in one commit, as a Spark append of them would: a
        ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a pandas or polars
        DataFrame, or anything with ``__arrow_c_stream__``, with columns ``key``, ``value`` and
        the kind's (a null value deletes). With ``txn_app_id`` and ``txn_version`` the write
        is skipped if that version (or a newer one) of that writer committed already.

        Returns:
            The commit record; None if the transaction id was committed already.

        Raises:
            InvalidOptionError, SerdeError: data the store refuses (a missing, extra or
                mistyped column, a null key, a bad time: the codes of a Spark write);
                nothing is written.
            CommitConflictError: as ``Table.commit`` (ERASED_MEANWHILE, SCHEMA_CHANGED, ...);
                nothing is written. A failed write deletes the files it staged.
        """
        return write_rows(self, data, txn_app_id=txn_app_id, txn_version=txn_version)

    def overwrite(
        self, data: Any, *, txn_app_id: str | None = None, txn_version: int | None = None
    ) -> CommitRecord | None:
        """Replace the store's contents with ``data``'s rows in one commit (``append``'s
        data, returns and raises); earlier commits stay readable (``versionAsOf``)."""
        return write_rows(
            self, data, overwrite=True, txn_app_id=txn_app_id, txn_version=txn_version
        )

    def delete(
        self,
        keys: Any,
        *,
        timestamp: int | dt.datetime | str | None = None,
        txn_app_id: str | None = None,
        txn_version: int | None = None,
    ) -> CommitRecord | None:
        """Delete ``keys`` (a list, an Arrow array, a pandas or polars Series) in one commit
        of the tombstones a Spark write of null values would write: one per key, at
        ``timestamp`` (epoch ms, an aware datetime or ISO-8601; default now) for timestamped
        and versioned stores (``VersionedKeyValueStore.delete(key, timestamp)``: earlier
        versions stay readable as of earlier instants); for window and session stores one
        per live window or session of the key. Unlike ``erase``, history keeps the keys.

        Returns:
            The commit record; None if the transaction id was committed already, or no
            window or session of the keys is live.

        Raises:
            InvalidOptionError: keys not of the store's key type, or null (INVALID_KEYS), a
                bad ``timestamp``; CommitConflictError as ``append``.
        """
        return delete_keys(
            self, keys, timestamp=timestamp, txn_app_id=txn_app_id, txn_version=txn_version
        )

    def erase(
        self,
        keys: Any,
        *,
        reason: str,
        audit_key: str | bytes | None = None,
        dry_run: bool = False,
        application_id: str | None = None,
        kafka_store: str | None = None,
        tombstones: str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> ErasureReport:
        """Erase ``keys`` (a list, Arrow array, pandas or polars Series of the key type)
        everywhere: every version, window, session and header of them, in every commit's
        files and snapshots, in one ``erase`` commit whose audit record keeps ``reason``,
        the number of keys and a keyed hash of each (``catalog.operations.erase``). Reads of
        any commit, before or after it, no longer show them; ``vacuum`` then deletes the old
        files (``olderThan`` 0: at once).

        Args:
            audit_key: the HMAC key of the audit's key hashes (default
                ``$STATE_STORE_AUDIT_KEY``, else the store id).
            dry_run: report what would be rewritten; write nothing.
            application_id: also compute the tombstones that erase the keys from the
                changelog topic of this Kafka Streams application (``report.tombstones``,
                ``catalog.kafka.tombstones``), as store ``kafka_store`` (default: this name).
            tombstones: where the tombstones go before the erasure commits:
                ``kafka://<bootstrap servers>`` (the existing changelog topic) or a new
                Parquet file.

        Raises:
            InvalidOptionError: no reason, bad keys (INVALID_KEYS), ``tombstones`` without
                ``application_id``, a store not placed by Kafka's partitioner
                (PARTITIONER_MISMATCH), a missing topic (TOPIC_NOT_FOUND) or an existing file.
            CommitConflictError: other writers kept committing (ERASE_CONFLICT).
        """
        if tombstones is not None and application_id is None:
            raise InvalidOptionError(
                "option 'tombstones' needs the application id whose changelog topic they are "
                "for (application_id=...)",
                code="MISSING_OPTION",
            )
        if (
            tombstones is not None
            and not tombstones.startswith("kafka://")
            and os.path.exists(tombstones)
        ):
            raise InvalidOptionError(
                f"the tombstones file {tombstones!r} exists; give a new path",
                code="PATH_EXISTS",
            )
        records: list[pa.Table] = []
        written: list[str] = []

        def send(snapshot: int, erased: pa.Array) -> None:
            assert application_id is not None
            found = erase_tombstones(self, snapshot, erased, application_id, kafka_store)
            records.append(found)
            if tombstones is None or dry_run:
                return
            if tombstones.startswith("kafka://"):
                topic = changelog_topic(application_id, kafka_store or self.spec.name)
                bootstrap = tombstones[len("kafka://") :]
                check_topic_exists(bootstrap, topic, self.spec.num_partitions)
                produce_records(found, bootstrap, topic)
            else:
                write_records(found, tombstones)
                written.append(tombstones)

        try:
            report = erase(
                self, keys, reason=reason, audit_key=audit_key, dry_run=dry_run,
                before_publish=None if application_id is None else send, progress=progress,
            )  # fmt: skip
            if dry_run and application_id is not None:
                send(self.log.latest_id(), _serialized(self, keys))
        except BaseException:
            for path in written:
                os.unlink(path)
            raise
        if records:
            report.tombstones = records[0]
        return report

    def erasures_of(self, key: Any, *, audit_key: str | bytes | None = None) -> list[int]:
        """The erase commits that erased ``key``, found by its keyed hash in their audit
        records (``catalog.operations.erase.erasures_of``; ``audit_key`` as the erasure's).

        Raises:
            InvalidOptionError: a key not of the store's key type (INVALID_KEYS).
        """
        return erasures_of(self, key, audit_key)

    # -- Kafka Streams (``catalog.kafka``) -------------------------------------------------------

    def export_kafka_changelog(
        self, application_id: str, *, store: str | None = None, snapshot: int | None = None
    ) -> pa.Table:
        """The store (at ``snapshot``, default the latest commit) as the changelog records of
        ``<application_id>-<store>-changelog`` (``store`` default: this one's name) a Kafka
        Streams application restores it from, each partition in restore order
        (``catalog.kafka.RECORD_SCHEMA``; produce them keeping partition and timestamp).

        Raises:
            InvalidOptionError: a store not partitioned as the application
                (``partitioner=kafka``), a record with a negative time.
        """
        return routes.export_changelog(self, application_id, store, snapshot)

    def import_kafka_changelog(self, records: pa.Table, *, overwrite: bool = False) -> ImportResult:
        """Apply Kafka changelog records (Spark's Kafka source shape: ``key``, ``value``,
        ``topic``, ``partition``, ``offset``, ``timestamp``, ``headers``) with Kafka's
        restore semantics, in one commit that keeps the last offset of each partition
        (``catalog.kafka.import_changelog``).

        Raises:
            InvalidOptionError, SerdeError: bad records; nothing is written.
        """
        return import_changelog(self, records, overwrite=overwrite)

    def kafka_offsets(self) -> dict[tuple[str, int], int]:
        """The offset of the last Kafka changelog record applied per (topic, partition)."""
        return kafka_offsets(self)

    def kafka_starting_offsets(self) -> str:
        """Spark's Kafka ``startingOffsets`` after the records applied (JSON, or "earliest")."""
        return routes.starting_offsets(kafka_offsets(self))

    def rescale(
        self, num_partitions: int, *, progress: Callable[[str], None] | None = None
    ) -> CommitRecord | None:
        """Rewrite the store (``partitioner=kafka``) to ``num_partitions`` partitions in one
        commit, as its Kafka Streams application's state would be had it run on that many
        input partitions: each key in ``BuiltInPartitioner.partitionForKey(key,
        num_partitions)``'s partition with its history, versions, windows, sessions and
        headers. The exports then give the new layout. Each new partition's stream time is
        what Kafka's restore of its new changelog observes, so what that restore expires is
        dropped (see ``catalog.kafka.rescale``). Earlier commits keep their partition count
        (``versionAsOf`` reads them as before); the Kafka changelog offsets the store held
        name old partitions and are dropped. ``progress`` is told of each partition read and
        of the commit.

        Returns:
            The commit; None, and nothing committed, if the store has that many partitions.

        Raises:
            InvalidOptionError: a store not placed by Kafka's partitioner
                (PARTITIONER_MISMATCH), a count that is not an integer from 1 to 10000
                (INVALID_PARTITION_COUNT).
            CommitConflictError: the store changed while it was rewritten (STORE_CHANGED,
                SCHEMA_CHANGED). Nothing is written then.
        """
        result = rescale(self, num_partitions, progress)
        return None if result is None or result.commit is None else self.log.read(result.commit)

    def export_kafka_state_dir(
        self,
        state_dir: str,
        application_id: str,
        *,
        kafka_version: str,
        offsets: dict[int, int],
        store: str | None = None,
        subtopology: int = 0,
        snapshot: int | None = None,
    ) -> list[str]:
        """Write the store as store ``store`` (default: this one's name) of a stopped Kafka
        Streams application (``<state_dir>/<application_id>``): task directories that its
        instance of ``kafka_version`` opens as its own, restoring nothing. ``offsets``:
        partition -> the changelog offset of the last record the partition's state reflects
        (produce ``export_kafka_changelog`` first). See ``catalog.kafka.write_state_dir``.

        Returns:
            The task directories written.

        Raises:
            InvalidOptionError: as ``catalog.kafka.write_state_dir``; nothing is written.
        """
        return write_state_dir(
            self, app_dir_of(state_dir, application_id), store_name=store or self.spec.name,
            kafka_version=kafka_version, subtopology=subtopology, offsets=offsets,
            snapshot=snapshot,
        )  # fmt: skip


__all__ = ["StoreCatalog", "StoreTable"]
