"""Fixtures only: an S3-compatible server (moto) on 127.0.0.1 for the object-storage tests."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest


class S3Server:
    """moto's S3 in a thread, serving one request at a time.

    S3 is linearizable per key (a conditional put either wins or gets 412); moto's
    If-None-Match check and its put are two steps, so requests are serialized here to model
    the real service. The writers under test stay fully concurrent. ``honour_conditions``
    False strips ``If-None-Match`` from requests: an S3-compatible server without conditional
    writes.
    """

    def __init__(self) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self._app = DomainDispatcherApplication(create_backend_app)
        self._lock = threading.Lock()
        self.honour_conditions = True
        self._server = make_server("127.0.0.1", 0, self._serve, threaded=True)
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not self.honour_conditions:
            environ.pop("HTTP_IF_NONE_MATCH", None)
        with self._lock:
            return list(self._app(environ, start_response))

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment variables that point boto (and s3fs) at the test server."""
    env = {
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def s3_warehouse(s3_env: dict[str, str]) -> str:
    """A warehouse root in a fresh bucket of the test server."""
    import boto3

    bucket = f"wh-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"]).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/warehouse"
