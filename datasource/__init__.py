"""The Spark connector: the ``state_store`` data source, ``asof_join``, ``upsert_into`` and
``register_sql``.

Import direction, each module only those after it: ``source`` (Spark's ``DataSource``) ->
``stream_writer``, ``upsert`` (update-mode streams through ``foreachBatch``) -> ``writer``;
``stream_reader``, ``history`` -> ``reader`` -> ``options`` (parsed once; the kinds' options
derived from ``catalog.kinds``), ``pushdown``, ``intervals``, ``spark_types``, ``errors`` ->
``catalog``, ``stores``; ``asof`` (the join) and ``sql_lookups`` (UDTFs) beside them; every
module that needs an API some Spark line lacks asks ``spark_features``, the one place that
probes the Spark it runs on. The connector names no store kind: what differs between kinds the
kinds declare.
"""

from typing import Any

# First: on a Spark without Python data sources (3.x) this raises our line, [SPARK_TOO_OLD].
import datasource.spark_features  # noqa: F401, I001
from datasource.source import FORMAT, DefaultSource

__all__ = ["FORMAT", "DefaultSource", "asof_join", "register_sql", "upsert_into"]


def __getattr__(name: str) -> Any:
    # Spark imports this package on every session's source lookup: the join (and the catalog,
    # numpy and pyarrow behind it) loads on first use only.
    # The join lives in ``datasource.asof``, not in a submodule named like the function: a
    # submodule ``datasource.asof_join`` would replace this attribute with itself on import.
    if name == "asof_join":
        from datasource.asof import asof_join

        return asof_join
    if name == "upsert_into":  # streaming update mode through foreachBatch (``upsert``)
        from datasource.upsert import upsert_into

        return upsert_into
    if name == "register_sql":  # SQL lookups as Python UDTFs (``sql_lookups``)
        from datasource.sql_lookups import register_sql

        return register_sql
    raise AttributeError(f"module 'datasource' has no attribute {name!r}")
