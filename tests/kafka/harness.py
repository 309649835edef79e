"""Client of the Kafka harness: Kafka Streams' own state stores, run in one long-lived JVM.

The JVM (``tests/kafka/src/main/java/statestore/harness/Harness.java``) reads one JSON request per
line on stdin and answers one JSON line on stdout. Bytes travel as lowercase hex strings, null as
JSON null. :func:`build` compiles it with Maven once per Kafka version and content hash of
``pom.xml`` and the Java sources, into a cache directory outside the checkout; :class:`KafkaHarness`
starts the JVM and speaks the protocol. The session fixtures ``kafka_harness`` (Kafka Streams
4.3.1), ``kafka_harness_44`` (4.4.0) and ``kafka_harness_3`` (3.9.1) in
``tests/kafka/conftest.py`` do both.

Kafka versions: ``build(kafka_version=...)`` takes a 4.3.x, 4.4.x or 3.9.x release
(:data:`KAFKA_VERSION`, :data:`KAFKA44_VERSION`, :data:`KAFKA3_VERSION`). The 4.4 build (Maven
profile ``kafka44``) compiles 4.3's ``src/kafka43/java`` plus ``src/kafka44/java`` (KIP-1356's
header query classes, whose ``ReadOnlyRecord`` results it encodes ``{"key", "v", "t", "h"}``);
the 4.3 and 3.9 builds compile ``src/pre44/java`` there (a stand-in query class, which every store
refuses as an unknown query type). The 3.9 build (Maven profile ``kafka39``) compiles ``src/kafka39/java``
instead of ``src/kafka43/java``: 3.9 has no KIP-1271 header-aware stores (so neither
``timestamped_headers``, ``timestamped_window_headers`` nor ``session_headers``: see
:data:`KAFKA3_VARIANTS` and :attr:`KafkaHarness.variants`), its RocksDBs have no KIP-1035
``offsets`` column family, and its RocksDB is 7.9.2 (4.3's is 10.1.3).

Protocol of :meth:`KafkaHarness.run` (the brief of issue 23 is its specification):

- An op is ``{"m": <Kafka Java method name>, "a": [args...], "rt": <record time ms, >= 0>}``; the
  variant's store (built with ``Stores.*`` persistent RocksDB suppliers, ``Serdes.Bytes()`` keys,
  ``Serdes.ByteArray()`` values, change logging on, caching off) is called from a processor of a
  ``TopologyTestDriver`` that receives one forwarded record per op with that record time, so
  ``context.timestamp()`` is the op's ``rt``.
- Answers: bytes hex; ``ValueAndTimestamp`` ``{"v", "t"}``; ``ValueTimestampHeaders`` ``{"v", "t",
  "h"}``; ``AggregationWithHeaders`` ``{"v", "h"}``; headers ``[[key, hex|None], ...]``;
  ``KeyValue`` ``[k, v]``; ``Windowed`` ``{"k", "s", "e"}``; ``VersionedRecord`` ``{"v", "t", "to"}``;
  iterators as lists; an exception as ``{"error": SimpleClassName, "msg": ...}`` (the run goes on);
  ``"m": "query"`` (IQv2) as ``{"ok", "failure", "result"}`` (plus ``"msg"`` on failure).

Cost, measured on the 2-core machine with state dirs on tmpfs: about 20 ms per run of 30 ops for
a store with one RocksDB, plus about 12 ms per further window/session segment (each segment is a
RocksDB that Kafka opens and closes and the dump opens read-only); JVM start 0.7 s; the Maven
build 5 s with a warm ``~/.m2`` (about 45 s when it first downloads Kafka's jars). Kafka 3.9.1 costs
the same: about 25 ms per 30-op key-value run, JVM start 0.7 s, its build 8 s with a warm ``~/.m2``
(52 s from an empty Maven repository, 107 MB with Maven's plugins). The JVM's response also carries
``timing_us`` (driver start, ops, close, dump) for profiling. Kafka 4.4.0's build takes about 9 s
with a warm ``~/.m2`` (its JVM starts in 0.7 s, same RocksDB 10.1.3 as 4.3.1).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
SOURCES = HERE / "src"
MAIN_CLASS = "statestore.harness.Harness"

#: What a machine needs for the harness, said by every failure to build or start it.
INSTALL_HINT = (
    "the Kafka harness needs a Java 17 JDK (java, javac) and Maven 3.8+ (mvn) on PATH, and Maven "
    "Central reachable for org.apache.kafka:kafka-streams 4.3.1 (and 3.9.1 for kafka_harness_3, "
    "4.4.0 for kafka_harness_44) "
    "(Debian/Ubuntu: apt-get install openjdk-17-jdk-headless maven)"
)

#: The Kafka Streams release of the ``kafka_harness`` fixture and of :func:`build` by default.
KAFKA_VERSION = "4.3.1"
#: The Kafka Streams 3.x release of the ``kafka_harness_3`` fixture.
KAFKA3_VERSION = "3.9.1"
#: The Kafka Streams 4.4 release of the ``kafka_harness_44`` fixture: the first whose header-aware
#: stores answer IQv2 (KAFKA-20703) and that has KIP-1356's header query types.
KAFKA44_VERSION = "4.4.0"
#: Per release line, its Maven profile in ``pom.xml`` (None: the default build, ``src/kafka43/java``).
_PROFILES: dict[str, str | None] = {"4.3": None, "4.4": "kafka44", "3.9": "kafka39"}

VARIANTS = (
    "key_value",
    "timestamped",
    "timestamped_headers",
    "versioned",
    "window",
    "timestamped_window",
    "window_headers",
    "timestamped_window_headers",
    "window_duplicates",
    "session",
    "session_headers",
)
#: The variants Kafka Streams 4.3.1 has (``window_headers``: see ``Variant.of`` in the Java sources).
KAFKA_VARIANTS = tuple(v for v in VARIANTS if v != "window_headers")
#: The KIP-1271 header-aware variants (Kafka 4.3+).
HEADER_VARIANTS = ("timestamped_headers", "timestamped_window_headers", "session_headers")
#: The variants Kafka Streams 3.9.1 has: those of 4.3.1 without KIP-1271's header-aware stores.
KAFKA3_VARIANTS = tuple(v for v in KAFKA_VARIANTS if v not in HEADER_VARIANTS)

SERIALIZER_TYPES = ("string", "long", "integer", "short", "double", "float", "boolean", "bytes", "uuid")


class HarnessBuildError(RuntimeError):
    """Maven or Java is missing, or the build failed; the message says what to install."""


class HarnessRequestError(RuntimeError):
    """The JVM refused a request (unknown variant or command, bad params); it stays usable."""


class HarnessDiedError(RuntimeError):
    """The JVM exited or broke the protocol; the message carries its stderr tail."""


@dataclass(frozen=True)
class Build:
    """A compiled harness: its classes directory and the dependency classpath."""

    directory: Path
    classes: Path
    classpath: str
    kafka_version: str = KAFKA_VERSION

    def command(self, java: str = "java", tmpdir: str | None = None) -> list[str]:
        """The command line that starts the harness JVM.

        Each run's state directory goes under ``tmpdir`` (default :func:`fast_tmpdir`): on a
        tmpfs, RocksDB's file creation and syncs cost a third of what they cost on disk.
        """
        tmp = tmpdir or fast_tmpdir()
        classpath = f"{self.classes}{os.pathsep}{self.classpath}"
        return [java, f"-Djava.io.tmpdir={tmp}", "-XX:+UseSerialGC", "-cp", classpath, MAIN_CLASS]


def fast_tmpdir() -> str:
    """``/dev/shm`` where it is a writable directory (Linux tmpfs), else the usual temp dir."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


