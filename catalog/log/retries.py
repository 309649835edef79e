"""How long a cloud library waits before it gives up: its own retry and timeout settings,
bounded, so that an endpoint that does not answer is reported within about 30 s and a single
transient 5xx costs a few seconds. No retries of ours are added on top of the library's.

Each library's defaults wait far longer: botocore and s3fs retry each other's retries (41 to
50 s to report a wrong S3 endpoint), gcsfs sleeps 1, 2, 4, 8 and 16 s between six attempts
(about 100 s with its timeouts), and Azure's SDK waits 15, 18 and 24 s between four (about 3
minutes for a wrong endpoint). Here every backend makes ``ATTEMPTS`` attempts of a request,
connects within ``CONNECT_TIMEOUT`` seconds and waits ``READ_TIMEOUT`` seconds for an answer:

=======  ===================================================================================
backend  the library's own setting
=======  ===================================================================================
s3       botocore ``Config(retries={"total_max_attempts": ATTEMPTS, "mode": "standard"},
         connect_timeout, read_timeout)``; s3fs's own loop one attempt (``retries=1``)
gcs      gcsfs's ``retry_request(retries=ATTEMPTS)`` around its requests (its backoff: 1-2 s,
         then 2-3 s), ``requests_timeout=aiohttp.ClientTimeout(connect, sock_read)``
azure    azure-storage-blob's ``ExponentialRetry(initial_backoff=1, increment_base=2,
         retry_total=ATTEMPTS - 1)``, ``connection_timeout``, ``read_timeout``
=======  ===================================================================================

``STATE_STORE_STORAGE_ATTEMPTS``, ``STATE_STORE_STORAGE_CONNECT_TIMEOUT`` and
``STATE_STORE_STORAGE_READ_TIMEOUT`` override the three (read when a client is made: a
process makes one per environment, so a change of them takes effect at the next
``Catalog``). The libraries' log lines (gcsfs logs each exhausted retry at ERROR with its
traceback) are kept off the terminal unless ``STATE_STORE_DEBUG`` is set or the application configured
those loggers itself (``LIBRARY_LOGGERS``): what reaches the user is one coded line
(``catalog.log.cloud``).
"""

from __future__ import annotations

import logging
import os
import types
from typing import Any

from stores.errors import InvalidOptionError

#: The loggers of the cloud libraries that print on their own: the fsspec filesystems (gcsfs:
#: every exhausted retry at ERROR, with its traceback) and the credential chains (google.auth's
#: metadata-server probes and azure.identity's failed credentials, at WARNING).
LIBRARY_LOGGERS = ("gcsfs", "s3fs", "adlfs", "google.auth", "azure.identity")


def _number(name: str, default: float, low: float) -> float:
    """An environment override of a setting, refused unless a number >= ``low``."""
    given = os.environ.get(name)
    if given is None or not given.strip():
        return default
    try:
        value = float(given)
    except ValueError:
        value = low - 1
    if value < low:
        raise InvalidOptionError(
            f"environment variable {name} is {given!r}; accepted: a number >= {low:g}",
            code="INVALID_OPTION",
        )
    return value


def attempts() -> int:
    """Attempts of one request, the first included (``STATE_STORE_STORAGE_ATTEMPTS``, 3)."""
    return int(_number("STATE_STORE_STORAGE_ATTEMPTS", 3, 1))


def connect_timeout() -> float:
    """Seconds to connect (``STATE_STORE_STORAGE_CONNECT_TIMEOUT``, 5)."""
    return _number("STATE_STORE_STORAGE_CONNECT_TIMEOUT", 5, 0.1)


def read_timeout() -> float:
    """Seconds to wait for the next bytes of an answer (``STATE_STORE_STORAGE_READ_TIMEOUT``,
    60: a large upload's answer comes once the service has stored it)."""
    return _number("STATE_STORE_STORAGE_READ_TIMEOUT", 60, 1)


def client_options(backend: str) -> dict[str, Any]:
    """The options of the fsspec filesystem of ``backend`` that bound its waits."""
    if backend == "s3":
        return {
            "config_kwargs": {
                "connect_timeout": connect_timeout(),
                "read_timeout": read_timeout(),
                "retries": {"total_max_attempts": attempts(), "mode": "standard"},
            },
        }
    if backend == "gcs":
        import aiohttp

        return {
            "requests_timeout": aiohttp.ClientTimeout(
                connect=connect_timeout(), sock_read=read_timeout()
            )
        }
    if backend == "azure":
        return {"connection_timeout": connect_timeout(), "read_timeout": read_timeout()}
    return {}


def bound(fs: Any, backend: str) -> Any:
    """``fs`` with the retry settings its constructor does not take (see the module doc)."""
    if backend == "s3":
        fs.retries = 1  # s3fs's own loop, one attempt: botocore's retries are the only ones
    elif backend == "gcs":
        from gcsfs.core import GCSFileSystem
        from gcsfs.retry import retry_request

        request = retry_request(retries=attempts())(GCSFileSystem._request.__wrapped__)
        fs._request = types.MethodType(request, fs)
    elif backend == "azure":
        from azure.storage.blob.aio import BlobServiceClient, ExponentialRetry

        client = fs.service_client
        policy = ExponentialRetry(initial_backoff=1, increment_base=2,
                                  retry_total=attempts() - 1, random_jitter_range=1)  # fmt: skip
        fs.service_client = BlobServiceClient(
            account_url=client.url, credential=client.credential, retry_policy=policy,
            connection_timeout=connect_timeout(), read_timeout=read_timeout(),
        )  # fmt: skip
    quiet_library_logs()
    return fs


def quiet_library_logs() -> None:
    """Keep the cloud libraries' own log lines off the terminal (see the module doc): each
    logger the application left unconfigured gets a handler that drops its records and stops
    them at itself; with ``STATE_STORE_DEBUG`` set, nothing is changed."""
    if os.environ.get("STATE_STORE_DEBUG"):
        return
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.handlers or logger.level != logging.NOTSET or not logger.propagate:
            continue  # configured by the application (or done already)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


__all__ = ["attempts", "bound", "client_options", "connect_timeout", "quiet_library_logs",
           "read_timeout"]  # fmt: skip
