"""Typed serdes: Spark/Python values to the bytes Kafka's serializers produce, and back.

| Spark type | bytes (identical to Kafka's serializer)                     |
|------------|-------------------------------------------------------------|
| string     | UTF-8 (``StringSerializer``)                                |
| binary     | the bytes themselves (``ByteArraySerializer``)              |
| bigint     | 8-byte big-endian two's complement (``LongSerializer``)     |
| int        | 4-byte big-endian (``IntegerSerializer``)                   |
| smallint   | 2-byte big-endian (``ShortSerializer``)                     |
| double     | 8-byte big-endian IEEE 754 (``DoubleSerializer``)           |
| float      | 4-byte big-endian IEEE 754 (``FloatSerializer``)            |
| boolean    | 1 byte, ``01`` true / ``00`` false (``BooleanSerializer``)  |
| struct     | compact JSON object, UTF-8 (see below)                      |

Structs are JSON objects with the struct's field names in order, no whitespace. Nested values:
numbers and booleans as JSON literals, strings as strings, binary as base64, decimal as a string,
date as ``YYYY-MM-DD``, timestamps as ISO-8601 (UTC, ``Z``), arrays as arrays, maps with string
keys as objects. Kafka has no struct serializer; JSON is what its users most often pair with one.

Each serde works on whole Arrow arrays (the hot path, vectorized where the layout allows) and on
single Python values (the store API and tests).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.errors import InvalidOptionError, SerdeError
from stores.types import TypeJson, describe, to_arrow


class Serde(Protocol):
    """Converts one Spark type between Arrow arrays / Python values and Kafka's bytes."""

    type_json: TypeJson
    arrow_type: pa.DataType

    def encode(self, values: pa.Array) -> pa.Array:
        """Serialize an Arrow array; nulls stay null. Returns a ``binary`` array."""

    def decode(self, data: pa.Array) -> pa.Array:
        """Deserialize a ``binary`` array into an array of ``arrow_type``."""

    def serialize(self, value: Any) -> bytes:
        """Serialize one Python value."""

    def deserialize(self, data: bytes) -> Any:
        """Deserialize one value."""


def _binary(values: pa.Array) -> pa.Array:
    if pa.types.is_binary(values.type):
        return values
    return values.cast(pa.binary())


class _Utf8Serde:
    type_json: TypeJson = "string"
    arrow_type = pa.string()

    def encode(self, values: pa.Array) -> pa.Array:
        return values.cast(pa.string()).cast(pa.binary())

    def decode(self, data: pa.Array) -> pa.Array:
        try:
            return _binary(data).cast(pa.string())
        except pa.ArrowInvalid as exc:
            raise SerdeError(f"stored bytes are not valid UTF-8 for a string column: {exc}") from exc

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise SerdeError(f"expected str for a string column, got {type(value).__name__}")
        return value.encode("utf-8")

    def deserialize(self, data: bytes) -> Any:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SerdeError(f"stored bytes are not valid UTF-8: {exc}") from exc


class _BytesSerde:
    type_json: TypeJson = "binary"
    arrow_type = pa.binary()

    def encode(self, values: pa.Array) -> pa.Array:
        return _binary(values)

    def decode(self, data: pa.Array) -> pa.Array:
        return _binary(data)

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise SerdeError(f"expected bytes for a binary column, got {type(value).__name__}")
        return bytes(value)

    def deserialize(self, data: bytes) -> Any:
        return data


