"""What Python callers hand the store: rows and keys from Arrow, pandas or polars.

``arrow_rows`` takes a write's rows (a ``pyarrow.Table``, ``RecordBatch`` or
``RecordBatchReader``, a pandas DataFrame, or anything with ``__arrow_c_stream__``: a polars
DataFrame, a DuckDB relation) as a stream of batches without copying them, and describes each
column by Spark's JSON type name (``stores.types.from_arrow``), so that a Python write meets
the column rules a Spark write does (``catalog.operations.write.check_columns``). Arrow's
variants of one type (``large_string``, ``string_view``: polars' strings) are cast to the
store's, batch by batch. ``typed_keys`` takes a list of keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from catalog.kinds import HEADERS
from catalog.operations.write import HEADERS_ARROW
from catalog.table import Table
from stores.errors import InvalidOptionError
from stores.types import TypeJson, from_arrow, to_arrow

#: Arrow errors of a cast or a conversion that a caller's data caused.
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError)
#: What a write takes, for messages.
ACCEPTED_DATA = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, a pandas or polars DataFrame, or any "
    "object with __arrow_c_stream__"
)


def _reader(data: Any) -> pa.RecordBatchReader | pa.Table:
    """``data`` as Arrow, without a copy where Arrow's C stream interface allows."""
    if isinstance(data, (pa.Table, pa.RecordBatchReader)):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__module__.startswith("pandas"):
        if not hasattr(data, "columns"):
            raise InvalidOptionError(
                f"the data is a {type(data).__name__}; accepted: {ACCEPTED_DATA}",
                code="INVALID_DATA",
            )
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except _ARROW_ERRORS as exc:
            raise InvalidOptionError(
                f"the pandas DataFrame cannot be read as Arrow: {exc}", code="INVALID_DATA"
            ) from exc
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    raise InvalidOptionError(
        f"the data is a {type(data).__name__}; accepted: {ACCEPTED_DATA}", code="INVALID_DATA"
    )


def _column_type(table: Table, field: pa.Field) -> TypeJson:
    """A column's type by Spark's JSON name (``void`` for a column of nulls only)."""
    arrow_type = field.type
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_null(arrow_type):
        spec = table.spec
        return {"key": spec.key_type, "value": spec.value_type}.get(field.name, "void")
    try:
        return from_arrow(arrow_type)
    except InvalidOptionError:
        raise InvalidOptionError(
            f"column {field.name!r} has Arrow type {field.type}, which no Spark type matches "
            "(a store holds Spark's types: string, binary, bigint, int, smallint, tinyint, "
            "double, float, boolean, date, timestamp, decimal, struct, array, map)",
            code="COLUMN_TYPE_MISMATCH",
        ) from None


def _targets(table: Table, schema: pa.Schema) -> dict[str, pa.DataType]:
    """The Arrow type each column is cast to as it is staged, where it must change."""
    spec = table.spec
    wanted = {"key": to_arrow(spec.key_type), "value": to_arrow(spec.value_type)}
    if HEADERS in schema.names:
        wanted[HEADERS] = HEADERS_ARROW
    targets = {name: t for name, t in wanted.items() if schema.field(name).type != t}
    for field in schema:
        if pa.types.is_dictionary(field.type) and field.name not in targets:
            targets[field.name] = field.type.value_type
    return targets


def _cast_batches(
    batches: Iterator[pa.RecordBatch], targets: dict[str, pa.DataType]
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        if not targets:
            yield batch
            continue
        arrays = list(batch.columns)
        for name, target in targets.items():
            i = batch.schema.get_field_index(name)
            try:
                arrays[i] = arrays[i].cast(target)
            except _ARROW_ERRORS as exc:
                raise InvalidOptionError(
                    f"column {name!r} ({batch.schema.field(name).type}) cannot be read as "
                    f"{target}: {exc}",
                    code="COLUMN_TYPE_MISMATCH",
                ) from exc
        yield pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def arrow_rows(table: Table, data: Any) -> tuple[dict[str, TypeJson], Iterator[pa.RecordBatch]]:
    """A write's rows for ``table``: each column's type (Spark's JSON name), and the batches,
    cast to the store's Arrow types where Arrow has several for one (see the module doc).

    Raises:
        InvalidOptionError: data of another sort (INVALID_DATA), a column of an Arrow type
            no Spark type matches, or two columns of one name (COLUMN_TYPE_MISMATCH,
            DUPLICATE_COLUMN).
    """
    source = _reader(data)
    schema = source.schema
    duplicates = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if duplicates:
        raise InvalidOptionError(
            f"the data has column(s) {', '.join(map(repr, duplicates))} more than once",
            code="DUPLICATE_COLUMN",
        )
    columns = {field.name: _column_type(table, field) for field in schema}
    if "key" not in columns or "value" not in columns:
        return columns, iter(())  # refused by check_columns
    batches = iter(source.to_batches() if isinstance(source, pa.Table) else source)
    return columns, _cast_batches(batches, _targets(table, schema))


def typed_keys(table: Table, keys: Any, purpose: str) -> pa.Array:
    """``keys`` (a list, an Arrow array, a pandas or polars Series) as an Arrow array of the
    store's key type.

    Raises:
        InvalidOptionError: no keys, a null key, or keys not of the store's key type
            (INVALID_KEYS; ``purpose`` says what they are for: "to erase").
    """
    key_type = table.arrow_schema().field("key").type
    try:
        if hasattr(keys, "to_arrow"):  # polars
            keys = keys.to_arrow()
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if not isinstance(keys, pa.Array):
            keys = pa.Array.from_pandas(keys) if hasattr(keys, "to_numpy") else pa.array(list(keys))
        if keys.type != key_type:
            keys = keys.cast(key_type)
    except _ARROW_ERRORS as exc:
        raise InvalidOptionError(
            f"the keys {purpose} are not of store {table.spec.name!r}'s key type ({key_type}): "
            f"{exc}",
            code="INVALID_KEYS",
        ) from exc
    if len(keys) == 0:
        raise InvalidOptionError(f"no keys {purpose} were given", code="INVALID_KEYS")
    if keys.null_count:
        raise InvalidOptionError(
            f"{keys.null_count} of the keys {purpose} are null; a store holds no null key",
            code="INVALID_KEYS",
        )
    return keys


__all__ = ["ACCEPTED_DATA", "arrow_rows", "typed_keys"]
