"""``keyvalue``: Kafka's plain ``KeyValueStore``; key and value, the last write wins."""

from __future__ import annotations

from typing import Any, ClassVar

from catalog.kinds._base import StoreKind
from stores.engine import StoreEngine
from stores.errors import InvalidOptionError
from stores.key_value.engine import KEY_VALUE_ENGINE


class KeyValueKind(StoreKind):
    name: ClassVar[str] = "keyvalue"
    engine: ClassVar[StoreEngine] = KEY_VALUE_ENGINE

    def refuse(self, given: dict[str, Any]) -> None:
        if given.get("headers"):
            raise InvalidOptionError(
                "option 'headers' is true but Kafka has no header-aware plain key-value store; "
                "use kind 'timestamped' with headers=true (TimestampedKeyValueStoreWithHeaders)"
            )

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        return {}


KEYVALUE = KeyValueKind()
