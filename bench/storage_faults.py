"""How long storage faults cost, per backend, against the emulators the tests use (moto,
fake-gcs-server, Azurite; ``pip install '.[test]'``), each answering 503 where told.

    python bench/storage_faults.py                  # bounded settings (catalog/log/retries.py)
    python bench/storage_faults.py --defaults       # and each library's own defaults (minutes)

Per backend, seconds (median of ``--repeat``):

- **append**: a one-row ``StoreTable.append`` with no fault (the peer of the next);
- **one 503**: the same append with its commit record's create answered 503 once, which the
  library retries: the fault's cost is this minus **append** (the issue asks a few seconds);
- **outage**: ``Catalog.load`` while every request is answered 503, until the coded line;
- **closed endpoint**: ``Catalog.list`` of a root whose endpoint refuses connections, until
  the coded line (the issue asks within 30 s).

With ``--defaults`` the last two are measured again with the libraries' own retry settings
(fsspec's filesystems as they come), the peer the bounded settings are compared to.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from catalog import Catalog, faults
from catalog.log import retries, storage
from tests.emulators.servers import AzuriteServer, FakeGcsServer, S3Server

CLOSED = "127.0.0.1:9"


def seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    try:
        action()
    except Exception as exc:  # the coded line is the end of the measured wait
        if "[STORAGE_" not in str(exc):
            raise
    return time.perf_counter() - start


def closed_env(backend: str) -> dict[str, str]:
    """The environment of a root whose endpoint refuses connections."""
    if backend == "s3":
        return {"AWS_ENDPOINT_URL": f"http://{CLOSED}", "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    if backend == "gcs":
        return {"STORAGE_EMULATOR_HOST": f"http://{CLOSED}"}
    return {"AZURE_STORAGE_CONNECTION_STRING": (
        f"BlobEndpoint=http://{CLOSED}/devstoreaccount1;SharedAccessSignature=sv=x"
    )}  # fmt: skip


def with_env(env: dict[str, str], action: Callable[[], float]) -> float:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return action()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def one_round(server: Any, root: str, runs: dict[str, list[float]]) -> None:
    """One measurement of each figure on a fresh store under ``root``."""
    table = Catalog(root).create_store("s", "keyvalue", "string", "long", 1)
    rows = pa.table({"key": ["a"], "value": [1]})
    table.append(rows)  # warm: the client and its connections made
    runs["append"].append(seconds(lambda: table.append(rows)))
    point = faults.point

    def once(step: str) -> None:
        if step == "commit.before_record":
            server.faults.fail(503, count=1)
        point(step)

    faults.point = once
    try:
        runs["one 503"].append(seconds(lambda: table.append(rows)))
    finally:
        faults.point = point
    server.faults.fail(503)
    try:
        runs["outage"].append(seconds(lambda: Catalog(root).load("s")))
    finally:
        server.faults.clear()


def measure(server: Any, repeat: int) -> dict[str, float]:
    runs: dict[str, list[float]] = {"append": [], "one 503": [], "outage": [],
                                    "closed endpoint": []}  # fmt: skip
    for i in range(repeat):
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        server.create_bucket(bucket)
        root = server.root(bucket)
        with_env(server.env(), lambda root=root: one_round(server, root, runs) or 0.0)
        runs["closed endpoint"].append(with_env(
            closed_env(server.backend),
            lambda root=root: seconds(lambda: Catalog(root).list()),
        ))  # fmt: skip
    return {name: statistics.median(times) for name, times in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--defaults", action="store_true",
                        help="also measure the libraries' own retry settings (minutes)")
    args = parser.parse_args()
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server: a line per request
    servers = {"s3": S3Server, "gcs": FakeGcsServer, "azure": AzuriteServer}
    print(f"attempts {retries.attempts()}, connect timeout {retries.connect_timeout():g} s; "
          f"median of {args.repeat}")  # fmt: skip
    for backend, make in servers.items():
        server = make()
        try:
            bounded = measure(server, args.repeat)
            line = "  ".join(f"{k} {v:6.2f} s" for k, v in bounded.items())
            print(f"{backend:6s} {line}   one 503 costs {bounded['one 503'] - bounded['append']:.2f} s")
            if args.defaults:
                plain_options, plain_bound = retries.client_options, retries.bound
                retries.client_options = lambda backend: {}
                retries.bound = lambda fs, backend: fs
                storage._CLOUD_CLIENTS.clear()  # the process's clients: made again, unbounded
                try:
                    library = measure(server, 1)
                finally:
                    retries.client_options, retries.bound = plain_options, plain_bound
                    storage._CLOUD_CLIENTS.clear()
                print(f"{'':6s} library defaults: outage {library['outage']:.1f} s, closed "
                      f"endpoint {library['closed endpoint']:.1f} s, one 503 costs "
                      f"{library['one 503'] - library['append']:.2f} s")  # fmt: skip
        finally:
            server.stop()


if __name__ == "__main__":
    main()
