"""Kafka Streams' state directory, as files: task and segment directories, the column families
each store declares, ``.checkpoint`` files, the ``offsets`` column family, and the
application's ``.lock`` (``/work/shared/KAFKA_FACTS.md`` §1–§3 has the sources).

```
<state.dir>/<application.id>/                 the "app dir"
  .lock                                       FileChannel lock of the running instance
  <subtopology>_<partition>/                  task dir (StateDirectory.TASK_DIR_PATH_NAME)
    .checkpoint                               OffsetCheckpoint (Kafka <= 4.2)
    rocksdb/<store>/                          key-value, timestamped, versioned store
    <store>/<store>.<segmentId * interval>/   window and session stores: one DB a segment
  __<topology>__/<subtopology>_<partition>/   named topologies (deprecated; not read here)
```

Column families a Kafka store declares (RocksDB refuses a read-write open that leaves one of a
database's families unopened, so a family no declaration names is fatal to Kafka):

| store (Kafka class)                            | data family                       | also accepted (older formats it upgrades from) |
|------------------------------------------------|-----------------------------------|--------------------------------|
| ``RocksDBStore`` (key-value, versioned,        | ``default``                       |                                |
| window and session segments)                   |                                   |                                |
| ``RocksDBTimestampedStore`` (timestamped KV    | ``keyValueWithTimestamp``         | ``default``                    |
| and timestamped window segments)               |                                   |                                |
| ``RocksDBTimestampedStoreWithHeaders``         | ``keyValueWithTimestampAndHeaders`` | ``keyValueWithTimestamp``, ``default`` |
| ``RocksDBMigratingWindowStoreWithHeaders``     | ``windowKeyValueWithHeaders``     | ``default``                    |
| ``RocksDBMigratingSessionStoreWithHeaders``    | ``sessionKeyValueWithHeaders``    | ``default``                    |

Every store of Kafka 4.3 and later also has ``offsets`` (KIP-1035): ``"<topic>-<partition>"``
-> the committed changelog offset, ``"status"`` -> 1 while open, 0 after a clean close,
``"position"`` -> the IQ position; values 8-byte big-endian longs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stores.bytes.protocol import DEFAULT_CF
from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.timestamped import TIMESTAMPED_CF
from stores.session.format import SESSION_HEADERS_CF
from stores.timestamped.store import TIMESTAMPED_WITH_HEADERS_CF
from stores.window.format import TIMESTAMPED_HEADERS_CF, WINDOW_HEADERS_CF

#: Kafka's ``RocksDBStore.OFFSETS_COLUMN_FAMILY_NAME`` (4.3+, KIP-1035).
OFFSETS_CF = "offsets"
#: Keys of the offsets family that are not offsets (``AbstractColumnFamilyAccessor``).
STATUS_KEY = b"status"
POSITION_KEY = b"position"
#: Kafka's ``OffsetCheckpoint``: the file, its only version, and the "unknown" offset.
CHECKPOINT = ".checkpoint"
CHECKPOINT_VERSION = 0
OFFSET_UNKNOWN = -4
LOCK_FILE = ".lock"
#: ``RocksDBStore.DB_FILE_DIR``: the parent of single-database stores in a task dir.
DB_FILE_DIR = "rocksdb"
TASK_DIR = re.compile(r"(\d+)_(\d+)")
#: Kafka's pre-2.? segment names: ``name-yyyyMMddHHmm`` (UTC), parsed by ``AbstractSegments``.
_LEGACY_DATE = "%Y%m%d%H%M"
#: Kafka versions this module writes for: 3.0 (RocksDB 6.19) and later.
OLDEST_VERSION = (3, 0)
#: First Kafka version with offsets in the stores (KIP-1035) and header-aware stores (KIP-1271).
OFFSETS_CF_VERSION = (4, 3)
#: First Kafka version on a RocksDB (9.7.3) that reads table ``format_version`` 6.
FORMAT_6_VERSION = (4, 0)


#: Characters Kafka Streams accepts in an ``application.id`` (it prefixes topic names).
_APPLICATION_ID = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_application_id(application_id: str) -> str:
    """``application_id`` if it can be a Kafka Streams ``application.id`` (a directory name
    under ``state.dir`` and a topic prefix: never a path).

    Raises:
        InvalidOptionError: other characters, or ``.``/``..`` (INVALID_APPLICATION_ID).
    """
    if (
        not isinstance(application_id, str)
        or not _APPLICATION_ID.fullmatch(application_id)
        or application_id in (".", "..")
    ):
        raise InvalidOptionError(
            f"application id {application_id!r} is not a Kafka Streams application.id: 1 to "
            "249 characters of a-z, A-Z, 0-9, '.', '_' and '-' (not '.' or '..')",
            code="INVALID_APPLICATION_ID",
        )
    return application_id


def app_dir_of(state_dir: str, application_id: str) -> str:
    """``<state_dir>/<application_id>``, the application id checked (``check_application_id``).

    Raises:
        InvalidOptionError: a bad application id.
    """
    return os.path.join(state_dir, check_application_id(application_id))


def application_id_of(app_dir: str) -> str:
    """The application id an application directory is named by (checked).

    Raises:
        InvalidOptionError: a directory name no application id has.
    """
    return check_application_id(os.path.basename(os.path.normpath(app_dir)))


def changelog_topic(application_id: str, store: str) -> str:
    """Kafka's changelog topic of a store (``ProcessorStateManager.storeChangelogTopic``).

    Raises:
        InvalidOptionError: a bad application id.
    """
    return f"{check_application_id(application_id)}-{store}-changelog"


def kafka_version(text: str) -> tuple[int, int]:
    """``(major, minor)`` of a Kafka Streams version such as ``"3.9.1"`` or ``"4.3"``.

    Raises:
        InvalidOptionError: not a version, or one before 3.0 (UNSUPPORTED_KAFKA_VERSION).
    """
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:[-.][\w.-]*)?\s*", str(text))
    if match is None:
        raise InvalidOptionError(
            f"kafka_version is {text!r}; give the Kafka Streams version the application runs, "
            "e.g. '3.9.1' or '4.3.0'",
            code="UNSUPPORTED_KAFKA_VERSION",
        )
    version = (int(match.group(1)), int(match.group(2)))
    if version < OLDEST_VERSION:
        raise InvalidOptionError(
            f"kafka_version {text!r} is older than 3.0; state directories are written for "
            "Kafka Streams 3.0 and later",
            code="UNSUPPORTED_KAFKA_VERSION",
        )
    return version


def table_format_version(version: tuple[int, int]) -> int:
    """The SST ``format_version`` the RocksDB of Kafka ``version`` reads: 5 up to 3.9 (RocksDB
    <= 7.9.2 reads up to 5), 6 from 4.0 (RocksDB 9.7.3; Kafka's upgrade guide: "file format
    version change from 5 to 6")."""
    return 6 if version >= FORMAT_6_VERSION else 5


@dataclass(frozen=True)
class KafkaFamilies:
    """The column families of a Kafka store: ``data`` (where it writes) and the older formats'
    it accepts and upgrades from (``legacy``); ``default`` is in every database."""

    store_class: str
    data: str
    legacy: tuple[str, ...] = ()

    @property
    def accepted(self) -> frozenset[str]:
        """Every family Kafka's store opens (bar ``offsets``)."""
        return frozenset({DEFAULT_CF, self.data, *self.legacy})


def kafka_families(kind: str, params: dict[str, Any]) -> KafkaFamilies:
    """The column families Kafka's store for a store of ``kind`` with ``params`` declares
    (see the module doc; one database, or each segment's)."""
    headers, timestamped = bool(params.get("headers")), bool(params.get("timestamped"))
    if kind == "timestamped":
        if headers:
            return KafkaFamilies(
                "RocksDBTimestampedStoreWithHeaders", TIMESTAMPED_WITH_HEADERS_CF, (TIMESTAMPED_CF,)
            )
        return KafkaFamilies("RocksDBTimestampedStore", TIMESTAMPED_CF)
    if kind == "window":
        if timestamped and headers:
            return KafkaFamilies(
                "RocksDBTimestampedStoreWithHeaders", TIMESTAMPED_HEADERS_CF, (TIMESTAMPED_CF,)
            )
        if timestamped:
            return KafkaFamilies("RocksDBTimestampedStore", TIMESTAMPED_CF)
        if headers:
            return KafkaFamilies("RocksDBMigratingWindowStoreWithHeaders", WINDOW_HEADERS_CF)
    if kind == "session" and headers:
        return KafkaFamilies("RocksDBMigratingSessionStoreWithHeaders", SESSION_HEADERS_CF)
    return KafkaFamilies("RocksDBStore", DEFAULT_CF)


#: Every column family some Kafka store declares, and which stores (for messages).
KAFKA_FAMILY_OWNERS: dict[str, str] = {
    TIMESTAMPED_CF: "timestamped stores (a timestamped key-value or window store)",
    TIMESTAMPED_WITH_HEADERS_CF: "timestamped stores with headers (4.3+)",
    WINDOW_HEADERS_CF: "window stores with headers (4.3+)",
    SESSION_HEADERS_CF: "session stores with headers (4.3+)",
    OFFSETS_CF: "every store of Kafka 4.3+",
}


def check_families(found: list[str], accepted: frozenset[str], where: str, declared: str) -> None:
    """Refuse a database holding a column family Kafka's store of the declared kind does not
    open (Kafka itself would fail to open it).

    Raises:
        InvalidOptionError: a family of another Kafka store (WRONG_STORE_KIND) or of none
            (UNKNOWN_COLUMN_FAMILY), naming it, the database and what is accepted.
    """
    extra = [f for f in found if f not in accepted and f != OFFSETS_CF]
    if not extra:
        return
    known = [f for f in extra if f in KAFKA_FAMILY_OWNERS]
    accepted_text = ", ".join(sorted(accepted | {OFFSETS_CF}))
    if known:
        owners = "; ".join(f"{f!r} belongs to {KAFKA_FAMILY_OWNERS[f]}" for f in known)
        raise InvalidOptionError(
            f"the RocksDB database at {where} is not a {declared}: {owners}. It accepts "
            f"column families {accepted_text}; declare the store's kind and parameters as "
            "the application builds it",
            code="WRONG_STORE_KIND",
        )
    raise InvalidOptionError(
        f"the RocksDB database at {where} has column families "
        f"{', '.join(map(repr, extra))} that no Kafka Streams store has (a {declared} opens "
        f"{accepted_text}); Kafka would refuse to open it",
        code="UNKNOWN_COLUMN_FAMILY",
    )


# -- directories --------------------------------------------------------------------------------


def task_dirs(app_dir: str) -> list[tuple[int, int, str]]:
    """``(subtopology, partition, path)`` of every task directory of an application, sorted.
    Named topologies' ``__name__`` directories are not read (experimental, deprecated in
    Kafka 4.0: KAFKA-17805)."""
    found = []
    for name in os.listdir(app_dir):
        match = TASK_DIR.fullmatch(name)
        path = os.path.join(app_dir, name)
        if match and os.path.isdir(path):
            found.append((int(match.group(1)), int(match.group(2)), path))
    return sorted(found)


def segment_id_of(name: str, store: str, interval: int, where: str) -> int:
    """The segment id of a segment directory ``name`` of ``store`` (Kafka's
    ``AbstractSegments.segmentIdFromSegmentName``: ``<store>.<start>``, and the older
    ``<store>:<start>`` and ``<store>-yyyyMMddHHmm`` (UTC)), where ``start`` must be a
    multiple of the segment ``interval``.

    Raises:
        InvalidOptionError: a start that is not a multiple of ``interval``
            (SEGMENT_INTERVAL_MISMATCH).
        CorruptDataError: a name that is not a segment's (BAD_SEGMENT_NAME).
    """
    suffix = name[len(store) + 1 :]
    separator = name[len(store) : len(store) + 1]
    start: int | None = None
    if name.startswith(store) and separator in (".", ":") and re.fullmatch(r"-?\d+", suffix):
        start = int(suffix)
    elif name.startswith(store) and separator == "-" and re.fullmatch(r"\d{12}", suffix):
        try:
            when = dt.datetime.strptime(suffix, _LEGACY_DATE).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            start = None
        else:
            start = int(when.timestamp() * 1000)
    if start is None or start < 0:
        raise CorruptDataError(
            f"{os.path.join(where, name)} is not a segment of store {store!r} (Kafka names "
            f"them {store}.<segment start ms>)",
            code="BAD_SEGMENT_NAME",
        )
    if start % interval:
        raise InvalidOptionError(
            f"segment {os.path.join(where, name)} starts at {start} ms, not a multiple of the "
            f"store's segmentInterval {interval} ms: the application uses another segment "
            "interval; declare the store with the application's",
            code="SEGMENT_INTERVAL_MISMATCH",
        )
    return start // interval


def segment_dirs(store_dir: str, store: str, interval: int) -> list[tuple[int, str]]:
    """``(segment id, path)`` of every segment database of a window or session store's
    directory, by id.

    Raises:
        InvalidOptionError: SEGMENT_INTERVAL_MISMATCH (see ``segment_id_of``).
        CorruptDataError: an entry that is not a segment, or two for one segment.
    """
    found: dict[int, str] = {}
    for name in sorted(os.listdir(store_dir)):
        path = os.path.join(store_dir, name)
        seg = segment_id_of(name, store, interval, store_dir)
        if seg in found:
            raise CorruptDataError(
                f"{found[seg]} and {path} are both segment {seg} of store {store!r}",
                code="BAD_SEGMENT_NAME",
            )
        found[seg] = path
    return sorted(found.items())


def segment_name(store: str, seg: int, interval: int) -> str:
    """``AbstractSegments.segmentName``: ``<store>.<segment id * interval>``."""
    return f"{store}.{seg * interval}"


# -- offsets --------------------------------------------------------------------------------------


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """The entries of an ``OffsetCheckpoint`` file (``{}`` if there is none), as Kafka's
    ``OffsetCheckpoint.read`` takes them: version 0, the count, ``topic partition offset``
    lines (offsets below 0 other than -4, unknown, are skipped).

    Raises:
        CorruptDataError: a malformed file, naming it and the line (BAD_CHECKPOINT).
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return {}
    if lines and lines[-1] == "":
        lines.pop()

    def bad(detail: str) -> CorruptDataError:
        return CorruptDataError(f"checkpoint file {path}: {detail}", code="BAD_CHECKPOINT")

    try:
        version, expected = int(lines[0]), int(lines[1])
    except (IndexError, ValueError):
        raise bad("no version and entry count on its first two lines") from None
    if version != CHECKPOINT_VERSION:
        raise bad(f"unknown version {version} (Kafka writes {CHECKPOINT_VERSION})")
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2:]:  # a skipped offset does not count (Kafka: --expectedSize)
        parts = line.split()
        if len(parts) != 3:
            raise bad(f"malformed line {line!r}")
        try:
            partition, offset = int(parts[1]), int(parts[2])
        except ValueError:
            raise bad(f"malformed line {line!r}") from None
        if offset >= 0 or offset == OFFSET_UNKNOWN:
            entries[(parts[0], partition)] = offset
        else:
            expected -= 1
    if len(entries) != expected:
        raise bad(f"expected {expected} entries but found {len(entries)}")
    return entries


def write_checkpoint(path: str, entries: dict[tuple[str, int], int]) -> None:
    """Write an ``OffsetCheckpoint`` file as Kafka does: to ``<path>.tmp``, synced, then moved
    over ``path`` (an empty map deletes the file)."""
    if not entries:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in entries.items()]
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def offsets_rows(offsets: dict[tuple[str, int], int]) -> tuple[pa.Array, pa.Array]:
    """The rows of a closed store's ``offsets`` column family (KIP-1035): each
    ``"<topic>-<partition>"`` -> its offset, and ``"status"`` -> 0, sorted by key."""
    rows = {f"{t}-{p}".encode(): o.to_bytes(8, "big", signed=True) for (t, p), o in offsets.items()}
    rows[STATUS_KEY] = bytes(8)
    keys = sorted(rows)
    return pa.array(keys, pa.binary()), pa.array([rows[k] for k in keys], pa.binary())


def offsets_from_rows(
    keys: list[bytes], values: list[bytes], where: str
) -> tuple[dict[tuple[str, int], int], int | None]:
    """``({(topic, partition): offset}, status)`` from an ``offsets`` column family's rows
    (``position`` ignored; status None if absent).

    Raises:
        CorruptDataError: a key or value not in KIP-1035's layout.
    """
    offsets: dict[tuple[str, int], int] = {}
    status = None
    for key, value in zip(keys, values, strict=True):
        if len(value) != 8 and key != POSITION_KEY:
            raise CorruptDataError(
                f"offsets column family of {where}: {key!r} holds {len(value)} bytes, not a "
                "long", code="BAD_CHECKPOINT",
            )  # fmt: skip
        if key == STATUS_KEY:
            status = int.from_bytes(value, "big", signed=True)
            continue
        if key == POSITION_KEY:
            continue
        topic, _, partition = key.decode("utf-8", "replace").rpartition("-")
        if not topic or not partition.isdigit():
            raise CorruptDataError(
                f"offsets column family of {where}: key {key!r} is not '<topic>-<partition>'",
                code="BAD_CHECKPOINT",
            )
        offsets[(topic, int(partition))] = int.from_bytes(value, "big", signed=True)
    return offsets, status


# -- the application's lock -----------------------------------------------------------------------


@contextlib.contextmanager
def app_dir_unlocked(app_dir: str) -> Iterator[None]:
    """Hold the application directory's ``.lock`` while reading or writing its task dirs:
    refused if a running Kafka Streams instance holds it.

    Kafka's ``StateDirectory.lockStateDirectory`` takes it with ``FileChannel.tryLock``, a
    POSIX ``fcntl`` record lock on Linux; taking the same lock here (``lockf``) fails while
    another process holds it, and keeps an instance from starting over the directory until
    this is done. No ``.lock`` file: no instance has run here (Kafka creates it); none is made.

    Raises:
        InvalidOptionError: the lock is held (STATE_DIR_LOCKED), naming the directory.
    """
    path = os.path.join(app_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise InvalidOptionError(
                f"the Kafka Streams state directory {app_dir} is locked by a running instance "
                f"({path}); stop the application on this host first",
                code="STATE_DIR_LOCKED",
            ) from None
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "CHECKPOINT",
    "DB_FILE_DIR",
    "KAFKA_FAMILY_OWNERS",
    "OFFSETS_CF",
    "KafkaFamilies",
    "app_dir_unlocked",
    "changelog_topic",
    "check_families",
    "kafka_families",
    "kafka_version",
    "offsets_from_rows",
    "offsets_rows",
    "read_checkpoint",
    "segment_dirs",
    "segment_id_of",
    "segment_name",
    "table_format_version",
    "task_dirs",
    "write_checkpoint",
]
