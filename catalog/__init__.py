"""Store metadata, the warehouse, the commit protocol, local materialization and IQv2."""

from catalog.catalog import Catalog, StoreTable, resolve_root
from catalog.log.spec import StoreSpec
from catalog.operations.query import StateQueryRequest, StateQueryResult
from catalog.partitioner import partition_of, spark_sql_expression

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
