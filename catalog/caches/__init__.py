"""Local caches of the log: RocksDB partitions for lookups, Arrow scan files."""
