"""Our errors leave a Spark worker as their own line (datasource.errors), and nothing else."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyspark
import pytest

from datasource.errors import surfaced
from stores.errors import InvalidOptionError

WORKER = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "sql", "worker", "x.py")


@surfaced
def fails(error: Exception) -> None:
    raise error


@surfaced
def fails_midway(error: Exception) -> Iterator[int]:
    yield 1
    raise error


def from_worker(call: Any) -> Any:
    """``call()`` from a frame of a file in Spark's worker package, as Spark runs our hooks."""
    scope: dict[str, Any] = {}
    exec(compile("def main(call):\n    return call()\n", WORKER, "exec"), scope)  # noqa: S102
    return scope["main"](call)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    # setenv first, so that the variables' absence is restored after the test even though
    # ``surfaced`` sets one behind monkeypatch's back (a Spark session started later by this
    # process would pass it to its workers).
    for name in ("SPARK_HIDE_TRACEBACK", "STATE_STORE_TRACEBACK"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_our_error_in_a_worker_asks_for_its_line_only() -> None:
    with pytest.raises(InvalidOptionError):
        from_worker(lambda: fails(InvalidOptionError("x", code="NULL_KEY")))
    assert os.environ["SPARK_HIDE_TRACEBACK"] == "1"


def test_a_generator_hook_too() -> None:
    with pytest.raises(InvalidOptionError):
        from_worker(lambda: list(fails_midway(InvalidOptionError("x"))))
    assert os.environ["SPARK_HIDE_TRACEBACK"] == "1"


def test_nothing_changes_outside_a_worker_for_other_errors_or_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InvalidOptionError):
        fails(InvalidOptionError("x"))  # a direct call: this process lives on
    with pytest.raises(ZeroDivisionError):
        from_worker(lambda: fails(ZeroDivisionError()))  # not ours: its traceback helps
    monkeypatch.setenv("STATE_STORE_TRACEBACK", "1")
    with pytest.raises(InvalidOptionError):
        from_worker(lambda: fails(InvalidOptionError("x")))
    assert "SPARK_HIDE_TRACEBACK" not in os.environ