@dataclass(frozen=True)
class RunResult:
    """What one run (or restore) of Kafka's store produced.

    Attributes:
        answers: one JSON answer per op, in order.
        changelog: the changelog records in order, ``{"k": hex, "v": hex|None, "t": int,
            "h": [[str, hex|None], ...]}``.
        cfs: every entry of every column family Kafka wrote except ``offsets``, as
            ``[segment_id|None, cf_name, key_hex, value_hex]``, sorted (segment None first, then
            segment id, column family, key, value); ``segment_id`` is the ``<store>.<n>``
            directory's ``n // segment_interval``, None for ``rocksdb/<store>``.
        segment_interval: the supplier's segment interval (None for key-value stores).
        params: the params as Kafka applied them (defaults filled in).
        dbs: ``[segment_id|None, dir relative to the task dir, [every column family, offsets
            included]]`` per RocksDB Kafka created.
    """

    answers: list[Any]
    changelog: list[dict[str, Any]]
    cfs: list[list[Any]]
    segment_interval: int | None
    params: dict[str, Any] = field(default_factory=dict)
    dbs: list[list[Any]] = field(default_factory=list)


def _cfs_order(entry: list[Any]) -> tuple[bool, int, str, str, str]:
    segment, cf, key, value = entry
    return (segment is not None, segment or 0, cf, key, value)


