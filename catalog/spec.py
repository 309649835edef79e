"""A store's spec: what it is, persisted as ``spec.json`` next to its data."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from stores.errors import CorruptDataError, InvalidOptionError
from stores.types import TypeJson, describe

FORMAT_VERSION = 1
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")


def check_store_name(name: str) -> str:
    """Return ``name`` if it can name a store (it becomes a directory name).

    Raises:
        InvalidOptionError: the name is empty or has characters other than letters, digits,
            ``_``, ``.`` and ``-``.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidOptionError(
            f"store name {name!r} is not valid; use letters, digits, '_', '.' and '-' "
            "(not starting with '.' or '-')"
        )
    return name


@dataclass(frozen=True)
class StoreSpec:
    """Everything needed to open, read and write a store.

    Attributes:
        name: the store's name in its warehouse.
        kind: the store kind (``keyvalue``, ``versioned``, ...), a key of ``catalog.kinds``.
        key_type: Spark JSON type of the key column.
        value_type: Spark JSON type of the value column.
        num_partitions: how many partitions the key space is split into.
        params: the kind's own parameters (e.g. ``history_retention_ms``), all in ms.
        store_id: unique per created store, so a dropped and re-created store of the same
            name never reuses an old local cache.
        format_version: version of the on-disk protocol.
        created_ms: creation time, epoch ms.
    """

    name: str
    kind: str
    key_type: TypeJson
    value_type: TypeJson
    num_partitions: int
    params: dict[str, Any] = field(default_factory=dict)
    store_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    format_version: int = FORMAT_VERSION
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def to_json(self) -> bytes:
        """Serialize for ``spec.json``."""
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> StoreSpec:
        """Parse ``spec.json``.

        Raises:
            CorruptDataError: the file is not a spec this version understands.
        """
        try:
            raw = json.loads(data)
            version = raw.get("format_version", FORMAT_VERSION)
        except (ValueError, AttributeError) as exc:
            raise CorruptDataError(f"store spec at {where} cannot be read: {exc}") from exc
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise CorruptDataError(
                f"store spec at {where} has format version {version!r}; this "
                f"library reads up to {FORMAT_VERSION}: upgrade state-store"
            )
        try:
            return cls(**raw)
        except TypeError as exc:
            raise CorruptDataError(f"store spec at {where} cannot be read: {exc}") from exc

    def describe(self) -> dict[str, Any]:
        """A flat, human-readable summary (for ``Catalog.describe``)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "key_type": describe(self.key_type),
            "value_type": describe(self.value_type),
            "num_partitions": self.num_partitions,
            **self.params,
            "store_id": self.store_id,
            "format_version": self.format_version,
            "created_ms": self.created_ms,
        }

    def check_partitions(self) -> None:
        """Raises InvalidOptionError unless 1 <= num_partitions <= 10000."""
        if not isinstance(self.num_partitions, int) or not 1 <= self.num_partitions <= 10_000:
            raise InvalidOptionError(
                f"option 'numPartitions' is {self.num_partitions!r}; accepted: 1 to 10000"
            )
