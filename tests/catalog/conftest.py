"""Fixtures only: the object-storage emulators (tests/emulators/servers.py) on 127.0.0.1, and
warehouses in fresh buckets of them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.emulators.servers import (
    AzuriteServer,
    Cloud,
    FakeGcsServer,
    GcpStorageEmulator,
    S3Server,
)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[FakeGcsServer]:
    server = FakeGcsServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server_ignoring_preconditions() -> Iterator[GcpStorageEmulator]:
    server = GcpStorageEmulator()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azure_server() -> Iterator[AzuriteServer]:
    server = AzuriteServer()
    yield server
    server.stop()


def _cloud(server: Any, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    env = server.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bucket = f"wh-{uuid.uuid4().hex[:12]}"
    server.create_bucket(bucket)
    return Cloud(server, server.root(bucket), env, bucket)


@pytest.fixture(params=["s3", "gcs", "azure"])
def cloud(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    """Each backend in turn: S3 (moto), GCS (fake-gcs-server), Azure (Azurite)."""
    server = request.getfixturevalue(f"{request.param}_server")
    return _cloud(server, monkeypatch)


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment variables that point boto (and s3fs) at the test server."""
    env = s3_server.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def s3_warehouse(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A warehouse root in a fresh bucket of the S3 test server."""
    return _cloud(s3_server, monkeypatch).root


@pytest.fixture
def gcs_ignoring_warehouse(
    gcs_server_ignoring_preconditions: GcpStorageEmulator, monkeypatch: pytest.MonkeyPatch
) -> Cloud:
    """A warehouse on gcp-storage-emulator, which ignores ``ifGenerationMatch``."""
    return _cloud(gcs_server_ignoring_preconditions, monkeypatch)


@pytest.fixture
def s3_cloud(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    return _cloud(s3_server, monkeypatch)


@pytest.fixture
def gcs_cloud(gcs_server: FakeGcsServer, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    return _cloud(gcs_server, monkeypatch)


@pytest.fixture
def azure_cloud(azure_server: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    return _cloud(azure_server, monkeypatch)
