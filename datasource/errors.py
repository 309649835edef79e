"""Our errors as the first thing a Spark user reads.

Spark reports an exception from a Python worker with the worker's formatted traceback: the
user first sees ``Traceback (most recent call last):`` and a dozen frames of the connector
before the one line that says what is wrong and how to fix it. A ``StateStoreError`` already
names the option, column or file and what is accepted (``[CODE] ...``), so when one leaves a
Spark hook inside a Python worker, the worker is asked (``SPARK_HIDE_TRACEBACK``, the variable
behind Spark's ``spark.sql.execution.pyspark.udf.hideTraceback.enabled``) to report the
exception's own line only:

- planning errors (``schema``, ``reader``, ``writer``, ...) then read
  ``[PYTHON_DATA_SOURCE_ERROR] Failed to ... : stores.errors.InvalidOptionError: [CODE] ...``;
- task errors (``read``, ``write``) read ``An exception was thrown from the Python worker:``
  (Spark's fixed first line) and then ``stores.errors.InvalidOptionError: [CODE] ...``.

A worker exits after it reports an exception, so the variable dies with it; outside a Spark
worker (a direct call, a test) nothing is changed. Other exceptions keep their traceback, and
``STATE_STORE_TRACEBACK=1`` (e.g. ``spark.executorEnv.STATE_STORE_TRACEBACK``, plus the
driver's environment for planning) keeps it for ours too.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from stores.errors import StateStoreError

#: Set (to anything) to keep the traceback of the connector's own errors.
SHOW_TRACEBACK = "STATE_STORE_TRACEBACK"
#: Spark's Python workers report only the exception line when this is set.
_HIDE = "SPARK_HIDE_TRACEBACK"
#: The Spark hooks whose errors are surfaced (methods Spark calls on our objects).
#: Not ``streamReader``: Spark's streaming runner replaces an error raised there (see
#: ``_worker_entries``), and hiding the traceback would hide ours; it must not raise.
HOOKS = frozenset(
    {
        "schema", "reader", "writer", "streamWriter", "partitions", "read",
        "pushFilters", "write", "commit", "abort", "initialOffset", "latestOffset",
        "getDefaultReadLimit", "prepareForTriggerAvailableNow",
    }
)  # fmt: skip

T = TypeVar("T", bound=type)


def _worker_entries() -> tuple[tuple[str, ...], str]:
    """The files of Spark's Python worker entry points that report an exception to the JVM and
    exit: ``pyspark.worker``, the streaming source runner and ``pyspark.sql.worker.*``.

    In PySpark 4.3 the streaming source runner
    (``pyspark.sql.streaming.python_streaming_source_runner``) builds the stream reader inside
    ``try: ... finally: reader.stop()``: when building it fails, an ``UnboundLocalError``
    replaces the error, which then shows only as that error's context, and hiding the traceback
    would hide it. So ``DataSource.streamReader`` must not raise (ours defers every check to the
    reader's first hook, ``datasource.stream_reader``) and is not a surfaced hook; errors of the
    reader's hooks the runner reports as they are.
    """
    import pyspark

    root = os.path.dirname(os.path.abspath(pyspark.__file__))
    runner = os.path.join(root, "sql", "streaming", "python_streaming_source_runner.py")
    return (os.path.join(root, "worker.py"), runner), os.path.join(root, "sql", "worker") + os.sep


def in_spark_worker() -> bool:
    """Whether this call runs under a Spark Python worker's entry point (which reports an
    exception to the JVM and exits)."""
    files, folder = _worker_entries()
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if name in files or name.startswith(folder):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _surface() -> None:
    if not os.environ.get(SHOW_TRACEBACK) and in_spark_worker():
        os.environ[_HIDE] = "1"


def surfaced(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (or generator function), reporting a ``StateStoreError`` that leaves it
    as its own line in a Spark worker (see module doc)."""
    if inspect.isgeneratorfunction(function):

        @functools.wraps(function)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from function(*args, **kwargs)
            except StateStoreError:
                _surface()
                raise

        return generator

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except StateStoreError:
            _surface()
            raise

    return call


def surface_errors(cls: T) -> T:
    """Class decorator: ``surfaced`` on every Spark hook the class itself defines."""
    for name in HOOKS:
        if name in vars(cls):
            setattr(cls, name, surfaced(vars(cls)[name]))
    return cls


__all__ = ["HOOKS", "SHOW_TRACEBACK", "in_spark_worker", "surface_errors", "surfaced"]
