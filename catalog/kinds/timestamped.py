"""``timestamped``: Kafka's ``TimestampedKeyValueStore[WithHeaders]`` (KIP-258, KIP-1271): the
value with its record timestamp (and headers); a put overwrites, whatever its timestamp."""

from __future__ import annotations

from typing import ClassVar

from catalog.kinds._base import HEADERS_PARAM, Param, StoreKind
from stores.engine import StoreEngine
from stores.timestamped.engine import TIMESTAMPED_ENGINE


class TimestampedKind(StoreKind):
    name: ClassVar[str] = "timestamped"
    params: ClassVar[tuple[Param, ...]] = (HEADERS_PARAM,)
    engine: ClassVar[StoreEngine] = TIMESTAMPED_ENGINE


TIMESTAMPED = TimestampedKind()
