"""Object stores with a true conditional create: S3, Google Cloud Storage and Azure Blob Storage /
ADLS Gen2, through one class and one request.

A commit record is created with fsspec's ``pipe_file(path, data, mode="create")``, which each
cloud's fsspec library sends as the cloud's own create-if-absent and answers with
``FileExistsError`` when the name is taken:

========  ========================  =============================================================
backend   schemes                   request (library)
========  ========================  =============================================================
s3        ``s3://``, ``s3a://``     ``PutObject`` with ``If-None-Match: *``; 412 (s3fs)
gcs       ``gs://``, ``gcs://``     JSON-API upload with ``ifGenerationMatch=0``; 412 (gcsfs)
azure     ``az://``, ``abfs://``,   ``Put Blob`` with ``If-None-Match: *``; 409
          ``abfss://``              ``BlobAlreadyExists`` (adlfs)
========  ========================  =============================================================

Why fsspec's three libraries and not obstore's one: obstore (Rust's object_store) speaks GCS's
XML API, which no GCS emulator installable from PyPI serves (fake-gcs-server answers its PUT with
400, gcp-storage-emulator omits the ETag it needs and its listing is 501), so a GCS commit through
it could not be tested; the JSON API gcsfs uses is served. Reads, listings (with the times vacuum
needs) and deletes stay on the fsspec filesystems every backend already uses.

A header the endpoint ignores would make every create succeed: before the first commit of a
process, each endpoint and bucket is probed once (a second create of one name must be refused),
and refused with ``[NO_ATOMIC_COMMIT]`` otherwise. Configuration errors (missing credentials, an
endpoint that does not answer, a missing bucket) become one coded line naming the root, the
backend and what to set, instead of the library's traceback.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

from catalog.log import retries
from catalog.log.storage import CLOUD_BACKENDS, Storage
from stores.errors import InvalidOptionError, StateStoreError, StorageUnavailableError

#: What to set so each backend's library finds credentials and its endpoint (the clouds' own
#: variables, read by their own libraries: nothing here reads or logs a secret).
CREDENTIALS_HINT: dict[str, str] = {
    "s3": (
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run with an "
        "instance role), and AWS_ENDPOINT_URL for an S3-compatible server"
    ),
    "gcs": (
        "set GOOGLE_APPLICATION_CREDENTIALS to a service account file (or run `gcloud auth "
        "application-default login`), and STORAGE_EMULATOR_HOST for an emulator"
    ),
    "azure": (
        "set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with "
        "AZURE_STORAGE_ACCOUNT_KEY (or a service principal: AZURE_CLIENT_ID, AZURE_TENANT_ID, "
        "AZURE_CLIENT_SECRET)"
    ),
}

# Endpoint and bucket pairs seen to refuse a second conditional create, in this process.
_PROBED: set[str] = set()
_CONFLICT_RETRIES = 20

# Exception class names (their libraries are optional, so none is imported) by what they mean.
_CREDENTIAL_ERRORS = frozenset({
    "NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
    "DefaultCredentialsError", "RefreshError", "ClientAuthenticationError",
})  # fmt: skip
# (Connect-time failures only: a connection reset mid-job is raised as it is, not blamed on the
# endpoint.)
_UNREACHABLE_ERRORS = frozenset({
    "EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError",
    "ServiceRequestError", "ConnectionRefusedError", "ServerTimeoutError",
})  # fmt: skip
# Failures mid-request that the library's retries did not get past: a connection lost or
# reset, an answer cut short or never finished.
_LOST_ERRORS = frozenset({
    "ClientOSError", "ServerDisconnectedError", "ClientPayloadError", "ConnectionResetError",
    "ConnectionClosedError", "ReadTimeoutError", "ServiceResponseError", "IncompleteRead",
    "FSTimeoutError", "TimeoutError", "BrokenPipeError", "IncompleteReadError",
})  # fmt: skip
#: HTTP answers that say the service cannot serve now (throttling, 5xx).
_UNAVAILABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_CREDENTIAL_WORDS = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthenticationFailed",
                     "Must provide either a connection_string")  # fmt: skip


class ObjectStoreStorage(Storage):
    """S3, GCS and Azure (Blob, ADLS Gen2): an atomic create by the cloud's own conditional
    create, trusted once the endpoint was seen to refuse a second create of one name."""

    atomic_put_if_absent: ClassVar[bool] = True

    @property
    def backend(self) -> str:
        """``s3``, ``gcs`` or ``azure``."""
        return CLOUD_BACKENDS[self.root.split("://", 1)[0]]

    @property
    def endpoint(self) -> str:
        """The service the filesystem talks to (an emulator's or gateway's URL, if set)."""
        fs = self.fs
        for name in ("endpoint_url", "_location", "account_url"):
            value = getattr(fs, name, None)
            if isinstance(value, str) and value:
                return value
        value = (getattr(fs, "client_kwargs", None) or {}).get("endpoint_url")
        if value:
            return str(value)
        client = getattr(fs, "service_client", None)  # adlfs
        if client is not None:
            # Without its query: a SAS token rides there, and messages never carry a secret.
            url = urllib.parse.urlsplit(str(client.primary_endpoint))
            return urllib.parse.urlunsplit(url._replace(query="", fragment="")).rstrip("/")
        if self.backend == "s3":
            return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
                "AWS_ENDPOINT_URL", "https://s3.amazonaws.com"
            )
        return f"the {self.backend} service"

    def check_root(self) -> None:
        bucket = self.root.split("://", 1)[1].split("/", 1)[0]
        with self._translated("list"):
            found = self.fs.exists(bucket)
        if not found:
            raise self._error(
                "BUCKET_NOT_FOUND",
                f"its bucket (container) {bucket!r} does not exist; create it, or give a root "
                "in an existing one",
            )

    # -- the commit primitive -------------------------------------------------------------------

    def require_atomic_commit(self) -> None:
        """See ``Storage.require_atomic_commit``; also checks, once per process, endpoint and
        bucket, that a second conditional create of a name is refused.

        Raises:
            InvalidOptionError: code NO_ATOMIC_COMMIT (the endpoint ignores the precondition),
                BUCKET_NOT_FOUND, STORAGE_CREDENTIALS or STORAGE_UNREACHABLE.
        """
        super().require_atomic_commit()
        if not self.single_writer:
            self._probe_conditional_create()

    def _probe_conditional_create(self) -> None:
        key = f"{self.endpoint} {self.root.split('://', 1)[1].split('/', 1)[0]}"
        if key in _PROBED:
            return
        target = self.path(f"_state_store_probe_{uuid.uuid4().hex}")
        try:
            try:
                created = self._put_if_absent(target, b"probe")
            except FileNotFoundError:
                raise self._error(
                    "BUCKET_NOT_FOUND",
                    "its bucket (container) does not exist; create it, or give a root in an "
                    "existing one",
                ) from None
            if not created:  # a name no one has made was refused as taken
                raise self._error(
                    "NO_ATOMIC_COMMIT",
                    "the first conditional create of a new name was refused as if it existed, "
                    "so that a name is taken cannot be told there; retry later, or set option "
                    "'singleWriter' to 'true' if one writer at a time commits to each store",
                )
            honoured = not self._put_if_absent(target, b"probe")
        finally:
            # Best effort: a writer may create but not delete (GCS's Storage Object Creator).
            with contextlib.suppress(Exception):
                self.fs.rm_file(target)
        if not honoured:
            raise InvalidOptionError(
                f"the {self.backend} endpoint {self.endpoint} of {self.root} ignores the "
                "conditional create (a second create of the same name succeeded), so commits "
                "cannot be made atomic there; use a server that honours it, or set option "
                "'singleWriter' to 'true' if one writer at a time commits to each store",
                code="NO_ATOMIC_COMMIT",
            )
        _PROBED.add(key)

    def _put_if_absent(self, target: str, data: bytes) -> bool:
        """The cloud's conditional create; False if the name exists (412, or Azure's 409)."""
        for attempt in range(_CONFLICT_RETRIES):
            try:
                with self._translated("create"):
                    self.fs.pipe_file(target, data, mode="create")
                return True
            except FileExistsError as exc:
                # adlfs reads every 409 of Put Blob as "exists" (ContainerBeingDeleted too):
                # only BlobAlreadyExists says the name is taken.
                azure = getattr(exc.__context__ or exc.__cause__, "error_code", None)
                if azure is not None and getattr(azure, "value", azure) != "BlobAlreadyExists":
                    raise
                return False
            except OSError as exc:
                # S3's 409 ConditionalRequestConflict: another conditional put of this key is in
                # flight; nothing was written by this request, so it is safe to try again.
                if "ConditionalRequestConflict" not in str(exc) or attempt + 1 == _CONFLICT_RETRIES:
                    raise
                time.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError("unreachable")

    # -- every other call, with the library's configuration errors said in one line -------------

    @property
    def fs(self) -> Any:
        """See ``Storage.fs``; a filesystem that cannot be made (no credentials) is said so.

        Raises:
            InvalidOptionError: code STORAGE_CREDENTIALS.
        """
        if self._fs is None:
            with self._translated("connect"):
                return super().fs
        return self._fs

    def exists(self, *parts: str) -> bool:
        """See ``Storage.exists``."""
        with self._translated("read"):
            return super().exists(*parts)

    def read_bytes(self, *parts: str) -> bytes:
        """See ``Storage.read_bytes``."""
        with self._translated("read"):
            return super().read_bytes(*parts)

    def read_range(self, offset: int, size: int, *parts: str) -> bytes:
        """See ``Storage.read_range``."""
        with self._translated("read"):
            return super().read_range(offset, size, *parts)

    def write_bytes(self, data: bytes, *parts: str) -> None:
        """See ``Storage.write_bytes``."""
        with self._translated("write"):
            super().write_bytes(data, *parts)

    def list(self, *parts: str) -> list[str]:
        """See ``Storage.list``."""
        with self._translated("list"):
            return super().list(*parts)

    def list_with_times(self, *parts: str) -> Iterator[tuple[str, float, int]]:
        """See ``Storage.list_with_times``."""
        with self._translated("list"):
            yield from list(super().list_with_times(*parts))

    def delete(self, *parts: str, recursive: bool = False) -> None:
        """See ``Storage.delete``."""
        with self._translated("delete"):
            super().delete(*parts, recursive=recursive)

    def open_input(self, *parts: str) -> Any:
        """See ``Storage.open_input``."""
        with self._translated("read"):
            return super().open_input(*parts)

    def open_output(self, *parts: str) -> Any:
        """See ``Storage.open_output``."""
        with self._translated("write"):
            return super().open_output(*parts)

    def makedirs(self, target: str) -> None:
        """Object stores have no directories: nothing to create (and no request to pay)."""

    @contextlib.contextmanager
    def _translated(self, operation: str) -> Iterator[None]:
        try:
            yield
        except (FileNotFoundError, FileExistsError, StateStoreError):
            raise
        except Exception as exc:
            if type(exc).__name__ == "ResourceNotFoundError":  # adlfs lets Azure's 404 through
                raise FileNotFoundError(str(exc).splitlines()[0]) from exc
            error = self._classified(exc, operation)
            if error is None:
                raise
            raise error from exc

    def _classified(
        self, exc: BaseException, operation: str
    ) -> InvalidOptionError | StorageUnavailableError | None:
        names = {cls.__name__ for cls in type(exc).__mro__}
        text = str(exc)
        # gcsfs's HttpError has .code, Azure's HttpResponseError .status_code (s3fs raises
        # PermissionError for 403).
        status = getattr(exc, "code", None) or getattr(exc, "status_code", None)
        if (
            names & _CREDENTIAL_ERRORS
            or isinstance(exc, PermissionError)
            or status in (401, 403)
            or text.startswith(("Forbidden:", "Unauthorized:"))  # gcsfs's 403 and 401
            or any(word in text for word in _CREDENTIAL_WORDS)
        ):
            return self._error(
                "STORAGE_CREDENTIALS",
                f"its credentials are missing or refused ({type(exc).__name__}); "
                f"{CREDENTIALS_HINT[self.backend]}",
            )
        if names & _UNREACHABLE_ERRORS:
            return self._error(
                "STORAGE_UNREACHABLE",
                f"its endpoint does not answer ({type(exc).__name__}); check the endpoint, or "
                f"{CREDENTIALS_HINT[self.backend]}",
            )
        http = _http_status(exc)
        if http in _UNAVAILABLE_STATUS or names & _LOST_ERRORS:
            return self._unavailable(operation, exc, http)
        return None

    def _unavailable(
        self, operation: str, exc: BaseException, http: int | None
    ) -> StorageUnavailableError:
        """The one line of a request that failed after the library's retries: the root, the
        backend and endpoint, what failed, the first line of why (``http``: its status), what
        it means for the data (a commit says more: ``StorageUnavailableError.of_commit``) and
        what to do."""
        endpoint = f" at {self.endpoint}" if self._fs is not None else ""
        why = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
        why = f"{type(exc).__name__}{f' {http}' if http else ''}{f': {why}' if why else ''}"
        tries = retries.attempts()
        outcome = "nothing was written" if operation in ("read", "list") else "nothing was committed"
        return StorageUnavailableError(
            f"the {self.backend} storage of {self.root}{endpoint}", operation,
            f"after {tries} attempt{'s' if tries > 1 else ''}: {why}", outcome,
            "retry when the storage answers (STATE_STORE_STORAGE_ATTEMPTS sets the attempts, "
            "STATE_STORE_DEBUG=1 shows the library's own log)",
        )  # fmt: skip

    def _error(self, code: str, what: str) -> InvalidOptionError:
        endpoint = self._fs is not None and self.endpoint
        where = f" at {endpoint}" if endpoint else ""
        return InvalidOptionError(
            f"option 'root' {self.root} is on the {self.backend} backend{where}, but {what}",
            code=code,
        )


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of a cloud library's error, or of the error it was raised from:
    gcsfs's ``code``, Azure's ``status_code``, aiohttp's ``status``, botocore's response
    (s3fs raises an ``OSError`` from it)."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        for name in ("status_code", "code", "status"):
            value = getattr(seen, name, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if isinstance(value, int):
                return value
        seen = seen.__cause__ or seen.__context__
    return None
