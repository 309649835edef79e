"""The catalog's Kafka Streams application routes (``KafkaApplications``, which
``catalog.catalog.Catalog`` is): a stopped application's state directory read, imported into
a new store, and moved to a new ``application.id`` (``catalog.kafka``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

import pyarrow as pa

from catalog.kafka import routes
from catalog.kafka.export_dir import check_export
from catalog.kafka.move import (
    MovePlan,
    check_same_store,
    plan_move,
    produce_changelog,
    write_records,
)
from catalog.kafka.rescale import check_partition_count
from catalog.kafka.task_dirs import app_dir_of  # the application id checked: never a path
from catalog.kafka.task_dirs import kafka_version as kafka_version_of
from catalog.log.spec import StoreSpec
from catalog.store_table import StoreCatalog, StoreTable
from stores.errors import StoreAlreadyExistsError
from stores.types import TypeJson


class Stores(StoreCatalog, Protocol):
    """What the routes need of the catalog (``catalog.catalog.Catalog`` has them)."""

    def exists(self, name: str) -> bool:
        """Whether a store of that name exists."""

    def load(self, name: str) -> StoreTable:
        """Open a store by name."""

    def drop(self, name: str) -> None:
        """Delete a store and all its files."""

    def new_spec(
        self,
        name: str,
        kind: str,
        key_type: TypeJson,
        value_type: TypeJson,
        num_partitions: int = 1,
        *,
        partitioner: str = ...,
        **params: Any,
    ) -> StoreSpec:
        """A checked spec of a new store."""


class KafkaApplications:
    """A catalog's routes to and from Kafka Streams applications' state directories (a mixin:
    each method takes the catalog as ``Stores``)."""

    def read_kafka_state_dir(
        self: Stores,
        state_dir: str,
        application_id: str,
        store: str,
        kind: str,
        *,
        key_type: TypeJson = "binary",
        value_type: TypeJson = "binary",
        **params: Any,
    ) -> pa.Table:
        """The latest state of store ``store`` of a stopped Kafka Streams application
        (``<state_dir>/<application_id>``, nothing written there), typed; ``kind`` and
        ``params`` as the application builds it, the types decode its serdes' bytes.

        Raises:
            InvalidOptionError: as ``catalog.kafka.read_state_dir`` (a running instance's
                directory, another kind's or an unknown column family, another segment
                interval), or a bad kind, type or parameter.
            StoreNotFoundError: no such directory.
        """
        spec = self.new_spec(store, kind, key_type, value_type, partitioner="kafka", **params)
        return routes.read_state_dir_table(app_dir_of(state_dir, application_id), store, spec)

    def import_kafka_state_dir(
        self: Stores,
        state_dir: str,
        application_id: str,
        store: str,
        kind: str,
        *,
        name: str | None = None,
        key_type: TypeJson = "binary",
        value_type: TypeJson = "binary",
        num_partitions: int | None = None,
        **params: Any,
    ) -> StoreTable:
        """A new store (``name``, default ``store``) of ``read_kafka_state_dir``'s store, in
        one commit that keeps the changelog offsets found (``.checkpoint``, or the ``offsets``
        column family of 4.3+), from which ``import_kafka_changelog`` continues; Kafka's
        partitioner, ``num_partitions`` at least the application's task partitions.

        Raises:
            InvalidOptionError: as ``read_kafka_state_dir``; nothing is created then.
            StoreAlreadyExistsError: a store of that name exists.
        """
        app_dir = app_dir_of(state_dir, application_id)
        count = routes.state_dir_partition_count(app_dir, store, num_partitions)
        spec = self.new_spec(
            name or store, kind, key_type, value_type, count, partitioner="kafka", **params
        )
        if self.exists(spec.name):
            raise StoreAlreadyExistsError(
                f"store {spec.name!r} exists under {self.root}; import under another name "
                "(name=...)"
            )
        routes.import_state_dir(StoreTable(self, spec), app_dir, store)
        return self.load(spec.name)

    def move_kafka_application(
        self: Stores,
        state_dir: str,
        application_id: str,
        store: str,
        kind: str,
        *,
        to_state_dir: str,
        to_application_id: str,
        kafka_version: str,
        records: str,
        num_partitions: int | None = None,
        to_store: str | None = None,
        name: str | None = None,
        key_type: TypeJson = "binary",
        value_type: TypeJson = "binary",
        to_params: dict[str, Any] | None = None,
        subtopology: int = 0,
        dry_run: bool = False,
        progress: Callable[[str], None] | None = None,
        **params: Any,
    ) -> MovePlan:
        """Move store ``store`` of a stopped application to a new ``application.id``
        (``to_application_id`` under ``to_state_dir``), on ``num_partitions`` partitions if
        given (``catalog.kafka.move``): imported as store ``name`` (default ``store``, kept),
        rescaled, its changelog records sent to ``records`` (``kafka://<bootstrap servers>``:
        produced to the new changelog topic; else a new Parquet file to produce in order, to
        an empty topic, keeping partition and timestamp) and the new application's task
        directories written with those records' offsets. ``to_params``: the new application's
        store parameters, if it builds the store otherwise (refused). ``progress``: called
        with each step's name. A dry run checks everything and writes nothing.

        Raises:
            InvalidOptionError: as ``catalog.kafka.move.plan_move``, ``write_state_dir`` and
                ``produce_changelog``, PARAMS_MISMATCH; nothing is written.
            StoreAlreadyExistsError: the warehouse has a store ``name``.
            StoreNotFoundError: no source directory or store in it.
        """
        source = app_dir_of(state_dir, application_id)
        target = app_dir_of(to_state_dir, to_application_id)
        count = routes.state_dir_partition_count(source, store)
        spec = self.new_spec(
            name or store, kind, key_type, value_type, count, partitioner="kafka", **params
        )
        if to_params is not None:
            made = self.new_spec(
                spec.name, kind, key_type, value_type, count, partitioner="kafka", **to_params
            )
            check_same_store(spec, to_params, made)
        new_count = count if num_partitions is None else check_partition_count(num_partitions)
        check_export(replace(spec, num_partitions=new_count), kafka_version_of(kafka_version),
                     to_store or store, subtopology, {})  # fmt: skip
        if self.exists(spec.name):
            raise StoreAlreadyExistsError(
                f"store {spec.name!r} exists under {self.root}; move under another name (name=...)"
            )
        plan = plan_move(source, store, spec, target, to_store or store, num_partitions, records)
        if dry_run:
            return plan
        step = progress or (lambda _: None)
        step("import")
        files: list[str] = []
        table = KafkaApplications.import_kafka_state_dir(
            self, state_dir, application_id, store, kind, name=spec.name, key_type=key_type,
            value_type=value_type, **params,
        )  # fmt: skip
        try:
            step("rescale")
            table.rescale(plan.num_partitions)
            step("changelog")
            out = table.export_kafka_changelog(to_application_id, store=to_store or store)
            if records.startswith("kafka://"):
                offsets = produce_changelog(
                    out, records[len("kafka://"):], plan.changelog_topic, plan.num_partitions
                )
            else:
                offsets = write_records(out, records)
                files.append(records)
            step("state directory")
            written = table.export_kafka_state_dir(
                to_state_dir, to_application_id, kafka_version=kafka_version, offsets=offsets,
                store=to_store or store, subtopology=subtopology,
            )  # fmt: skip
        except BaseException:
            self.drop(spec.name)  # the move made these: nothing of them is left
            for path in files:
                os.unlink(path)
            raise
        commits = tuple(c for c in (1, table.log.latest_id()) if c)
        return replace(plan, dry_run=False, commits=tuple(sorted(set(commits))),
                       offsets=offsets, task_dirs=tuple(written))  # fmt: skip


__all__ = ["KafkaApplications"]
