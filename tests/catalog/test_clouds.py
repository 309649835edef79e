"""The cloud backends (S3, GCS, Azure) beyond the shared commit tests of test_object_storage.py:
an emulator that really ignores the precondition, a writer killed between its create and its
acknowledgement, what one commit costs in requests, and one coded line for each configuration
error (missing credentials, wrong endpoint, missing bucket, missing extra)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.log import commits as commit_log
from catalog.log.backends import storage_for
from stores.errors import InvalidOptionError
from tests.emulators.servers import Cloud, free_port

REPO = Path(__file__).resolve().parents[2]


def _rows(catalog: Catalog, name: str) -> dict[str, int]:
    return {r["key"]: r["value"] for r in catalog.load(name).to_arrow().to_pylist()}


def _fresh(root: str, cache: Path) -> Catalog:
    commit_log._RECORDS.clear()
    return Catalog(root, cache_dir=str(cache))


def test_an_emulator_that_ignores_if_generation_match_is_refused_by_name(
    gcs_ignoring_warehouse: Cloud, tmp_path: Path
) -> None:
    """gcp-storage-emulator accepts a second upload with ifGenerationMatch=0: it is refused."""
    cloud = gcs_ignoring_warehouse
    catalog = Catalog(cloud.root, cache_dir=str(tmp_path / "cache"))
    endpoint = re.escape(cloud.server.endpoint)
    with pytest.raises(
        InvalidOptionError,
        match=rf"^\[NO_ATOMIC_COMMIT\] the gcs endpoint {endpoint} of {cloud.root} ignores the "
        r"conditional create.*'singleWriter'",
    ):
        catalog.create_store("kv", "keyvalue", "string", "long")
    assert catalog.list() == []
    single = Catalog(cloud.root, cache_dir=str(tmp_path / "cache"), single_writer=True)
    table = single.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    assert _rows(single, "kv") == {"a": 1}


def test_two_writers_of_45_commits_each_lose_none(cloud: Cloud, tmp_path: Path) -> None:
    catalog = Catalog(cloud.root, cache_dir=str(tmp_path / "cache"))
    catalog.create_store("kv", "keyvalue", "string", "long")
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def writer(w: int) -> None:
        table = Catalog(cloud.root, cache_dir=str(tmp_path / f"c{w}")).load("kv")
        barrier.wait()
        try:
            for n in range(45):
                write_id = f"w{w}n{n}"
                table.commit(table.stage(pa.array([write_id]), pa.array([n]), None,
                                         write_id=write_id), write_id=write_id)  # fmt: skip
                acknowledged.append(write_id)
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(acknowledged) == 90
    log = _fresh(cloud.root, tmp_path / "reader").load("kv").log
    ids = log.ids()
    assert ids == list(range(1, len(ids) + 1))
    appends = [log.read(i).write_id for i in ids if log.read(i).operation == "append"]
    assert sorted(appends) == sorted(acknowledged)  # each once; automatic compactions aside


_KILLED_WRITER = """
import sys
import pyarrow as pa
from catalog import Catalog
table = Catalog(sys.argv[1], cache_dir=sys.argv[2]).load("kv")
table.commit(table.stage(pa.array(["b"]), pa.array([2]), None, write_id="killed"), write_id="killed")
print("acknowledged", flush=True)
"""


def test_a_writer_killed_after_its_create_leaves_a_readable_store(
    cloud: Cloud, tmp_path: Path
) -> None:
    catalog = Catalog(cloud.root, cache_dir=str(tmp_path / "cache"))
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    rules = tmp_path / "faults"
    rules.write_text("commit.after_record kill\n")
    env = {**cloud.env, "PATH": "", "PYTHONPATH": str(REPO), "STATE_STORE_FAULTS": str(rules)}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, cloud.root, str(tmp_path / "killed")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    assert "acknowledged" not in done.stdout
    fresh = _fresh(cloud.root, tmp_path / "reader")
    assert _rows(fresh, "kv") == {"a": 1, "b": 2}  # the record landed: the write is committed
    again = fresh.load("kv")
    again.commit(again.stage(pa.array(["c"]), pa.array([3]), None))
    assert _rows(_fresh(cloud.root, tmp_path / "reader2"), "kv") == {"a": 1, "b": 2, "c": 3}
    assert again.log.ids() == [1, 2, 3, 4]


def test_a_commit_costs_one_conditional_create(cloud: Cloud, tmp_path: Path) -> None:
    """Staging puts the changelog files; the commit itself writes one object, its record (and
    reads what it needs to find the next id). The counts are the README's per-commit figures."""
    catalog = Catalog(cloud.root, cache_dir=str(tmp_path / "cache"))
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))  # probe and caches warm
    server = cloud.server
    before, writes_before = dict(server.counts), server.writes()
    files = table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None)
    staged = server.writes() - writes_before
    assert staged == len(files)  # one put per changelog file (one per partition written)
    mid, writes_mid = dict(server.counts), server.writes()
    table.commit(files)
    assert server.writes() - writes_mid == 1
    commit = {
        m: server.counts[m] - mid.get(m, 0)
        for m in server.counts
        if server.counts[m] != mid.get(m, 0)
    }
    stage = {m: mid.get(m, 0) - before.get(m, 0) for m in mid if mid.get(m, 0) != before.get(m, 0)}
    print(json.dumps({"backend": server.backend, "stage": stage, "commit": commit}))
    # Reads: a listing of the commits for the next id, record 1 read back after the create (the
    # store was not dropped meanwhile: s3fs's read is a HEAD and a GET, adlfs's a GET of the
    # properties and one of the data), and one more listing by the table after the commit.
    assert (
        commit
        == {
            "s3": {"PUT": 1, "GET": 3, "HEAD": 1},
            "gcs": {"POST": 1, "GET": 3},
            "azure": {"PUT": 1, "GET": 5},
        }[server.backend]
    )


