"""Reading a RocksDB database that someone else wrote (a Kafka Streams state directory) without
writing a byte into its directory.

A read-only open by RocksDB alone writes nothing, but rocksdict writes its
``rocksdict-config.json`` into every directory it opens, read-only too, and a RocksDB that
keeps an info log renames and creates ``LOG`` files. So the database is opened through a
*shadow*: a private temporary directory of symbolic links to the database's own files (its
``CURRENT``, ``MANIFEST``, ``OPTIONS``, table and WAL files; not ``LOCK``, ``LOG*`` or
rocksdict's file). Whatever the open writes lands in the shadow; a read-only open never writes
through a link (it opens the database's files for reading only, and replays its WAL in
memory). The shadow is deleted when the database is closed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from stores.bytes.rocksdb import RocksDBBytesStore, column_families_at
from stores.errors import StoreNotFoundError

#: Files of a database directory that an open writes, never linked into a shadow.
_WRITTEN_BY_OPEN = ("LOCK", "LOG", "rocksdict-config.json")


@contextlib.contextmanager
def open_foreign(path: str | os.PathLike[str]) -> Iterator[tuple[RocksDBBytesStore, list[str]]]:
    """Open the database at ``path`` read-only with every one of its column families, through
    a shadow directory (see the module doc); yield ``(store, column family names)``.

    Raises:
        StoreNotFoundError: no database at ``path``.
    """
    source = os.path.abspath(os.fspath(path))
    if not os.path.exists(os.path.join(source, "CURRENT")):
        raise StoreNotFoundError(f"no RocksDB database at {source}")
    shadow = tempfile.mkdtemp(prefix="foreign-rocksdb-")
    try:
        for name in os.listdir(source):
            if name.startswith(_WRITTEN_BY_OPEN) or not os.path.isfile(os.path.join(source, name)):
                continue
            os.symlink(os.path.join(source, name), os.path.join(shadow, name))
        families = column_families_at(shadow)
        db = RocksDBBytesStore(shadow, families, read_only=True)
        try:
            yield db, families
        finally:
            db.close()
    finally:
        shutil.rmtree(shadow, ignore_errors=True)


__all__ = ["open_foreign"]
