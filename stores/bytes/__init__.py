"""The bytes layer: a RocksDB database of bytes in, bytes out (``rocksdb``), and SST files
laid out from Arrow columns (``sst``)."""
