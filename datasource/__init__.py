"""The Spark connector: the ``state_store`` data source, and ``asof_join``."""

from typing import Any

from datasource.source import FORMAT, DefaultSource

__all__ = ["FORMAT", "DefaultSource", "asof_join"]


def __getattr__(name: str) -> Any:
    # Spark imports this package on every session's source lookup: the join (and the catalog,
    # numpy and pyarrow behind it) loads on first use only.
    if name == "asof_join":
        from datasource.asof_join import asof_join

        return asof_join
    raise AttributeError(f"module 'datasource' has no attribute {name!r}")
