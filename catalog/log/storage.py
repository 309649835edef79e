"""The one storage seam: files below a warehouse URL, and the few primitives the commit
protocol needs (read, write, create-if-absent, list, delete).

``Storage`` is the type every caller holds; each backend is one subclass of it, chosen by the
root URL's scheme in ``catalog.log.backends`` (``storage_for``). A commit is safe against
concurrent committers only if creating its record is an atomic put-if-absent. Where that holds:

- local filesystem (``LocalStorage``; ``file://``, a path): a fully written, fsynced temporary
  file is hard-linked into place; ``link(2)`` fails if the name exists, and readers never see
  a partial file;
- S3, Google Cloud Storage and Azure Blob / ADLS Gen2 (``ObjectStoreStorage`` in
  ``catalog.log.cloud``; ``s3://``, ``s3a://``, ``gs://``, ``gcs://``, ``az://``, ``abfs://``,
  ``abfss://``): the cloud's own conditional create (S3 ``If-None-Match: *``, GCS
  ``ifGenerationMatch=0``, Azure ``If-None-Match: *``). That the endpoint honours it is probed
  once per process, endpoint and bucket before the first commit, so an emulator or gateway that
  ignores it is refused instead of trusted;
- ``memory://`` (``MemoryStorage``; tests, one process): a process-wide lock around
  check-then-put.

Every other backend (HDFS, ... through fsspec: ``SingleWriterStorage``) is refused
for writing with ``NO_ATOMIC_COMMIT`` unless the user promises a single writer per store
(``single_writer``): their conditional creates are not verified here, and check-then-put loses
commits under concurrency.
"""

from __future__ import annotations

import io
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, ClassVar

import fsspec

from catalog.log import retries
from stores.errors import InvalidOptionError

#: The backend of each cloud URL scheme (``catalog.log.cloud.ObjectStoreStorage`` serves them).
CLOUD_BACKENDS: dict[str, str] = {
    "s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure",
    "abfss": "azure",
}  # fmt: skip
#: The fsspec library and the package extra of each cloud backend.
_EXTRAS: dict[str, tuple[str, str]] = {"s3": ("s3fs", "s3"), "gcs": ("gcsfs", "gcs"),
                                       "azure": ("adlfs", "azure")}  # fmt: skip


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
        if protocol in CLOUD_BACKENDS:
            backend = CLOUD_BACKENDS[protocol]
            library, extra = _EXTRAS[backend]
            raise InvalidOptionError(
                f"option 'root' {root} is on the {backend} backend, whose library {library} is "
                f"not installed ({exc}); install it: pip install 'state-store[{extra}]'",
                code="MISSING_EXTRA",
            ) from exc
        raise InvalidOptionError(
            f"option 'root' has protocol {protocol!r}, which fsspec cannot open ({exc}); "
            "use a local path, file://, or an installed fsspec backend such as s3:// or gs://"
        ) from exc
    return root.rstrip("/")


