"""A store's spec: what it is, kept in the store's first commit record."""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from catalog.log.paths import check_store_id, check_store_name
from stores.errors import CorruptDataError, InvalidOptionError
from stores.types import TypeJson, describe

#: The newest spec format this library reads.
FORMAT_VERSION = 3
#: The format of a spec whose store partitions by crc32 (every store before option
#: ``partitioner``): written so, such a spec stays readable by the libraries that read up to 2.
#: A store with another partitioner is format 3: an older library refuses it ("upgrade")
#: rather than put its keys into crc32's partitions.
CRC32_FORMAT_VERSION = 2
#: The partitioner of a spec that names none (``catalog.partitioner.DEFAULT_PARTITIONER``).
DEFAULT_PARTITIONER = "crc32"
#: Every partitioner a spec may name (``catalog.partitioner.PARTITIONERS``, which the log
#: cannot import; a test checks the two agree).
KNOWN_PARTITIONERS = ("crc32", "kafka")


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
        partitioner: how a key's partition is computed (``catalog.partitioner``: ``crc32``
            or ``kafka``), chosen when the store is created; a spec without one is ``crc32``.
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
    format_version: int = CRC32_FORMAT_VERSION
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    partitioner: str = DEFAULT_PARTITIONER

    def __post_init__(self) -> None:
        if self.partitioner != DEFAULT_PARTITIONER and self.format_version < FORMAT_VERSION:
            object.__setattr__(self, "format_version", FORMAT_VERSION)

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-able data (commit record 1 holds it); the default partitioner is
        left out, as the specs of the libraries before it have it."""
        raw = asdict(self)
        if self.partitioner == DEFAULT_PARTITIONER:
            del raw["partitioner"]
        return raw

    @classmethod
    def from_dict(cls, raw: Any, where: str, name: str) -> StoreSpec:
        """Rebuild a spec read from ``where`` for the store directory ``name``.

        Raises:
            CorruptDataError: not a spec this version understands, or one that names another
                store or an unsafe store id.
        """
        if not isinstance(raw, dict):
            raise CorruptDataError(f"{where} holds no store spec")
        version = raw.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise CorruptDataError(
                f"store spec at {where} has format version {version!r}; this "
                f"library reads up to {FORMAT_VERSION}: upgrade state-store"
            )
        try:
            spec = cls(**raw)
        except TypeError as exc:
            raise CorruptDataError(f"store spec at {where} cannot be read: {exc}") from exc
        if spec.name != name:
            raise CorruptDataError(
                f"store spec at {where} names store {spec.name!r}, not {name!r}",
                code="UNSAFE_PATH",
            )
        check_store_id(spec.store_id, where)
        if not all(
            isinstance(v, t)
            for v, t in ((spec.params, dict), (spec.kind, str), (spec.partitioner, str))
        ):
            raise CorruptDataError(
                f"store spec at {where} has malformed kind, parameters or partitioner"
            )
        if spec.partitioner not in KNOWN_PARTITIONERS:
            raise CorruptDataError(
                f"store spec at {where} has partitioner {spec.partitioner!r}; this release "
                f"knows {', '.join(KNOWN_PARTITIONERS)} (a newer release may know more: upgrade)"
            )
        try:
            spec.check_partitions()
        except InvalidOptionError as exc:
            raise CorruptDataError(f"store spec at {where}: {exc}") from exc
        return spec

    def describe(self) -> dict[str, Any]:
        """A flat, human-readable summary (for ``Catalog.describe``)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "key_type": describe(self.key_type),
            "value_type": describe(self.value_type),
            "num_partitions": self.num_partitions,
            "partitioner": self.partitioner,
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


__all__ = [
    "CRC32_FORMAT_VERSION",
    "DEFAULT_PARTITIONER",
    "FORMAT_VERSION",
    "StoreSpec",
    "check_store_name",
]