def _profile(kafka_version: str) -> str | None:
    """The Maven profile of ``kafka_version``'s release line (4.3, 4.4 or 3.9)."""
    line = ".".join(kafka_version.split(".")[:2])
    if line not in _PROFILES or len(kafka_version.split(".")) != 3:
        raise ValueError(
            f"kafka_version={kafka_version!r}: the harness builds a 4.3.x, 4.4.x or 3.9.x release of "
            f"Kafka Streams (x.y.z), e.g. {KAFKA_VERSION!r}, {KAFKA44_VERSION!r} or {KAFKA3_VERSION!r}"
        )
    return _PROFILES[line]


def source_hash(kafka_version: str = KAFKA_VERSION) -> str:
    """sha256 over the Kafka version, ``pom.xml`` and every file under ``src/`` (paths and contents)."""
    digest = hashlib.sha256()
    digest.update(f"kafka-streams {kafka_version}".encode())
    digest.update(b"\0")
    files = [POM, *sorted(p for p in SOURCES.rglob("*") if p.is_file())]
    for path in files:
        digest.update(str(path.relative_to(HERE)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/state_store/kafka-harness`` (default ``~/.cache/...``), outside the checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "state_store" / "kafka-harness"


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def build(root: Path | None = None, *, mvn: str | None = None, kafka_version: str = KAFKA_VERSION) -> Build:
    """Compile the harness against Kafka Streams ``kafka_version`` with Maven once per source hash
    (which covers the version); reuse the cached build after that.

    The build goes to a fresh directory beside the cache entry and is renamed into place when
    complete, so an interrupted or concurrent build never leaves a half-built entry.

    Raises:
        ValueError: ``kafka_version`` is not a 4.3.x, 4.4.x or 3.9.x release.
        HarnessBuildError: ``java``/``mvn`` is missing or Maven failed (with its output's tail).
    """
    profile = _profile(kafka_version)
    root = cache_root() if root is None else root
    target = root / source_hash(kafka_version)
    done = target / "classpath.txt"
    if done.is_file() and not all(Path(p).is_file() for p in done.read_text().strip().split(os.pathsep)):
        shutil.rmtree(target, ignore_errors=True)  # Maven's local repository lost a jar: build anew
    if not done.is_file():
        for tool in ("java", "javac"):
            if shutil.which(tool) is None:
                raise HarnessBuildError(f"`{tool}` is not on PATH: {INSTALL_HINT}")
        mvn = mvn or shutil.which("mvn")
        if mvn is None:
            raise HarnessBuildError(f"`mvn` is not on PATH: {INSTALL_HINT}")
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="build-", dir=root))
        try:
            out = scratch / "out"
            command = [
                mvn, "-q", "-B", "-f", str(POM), f"-Dharness.out={out}", f"-Dkafka.version={kafka_version}",
                *([f"-P{profile}"] if profile else []),
                "package", "dependency:build-classpath",
            ]
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not (out / "classpath.txt").is_file():
                raise HarnessBuildError(
                    f"building the Kafka {kafka_version} harness failed ({' '.join(command)} exited "
                    f"{proc.returncode}); {INSTALL_HINT}.\nMaven output (tail):\n"
                    f"{_tail(proc.stdout + proc.stderr)}"
                )
            try:
                os.rename(out, target)
            except OSError:
                if not done.is_file():  # not a concurrent build that won the rename
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return Build(target, target / "classes", done.read_text().strip(), kafka_version)


