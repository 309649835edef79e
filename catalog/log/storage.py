"""The one storage seam: a warehouse URL mapped to an fsspec filesystem, and the few primitives
the commit protocol needs.

A commit is safe against concurrent committers only if creating its record is an atomic
put-if-absent. Where that holds:

- local filesystem: a fully written, fsynced temporary file is hard-linked into place;
  ``link(2)`` fails if the name exists, and readers never see a partial file;
- S3 and S3-compatible stores (through s3fs): ``PutObject`` with ``If-None-Match: *``; the
  store answers 412 if the key exists (409, a concurrent conditional put in flight, is retried).
  That the endpoint honours the header is probed once per process before the first commit, so
  an S3-compatible server that ignores it is refused instead of trusted;
- ``memory://`` (tests, one process): a process-wide lock around check-then-put.

Every other backend (GCS, Azure, HDFS, ... through fsspec) is refused for writing with
``NO_ATOMIC_COMMIT`` unless the user promises a single writer per store (``single_writer``):
their conditional creates are not verified here, and check-then-put loses commits under
concurrency.
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from catalog import faults
from catalog.log import durable
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


_MEMORY_LOCK = threading.Lock()
# Roots whose endpoint was seen to honour If-None-Match in this process.
_PROBED: dict[str, bool] = {}
_CONFLICT_RETRIES = 20
_LISTING_CACHE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})


class Storage:
    """Files below one warehouse URL. Cheap to pickle: the filesystem is opened lazily.

    Args:
        root: the warehouse URL or local path.
        single_writer: the user's promise that one writer at a time commits to each store;
            needed to write on a backend without an atomic create-if-absent.
    """

    def __init__(self, root: str, single_writer: bool = False) -> None:
        self.root = normalize_root(root)
        self.single_writer = single_writer
        self._fs: Any = None
        self._base = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "single_writer": self.single_writer}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], state.get("single_writer", False))  # type: ignore[misc]

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (opened on first use in each process)."""
        if self._fs is None:
            options: dict[str, Any] = {}
            if self.root.split("://", 1)[0] in _LISTING_CACHE_PROTOCOLS:
                # Other writers change the commit directory at any time: a cached listing
                # would hide their commits (and a commit id would be tried again and again).
                options["use_listings_cache"] = False
            self._fs, self._base = fsspec.core.url_to_fs(self.root, **options)
        return self._fs

    @property
    def backend(self) -> str:
        """``local``, ``memory``, ``s3`` or the fsspec protocol of any other backend."""
        if isinstance(self.fs, LocalFileSystem):
            return "local"
        protocol = self.fs.protocol
        name = protocol if isinstance(protocol, str) else protocol[0]
        return "s3" if name in ("s3", "s3a") else str(name)

    @property
    def atomic_put_if_absent(self) -> bool:
        """Whether ``write_if_absent`` is atomic against concurrent writers here."""
        return self.backend in ("local", "memory", "s3")

    def require_atomic_commit(self) -> None:
        """Refuse to write where concurrent commits could be lost, unless the user opted into
        single-writer mode.

        Raises:
            InvalidOptionError: code NO_ATOMIC_COMMIT.
        """
        if self.single_writer:
            return
        if not self.atomic_put_if_absent:
            raise InvalidOptionError(
                f"the warehouse {self.root} is on the {self.backend!r} backend, which offers "
                "state_store no atomic create-if-absent, so two concurrent writers could both "
                "be told their commit succeeded and one would be lost; use a local path, "
                "memory:// or s3://, or set option 'singleWriter' to 'true' (Python: "
                "single_writer=True) if one writer at a time commits to each store",
                code="NO_ATOMIC_COMMIT",
            )
        if self.backend == "s3":
            self._probe_conditional_create()

    def _probe_conditional_create(self) -> None:
        """Check once per process that the S3 endpoint refuses a second conditional create."""
        if _PROBED.get(self.root):
            return
        name = f"_state_store_probe_{uuid.uuid4().hex}"
        target = self.path(name)
        try:
            self._s3_create(target, b"probe")
            honoured = not self._s3_create(target, b"probe")
        finally:
            try:
                self.fs.rm_file(target)
            except FileNotFoundError:
                pass
        if not honoured:
            raise InvalidOptionError(
                f"the S3 endpoint of {self.root} ignores 'If-None-Match: *' (a second "
                "conditional create of the same key succeeded), so commits cannot be made "
                "atomic there; upgrade the server, or set option 'singleWriter' to 'true' if "
                "one writer at a time commits to each store",
                code="NO_ATOMIC_COMMIT",
            )
        _PROBED[self.root] = True

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

    def read_range(self, offset: int, size: int, *parts: str) -> bytes:
        """Read ``size`` bytes of a file from ``offset`` (fewer at its end: a size from a
        record is not trusted to allocate; a ranged GET on object stores). Raises
        FileNotFoundError if absent."""
        target = self.path(*parts)
        if isinstance(self.fs, LocalFileSystem):
            with open(target, "rb") as f:
                f.seek(offset)
                return f.read(max(0, min(size, os.fstat(f.fileno()).st_size - offset)))
        data: bytes = self.fs.cat_file(target, start=offset, end=offset + size)
        return data

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a whole file, replacing any old one."""
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        if isinstance(self.fs, LocalFileSystem):
            os.replace(_durable_temp_copy(target, data), target)
            durable.fsync_dir(posixpath.dirname(target))  # the new name survives a power loss too
        else:
            self.fs.pipe_file(target, data)

    def write_if_absent(self, data: bytes, *parts: str) -> bool:
        """Create a file with ``data`` unless the name exists; return whether it was created."""
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        if isinstance(self.fs, LocalFileSystem):
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
        self.require_atomic_commit()
        if self.backend == "s3":
            return self._s3_create(target, data)
        if self.backend == "memory":
            with _MEMORY_LOCK:
                if self.fs.exists(target):
                    return False
                self.fs.pipe_file(target, data)
                return True
        # single_writer: the user promised no concurrent committer.
        if self.fs.exists(target):
            return False
        self.fs.pipe_file(target, data)
        return True

    def _s3_create(self, target: str, data: bytes) -> bool:
        """PutObject with If-None-Match: *; False if the key exists (412)."""
        for attempt in range(_CONFLICT_RETRIES):
            try:
                self.fs.pipe_file(target, data, mode="create")
                return True
            except FileExistsError:
                return False
            except OSError as exc:
                # 409 ConditionalRequestConflict: another conditional put of this key is in
                # flight; nothing was written by this request, so it is safe to try again.
                if "ConditionalRequestConflict" not in str(exc) or attempt + 1 == _CONFLICT_RETRIES:
                    raise
                time.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError("unreachable")

    def list(self, *parts: str) -> list[str]:
        """Names of the entries of a directory (empty if it does not exist)."""
        try:
            entries = self.fs.ls(self.path(*parts), detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def list_with_times(self, *parts: str) -> Iterator[tuple[str, float, int]]:
        """``(name, modified seconds since the epoch, size)`` of each entry of a directory.

        Directories of object stores carry no time; they are reported with time 0 (old).
        """
        if isinstance(self.fs, LocalFileSystem):
            try:
                entries = list(os.scandir(self.path(*parts)))
            except FileNotFoundError:
                return
            for entry in sorted(entries, key=lambda e: e.name):
                st = entry.stat(follow_symlinks=False)
                yield entry.name, st.st_mtime, st.st_size
            return
        try:
            infos = self.fs.ls(self.path(*parts), detail=True)
        except FileNotFoundError:
            return
        for info in sorted(infos, key=lambda i: str(i["name"])):
            yield (
                posixpath.basename(str(info["name"]).rstrip("/")),
                _modified_seconds(info),
                int(info.get("size") or 0),
            )

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
        self.makedirs(posixpath.dirname(target))
        return self.fs.open(target, "wb")

    def makedirs(self, target: str) -> None:
        """Create a backend directory and its parents; on the local filesystem, each new
        directory's entry is fsynced into its parent so it survives a power loss."""
        if not isinstance(self.fs, LocalFileSystem):
            self.fs.makedirs(target, exist_ok=True)
            return
        durable.makedirs(target)


def _modified_seconds(info: dict[str, Any]) -> float:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)):
            return float(value)
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            from datetime import datetime

            return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return 0.0


def _durable_temp_copy(target: str, data: bytes) -> str:
    """Write ``data`` to a fresh temporary file beside ``target``, fsynced; return its path."""
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp

