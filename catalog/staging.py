"""Staging a writer's rows: serialized, checked and split by partition as they come.

A Spark write task receives its rows as a stream of Arrow batches while the JVM converts them.
``Stager.add`` does a batch's share of the work as the batch arrives (serialize keys and
values, check every row, compute each key's partition and cut the batch into partition
pieces, joined into tables of ``PIECE_ROWS`` rows as they come), so that what is left when the
stream ends is the join of each partition's last pieces, the changelog file's compression and
its one write (``flush``). ``StoreTable.stage`` is one
``add`` and one ``flush``. ``add_serialized`` takes rows serialized already (a Kafka changelog's
records), kept as they are once checked to decode by the store's types.

Every row of a batch is checked before the batch is kept, so no file can hold a row that the
store cannot apply or read back (see ``StoreTable.stage`` for the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kinds import kind_of
from catalog.log.changelog import write_changelog
from catalog.log.paths import check_write_id
from catalog.log.records import ChangelogFile
from catalog.log.spec import StoreSpec
from catalog.log.storage import Storage
from catalog.partitioner import partitions_of
from stores.columns.encode import whole_table
from stores.errors import InvalidOptionError, SerdeError
from stores.records import UNKNOWN_TIMESTAMP
from stores.serdes import Serde, serde_for
from stores.types import TypeJson, describe

#: The largest epoch-ms time a Spark TIMESTAMP (microseconds in a long) can show.
MAX_TIMESTAMP_MS = (2**63 - 1) // 1000


#: Rows of each table a writer joins a partition's pieces into (``Stager._keep_piece``), and
#: so, about, of a changelog file's record batches (the last one of a partition is smaller).
PIECE_ROWS = 1 << 16


class Stager:
    """One writer's changelog files of a store (``spec``, under ``storage``), staged from
    batches of rows (see the module doc).

    Files are named ``<write_id>-<sequence>``, the sequence counting up from the one given:
    one writer's files sort, and so are applied, in the order it flushed them.

    Raises:
        InvalidOptionError: a backend where commits are not atomic and no single-writer
            promise (NO_ATOMIC_COMMIT); an unsafe ``write_id``.
    """

    def __init__(self, storage: Storage, spec: StoreSpec, write_id: str, sequence: int = 0) -> None:
        storage.require_atomic_commit()
        self.storage = storage
        self.spec = spec
        self.layout = kind_of(spec.kind).layout(spec.params)
        self.write_id = check_write_id(write_id)
        self.sequence = sequence
        self.schema = self.layout.changelog_schema()
        #: Per partition: the rows kept since the last flush, as tables of about
        #: ``PIECE_ROWS`` rows each, then the pieces of the last few batches (``_loose``).
        self._pieces: list[list[pa.Table]] = [[] for _ in range(spec.num_partitions)]
        self._loose: list[list[pa.Table]] = [[] for _ in range(spec.num_partitions)]
        self._loose_rows = [0] * spec.num_partitions
        #: Bytes of the rows added since the last flush (their serialized columns).
        self.nbytes = 0

    def add(
        self, keys: pa.Array, values: pa.Array, columns: Mapping[str, pa.Array] | None = None
    ) -> None:
        """Serialize and check a batch of rows and keep it, cut by partition.

        Args and Raises: as ``StoreTable.stage``; a refused batch keeps nothing.
        """
        spec = self.spec
        _check_keys(keys)
        key_bytes = serde_for(spec.key_type, column="key").encode(keys)
        value_bytes = serde_for(spec.value_type, column="value").encode(values)
        # Spark's strings may hold any bytes (CAST(binary AS STRING) keeps them); the other
        # types' bytes are the serdes' own. A string that is not UTF-8 could never be read back
        # (Kafka's StringDeserializer), so it is refused here, and reads trust what they find.
        self._check_decodable(key_bytes, value_bytes, None, strings_only=True)
        self._keep(key_bytes, value_bytes, columns)

    def add_serialized(
        self,
        keys: pa.Array,
        values: pa.Array,
        columns: Mapping[str, pa.Array] | None = None,
        *,
        where: Callable[[int], str] | None = None,
        partitions: np.ndarray | None = None,
    ) -> None:
        """``add`` of rows whose keys and values are serialized already (binary, as Kafka's
        serializers of the store's types write them: a changelog's records), kept as they
        are. Each is checked to decode by the store's type as cheaply as the type allows
        (``undecodable``), so that no file holds a row the store cannot read back.

        Args:
            where: what to call row ``i`` in an error (default ``row i``).
            partitions: each row's partition, which the caller computed with the spec's
                partitioner (a rescale): not computed again.

        Raises:
            SerdeError: a key or value the store's type cannot decode, naming its row
                (UNDECODABLE_KEY, UNDECODABLE_VALUE); else as ``add``. A refused batch keeps
                nothing.
        """
        _check_keys(keys)
        self._check_decodable(keys, values, where)
        self._keep(keys.cast(pa.binary()), values.cast(pa.binary()), columns, partitions)

    def _check_decodable(
        self,
        keys: pa.Array,
        values: pa.Array,
        where: Callable[[int], str] | None,
        *,
        strings_only: bool = False,
    ) -> None:
        """Refuse serialized keys or values that the store's types cannot decode
        (``undecodable``; with ``strings_only``, of string columns alone)."""
        spec = self.spec
        for what, data, type_json in (("key", keys, spec.key_type),
                                      ("value", values, spec.value_type)):  # fmt: skip
            if strings_only and type_json != "string":
                continue
            found = undecodable(type_json, data, column=what)
            if found is not None:
                row, exc = found
                hint = (
                    "; a Spark string made by CAST(binary AS STRING) can hold bytes that are "
                    f"not UTF-8: store such {what}s in a binary column"
                    if strings_only
                    else ""
                )
                raise SerdeError(
                    f"the {what} of {where(row) if where else f'row {row}'} cannot be decoded "
                    f"as the store's {what} type ({describe(type_json)}): {exc}{hint}",
                    code=f"UNDECODABLE_{what.upper()}",
                ) from exc

    def _keep(
        self,
        key_bytes: pa.Array,
        value_bytes: pa.Array,
        columns: Mapping[str, pa.Array] | None,
        partitions: np.ndarray | None = None,
    ) -> None:
        """Check the rest of a batch of serialized rows and keep it, cut by partition."""
        spec = self.spec
        given = dict(columns or {})
        data: dict[str, pa.Array] = {"key": key_bytes, "value": value_bytes}
        for f in self.schema:
            if f.name in data:
                continue
            if f.name not in given:
                raise InvalidOptionError(
                    f"a write to {spec.kind} store {spec.name!r} needs column {f.name!r}",
                    code="MISSING_COLUMN",
                )
            data[f.name] = given[f.name].cast(f.type)
        self._check_times(data)
        rows = pa.Table.from_pydict(data, schema=self.schema)
        if not rows.num_rows:
            return
        self.nbytes += rows.nbytes
        if spec.num_partitions == 1:
            self._keep_piece(0, rows)
            return
        parts = (
            partitions_of(key_bytes, spec.num_partitions, spec.partitioner)
            if partitions is None
            else partitions
        )
        # A stable sort keeps each partition's rows in their input order (a radix sort of
        # bytes where the partitions fit one).
        narrow = parts.astype(np.uint8) if spec.num_partitions <= 256 else parts
        if not np.all(narrow[1:] >= narrow[:-1]):  # (rows grouped by partition already stay)
            rows = rows.take(pa.array(np.argsort(narrow, kind="stable")))
        start = 0
        for partition, count in enumerate(np.bincount(parts, minlength=spec.num_partitions)):
            if count:
                self._keep_piece(partition, rows.slice(start, int(count)))
            start += int(count)

    def _keep_piece(self, partition: int, rows: pa.Table) -> None:
        """Keep a batch's rows of ``partition``. Once its loose pieces reach ``PIECE_ROWS``
        rows they are joined into one table while they are still in the CPU's cache: a
        file of a few large record batches instead of one per batch (LZ4 and the IPC format
        cost per batch; readers take a file's batches as they are), and no join of every row
        at the flush, when they are no longer in cache (issue 27)."""
        loose = self._loose[partition]
        loose.append(rows)
        self._loose_rows[partition] += rows.num_rows
        if self._loose_rows[partition] >= PIECE_ROWS:
            self._pieces[partition].append(whole_table(pa.concat_tables(loose)))
            loose.clear()
            self._loose_rows[partition] = 0

    def flush(self) -> list[ChangelogFile]:
        """Write the rows added since the last flush as one changelog file (none for no rows)
        and describe its pieces for the commit record."""
        # Each joined piece is a record batch of the file (``_keep_piece``): joining them here
        # would copy every row once more, out of cache (a sixth of a write task's CPU at 4M
        # rows). The loose pieces left (under PIECE_ROWS rows) are joined into one.
        pieces = []
        for partition, (tables, loose) in enumerate(zip(self._pieces, self._loose)):
            if loose:
                tables = [*tables, whole_table(pa.concat_tables(loose))]
            if tables:
                pieces.append((partition, pa.concat_tables(tables)))
        if not pieces:
            return []
        self._pieces = [[] for _ in self._pieces]
        self._loose = [[] for _ in self._loose]
        self._loose_rows = [0] * len(self._loose)
        self.nbytes = 0
        name = f"{self.write_id}-{self.sequence:09d}"
        self.sequence += 1
        return write_changelog(self.storage, self.spec.name, pieces, name)

    def _check_times(self, data: dict[str, pa.Array]) -> None:
        """Check (and complete) a batch's time columns in place; see ``StoreTable.stage``."""
        spec = self.spec
        for time in self.layout.write_times:
            millis = data[time.name]
            if time.unknown_if_null:
                millis = data[time.name] = millis.fill_null(UNKNOWN_TIMESTAMP)
            elif millis.null_count:
                raise InvalidOptionError(
                    f"column {time.name!r} is null in {millis.null_count} row(s); every row of "
                    f"a write to {spec.kind} store {spec.name!r} needs one",
                    code="NULL_TIMESTAMP",
                )
            lowest = UNKNOWN_TIMESTAMP if time.unknown_if_null else 0
            # A window's end (start + size) must fit too: reads show it as a TIMESTAMP.
            highest = MAX_TIMESTAMP_MS - (
                spec.params.get("window_size_ms", 0) if time.name == "window_start" else 0
            )
            if len(millis) and (
                pc.min(millis).as_py() < lowest or pc.max(millis).as_py() > highest
            ):
                raise InvalidOptionError(
                    f"column {time.name!r} has values outside {lowest} to {highest} ms; "
                    "timestamps must be >= 0 ms (1970-01-01), as in Kafka, and fit a Spark "
                    "TIMESTAMP (a window's end too)",
                    code="INVALID_TIMESTAMP",
                )
        if (
            "session_start" in data
            and pc.any(pc.less(data["session_end"], data["session_start"])).as_py()
        ):
            raise InvalidOptionError(
                "column 'session_end' is before 'session_start' in some rows; a session "
                "ends at or after its start",
                code="INVALID_SESSION",
            )


def _check_keys(keys: pa.Array) -> None:
    if keys.null_count:
        raise InvalidOptionError(
            f"column 'key' is null in {keys.null_count} row(s); every row needs a key "
            "(a null value, not a null key, deletes)",
            code="NULL_KEY",
        )


#: The byte width of each fixed-width type's serialized values (``stores.serdes``).
_WIDTHS = {"long": 8, "integer": 4, "short": 2, "double": 8, "float": 4}


def undecodable(
    type_json: TypeJson, data: pa.Array, *, column: str = "column"
) -> tuple[int, SerdeError] | None:
    """The first element of ``data`` (serialized bytes; nulls are fine) that the serde of
    ``type_json`` cannot decode, and why; None if all decode. As cheap as the type allows:
    binary needs nothing, a string a UTF-8 check, a fixed-width number a length check; a
    boolean and a struct are decoded. A refusal is then narrowed to its first element by
    halves."""
    serde = serde_for(type_json, column=column)
    if type_json == "binary":
        return None
    if isinstance(type_json, str) and type_json in _WIDTHS:
        lengths = pc.binary_length(data)
        if not pc.any(pc.not_equal(lengths, _WIDTHS[type_json])).as_py():
            return None
    elif _decodes(serde, data) is None:
        return None
    lo, hi = 0, len(data)  # the first bad element lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _decodes(serde, data.slice(lo, mid - lo)) is None:
            lo = mid
        else:
            hi = mid
    exc = _decodes(serde, data.slice(lo, 1))
    return lo, exc or SerdeError(f"a {describe(type_json)} column refused these bytes")


def _decodes(serde: Serde, data: pa.Array) -> SerdeError | None:
    """Why ``serde`` cannot decode ``data`` (None: it can)."""
    try:
        serde.decode(data)
    except SerdeError as exc:
        return exc
    except (pa.ArrowException, ValueError, TypeError) as exc:
        return SerdeError(str(exc))
    return None