class _FixedWidthSerde:
    """Big-endian fixed-width numbers: a reinterpretation of Arrow's buffers, no Python loop."""

    def __init__(self, type_json: str, arrow_type: pa.DataType, dtype: str) -> None:
        self.type_json: TypeJson = type_json
        self.arrow_type = arrow_type
        self._dtype = np.dtype(dtype)
        self._width = self._dtype.itemsize

    def encode(self, values: pa.Array) -> pa.Array:
        values = values.cast(self.arrow_type)
        raw = values.fill_null(0).to_numpy(zero_copy_only=False).astype(self._dtype).tobytes()
        validity = values.buffers()[0] if values.null_count else None
        if validity is not None and values.offset:
            validity = pc.is_valid(values).buffers()[1]
        fixed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(self._width), len(values), [validity, pa.py_buffer(raw)]
        )
        return fixed.cast(pa.binary())

    def decode(self, data: pa.Array) -> pa.Array:
        try:
            fixed = _binary(data).cast(pa.binary(self._width))
        except pa.ArrowInvalid as exc:
            raise SerdeError(
                f"stored bytes are not {self._width}-byte values for a "
                f"{describe(self.type_json)} column"
            ) from exc
        if len(fixed) == 0:
            return pa.array([], self.arrow_type)
        buf = fixed.buffers()[1]
        numbers = np.frombuffer(
            buf, dtype=self._dtype, count=len(fixed), offset=fixed.offset * self._width
        )
        mask = pc.is_null(fixed).to_numpy(zero_copy_only=False) if fixed.null_count else None
        return pa.array(numbers.astype(self._dtype.newbyteorder("=")), self.arrow_type, mask=mask)

    def serialize(self, value: Any) -> bytes:
        try:
            return np.array([value], dtype=self._dtype).tobytes()
        except (TypeError, ValueError, OverflowError) as exc:
            raise SerdeError(f"cannot serialize {value!r} as {describe(self.type_json)}") from exc

    def deserialize(self, data: bytes) -> Any:
        if len(data) != self._width:
            raise SerdeError(f"expected {self._width} bytes for {describe(self.type_json)}")
        return np.frombuffer(data, dtype=self._dtype)[0].item()


class _BooleanSerde:
    type_json: TypeJson = "boolean"
    arrow_type = pa.bool_()

    def encode(self, values: pa.Array) -> pa.Array:
        as_int = _FixedWidthSerde("byte", pa.int8(), "i1")
        return as_int.encode(values.cast(pa.int8()))

    def decode(self, data: pa.Array) -> pa.Array:
        as_int = _FixedWidthSerde("byte", pa.int8(), "i1").decode(data)
        if pc.any(pc.and_(pc.not_equal(as_int, 0), pc.not_equal(as_int, 1))).as_py():
            raise SerdeError("stored bytes are not 00/01 for a boolean column")
        return as_int.cast(pa.bool_())

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, bool):
            raise SerdeError(f"expected bool for a boolean column, got {type(value).__name__}")
        return b"\x01" if value else b"\x00"

    def deserialize(self, data: bytes) -> Any:
        if data not in (b"\x00", b"\x01"):
            raise SerdeError("expected one byte 00 or 01 for a boolean")
        return data == b"\x01"


class _JsonStructSerde:
    def __init__(self, type_json: TypeJson) -> None:
        self.type_json = type_json
        self.arrow_type = to_arrow(type_json)
        self._convert = _needs_conversion(type_json)

    def encode(self, values: pa.Array) -> pa.Array:
        rows = values.to_pylist()
        if self._convert:
            return pa.array([None if v is None else self.serialize(v) for v in rows], pa.binary())
        try:
            return pa.array([None if v is None else _DUMPS(v).encode() for v in rows], pa.binary())
        except TypeError as exc:
            raise SerdeError(f"cannot serialize a {describe(self.type_json)} as JSON: {exc}") from exc

    def decode(self, data: pa.Array) -> pa.Array:
        rows = _binary(data).to_pylist()
        if self._convert:
            return pa.array([None if d is None else self.deserialize(d) for d in rows], self.arrow_type)
        try:
            return pa.array([None if d is None else json.loads(d) for d in rows], self.arrow_type)
        except (ValueError, TypeError, pa.ArrowException) as exc:
            raise SerdeError(
                f"stored bytes are not a JSON {describe(self.type_json)}: {exc}"
            ) from exc

    def serialize(self, value: Any) -> bytes:
        try:
            if self._convert:
                value = _to_json(value, self.type_json)
            return _DUMPS(value).encode()
        except (TypeError, AttributeError) as exc:
            raise SerdeError(f"cannot serialize {value!r} as JSON: {exc}") from exc

    def deserialize(self, data: bytes) -> Any:
        try:
            return _from_json(json.loads(data), self.type_json)
        except (ValueError, KeyError, TypeError) as exc:
            raise SerdeError(
                f"stored bytes are not a JSON {describe(self.type_json)}: {exc}"
            ) from exc


