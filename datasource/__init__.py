"""The Spark connector: the ``state_store`` data source."""

from datasource.source import FORMAT, DefaultSource

__all__ = ["FORMAT", "DefaultSource"]