class KafkaHarness:
    """One harness JVM; requests are answered in order (a lock makes concurrent callers take turns).

    Use as a context manager or call :meth:`close`.

    Attributes:
        kafka_version: the Kafka Streams release the JVM runs (``AppInfoParser.getVersion()``).
        variants: the store variants that release has (:data:`KAFKA_VARIANTS` for 4.3.1,
            :data:`KAFKA3_VARIANTS` for 3.9.1), as the JVM reports them.
        versions: ``{"kafka", "rocksdb", "java"}`` versions the JVM reports.

    Raises:
        HarnessDiedError: from any call once the JVM has exited or broken the protocol.
    """

    def __init__(self, command: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._next_id = 0
        # Closed by close(): it lives as long as the JVM whose stderr it keeps.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        try:
            pong = self._call({"cmd": "ping"})
        except BaseException:
            self.close()
            raise
        self.versions: dict[str, str] = {k: v for k, v in pong.items() if k not in ("id", "variants")}
        self.kafka_version: str = pong["kafka"]
        self.variants: tuple[str, ...] = tuple(pong["variants"])

    @classmethod
    def start(cls, root: Path | None = None, *, kafka_version: str = KAFKA_VERSION) -> KafkaHarness:
        """Build (or reuse the cached build) for ``kafka_version`` and start the JVM."""
        return cls(build(root, kafka_version=kafka_version).command())

    def __enter__(self) -> KafkaHarness:  # noqa: PYI034 (typing.Self needs Python 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ask the JVM to quit and wait for it (killing it if it does not quit within 30 s)."""
        with self._lock:
            if self._stderr.closed:
                return
            if self._proc.poll() is None:
                try:
                    assert self._proc.stdin is not None
                    self._proc.stdin.write('{"cmd": "quit"}\n')
                    self._proc.stdin.close()
                    self._proc.wait(timeout=30)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None and not stream.closed:
                    stream.close()
            self._stderr.close()

    def stderr_tail(self, lines: int = 40) -> str:
        """The last lines the JVM wrote to stderr."""
        self._stderr.flush()
        self._stderr.seek(0)
        return _tail(self._stderr.read().decode("utf-8", "replace"), lines)

    def _died(self, what: str) -> HarnessDiedError:
        code = self._proc.poll()
        state = "is still running" if code is None else f"exited with {code}"
        return HarnessDiedError(
            f"the Kafka harness JVM {what} (it {state}); {INSTALL_HINT}.\n"
            f"JVM stderr (tail):\n{self.stderr_tail()}"
        )

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            request = {**request, "id": self._next_id}
            stdin, stdout = self._proc.stdin, self._proc.stdout
            if stdin is None or stdout is None or stdin.closed:
                raise self._died("is closed")
            try:
                stdin.write(json.dumps(request, separators=(",", ":")) + "\n")
                stdin.flush()
            except OSError as exc:
                raise self._died(f"did not take a request ({exc})") from exc
            line = stdout.readline()
            if not line:
                self._proc.wait()
                raise self._died("closed its output")
            try:
                response: dict[str, Any] = json.loads(line)
            except ValueError as exc:
                raise self._died(f"printed a line that is not JSON: {line[:200]!r}") from exc
            if response.get("id") != request["id"]:
                raise self._died(f"answered request {response.get('id')} to request {request['id']}")
        if not response.pop("ok", False):
            raise HarnessRequestError(
                f"{response.get('error')}: {response.get('msg')}\n{response.get('trace', '')}".rstrip()
            )
        return response

    # -- partitioner and serdes ---------------------------------------------------------------

    def murmur2(self, keys: Iterable[bytes]) -> list[int]:
        """Kafka's ``Utils.murmur2`` of each key (a signed 32-bit int)."""
        return list(self._call({"cmd": "murmur2", "keys": [bytes(k).hex() for k in keys]})["result"])

    def murmur2_partitions(self, keys: Iterable[bytes], num_partitions: int) -> list[int]:
        """``BuiltInPartitioner.partitionForKey(key, n)`` = ``toPositive(murmur2(key)) % n``."""
        request = {"cmd": "partitions", "n": num_partitions, "keys": [bytes(k).hex() for k in keys]}
        return list(self._call(request)["result"])

    def serialize(self, type: str, values: Iterable[Any]) -> list[bytes | None]:
        """Kafka's serializer for ``type`` (one of :data:`SERIALIZER_TYPES`) applied to each value.

        ``bytes`` values are given as bytes, ``uuid`` values as ``uuid.UUID`` or str; None
        serializes to None as Kafka's serializers do.
        """
        encoded: list[Any] = []
        for value in values:
            if value is None:
                encoded.append(None)
            elif type == "bytes":
                encoded.append(bytes(value).hex())
            elif type in ("string", "uuid"):
                encoded.append(str(value))
            elif type in ("double", "float"):
                encoded.append(float(value))
            elif type == "boolean":
                encoded.append(bool(value))
            else:
                encoded.append(int(value))
        result = self._call({"cmd": "serialize", "type": type, "values": encoded})["result"]
        return [None if h is None else bytes.fromhex(h) for h in result]

    # -- stores ---------------------------------------------------------------------------------

    def _result(self, response: dict[str, Any]) -> RunResult:
        return RunResult(
            answers=response["answers"],
            changelog=response["changelog"],
            cfs=sorted(response["cfs"], key=_cfs_order),
            segment_interval=response["segment_interval"],
            params=response["params"],
            dbs=response["dbs"],
        )

    def _check_variant(self, variant: str) -> None:
        if variant in KAFKA_VARIANTS and variant not in self.variants:
            raise HarnessRequestError(
                f"variant {variant!r} does not exist in Kafka Streams {self.kafka_version} (KIP-1271's "
                f"header-aware stores came with 4.3); this harness has: {', '.join(self.variants)}"
            )

    def run(self, variant: str, params: dict[str, Any], ops: list[dict[str, Any]]) -> RunResult:
        """Run ``ops`` against a fresh Kafka store of ``variant`` (see the module docstring).

        Raises:
            HarnessRequestError: unknown variant (``window_headers`` does not exist in Kafka
                4.3.1; the header variants do not exist in 3.9.1: see :attr:`variants`) or params
                Kafka refuses (e.g. retention below window size).
        """
        self._check_variant(variant)
        return self._result(self._call({"cmd": "run", "variant": variant, "params": params, "ops": ops}))

    def restore(
        self,
        variant: str,
        params: dict[str, Any],
        records: list[dict[str, Any]],
        ops: list[dict[str, Any]] | None = None,
    ) -> RunResult:
        """Restore ``records`` (as in :attr:`RunResult.changelog`) into a fresh store, then run ``ops``.

        The store is built and initialised by a ``TopologyTestDriver`` exactly as for
        :meth:`run`, so its ``init`` registers its restore callback with the task's real
        ``ProcessorStateManager``, which picks the record converter by the store's type
        (``StateManagerUtil.converterForStore``: ``rawValueToTimestampedValue`` for timestamped
        stores, ``rawValueToHeadersValue`` / ``rawValueToSessionHeadersValue`` for header stores,
        identity otherwise). The records, as ``ConsumerRecord`` s of partition 0 of
        ``harness-store-changelog`` at offsets 0, 1, ... with CreateTime ``t`` and headers ``h``,
        then go through ``ProcessorStateManager.restore`` itself (converter, batching adapter,
        the store's callback) in one batch, as one poll of the restore consumer would hand them
        over. Only ``StoreChangelogReader`` (the consumer loop, which also drops null keys) is
        left out. ``changelog`` of the result holds only what ``ops`` logged.

        Raises:
            HarnessRequestError: as :meth:`run`.
        """
        self._check_variant(variant)
        request = {"cmd": "restore", "variant": variant, "params": params, "records": records, "ops": ops or []}
        return self._result(self._call(request))
