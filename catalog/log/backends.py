"""The storage backends, one class per backend, and the table that picks one by URL scheme.

``storage_for(root)`` is how every caller gets the ``Storage`` of a warehouse root: the
scheme of its URL (a local path is ``file``) names the class in ``BACKENDS``; a scheme not
there is any other fsspec backend, served by ``SingleWriterStorage``. What each backend
guarantees is in ``catalog.log.storage``'s table.

To add a backend: a subclass of ``Storage`` here with its ``_put_if_absent`` (and
``atomic_put_if_absent = True`` only if that create is atomic against other processes), and
its schemes in ``BACKENDS``.
"""

from __future__ import annotations

import os
import posixpath
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, ClassVar

from catalog import faults
from catalog.log import durable
from catalog.log.cloud import ObjectStoreStorage
from catalog.log.storage import CLOUD_BACKENDS, Storage, normalize_root


class LocalStorage(Storage):
    """A local filesystem: durable writes (each file and new directory entry fsynced) and an
    atomic create-if-absent by ``link(2)`` of a fully written temporary file."""

    atomic_put_if_absent: ClassVar[bool] = True

    @property
    def backend(self) -> str:
        """``local``."""
        return "local"

    def read_range(self, offset: int, size: int, *parts: str) -> bytes:
        """See ``Storage.read_range``.

        Raises:
            FileNotFoundError: the file is absent.
        """
        with open(self.path(*parts), "rb") as f:
            f.seek(offset)
            return f.read(max(0, min(size, os.fstat(f.fileno()).st_size - offset)))

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a whole file, replacing any old one: a new file renamed into place."""
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        os.replace(_durable_temp_copy(target, data), target)
        durable.fsync_dir(posixpath.dirname(target))  # the new name survives a power loss too

    @contextmanager
    def writing(self, *parts: str) -> Iterator[IO[bytes]]:
        """See ``Storage.writing``: into a new file, fsynced, then renamed into place (a
        write of 100 MB of Arrow this way costs a third of gathering it in memory first)."""
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        tmp = f"{target}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        durable.fsync_dir(posixpath.dirname(target))  # the new name survives a power loss too

    def _put_if_absent(self, target: str, data: bytes) -> bool:
        tmp = _durable_temp_copy(target, data)
        try:
            faults.point("commit.record_writing")  # written, not yet linked into place
            os.link(tmp, target)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        durable.fsync_dir(posixpath.dirname(target))
        return True

    def list_with_times(self, *parts: str) -> Iterator[tuple[str, float, int]]:
        """See ``Storage.list_with_times``."""
        try:
            entries = list(os.scandir(self.path(*parts)))
        except FileNotFoundError:
            return
        for entry in sorted(entries, key=lambda e: e.name):
            st = entry.stat(follow_symlinks=False)
            yield entry.name, st.st_mtime, st.st_size

    def makedirs(self, target: str) -> None:
        """Create a directory and its parents, each new directory's entry fsynced into its
        parent so it survives a power loss."""
        durable.makedirs(target)


def _durable_temp_copy(target: str, data: bytes) -> str:
    """Write ``data`` to a fresh temporary file beside ``target``, fsynced; return its path."""
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp


# memory:// is one process's dictionary: a lock makes its check-then-put atomic.
_MEMORY_LOCK = threading.Lock()


class MemoryStorage(Storage):
    """fsspec's in-memory filesystem (tests, one process): check-then-put under a lock."""

    atomic_put_if_absent: ClassVar[bool] = True

    @property
    def backend(self) -> str:
        """``memory``."""
        return "memory"

    def _put_if_absent(self, target: str, data: bytes) -> bool:
        with _MEMORY_LOCK:
            if self.fs.exists(target):
                return False
            self.fs.pipe_file(target, data)
            return True


class SingleWriterStorage(Storage):
    """Any other fsspec backend (HDFS, SFTP, ...): its conditional creates are not
    verified here, so a commit is a check-then-put, safe only with one writer per store
    (``single_writer``); without that promise, writing is refused (``NO_ATOMIC_COMMIT``)."""

    def _put_if_absent(self, target: str, data: bytes) -> bool:
        if self.fs.exists(target):
            return False
        self.fs.pipe_file(target, data)
        return True


#: The backend of each URL scheme; a scheme not listed gets ``SingleWriterStorage``.
BACKENDS: dict[str, type[Storage]] = {
    "file": LocalStorage,
    "local": LocalStorage,
    **{scheme: ObjectStoreStorage for scheme in CLOUD_BACKENDS},
    "memory": MemoryStorage,
}


def storage_for(root: str, single_writer: bool = False) -> Storage:
    """The storage of a warehouse root, on the backend its URL's scheme names.

    Args:
        root: the warehouse URL or local path.
        single_writer: the user's promise that one writer at a time commits to each store;
            needed to write on a backend without an atomic create-if-absent.

    Raises:
        InvalidOptionError: the URL names a protocol fsspec does not know.
    """
    url = normalize_root(root)
    backend = BACKENDS.get(url.split("://", 1)[0], SingleWriterStorage)
    return backend(url, single_writer=single_writer)
