"""Registers the ``state_store`` format with Spark on install (Spark looks up ``pyspark_*``
modules that define ``DefaultSource``). Keep this import cheap.

Spark drops a ``pyspark_*`` module whose import fails without a word, and its user reads only
``[DATA_SOURCE_NOT_FOUND]``. So if the connector cannot load on this Spark, the format is
still registered, and every use of it raises the reason as our line (``[SPARK_UNSUPPORTED]``,
naming this Spark and the ones the connector supports).
"""

from typing import NoReturn

try:
    from datasource.source import DefaultSource
except Exception as error:  # noqa: BLE001 - any failure must reach the user, not vanish
    # Spark 3.x has no Python data sources: nothing to register, and no lookup of this module.
    from pyspark.sql.datasource import DataSource

    _REASON = error

    class DefaultSource(DataSource):  # type: ignore[no-redef]
        """The ``state_store`` format on a Spark where the connector failed to load: each
        use raises why."""

        @classmethod
        def name(cls) -> str:
            return "state_store"

        def _refuse(self, *_: object) -> NoReturn:
            import pyspark

            raise ImportError(
                f"[SPARK_UNSUPPORTED] the state_store format cannot load on Spark "
                f"{pyspark.__version__}: {type(_REASON).__name__}: {_REASON}; it supports "
                "pyspark 4.0.5, 4.1.4, 4.2.1 and 4.3.0 (pip install 'pyspark>=4.0.5,<4.4')"
            ) from _REASON

        schema = reader = writer = streamReader = streamWriter = _refuse

__all__ = ["DefaultSource"]
