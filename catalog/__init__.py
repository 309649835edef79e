"""Store metadata, the warehouse, the commit protocol and local materialization."""

from catalog.catalog import Catalog, StoreTable, resolve_root
from catalog.partitioner import partition_of, spark_sql_expression
from catalog.spec import StoreSpec

__all__ = ["Catalog", "StoreSpec", "StoreTable", "partition_of", "resolve_root", "spark_sql_expression"]
