"""Store metadata, the warehouse, the commit protocol, local materialization and IQv2."""

from catalog.catalog import Catalog, StoreTable, resolve_root
from catalog.interactive import StateQueryRequest, StateQueryResult
from catalog.partitioner import partition_of, spark_sql_expression
from catalog.spec import StoreSpec

__all__ = [
    "Catalog",
    "StateQueryRequest",
    "StateQueryResult",
    "StoreSpec",
    "StoreTable",
    "partition_of",
    "resolve_root",
    "spark_sql_expression",
]
