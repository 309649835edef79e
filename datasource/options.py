"""The connector's options, parsed once.

Spark hands a data source a case-insensitive map of strings (lower-cased keys when they come
through SQL ``WITH (...)``). ``StoreOptions.parse`` validates all of it; nothing else reads raw
options.

The connector knows no store kind by name: the options that shape a new store are the kinds'
parameters (``catalog.kinds.all_params``), and the options that shape a read of one kind are
that kind's read options (``catalog.kinds.all_read_params``), each parsed as its kind declares
it and checked by its kind (``check_reads``, ``read_scan``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from catalog.kinds import ReadParam, Scan, all_params, all_read_params, check_reads, read_scan
from catalog.log.paths import check_store_name
from catalog.partitioner import check_partitioner
from stores.errors import InvalidOptionError
from stores.time import parse_duration_ms, parse_instant_ms

#: The options that set the store kinds' parameters (``catalog.kinds``: each kind declares
#: its own), as ``StoreSpec.params`` keys: the connector knows no kind by name.
PARAM_OF_OPTION = {p.option: p.key for p in all_params()}
_PARAM_TYPE = {p.option: p.type for p in all_params()}
#: Options that shape a store when a write creates it.
CREATION_OPTIONS = ("kind", "numPartitions", "partitioner", *PARAM_OF_OPTION)
#: The kinds' read options (each kind declares its own), by option name.
READ_PARAMS: dict[str, ReadParam] = {p.option: p for p in all_read_params()}
#: Options that pick the commit a read sees (any kind's store).
COMMIT_OPTIONS = ("versionAsOf", "timestampAsOf")
#: Options of the Kafka Streams routes (``datasource.kafka``): a store read as its changelog
#: records, changelog records written into a store, an application's state directory read.
KAFKA_OPTIONS = (
    "readAs",
    "writeFrom",
    "applicationId",
    "kafkaStore",
    "kafkaPartitions",
    "kafkaStateDir",
    "keyType",
    "valueType",
)
#: The value of ``readAs`` and ``writeFrom``: Kafka's changelog records.
KAFKA_CHANGELOG = "kafkaChangelog"
#: Every option the connector accepts, in its documented spelling.
OPTIONS = (
    "store",
    "path",
    "root",
    *CREATION_OPTIONS,
    *READ_PARAMS,
    *COMMIT_OPTIONS,
    "txnAppId",
    "txnVersion",
    "singleWriter",
    "overwriteSchema",
    "erase",
    "eraseReason",
    "checkpointLocation",
    "readHistory",
    "readChangeFeed",
    "startingVersion",
    "endingVersion",
    "startingTimestamp",
    "endingTimestamp",
    "maxRowsPerTrigger",
    "maxCommitsPerTrigger",
    "ignoreDeletes",
    "list",
    *KAFKA_OPTIONS,
)
_BY_LOWER = {name.lower(): name for name in OPTIONS}
#: Properties of a catalog table (Spark's reserved table properties), which Spark hands a Python
#: source instead of the table's options when ``CREATE TABLE`` declares no columns.
TABLE_PROPERTIES = frozenset(
    {"owner", "provider", "location", "comment", "external", "is_managed_location", "collation"}
)
#: How to use a catalog table: columns declared, options per query.
CATALOG_TABLE_HINT = (
    "a catalog table declares its columns (CREATE TABLE t (key STRING, value DOUBLE, "
    "timestamp TIMESTAMP) USING state_store) and takes its options per query, because Spark "
    "does not pass a table's OPTIONS to a Python source: SELECT * FROM t WITH ('store' = "
    "'rates'), INSERT INTO t WITH ('store' = 'rates') SELECT ...; or use a temporary view "
    "(CREATE TEMPORARY VIEW v USING state_store OPTIONS (store 'rates'))"
)


@dataclass(frozen=True)
class StoreOptions:
    """Parsed, validated options of one read or write."""

    store: str
    root: str | None = None
    kind: str | None = None
    num_partitions: int | None = None
    #: ``crc32`` or ``kafka`` (``catalog.partitioner``), lower-cased.
    partitioner: str | None = None
    #: The kind parameters given, keyed as ``StoreSpec.params`` (parsed as each declares).
    params: Mapping[str, int | bool] = field(default_factory=dict)
    #: The kinds' read options given, by option name (parsed as each declares: instants in
    #: epoch ms, choices lower-cased).
    reads: Mapping[str, int | str] = field(default_factory=dict)
    version_as_of: int | None = None
    read_history: bool = False
    read_change_feed: bool = False
    starting_version: int | None = None
    ending_version: int | None = None
    starting_timestamp_ms: int | None = None
    ending_timestamp_ms: int | None = None
    max_rows_per_trigger: int | None = None
    max_commits_per_trigger: int | None = None
    #: ``ignoreDeletes`` of a plain stream (Delta's option; None: not given, which skips
    #: deletes): ``False`` fails the query at a commit that deletes rows.
    ignore_deletes: bool | None = None
    list_what: str | None = None  # "stores": the warehouse's stores as a table
    timestamp_as_of_ms: int | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    single_writer: bool = False
    overwrite_schema: bool = False
    #: ``erase``: the DataFrame's keys are erased from the store (``datasource.erase``), for
    #: ``eraseReason``.
    erase: bool = False
    erase_reason: str | None = None
    #: ``readAs`` / ``writeFrom``: "kafkaChangelog" (the store as, or from, Kafka's records).
    read_as: str | None = None
    write_from: str | None = None
    #: The Kafka Streams application's ``application.id``, its name of the store (default: the
    #: store's), its partition count, and its ``state.dir``.
    application_id: str | None = None
    kafka_store: str | None = None
    kafka_partitions: int | None = None
    kafka_state_dir: str | None = None
    #: Spark DDL types of a store's key and value where no DataFrame gives them (a changelog
    #: import, a state directory read); None: binary.
    key_type: str | None = None
    value_type: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool = False) -> StoreOptions:
        """Parse Spark's option map (``streaming``: of a ``writeStream``).

        Raises:
            InvalidOptionError: an unknown option (naming the closest valid one), a missing
                store name, or a value that does not parse (naming the option).
        """
        given: dict[str, str] = {}
        for raw_name, value in options.items():
            name = _BY_LOWER.get(raw_name.lower())
            if name is None and raw_name.lower() in TABLE_PROPERTIES:
                raise InvalidOptionError(
                    f"Spark passed catalog table property {raw_name!r} instead of options: "
                    f"{CATALOG_TABLE_HINT}",
                    code="CATALOG_TABLE_OPTIONS",
                )
            if name is None:
                close = difflib.get_close_matches(raw_name.lower(), list(_BY_LOWER), n=1)
                hint = f"; did you mean {_BY_LOWER[close[0]]!r}?" if close else ""
                raise InvalidOptionError(
                    f"unknown option {raw_name!r}{hint} Accepted: {', '.join(OPTIONS)}",
                    code="UNKNOWN_OPTION",
                )
            given[name] = value
        store = given.get("store")
        path = given.get("path")
        if store and path and store != path:
            raise InvalidOptionError(
                f"option 'store' is {store!r} but the path given to load()/save() is "
                f"{path!r}; give the store name once"
            )
        name = store or path
        if not name and "list" not in given:
            raise InvalidOptionError(
                "no store named: set option 'store' (.option('store', 'rates')) "
                "or pass the name to load('rates') / save('rates'); in SQL, "
                f"OPTIONS (store 'rates') of a temporary view. If this is a catalog table: "
                f"{CATALOG_TABLE_HINT}",
                code="MISSING_OPTION",
            )
        return cls(
            store=check_store_name(name) if name else "",
            root=given.get("root") or None,
            kind=given["kind"].strip().lower() if "kind" in given else None,
            num_partitions=_positive_int(given, "numPartitions"),
            partitioner=_partitioner(given),
            params=_params(given),
            reads=_reads(given),
            version_as_of=_version(given),
            read_history=bool(_boolean(given, "readHistory")),
            read_change_feed=bool(_boolean(given, "readChangeFeed")),
            starting_version=_whole(given, "startingVersion"),
            ending_version=_whole(given, "endingVersion"),
            starting_timestamp_ms=_instant(given, "startingTimestamp"),
            ending_timestamp_ms=_instant(given, "endingTimestamp"),
            max_rows_per_trigger=_positive_int(given, "maxRowsPerTrigger"),
            max_commits_per_trigger=_positive_int(given, "maxCommitsPerTrigger"),
            ignore_deletes=_boolean(given, "ignoreDeletes"),
            list_what=_list_what(given),
            timestamp_as_of_ms=_instant(given, "timestampAsOf"),
            txn_app_id=_txn_app_id(given, streaming),
            txn_version=_whole(given, "txnVersion"),
            single_writer=bool(_boolean(given, "singleWriter")),
            overwrite_schema=bool(_boolean(given, "overwriteSchema")),
            erase=bool(_boolean(given, "erase")),
            erase_reason=_text(given, "eraseReason"),
            read_as=_kafka_changelog(given, "readAs"),
            write_from=_kafka_changelog(given, "writeFrom"),
            application_id=_text(given, "applicationId"),
            kafka_store=check_store_name(given["kafkaStore"]) if "kafkaStore" in given else None,
            kafka_partitions=_positive_int(given, "kafkaPartitions"),
            kafka_state_dir=_text(given, "kafkaStateDir"),
            key_type=_text(given, "keyType"),
            value_type=_text(given, "valueType"),
        )

    def creation_params(self) -> dict[str, int | bool | str | None]:
        """Every kind parameter, keyed as ``StoreSpec.params`` (None: not given)."""
        return {key: self.params.get(key) for key in PARAM_OF_OPTION.values()}

    def creation_value(self, option: str) -> int | bool | str | None:
        """The parsed value of a creation option (None if not given)."""
        if option == "kind":
            return self.kind
        if option == "numPartitions":
            return self.num_partitions
        if option == "partitioner":
            return self.partitioner
        return self.params.get(PARAM_OF_OPTION[option])

    def scan(self) -> Scan:
        """What a read asks for (see ``catalog.kinds.Scan``), as the kinds read their options.

        Raises:
            InvalidOptionError: read options that contradict each other (a range whose start
                is after its end).
        """
        return read_scan(self.reads)

    def reads_only(self) -> list[str]:
        """The options given that apply to reads (batch or stream) only (a write refuses them)."""
        kinds = [o for o in self.reads if READ_PARAMS[o].refused_by_writes]
        modes = (
            ("readHistory", self.read_history or None), ("readChangeFeed", self.read_change_feed or None),
            ("startingVersion", self.starting_version), ("endingVersion", self.ending_version),
            ("startingTimestamp", self.starting_timestamp_ms),
            ("endingTimestamp", self.ending_timestamp_ms),
            ("maxRowsPerTrigger", self.max_rows_per_trigger),
            ("maxCommitsPerTrigger", self.max_commits_per_trigger),
            ("ignoreDeletes", self.ignore_deletes), ("list", self.list_what),
            ("readAs", self.read_as), ("kafkaStateDir", self.kafka_state_dir),
        )  # fmt: skip
        return kinds + self._commit_options() + [o for o, v in modes if v is not None]

    def instant_options(self) -> list[str]:
        """The options given that pick the instant or the commit a read sees (a change feed,
        which reads a range of commits, refuses them)."""
        kinds = [o for o in self.reads if READ_PARAMS[o].picks_instant]
        return kinds + self._commit_options()

    def _commit_options(self) -> list[str]:
        values = (self.version_as_of, self.timestamp_as_of_ms)
        return [o for o, v in zip(COMMIT_OPTIONS, values, strict=True) if v is not None]


def _params(given: dict[str, str]) -> dict[str, int | bool]:
    """The kind parameters given, each read as its kind declares it (durations, booleans)."""
    out: dict[str, int | bool] = {}
    for option, key in PARAM_OF_OPTION.items():
        value = (_duration if _PARAM_TYPE[option] == "duration" else _boolean)(given, option)
        if value is not None:
            out[key] = value
    return out


def _partitioner(given: dict[str, str]) -> str | None:
    return check_partitioner(given["partitioner"]) if "partitioner" in given else None


def _txn_app_id(given: dict[str, str], streaming: bool) -> str | None:
    """``txnAppId`` and ``txnVersion`` come together (Delta's idempotent writes); a stream's
    version is its micro-batch id, so there ``txnAppId`` comes alone (if at all)."""
    if streaming and "txnVersion" in given:
        raise InvalidOptionError(
            "option 'txnVersion' does not apply to a streaming write: each micro-batch commits "
            "with its batch id as the version; give 'txnAppId' alone (default: the query id)"
        )
    if not streaming and ("txnAppId" in given) != ("txnVersion" in given):
        raise InvalidOptionError(
            "options 'txnAppId' and 'txnVersion' go together: give both (an application id "
            "and a version that grows with each write) or neither",
            code="MISSING_OPTION",
        )
    app_id = given.get("txnAppId")
    if app_id is not None and not app_id.strip():
        raise InvalidOptionError("option 'txnAppId' is empty; accepted: a non-empty string")
    return app_id


def _reads(given: dict[str, str]) -> dict[str, int | str]:
    """The kinds' read options given, each read as its kind declares it, checked together.

    Raises:
        InvalidOptionError: a value that does not parse, or is not one of a choice's (naming
            the closest), or options that ask for nothing together (``check_reads``).
    """
    reads: dict[str, int | str] = {}
    for option, param in READ_PARAMS.items():
        if option not in given:
            continue
        instant = _instant(given, option) if param.type == "instant" else None
        if instant is not None:
            reads[option] = instant
            continue
        value = given[option].strip().lower()
        if value not in param.choices:
            close = difflib.get_close_matches(value, list(param.choices), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidOptionError(
                f"option {option!r} is {given[option]!r}{hint} Accepted: {param.choices_note}"
            )
        reads[option] = value
    check_reads(reads)
    return reads


def _kafka_changelog(given: dict[str, str], name: str) -> str | None:
    if name not in given:
        return None
    if given[name].strip().lower() != KAFKA_CHANGELOG.lower():
        raise InvalidOptionError(
            f"option {name!r} is {given[name]!r}; accepted: {KAFKA_CHANGELOG!r} (Kafka "
            "Streams' changelog records of the store)"
        )
    return KAFKA_CHANGELOG


def _text(given: dict[str, str], name: str) -> str | None:
    if name not in given:
        return None
    text = given[name].strip()
    if not text:
        raise InvalidOptionError(f"option {name!r} is empty; accepted: a non-empty string")
    return text


def _list_what(given: dict[str, str]) -> str | None:
    if "list" not in given:
        return None
    what = given["list"].strip().lower()
    if what != "stores":
        raise InvalidOptionError(
            f"option 'list' is {given['list']!r}; accepted: 'stores' (a store's commits: "
            "option 'readHistory')"
        )
    return what


def _version(given: dict[str, str]) -> int | None:
    if "versionAsOf" in given and "timestampAsOf" in given:
        raise InvalidOptionError(
            "options 'versionAsOf' and 'timestampAsOf' both pick the commit to read; give one"
        )
    version = _whole(given, "versionAsOf")
    if version is not None and version < 1:
        raise InvalidOptionError("option 'versionAsOf' is 0; commits are numbered from 1")
    return version


def _whole(given: dict[str, str], name: str) -> int | None:
    if name not in given:
        return None
    text = given[name].strip()
    if not text.isdigit():
        raise InvalidOptionError(
            f"option {name!r} has value {given[name]!r}; accepted: a whole number >= 0"
        )
    return int(text)


def _positive_int(given: dict[str, str], name: str) -> int | None:
    if name not in given:
        return None
    text = given[name].strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidOptionError(
            f"option {name!r} has value {given[name]!r}; accepted: a whole number >= 1"
        )
    return int(text)


def _duration(given: dict[str, str], name: str) -> int | None:
    return parse_duration_ms(given[name], name) if name in given else None


def _instant(given: dict[str, str], name: str) -> int | None:
    if name not in given:
        return None
    value = parse_instant_ms(given[name], name)
    if not -(2**63) <= value <= 2**63 - 1:
        raise InvalidOptionError(
            f"option {name!r} has value {given[name]!r}, outside the epoch-milliseconds range "
            "of a 64-bit long"
        )
    return value


def _boolean(given: dict[str, str], name: str) -> bool | None:
    if name not in given:
        return None
    text = given[name].strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(
            f"option {name!r} has value {given[name]!r}; accepted: true or false"
        )
    return text == "true"
