"""Storage that misbehaves (issue 39), against each emulator answering 503 where told
(``tests/emulators/servers.Faults``): a transient 5xx is the library's to retry; a sustained
one is one coded line, ``[STORAGE_UNAVAILABLE]``, naming the root, the backend, what failed
and, for a commit, whether it was published, checked in the log; the library makes the
bounded number of attempts set in ``catalog.log.retries``, and prints nothing."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog, faults
from catalog.catalog import StoreTable
from catalog.cli import main as cli
from catalog.log import retries
from stores.errors import InvalidOptionError, StorageUnavailableError
from tests.emulators.servers import Cloud

ROWS = pa.table({"key": ["a", "b"], "value": [1, 2]})


@pytest.fixture
def table(cloud: Cloud) -> Iterator[StoreTable]:
    """A key-value store with one append, on each backend; the faults cleared after."""
    store = Catalog(cloud.root).create_store("s", "keyvalue", "string", "long", 2)
    store.append(ROWS)
    yield store
    cloud.server.faults.clear()


def test_a_transient_5xx_is_retried_by_the_library_and_the_write_lands(
    cloud: Cloud, table: StoreTable
) -> None:
    cloud.server.faults.fail(503, count=1)
    record = table.append(pa.table({"key": ["c"], "value": [3]}))
    assert cloud.server.faults.injected == 1
    assert record is not None and record.id == 3
    assert sorted(r["key"] for r in table.to_arrow().to_pylist()) == ["a", "b", "c"]


def test_a_sustained_outage_is_one_line_after_the_bounded_attempts(
    cloud: Cloud, table: StoreTable, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    capfd.readouterr()
    cloud.server.faults.fail(503)
    with pytest.raises(StorageUnavailableError) as info:
        Catalog(cloud.root).load("s")
    message = str(info.value)
    assert message.startswith(
        f"[STORAGE_UNAVAILABLE] the {cloud.server.backend} storage of {cloud.root} at "
        f"{cloud.server.endpoint}"
    ), message
    assert info.value.operation in ("list", "read") and "nothing was written" in message
    assert "\n" not in message and "retry when the storage answers" in message
    assert cloud.server.faults.injected == retries.attempts() == 3  # the library's, no more
    assert capfd.readouterr().err == ""  # no library log line or traceback
    monkeypatch.setenv("STATE_STORE_STORAGE_ATTEMPTS", "1")  # a client of its own: one attempt
    assert cli(["--root", cloud.root, "describe", "s"]) == 2  # the storage's error, not the command's
    err = capfd.readouterr().err
    assert err.startswith("state-store: [STORAGE_UNAVAILABLE] ") and err.count("\n") == 1
    assert "after 1 attempt:" in err and cloud.server.faults.injected == 3 + 1


def arm_at_commit(monkeypatch: pytest.MonkeyPatch, cloud: Cloud, **fail: Any) -> StoreTable:
    """The store, opened with one attempt per request (a client of its own, without the
    retries' waits, which the test above counts), failing requests from the moment its
    commit record is about to be created."""
    monkeypatch.setenv("STATE_STORE_STORAGE_ATTEMPTS", "1")
    table = Catalog(cloud.root).load("s")
    point = faults.point

    def armed(step: str) -> None:
        if step == "commit.before_record":
            cloud.server.faults.fail(503, **fail)
        point(step)

    monkeypatch.setattr(faults, "point", armed)
    return table


def test_a_commit_whose_create_fails_says_it_was_not_published_having_checked(
    cloud: Cloud, table: StoreTable, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The record's create fails (every write request answered 503), the read of the log that
    follows is served: the commit is known not to be published. The write's clean-up, failing
    too, does not hide that."""
    capfd.readouterr()
    one_attempt = arm_at_commit(monkeypatch, cloud, methods=("PUT", "POST"))
    with pytest.raises(StorageUnavailableError) as info:
        one_attempt.append(pa.table({"key": ["c"], "value": [3]}))
    assert info.value.operation == "commit" and info.value.committed is False
    assert "commit 3 was not published (checked: the log does not hold it)" in str(info.value)
    assert capfd.readouterr().err == ""
    cloud.server.faults.clear()
    assert Catalog(cloud.root).load("s").log.latest_id() == 2


def test_a_commit_that_cannot_be_checked_says_so(
    cloud: Cloud, table: StoreTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_attempt = arm_at_commit(monkeypatch, cloud)
    with pytest.raises(StorageUnavailableError) as info:
        one_attempt.append(pa.table({"key": ["c"], "value": [3]}))
    assert info.value.operation == "commit" and info.value.committed is None
    assert "whether commit 3 (write " in str(info.value)
    assert "was published could not be checked" in str(info.value)
    cloud.server.faults.clear()
    assert Catalog(cloud.root).load("s").log.latest_id() == 2


def test_library_loggers_are_quiet_unless_asked_or_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unconfigured library logger stops its records at itself; one the application
    configured is left alone; ``STATE_STORE_DEBUG`` leaves every one alone."""
    names = tuple(f"state-store-test-{uuid.uuid4().hex}.{n}" for n in ("plain", "set", "debug"))
    monkeypatch.setattr(retries, "LIBRARY_LOGGERS", names[:2])
    logging.getLogger(names[1]).setLevel(logging.WARNING)  # the application's own choice
    retries.quiet_library_logs()
    plain, chosen = logging.getLogger(names[0]), logging.getLogger(names[1])
    assert not plain.propagate and isinstance(plain.handlers[0], logging.NullHandler)
    assert chosen.propagate and not chosen.handlers
    monkeypatch.setattr(retries, "LIBRARY_LOGGERS", names[2:])
    monkeypatch.setenv("STATE_STORE_DEBUG", "1")
    retries.quiet_library_logs()
    assert logging.getLogger(names[2]).propagate and not logging.getLogger(names[2]).handlers


def test_bad_retry_settings_are_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_STORAGE_ATTEMPTS", "0")
    with pytest.raises(InvalidOptionError, match=r"STATE_STORE_STORAGE_ATTEMPTS is '0'; "
                                                 r"accepted: a number >= 1"):  # fmt: skip
        retries.client_options("s3")
    monkeypatch.setenv("STATE_STORE_STORAGE_ATTEMPTS", "5")
    monkeypatch.setenv("STATE_STORE_STORAGE_CONNECT_TIMEOUT", "2.5")
    config = retries.client_options("s3")["config_kwargs"]
    assert config["retries"] == {"total_max_attempts": 5, "mode": "standard"}
    assert config["connect_timeout"] == 2.5
