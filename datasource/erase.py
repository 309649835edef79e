"""Keys erased from a store from Spark: a DataFrame of keys written with option ``erase``.

``df.select("key").write.format("state_store").option("store", "customers")
.option("erase", "true").option("eraseReason", "GDPR request 1234").mode("append").save()``
erases the DataFrame's keys everywhere, as ``StoreTable.erase`` does
(``catalog.operations.erase``): the tasks send their keys to the driver, whose commit runs the
one erasure (one ``erase`` commit, its audit record in ``readHistory``). Its audit key comes
from ``$STATE_STORE_AUDIT_KEY`` on the driver, never from an option: options are logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from catalog.catalog import Catalog
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from stores.errors import InvalidOptionError, StoreNotFoundError
from stores.types import same_type


@dataclass(frozen=True)
class ErasedKeys(WriterCommitMessage):  # type: ignore[misc]
    """A task's keys to erase."""

    keys: pa.Array


@surface_errors
class EraseWriter(DataSourceArrowWriter):
    """Collects the keys on the tasks; erases them in the driver's commit."""

    def __init__(self, root: str, store: str, reason: str, single_writer: bool) -> None:
        self.root = root
        self.store = store
        self.reason = reason
        self.single_writer = single_writer

    @classmethod
    def plan(cls, options: StoreOptions, schema: StructType, overwrite: bool) -> EraseWriter:
        """Check the options and the DataFrame: a ``key`` column of the store's key type.

        Raises:
            InvalidOptionError: no ``eraseReason``, mode overwrite, no ``key`` column or one
                of another type, another option of a write; StoreNotFoundError: no store.
        """
        if options.erase_reason is None:
            raise InvalidOptionError(
                "option 'erase' needs option 'eraseReason' (kept in the erasure's audit "
                "record), e.g. .option('eraseReason', 'GDPR request 1234')",
                code="MISSING_OPTION",
            )
        if overwrite:
            raise InvalidOptionError(
                "option 'erase' erases the DataFrame's keys and keeps the rest: write with "
                '.mode("append"), not overwrite',
                code="ERASE_NEEDS_APPEND",
            )
        catalog = Catalog(options.root, single_writer=options.single_writer)
        table = catalog.find(options.store)
        if table is None:
            raise StoreNotFoundError(
                f"[STORE_NOT_FOUND] store {options.store!r} does not exist under "
                f"{catalog.root}: there is nothing to erase"
            )
        columns = {f.name: f.dataType for f in schema.fields}
        if "key" not in columns:
            raise InvalidOptionError(
                f"option 'erase' takes a DataFrame of the keys to erase, in a column 'key'; "
                f"columns: {', '.join(columns) or 'none'}",
                code="MISSING_COLUMN",
            )
        if not same_type(columns["key"].jsonValue(), table.spec.key_type):
            raise InvalidOptionError(
                f"column 'key' is {columns['key'].simpleString()} but store "
                f"{options.store!r} has keys of type {table.spec.key_type!r}",
                code="COLUMN_TYPE_MISMATCH",
            )
        return cls(catalog.root, options.store, options.erase_reason, options.single_writer)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ErasedKeys:
        keys = [batch.column("key") for batch in iterator if batch.num_rows]
        return ErasedKeys(pa.concat_arrays(keys) if keys else pa.array([], pa.null()))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        arrays = [m.keys for m in messages if isinstance(m, ErasedKeys) and len(m.keys)]
        if not arrays:
            raise InvalidOptionError("the DataFrame holds no key to erase", code="INVALID_KEYS")
        table = Catalog(self.root, single_writer=self.single_writer).load(self.store)
        table.erase(pa.chunked_array(arrays), reason=self.reason)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing was written: the tasks only read the keys."""


__all__ = ["EraseWriter", "ErasedKeys"]
