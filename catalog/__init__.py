"""Store metadata, the warehouse, the commit protocol, local materialization and IQv2.

Modules, each importing only those listed below it (never one above, lazily or not)::

    cli               the ``state-store`` command
    catalog           the facade users call: ``Catalog`` (stores under a root) and
                      ``StoreTable``; their methods run the operations
    operations/       query (IQv2), change_feed, compaction, maintenance: functions over a
                      ``Table`` (or the storage), which never import the facade
    table             ``Table``: one store's spec, log and storage, its writes and reads
    commit, staging,  a write's commit and abort; its rows staged by partition; a read's
    scans             checks and typed decoding
    caches/           partition caches (RocksDB, ``partitions``) and kept scans (``scan_files``)
    kinds/            the store kinds: parameters, layouts, links to ``stores.<kind>``
    log/              commit records, storage, paths, spec, changelog and snapshot files
    partitioner, partition_hash, faults

So an operation takes a ``Table`` and a facade method calls the operation: ``Catalog.query``,
``.changes``, ``.compact``, ``.vacuum``, and ``StoreTable.commit``, which compacts after
``Table.commit`` publishes (the compaction is the commit's caller's, not the commit's).
"""

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
