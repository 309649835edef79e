"""The JVMs behind tests/kafka/cluster.py: the broker's classpath (Maven, cached), the application's
command (the harness' Maven build), and the JSON-lines transport to a JVM; the errors that say what
to install. See ``tests/kafka/cluster.py`` for the broker and the applications themselves."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from tests.kafka.harness import KAFKA_VERSION, HarnessBuildError, build, cache_root

HERE = Path(__file__).resolve().parent
BROKER_POM = HERE / "broker" / "pom.xml"
#: The Apache Kafka release of the test broker.
BROKER_VERSION = "4.3.1"
APP_MAIN_CLASS = "statestore.app.App"

#: What a machine needs for the broker and the applications, said by every failure to start them.
INSTALL_HINT = (
    "the Kafka interop tests need a Java 17 JDK (java, javac), Maven 3.8+ (mvn) and Maven Central "
    f"reachable for org.apache.kafka:kafka_2.13 {BROKER_VERSION} and kafka-streams (Debian/Ubuntu: "
    "apt-get install openjdk-17-jdk-headless maven), and the Python client confluent-kafka>=2.6 "
    "(pip install -e '.[test]')"
)
log = logging.getLogger("tests.kafka.cluster")


class KafkaUnavailableError(RuntimeError):
    """The broker or an application could not be built or started; the message says what to install."""


class AppRequestError(RuntimeError):
    """The application JVM refused a request (bad config, failed query, timeout); it stays usable."""


def client() -> Any:
    """The ``confluent_kafka`` module (with ``.admin``), or a failure saying what to install."""
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError as exc:
        raise KafkaUnavailableError(f"confluent_kafka is not importable ({exc}): {INSTALL_HINT}") from exc
    return confluent_kafka


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file."""
    try:
        return "\n".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def broker_classpath(root: Path | None = None, *, kafka_version: str = BROKER_VERSION) -> str:
    """The broker's runtime classpath, resolved by Maven once per version and pom hash.

    Cached as ``<cache_root()>/broker-<sha256>/classpath.txt`` (the harness' cache directory); a
    classpath whose jars Maven's local repository lost is resolved anew.

    Raises:
        KafkaUnavailableError: ``java`` or ``mvn`` is missing, or Maven failed (with its output).
    """
    digest = hashlib.sha256(f"kafka_2.13 {kafka_version}\0".encode() + BROKER_POM.read_bytes())
    root = cache_root() if root is None else root
    target = root / f"broker-{digest.hexdigest()}"
    done = target / "classpath.txt"
    if done.is_file() and not all(Path(p).is_file() for p in done.read_text().strip().split(os.pathsep)):
        shutil.rmtree(target, ignore_errors=True)
    if not done.is_file():
        mvn = shutil.which("mvn")
        if shutil.which("java") is None or mvn is None:
            raise KafkaUnavailableError(f"`java` or `mvn` is not on PATH: {INSTALL_HINT}")
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="broker-", dir=root))
        try:
            out = scratch / "out"
            command = [mvn, "-q", "-B", "-f", str(BROKER_POM), f"-Dbroker.out={out}",
                       f"-Dkafka.version={kafka_version}", "dependency:build-classpath"]
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not (out / "classpath.txt").is_file():
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
                raise KafkaUnavailableError(
                    f"resolving the Kafka {kafka_version} broker failed ({' '.join(command)} exited "
                    f"{proc.returncode}); {INSTALL_HINT}.\nMaven output (tail):\n{tail}"
                )
            try:
                os.rename(out, target)
            except OSError:
                if not done.is_file():
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return done.read_text().strip()


class JsonLinesProcess:
    """A JVM that answers one JSON line per JSON request line (the harness' protocol, ids checked)."""

    def __init__(self, command: list[str]) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True, encoding="utf-8", bufsize=1)

    def stderr_tail(self, lines: int = 40) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-lines:])

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            rid = next(self._ids)
            stdin, stdout = self._proc.stdin, self._proc.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(json.dumps({**request, "id": rid}) + "\n")
                stdin.flush()
                line = stdout.readline()
            except (OSError, ValueError) as exc:
                line = ""
                log.debug("application JVM pipe: %s", exc)
            if not line:
                code = self._proc.poll()
                raise KafkaUnavailableError(
                    f"the Kafka Streams application JVM stopped answering (exit {code}); {INSTALL_HINT}.\n"
                    f"JVM stderr (tail):\n{self.stderr_tail()}"
                )
            response: dict[str, Any] = json.loads(line)
        if response.get("id") != rid:
            raise KafkaUnavailableError(f"the application answered request {response.get('id')} to {rid}")
        if not response.pop("ok", False):
            raise AppRequestError(f"{response.get('error')}: {response.get('msg')}\n{response.get('trace', '')}")
        return response

    def close(self, timeout: float = 90.0) -> None:
        if self._stderr.closed:
            return
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write('{"cmd": "quit"}\n')
                self._proc.stdin.close()
                self._proc.wait(timeout=timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()


def app_command(kafka_version: str = KAFKA_VERSION, java: str = "java", heap: str = "256m") -> list[str]:
    """The command line of the application JVM of ``kafka_version`` (the harness' build, cached).

    Raises:
        KafkaUnavailableError: the build failed (Java, Maven missing: the message says what to install).
    """
    try:
        b = build(kafka_version=kafka_version)
    except HarnessBuildError as exc:
        raise KafkaUnavailableError(str(exc)) from exc
    return [java, f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-cp", f"{b.classes}{os.pathsep}{b.classpath}", APP_MAIN_CLASS]
