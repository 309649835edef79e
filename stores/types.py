"""Column types of stored keys and values, described the way Spark describes them.

A store's spec records its key and value types as Spark's JSON type description (the value of
``DataType.jsonValue()``: ``"string"``, ``"long"``, ``{"type": "struct", "fields": [...]}``), so
that the catalog needs no Spark to read it and the connector can hand it straight to Spark. This
module maps that description to Arrow types, the common currency of every layer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Union

import pyarrow as pa

from stores.errors import InvalidOptionError

#: A Spark JSON type description: a primitive name or a dict for struct/array/map.
TypeJson = Union[str, dict[str, Any]]

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "binary": pa.binary(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def to_arrow(type_json: TypeJson) -> pa.DataType:
    """Return the Arrow type that Spark exchanges for ``type_json``.

    Raises:
        InvalidOptionError: the description names a type this library does not store.
    """
    if isinstance(type_json, str):
        if type_json in _PRIMITIVES:
            return _PRIMITIVES[type_json]
        match = _DECIMAL.fullmatch(type_json)
        if match:
            return pa.decimal128(int(match.group(1)), int(match.group(2)))
        raise InvalidOptionError(f"unsupported column type {type_json!r}")
    kind = type_json.get("type")
    if kind == "struct":
        return pa.struct(
            [
                pa.field(f["name"], to_arrow(f["type"]), nullable=f.get("nullable", True))
                for f in type_json["fields"]
            ]
        )
    if kind == "array":
        return pa.list_(to_arrow(type_json["elementType"]))
    if kind == "map":
        return pa.map_(to_arrow(type_json["keyType"]), to_arrow(type_json["valueType"]))
    raise InvalidOptionError(f"unsupported column type {type_json!r}")


def from_arrow(arrow_type: pa.DataType) -> TypeJson:
    """Return the Spark JSON type description of an Arrow type (the inverse of ``to_arrow``).

    Raises:
        InvalidOptionError: Spark has no type for ``arrow_type`` that this library stores.
    """
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return "string"
    if pa.types.is_large_binary(arrow_type) or pa.types.is_binary_view(arrow_type):
        return "binary"
    for name, candidate in _PRIMITIVES.items():
        if arrow_type == candidate:
            return name
    if pa.types.is_timestamp(arrow_type):
        return "timestamp" if arrow_type.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    if pa.types.is_struct(arrow_type):
        return {
            "type": "struct",
            "fields": [
                {
                    "name": f.name,
                    "type": from_arrow(f.type),
                    "nullable": f.nullable,
                    "metadata": {},
                }
                for f in arrow_type
            ],
        }
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return {"type": "array", "elementType": from_arrow(arrow_type.value_type), "containsNull": True}
    if pa.types.is_map(arrow_type):
        return {
            "type": "map",
            "keyType": from_arrow(arrow_type.key_type),
            "valueType": from_arrow(arrow_type.item_type),
            "valueContainsNull": True,
        }
    raise InvalidOptionError(f"unsupported column type {arrow_type}")


#: Spark's DDL names (and a few aliases) of the types a store takes, by their JSON names.
DDL_NAMES = {"bigint": "long", "int": "integer", "smallint": "short", "tinyint": "byte",
             "bool": "boolean", "bytes": "binary", "real": "float"}  # fmt: skip


def type_json_of(given: TypeJson) -> TypeJson:
    """A column type as Spark's JSON names it: a DDL name (``bigint``, ``int``) or a JSON
    name (``long``, ``integer``) in any case, a JSON type document as text, or a type
    document; anything else as it is (a serde refuses it by name)."""
    if not isinstance(given, str):
        return given
    text = given.strip()
    if text.startswith("{"):
        try:
            parsed: TypeJson = json.loads(text)
        except ValueError as exc:
            raise InvalidOptionError(f"type {given!r} is not valid JSON: {exc}") from None
        return parsed
    return DDL_NAMES.get(text.lower(), text.lower())


def describe(type_json: TypeJson) -> str:
    """Return Spark's short SQL name of a type (``bigint``, ``struct<a:int>``) for messages."""
    if isinstance(type_json, str):
        return {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}.get(
            type_json, type_json
        )
    kind = type_json["type"]
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{describe(f['type'])}" for f in type_json["fields"])
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{describe(type_json['elementType'])}>"
    return f"map<{describe(type_json['keyType'])},{describe(type_json['valueType'])}>"


def same_type(a: TypeJson, b: TypeJson) -> bool:
    """Whether two descriptions name the same type, ignoring nullability and metadata."""
    return describe(a) == describe(b)


def all_nullable(type_json: TypeJson) -> TypeJson:
    """The same type with every nested field, element and map value nullable.

    A store's spec records types this way: a later write may come from a DataFrame whose
    nullability differs (``same_type`` ignores it), so reads must not promise non-null fields.
    """
    if isinstance(type_json, str):
        return type_json
    kind = type_json["type"]
    if kind == "struct":
        fields = [
            {**f, "type": all_nullable(f["type"]), "nullable": True} for f in type_json["fields"]
        ]
        return {**type_json, "fields": fields}
    if kind == "array":
        return {**type_json, "elementType": all_nullable(type_json["elementType"]), "containsNull": True}
    return {
        **type_json,
        "keyType": all_nullable(type_json["keyType"]),
        "valueType": all_nullable(type_json["valueType"]),
        "valueContainsNull": True,
    }
