"""The one storage seam: a warehouse URL mapped to an fsspec filesystem, and the few primitives
the commit protocol needs.

Atomic put-if-absent (what makes a commit record safe against a concurrent committer) is true on
the local filesystem, where a fully written temporary file is hard-linked into place: ``link(2)``
fails if the name exists, and readers never see a partial file. On every other fsspec backend
``write_if_absent`` checks and then writes, which is safe for a single writer per store only;
object stores that offer conditional puts are not relied on yet.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from stores.errors import InvalidOptionError


def normalize_root(root: str) -> str:
    """Return the canonical URL of a warehouse root (local paths become ``file://`` URLs).

    Raises:
        InvalidOptionError: the URL names a protocol fsspec does not know.
    """
    if "://" not in root:
        return "file://" + os.path.abspath(os.path.expanduser(root))
    protocol = root.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError) as exc:
        raise InvalidOptionError(
            f"option 'root' has protocol {protocol!r}, which fsspec cannot open ({exc}); "
            "use a local path, file://, or an installed fsspec backend such as s3:// or gs://"
        ) from exc
    return root.rstrip("/")


class Storage:
    """Files below one warehouse URL. Cheap to pickle: the filesystem is opened lazily."""

    def __init__(self, root: str) -> None:
        self.root = normalize_root(root)
        self._fs: Any = None
        self._base = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"])  # type: ignore[misc]

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (opened on first use in each process)."""
        if self._fs is None:
            self._fs, self._base = fsspec.core.url_to_fs(self.root)
        return self._fs

    @property
    def atomic_put_if_absent(self) -> bool:
        """Whether ``write_if_absent`` is atomic against concurrent writers here."""
        return isinstance(self.fs, LocalFileSystem)

    def path(self, *parts: str) -> str:
        """The backend path of ``parts`` below the root."""
        self.fs  # noqa: B018 - resolves _base
        return posixpath.join(self._base, *parts)

    def url(self, *parts: str) -> str:
        """The URL of ``parts`` below the root, for messages."""
        return posixpath.join(self.root, *parts)

    def exists(self, *parts: str) -> bool:
        return bool(self.fs.exists(self.path(*parts)))

    def read_bytes(self, *parts: str) -> bytes:
        """Read a whole file. Raises FileNotFoundError if absent."""
        data: bytes = self.fs.cat_file(self.path(*parts))
        return data

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a whole file, replacing any old one."""
        target = self.path(*parts)
        self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        if isinstance(self.fs, LocalFileSystem):
            os.replace(_durable_temp_copy(target, data), target)
            _fsync_dir(posixpath.dirname(target))  # the new name survives a power loss too
        else:
            self.fs.pipe_file(target, data)

    def write_if_absent(self, data: bytes, *parts: str) -> bool:
        """Create a file with ``data`` unless the name exists; return whether it was created."""
        target = self.path(*parts)
        self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        if isinstance(self.fs, LocalFileSystem):
            tmp = _durable_temp_copy(target, data)
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
            _fsync_dir(posixpath.dirname(target))
            return True
        if self.fs.exists(target):
            return False
        self.fs.pipe_file(target, data)
        return True

    def list(self, *parts: str) -> list[str]:
        """Names of the entries of a directory (empty if it does not exist)."""
        try:
            entries = self.fs.ls(self.path(*parts), detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def delete(self, *parts: str, recursive: bool = False) -> None:
        """Delete a file (or a directory tree); absent is not an error."""
        try:
            self.fs.rm(self.path(*parts), recursive=recursive)
        except FileNotFoundError:
            pass

    def open_input(self, *parts: str) -> Any:
        """A binary file object to read from."""
        return self.fs.open(self.path(*parts), "rb")

    def open_output(self, *parts: str) -> Any:
        """A binary file object to write to (parent directories are created)."""
        target = self.path(*parts)
        self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        return self.fs.open(target, "wb")


def _durable_temp_copy(target: str, data: bytes) -> str:
    """Write ``data`` to a fresh temporary file beside ``target``, fsynced; return its path."""
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
