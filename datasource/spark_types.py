"""Spark schemas of stores and the check of a DataFrame's columns against a store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import StructType

from stores.types import from_arrow

if TYPE_CHECKING:
    from catalog.catalog import StoreTable


def spark_schema(table: StoreTable, *, changes: bool = False) -> StructType:
    """The Spark schema of what reading ``table`` returns (``changes``: its change feed)."""
    from catalog.operations.change_feed import change_schema

    arrow = change_schema(table) if changes else table.arrow_schema()
    fields = [
        {"name": f.name, "type": from_arrow(f.type), "nullable": True, "metadata": {}}
        for f in arrow
    ]
    return StructType.fromJson({"type": "struct", "fields": fields})