_DUMPS = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode
_JSON_NATIVE = {"string", "long", "integer", "short", "byte", "double", "float", "boolean"}


def _needs_conversion(type_json: TypeJson) -> bool:
    """Whether values of this type need more than ``json.dumps`` (binary, dates, maps ...)."""
    if isinstance(type_json, str):
        return type_json not in _JSON_NATIVE
    kind = type_json["type"]
    if kind == "struct":
        return any(_needs_conversion(f["type"]) for f in type_json["fields"])
    if kind == "array":
        return _needs_conversion(type_json["elementType"])
    return True


def _to_json(value: Any, type_json: TypeJson) -> Any:
    if value is None:
        return None
    if isinstance(type_json, dict):
        kind = type_json["type"]
        if kind == "struct":
            return {f["name"]: _to_json(value.get(f["name"]), f["type"]) for f in type_json["fields"]}
        if kind == "array":
            return [_to_json(v, type_json["elementType"]) for v in value]
        pairs = value.items() if isinstance(value, dict) else value
        return {k: _to_json(v, type_json["valueType"]) for k, v in pairs}
    if type_json == "binary":
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, (dt.date, decimal.Decimal)):
        return str(value)
    return value


def _from_json(value: Any, type_json: TypeJson) -> Any:
    if value is None:
        return None
    if isinstance(type_json, dict):
        kind = type_json["type"]
        if kind == "struct":
            return {
                f["name"]: _from_json(value.get(f["name"]), f["type"]) for f in type_json["fields"]
            }
        if kind == "array":
            return [_from_json(v, type_json["elementType"]) for v in value]
        return [(k, _from_json(v, type_json["valueType"])) for k, v in value.items()]
    if type_json == "binary":
        return base64.b64decode(value)
    if type_json == "date":
        return dt.date.fromisoformat(value)
    if type_json in ("timestamp", "timestamp_ntz"):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if type_json.startswith("decimal"):
        return decimal.Decimal(value)
    return value


_KAFKA_SERDES: dict[str, Serde] = {
    "string": _Utf8Serde(),
    "binary": _BytesSerde(),
    "long": _FixedWidthSerde("long", pa.int64(), ">i8"),
    "integer": _FixedWidthSerde("integer", pa.int32(), ">i4"),
    "short": _FixedWidthSerde("short", pa.int16(), ">i2"),
    "double": _FixedWidthSerde("double", pa.float64(), ">f8"),
    "float": _FixedWidthSerde("float", pa.float32(), ">f4"),
    "boolean": _BooleanSerde(),
}

#: What a key or value column may be, in Spark's SQL names, for messages.
SUPPORTED_TYPES = "string, binary, bigint, int, smallint, double, float, boolean, struct<...>"


def _check_json_type(type_json: TypeJson, where: str) -> None:
    to_arrow(type_json)  # raises on types we cannot map at all
    if isinstance(type_json, dict):
        if type_json["type"] == "map":
            if type_json["keyType"] != "string":
                raise InvalidOptionError(
                    f"{where}: map keys inside a struct must be strings, "
                    f"got {describe(type_json)}"
                )
            _check_json_type(type_json["valueType"], where)
        elif type_json["type"] == "array":
            _check_json_type(type_json["elementType"], where)
        else:
            for f in type_json["fields"]:
                _check_json_type(f["type"], where)


def serde_for(type_json: TypeJson, *, column: str = "column") -> Serde:
    """Return the serde of a key or value column of Spark type ``type_json``.

    Raises:
        InvalidOptionError: the type cannot be a key or value (names the column and the types
            that would be accepted).
    """
    if isinstance(type_json, str) and type_json in _KAFKA_SERDES:
        return _KAFKA_SERDES[type_json]
    if isinstance(type_json, dict) and type_json.get("type") == "struct":
        _check_json_type(type_json, f"column {column!r}")
        return _JsonStructSerde(type_json)
    raise InvalidOptionError(
        f"column {column!r} has type {describe(type_json)}, which a store cannot hold; "
        f"accepted: {SUPPORTED_TYPES}"
    )
