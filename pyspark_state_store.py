"""Registers the ``state_store`` format with Spark on install (Spark looks up ``pyspark_*``
modules that define ``DefaultSource``). Keep this import cheap."""

from datasource.source import DefaultSource

__all__ = ["DefaultSource"]