# -- one coded line per configuration error ----------------------------------------------------


def _refused(root: str, tmp_path: Path, code: str, *words: str) -> str:
    commit_log._RECORDS.clear()
    with pytest.raises(InvalidOptionError) as info:
        Catalog(root, cache_dir=str(tmp_path / "cache")).create_store(
            "kv", "keyvalue", "string", "long"
        )
    message = str(info.value)
    assert message.startswith(f"[{code}] option 'root' {root} is on the "), message
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_a_missing_bucket_is_one_line(cloud: Cloud, tmp_path: Path) -> None:
    root = cloud.root.replace(cloud.bucket, "no-such-bucket")
    _refused(root, tmp_path, "BUCKET_NOT_FOUND", cloud.server.backend, "create it")


def test_a_wrong_s3_endpoint_is_one_line(
    s3_warehouse: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's retries would take 17 s here
    _refused(s3_warehouse, tmp_path, "STORAGE_UNREACHABLE", "s3", "AWS_ENDPOINT_URL")


def _connection_refused(backend: str) -> Exception:
    """What each library raises once its retries give up on an endpoint that does not answer
    (gcsfs retries for about 35 s per call and Azure's SDK about 85 s, too long to wait for in
    the suite: the classification of their errors is checked on the errors themselves)."""
    if backend == "gcs":
        import aiohttp
        from aiohttp.client_reqrep import ConnectionKey

        key = ConnectionKey("127.0.0.1", 9, False, True, None, None, None)
        return aiohttp.ClientConnectorError(key, OSError(111, "Connect call failed"))
    from azure.core.exceptions import ServiceRequestError

    return ServiceRequestError("Cannot connect to host 127.0.0.1:9")


@pytest.mark.parametrize(
    ("backend", "variable"),
    [("gcs", "STORAGE_EMULATOR_HOST"), ("azure", "AZURE_STORAGE_CONNECTION_STRING")],
)
def test_a_wrong_gcs_or_azure_endpoint_is_one_line(
    backend: str, variable: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:  # fmt: skip
    cloud: Cloud = request.getfixturevalue(f"{backend}_cloud")
    storage = storage_for(cloud.root)
    error = _connection_refused(backend)

    def unreachable(*args: object, **kwargs: object) -> None:
        raise error

    for method in ("ls", "exists", "cat_file", "pipe_file", "rm", "info"):
        monkeypatch.setattr(storage.fs, method, unreachable)
    for call in (lambda: storage.list("kv"), lambda: storage.exists("kv"),
                 lambda: storage.read_bytes("kv", "f"), lambda: storage.write_bytes(b"x", "f"),
                 storage.require_atomic_commit):  # fmt: skip
        with pytest.raises(InvalidOptionError) as info:
            call()
        message = str(info.value)
        assert message.startswith(
            f"[STORAGE_UNREACHABLE] option 'root' {cloud.root} is on the {backend} backend at "
            f"{cloud.server.endpoint}"
        ), message
        assert variable in message and "\n" not in message
        assert info.value.__cause__ is error


def test_missing_s3_credentials_are_one_line(
    s3_warehouse: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    _refused(s3_warehouse, tmp_path, "STORAGE_CREDENTIALS", "s3", "AWS_ACCESS_KEY_ID")


def test_missing_azure_credentials_are_one_line(
    azure_cloud: Cloud, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cloud = azure_cloud
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME",
                 "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    _refused(
        cloud.root, tmp_path, "STORAGE_CREDENTIALS", "azure", "AZURE_STORAGE_CONNECTION_STRING"
    )


@pytest.mark.parametrize(
    ("root", "module", "extra"),
    [
        ("s3://b/w", "s3fs", "s3"),
        ("gs://b/w", "gcsfs", "gcs"),
        ("abfss://c@acct.dfs.core.windows.net/w", "adlfs", "azure"),
    ],
)
def test_a_missing_extra_is_one_line(
    root: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = sys.modules["fsspec.registry"]  # the module (fsspec.registry is its mapping)
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    for protocol, cls in list(registry._registry.items()):
        if cls.__module__.split(".")[0] == module:
            monkeypatch.delitem(registry._registry, protocol)
    with pytest.raises(InvalidOptionError) as info:
        storage_for(root)
    message = str(info.value)
    assert message.startswith(f"[MISSING_EXTRA] option 'root' {root} is on the "), message
    assert f"pip install 'state-store[{extra}]'" in message and module in message
    assert "\n" not in message


def test_a_refused_gcs_token_is_one_line(
    gcs_cloud: Cloud, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GCS answers 401 to a request without valid credentials (the emulator accepts any, so the
    answer is gcsfs's own HttpError, raised where the request would have gone)."""
    from gcsfs.retry import HttpError

    storage = storage_for(gcs_cloud.root)
    error = HttpError(
        {"code": 401, "message": "Anonymous caller does not have storage.objects.list"}
    )

    def refused(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(storage.fs, "ls", refused)
    with pytest.raises(InvalidOptionError) as info:
        storage.list("kv")
    message = str(info.value)
    assert message.startswith(f"[STORAGE_CREDENTIALS] option 'root' {gcs_cloud.root} is on the gcs")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message and "\n" not in message


def test_a_probe_whose_first_create_is_refused_trusts_nothing(
    s3_warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh name refused as taken (Azure's 409 ContainerBeingDeleted reads so) proves
    nothing about the precondition: the write is refused, and the endpoint is not marked
    probed."""
    from catalog.log import cloud

    storage = storage_for(s3_warehouse)
    assert isinstance(storage, cloud.ObjectStoreStorage)
    monkeypatch.setattr(cloud, "_PROBED", set())
    monkeypatch.setattr(storage, "_put_if_absent", lambda target, data: False)
    with pytest.raises(InvalidOptionError, match=r"\[NO_ATOMIC_COMMIT\].*first conditional create"):
        storage.require_atomic_commit()
    assert cloud._PROBED == set()


def test_a_probe_object_the_writer_may_not_delete_does_not_stop_the_write(
    s3_warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GCS's Storage Object Creator role creates but cannot delete: the probe's clean-up is
    best effort, the probe's answer stands."""
    from catalog.log import cloud

    storage = storage_for(s3_warehouse)
    monkeypatch.setattr(cloud, "_PROBED", set())

    def forbidden(target: str) -> None:
        raise OSError(f"Forbidden: {target}\nno storage.objects.delete access")

    monkeypatch.setattr(storage.fs, "rm_file", forbidden)
    storage.require_atomic_commit()  # moto honours the precondition: accepted
    assert cloud._PROBED


def test_an_azure_409_other_than_blob_already_exists_is_no_taken_name(
    s3_warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """adlfs turns every 409 of Put Blob into FileExistsError; ContainerBeingDeleted must not
    read as "another writer took this commit id" (the commit would retry to exhaustion)."""

    class AzureConflict(Exception):
        def __init__(self, code: str) -> None:
            super().__init__(code)
            self.error_code = code

    def conflict(code: str) -> None:
        try:
            raise AzureConflict(code)
        except AzureConflict:
            raise FileExistsError("the specified blob already exists") from None

    storage = storage_for(s3_warehouse)
    monkeypatch.setattr(storage.fs, "pipe_file", lambda *a, **k: conflict("ContainerBeingDeleted"))
    with pytest.raises(FileExistsError):
        storage._put_if_absent(storage.path("x"), b"x")
    monkeypatch.setattr(storage.fs, "pipe_file", lambda *a, **k: conflict("BlobAlreadyExists"))
    assert storage._put_if_absent(storage.path("x"), b"x") is False


def test_listing_a_missing_bucket_says_so_and_exits_2(
    cloud: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: ``state-store list`` on a missing bucket printed nothing and exited 0 on all
    three clouds (an empty listing). An empty bucket still lists no stores."""
    from catalog.cli import main as cli

    missing = cloud.root.replace(cloud.bucket, "no-such-bucket")
    with pytest.raises(InvalidOptionError, match=r"^\[BUCKET_NOT_FOUND\] .*'no-such-bucket'"):
        Catalog(missing, cache_dir=str(tmp_path / "cache")).list()
    assert cli(["--root", missing, "list"]) == 2
    err = capsys.readouterr().err
    assert "[BUCKET_NOT_FOUND]" in err and err.count("\n") == 1
    assert Catalog(cloud.root, cache_dir=str(tmp_path / "cache")).list() == []
    assert cli(["--root", cloud.root, "list"]) == 0
