"""The bytes layer: what the store kinds need of a database (the ``BytesStore`` protocol,
``protocol``), its RocksDB implementation (``rocksdb``, the one module that imports rocksdict),
and SST files laid out from Arrow columns (``sst``)."""