class Storage(ABC):
    """Files below one warehouse URL, on one backend. Cheap to pickle (Spark sends it to its
    executors): the filesystem is opened lazily, in each process.

    Get one with ``catalog.log.backends.storage_for``; a backend subclass provides
    ``_put_if_absent`` and overrides what its filesystem does better than fsspec's generic
    calls.

    Args:
        root: the warehouse URL or local path.
        single_writer: the user's promise that one writer at a time commits to each store;
            needed to write on a backend without an atomic create-if-absent.
    """

    #: Whether ``write_if_absent`` is atomic against concurrent writers here.
    atomic_put_if_absent: ClassVar[bool] = False

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
            if self.root.split("://", 1)[0] in CLOUD_BACKENDS:
                # Other writers change the commit directory at any time: a cached listing
                # would hide their commits (and a commit id would be tried again and again).
                options["use_listings_cache"] = False
                self._fs, self._base = _cloud_fs(self.root, options)
            else:
                self._fs, self._base = fsspec.core.url_to_fs(self.root, **options)
        return self._fs

    @property
    def backend(self) -> str:
        """``local``, ``memory``, ``s3`` or the fsspec protocol of any other backend."""
        protocol = self.fs.protocol
        return str(protocol if isinstance(protocol, str) else protocol[0])

    def check_root(self) -> None:
        """Refuse a root whose bucket (container) does not exist, where the backend has
        buckets: an empty listing of it would say "no stores" instead (object stores only).

        Raises:
            InvalidOptionError: BUCKET_NOT_FOUND (or the cloud's configuration errors).
        """

    def require_atomic_commit(self) -> None:
        """Refuse to write where concurrent commits could be lost, unless the user opted into
        single-writer mode.

        Raises:
            InvalidOptionError: code NO_ATOMIC_COMMIT.
        """
        if self.single_writer or self.atomic_put_if_absent:
            return
        raise InvalidOptionError(
            f"the warehouse {self.root} is on the {self.backend!r} backend, which offers "
            "state_store no atomic create-if-absent, so two concurrent writers could both "
            "be told their commit succeeded and one would be lost; use a local path, "
            "memory://, s3://, gs:// or az://, or set option 'singleWriter' to 'true' (Python: "
            "single_writer=True) if one writer at a time commits to each store",
            code="NO_ATOMIC_COMMIT",
        )

    def path(self, *parts: str) -> str:
        """The backend path of ``parts`` below the root."""
        self.fs  # noqa: B018 - resolves _base
        return posixpath.join(self._base, *parts)

    def url(self, *parts: str) -> str:
        """The URL of ``parts`` below the root, for messages."""
        return posixpath.join(self.root, *parts)

    def exists(self, *parts: str) -> bool:
        """Whether a file or directory exists below the root."""
        return bool(self.fs.exists(self.path(*parts)))

    def read_bytes(self, *parts: str) -> bytes:
        """Read a whole file.

        Raises:
            FileNotFoundError: the file is absent.
        """
        data: bytes = self.fs.cat_file(self.path(*parts))
        return data

    def read_range(self, offset: int, size: int, *parts: str) -> bytes:
        """Read ``size`` bytes of a file from ``offset`` (fewer at its end: a size from a
        record is not trusted to allocate; a ranged GET on object stores).

        Raises:
            FileNotFoundError: the file is absent.
        """
        data: bytes = self.fs.cat_file(self.path(*parts), start=offset, end=offset + size)
        return data

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """Write a whole file, replacing any old one."""
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        self.fs.pipe_file(target, data)

    @contextmanager
    def writing(self, *parts: str) -> Iterator[IO[bytes]]:
        """A file written as a stream: once the block ends without an error, what was written
        is the whole file (replacing any old one); if it fails, no file is written. Here the
        bytes are gathered and written at the end; a local disk writes them as they come."""
        buffer = io.BytesIO()
        yield buffer
        self.write_bytes(buffer.getvalue(), *parts)

    def write_if_absent(self, data: bytes, *parts: str) -> bool:
        """Create a file with ``data`` unless the name exists; return whether it was created.

        Raises:
            InvalidOptionError: code NO_ATOMIC_COMMIT, see ``require_atomic_commit``.
        """
        target = self.path(*parts)
        self.makedirs(posixpath.dirname(target))
        self.require_atomic_commit()
        return self._put_if_absent(target, data)

    @abstractmethod
    def _put_if_absent(self, target: str, data: bytes) -> bool:
        """Create the backend path ``target`` (its directory exists) unless it exists; return
        whether this call created it. Atomic where ``atomic_put_if_absent`` says so."""

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
        """Create a backend directory and its parents."""
        self.fs.makedirs(target, exist_ok=True)


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


#: Environment variables that pick a cloud client's endpoint and credentials.
_CLIENT_ENV = ("AWS_", "GOOGLE_", "STORAGE_EMULATOR_HOST", "GCSFS_", "AZURE_", "FSSPEC_",
               "STATE_STORE_STORAGE_")  # (the bounded waits: catalog.log.retries)
#: One cloud client per (protocol, what the root's URL configures, that environment) in a
#: process: a client costs a credential chain and connections (hundreds of ms), and every
#: ``Catalog`` of a Spark task would otherwise make its own.
_CLOUD_CLIENTS: dict[tuple[Any, ...], Any] = {}


def _cloud_fs(root: str, options: dict[str, Any]) -> tuple[Any, str]:
    """The process's client for ``root`` (see ``_CLOUD_CLIENTS``) and the root's path in it.
    fsspec's own instance cache would hand every root the first client made whatever the
    environment is now, so its cache is skipped and this one keyed by that environment."""
    protocol = root.split("://", 1)[0]
    from_url = fsspec.get_filesystem_class(protocol)._get_kwargs_from_urls(root)
    environment = sorted((k, v) for k, v in os.environ.items() if k.startswith(_CLIENT_ENV))
    # (A forked child makes its own: a client's connections and event loop are its parent's.)
    key = (os.getpid(), protocol, repr(sorted(from_url.items())), tuple(environment))
    fs = _CLOUD_CLIENTS.get(key)
    if fs is None:
        backend = CLOUD_BACKENDS[protocol]
        fs, base = fsspec.core.url_to_fs(
            root, skip_instance_cache=True, **options, **retries.client_options(backend)
        )
        fs = _CLOUD_CLIENTS[key] = retries.bound(fs, backend)
        return fs, base
    return fs, fs._strip_protocol(root)
