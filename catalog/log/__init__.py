"""The log: what a store is on its warehouse, written and read without any of the table.

A store is a folder of immutable files under the warehouse root; this subpackage holds every
format and rule of those files, and nothing that interprets them as rows of a table:

- ``records``: the value types of a commit record (``CommitRecord``, ``ChangelogFile``,
  ``Txn``) and their sealed, checksummed JSON;
- ``commits``: the ``CommitLog`` of one store: reading and verifying records, their chain,
  the plan a cache follows to reach a commit (``RestorePlan``), and publishing the next record;
- ``storage``: ``Storage``, the type of the files below a warehouse URL and of the
  primitives the commit protocol needs, with what each backend guarantees;
- ``backends``: the storage backends, one class each (local filesystem, S3 with conditional
  puts, memory, single-writer fsspec), and the table that picks one by the root URL's scheme
  (``storage_for``);
- ``paths``: the folder and file names of a store, each defined once (``record_name``), and
  the checks of every path component read from data;
- ``spec``: a store's spec (``StoreSpec``), kept in its first commit record;
- ``changelog``: changelog files, the Arrow pieces a write stages and a commit publishes;
- ``snapshots``: compaction's snapshot files of each partition;
- ``durable``: fsync of local directories, so that new entries survive a power loss.

The rule: modules here import ``stores.*`` (errors, types), ``catalog.faults`` and
``catalog.log.*`` only; never the table (``catalog.catalog``, ``catalog.staging``), the caches
(``catalog.caches``) nor the operations (``catalog.operations``). Those build on the log.

This ``__init__`` imports nothing, so that naming the package loads no engine (fsspec,
pyarrow): import the module you need.
"""
