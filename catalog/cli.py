"""``state-store``: the operator's command line over any warehouse root (an fsspec URL).

    state-store [--root URL] list
    state-store [--root URL] describe STORE
    state-store [--root URL] history STORE
    state-store [--root URL] compact STORE [--partition N ...]
    state-store [--root URL] query STORE KEY [--as-of T] [--from T --to T]
    state-store [--root URL] drop STORE --yes
    state-store [--root URL] vacuum [STORE ...] [--older-than "7 days"] [--dry-run]
                                    [--retain-history "30 days"]
    state-store [--root URL] kafka-import STATE_DIR --application-id APP --store S --kind K
                                    [--option NAME=VALUE ...] [--key-type T] [--value-type T]
                                    [--as NAME]
    state-store [--root URL] kafka-export STORE STATE_DIR --application-id APP
                                    --kafka-version V --offset P=OFFSET ... [--subtopology N]
                                    [--kafka-store S]
    state-store [--root URL] kafka-offsets STORE
    state-store [--root URL] kafka-rescale STORE --partitions N [--dry-run]
    state-store [--root URL] kafka-move STATE_DIR --application-id APP --store S --kind K
                                    [--option NAME=VALUE ...] [--key-type T] [--value-type T]
                                    --to-state-dir DIR --to-application-id NEW
                                    --kafka-version V (--records FILE | --bootstrap-servers B)
                                    [--partitions N] [--to-store S] [--as NAME]
                                    [--to-option NAME=VALUE ...] [--subtopology N] [--dry-run]

``kafka-import`` makes a store of a stopped Kafka Streams application's state directory
(``<STATE_DIR>/<APP>/``; the store's kind and its parameters as the application builds it, by
their option names: ``--option retention="1 day"``); ``kafka-export`` writes a store as the
application's task directories, with the changelog offset of each partition; ``kafka-offsets``
shows the changelog offsets a store holds (and Spark's ``startingOffsets`` to continue).
``kafka-rescale`` rewrites a ``partitioner=kafka`` store to another partition count;
``kafka-move`` does a whole move of a stopped application's store to a new application id:
import, rescale (``--partitions``), the new changelog records produced (``--bootstrap-servers``)
or written to a Parquet file (``--records``), the new application's task directories.

Every command takes ``--json`` for machine-readable output. Exit codes: 0 done, 1 the command
failed (the message carries the error's code), 2 bad usage. ``compact`` and ``vacuum`` show a
progress bar (tqdm) on stderr when it is a terminal and ``--json`` is not given, as do
``kafka-rescale`` and ``kafka-move``; otherwise their output is only their result (and, for
``compact``, a line per partition on stderr).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from catalog.catalog import Catalog
from catalog.cli_erase import add_erase, erase_command, typed_key
from stores.errors import InvalidOptionError, StateStoreError
from stores.time import parse_duration_ms

if TYPE_CHECKING:
    from tqdm import tqdm


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="state-store", description="Inspect and maintain a state_store warehouse."
    )
    parser.add_argument(
        "--root", help="warehouse URL or path (default: $STATE_STORE_ROOT, else ./state-warehouse)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--single-writer",
        action="store_true",
        help="allow a backend without atomic create-if-absent (one writer at a time)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the stores of the warehouse")
    commands.add_parser("describe", help="a store's spec and latest commit").add_argument("store")
    commands.add_parser("history", help="a store's commits, newest first").add_argument("store")
    compact = commands.add_parser(
        "compact", help="snapshot a store's partitions so that new readers replay less"
    )
    compact.add_argument("store")
    compact.add_argument(
        "--partition", type=int, action="append", dest="partitions", help="only this partition"
    )
    query = commands.add_parser(
        "query", help="a key's value (IQv2: latest, as of a time, or windows in a range)"
    )
    query.add_argument("store")
    query.add_argument("key", help="the key, as text (binary keys: hex; struct keys: JSON)")
    query.add_argument("--as-of", help="versioned stores: the value valid at this time")
    query.add_argument("--from", dest="time_from", help="window stores: first window start")
    query.add_argument("--to", dest="time_to", help="window stores: last window start")
    drop = commands.add_parser("drop", help="delete a store and all its files")
    drop.add_argument("store")
    drop.add_argument("--yes", action="store_true", help="confirm: the store cannot be restored")
    vacuum = commands.add_parser(
        "vacuum", help="delete leftovers of failed writes older than a safety window"
    )
    vacuum.add_argument("stores", nargs="*", help="stores to clean (default: all)")
    vacuum.add_argument(
        "--older-than",
        default="7 days",
        help="safety window, longer than your longest write (default: 7 days)",
    )
    vacuum.add_argument("--dry-run", action="store_true", help="report, delete nothing")
    vacuum.add_argument(
        "--retain-history",
        help="also drop what only commits older than this need (after a compaction); "
        "older commits can no longer be read (versionAsOf, change feed)",
    )
    add_erase(commands)
    _kafka_commands(commands)
    return parser


def _kafka_commands(commands: Any) -> None:
    kafka_in = commands.add_parser(
        "kafka-import", help="a store made of a stopped Kafka Streams application's state dir"
    )
    _source_arguments(kafka_in, "the application's state.dir")
    kafka_in.add_argument("--as", dest="name", help="the new store's name (default: --store)")
    kafka_out = commands.add_parser(
        "kafka-export", help="a store written as a Kafka Streams application's task dirs"
    )
    kafka_out.add_argument("store")
    kafka_out.add_argument("state_dir", help="the application's state.dir")
    kafka_out.add_argument("--application-id", required=True, help="its application.id")
    kafka_out.add_argument("--kafka-version", required=True, help="its Kafka Streams version")
    kafka_out.add_argument(
        "--offset", action="append", default=[], metavar="PARTITION=OFFSET",
        help="the changelog offset of the last record the partition's state reflects",
    )  # fmt: skip
    kafka_out.add_argument("--subtopology", type=int, default=0, help="its topic group id")
    kafka_out.add_argument("--kafka-store", help="its name of the store (default: STORE)")
    commands.add_parser(
        "kafka-offsets", help="the Kafka changelog offsets a store holds"
    ).add_argument("store")
    rescale = commands.add_parser(
        "kafka-rescale", help="rewrite a partitioner=kafka store to another partition count"
    )
    rescale.add_argument("store")
    rescale.add_argument("--partitions", type=int, required=True, help="the new partition count")
    rescale.add_argument("--dry-run", action="store_true", help="report, commit nothing")
    _kafka_move(commands)


def _source_arguments(command: argparse.ArgumentParser, state_dir: str) -> None:
    """The arguments that name a stopped application's store: its state.dir, application
    id, store name, kind, the kind's options and the key and value types."""
    command.add_argument("state_dir", help=state_dir)
    command.add_argument("--application-id", required=True, help="its application.id")
    command.add_argument("--store", required=True, help="the store's name in its topology")
    command.add_argument("--kind", required=True, help="keyvalue, timestamped, versioned, ...")
    command.add_argument(
        "--option", action="append", default=[], metavar="NAME=VALUE",
        help="a parameter of the kind, by its option name (retention, windowSize, ...)",
    )  # fmt: skip
    command.add_argument("--key-type", default="binary", help="the key's type (default binary)")
    command.add_argument("--value-type", default="binary", help="the value's type")


def _kafka_move(commands: Any) -> None:
    move = commands.add_parser(
        "kafka-move", help="a stopped application's store moved to a new application id"
    )
    _source_arguments(move, "the old application's state.dir")
    move.add_argument("--to-state-dir", required=True, help="the new application's state.dir")
    move.add_argument("--to-application-id", required=True, help="its application.id")
    move.add_argument("--kafka-version", required=True, help="its Kafka Streams version")
    move.add_argument("--partitions", type=int, help="its partition count (default: the old)")
    move.add_argument("--to-store", help="its name of the store (default: --store)")
    move.add_argument(
        "--to-option", action="append", metavar="NAME=VALUE",
        help="its store's parameters, if given: refused unless the old store's",
    )  # fmt: skip
    move.add_argument("--as", dest="name", help="the warehouse store made (default: --store)")
    move.add_argument("--subtopology", type=int, default=0, help="its topic group id")
    where = move.add_mutually_exclusive_group(required=True)
    where.add_argument("--records", help="write the new changelog records to this Parquet file")
    where.add_argument(
        "--bootstrap-servers", help="produce them to the new changelog topic (the kafka extra)"
    )
    move.add_argument("--dry-run", action="store_true", help="check and report, write nothing")


def _pairs(items: list[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidOptionError(f"{flag} {item!r} is not NAME=VALUE")
        out.append((name.strip(), value.strip()))
    return out


def _store_params(options: list[str], flag: str) -> dict[str, Any]:
    """Store parameters from ``NAME=VALUE`` options (option names, durations, booleans)."""
    from catalog.kinds import all_params

    by_option = {p.option.lower(): p for p in all_params()}
    params: dict[str, Any] = {}
    for name, value in _pairs(options, flag):
        param = by_option.get(name.lower())
        if param is None:
            accepted = ", ".join(sorted(p.option for p in all_params()))
            raise InvalidOptionError(f"{flag} {name!r} is no store parameter; accepted: {accepted}")
        if param.type == "duration":
            params[param.key] = parse_duration_ms(value, param.option)
        elif value.lower() in ("true", "false"):
            params[param.key] = value.lower() == "true"
        else:
            raise InvalidOptionError(f"{flag} {name}={value!r}: accepted: true or false")
    return params


def kafka_import(catalog: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    """``kafka-import``: the new store's name, rows and the offsets it holds."""
    params = _store_params(args.option, "--option")
    table = catalog.import_kafka_state_dir(
        args.state_dir, args.application_id, args.store, args.kind, name=args.name,
        key_type=args.key_type, value_type=args.value_type, **params,
    )  # fmt: skip
    return {"store": table.spec.name, **kafka_offsets(table)}


def kafka_export(catalog: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    """``kafka-export``: the task directories written."""
    offsets = {}
    for partition, offset in _pairs(args.offset, "--offset"):
        if not re.fullmatch(r"[0-9]+", partition) or not re.fullmatch(r"[0-9]+", offset):
            raise InvalidOptionError(
                f"--offset {partition}={offset}: accepted: PARTITION=OFFSET, whole numbers"
            )
        offsets[int(partition)] = int(offset)
    written = catalog.load(args.store).export_kafka_state_dir(
        args.state_dir, args.application_id, kafka_version=args.kafka_version,
        offsets=offsets, subtopology=args.subtopology, store=args.kafka_store,
    )  # fmt: skip
    return {"store": args.store, "task_dirs": written}


def kafka_rescale(catalog: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    """``kafka-rescale``: the commit, or with ``--dry-run`` how the rows would be regrouped."""
    from catalog.kafka.rescale import regroup

    table = catalog.load(args.store)
    before = table.spec.num_partitions
    out: dict[str, Any] = {"store": args.store, "from": before, "to": args.partitions}
    steps = before + (0 if args.dry_run else 1)  # each partition read, then the commit
    bar = _bar(args, steps, "step", f"rescale {args.store}")
    try:
        if args.dry_run:
            plan = regroup(table, args.partitions, _stepper(bar))
            return {**out, "dry_run": True, "rows": plan.records.num_rows, "moved": plan.moved,
                    "rows_by_partition": plan.rows_by_partition}  # fmt: skip
        record = table.rescale(args.partitions, progress=_stepper(bar))
    finally:
        _finish(bar)
    if record is None:
        return {**out, "rescaled": False, "reason": f"the store has {before} partitions"}
    return {**out, "rescaled": True, "commit": record.id, **record.summary}


def kafka_move(catalog: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    """``kafka-move``: the plan (``--dry-run``) or what the move did."""
    bar = _bar(args, None if args.dry_run else 4, "step", f"move {args.store}")
    try:
        plan = catalog.move_kafka_application(
            args.state_dir, args.application_id, args.store, args.kind,
            to_state_dir=args.to_state_dir, to_application_id=args.to_application_id,
            kafka_version=args.kafka_version,
            records=args.records or f"kafka://{args.bootstrap_servers}",
            num_partitions=args.partitions, to_store=args.to_store, name=args.name,
            key_type=args.key_type, value_type=args.value_type,
            to_params=None if args.to_option is None
            else _store_params(args.to_option, "--to-option"),
            subtopology=args.subtopology, dry_run=args.dry_run, progress=_stepper(bar),
            **_store_params(args.option, "--option"),
        )  # fmt: skip
    finally:
        _finish(bar)
    return plan.to_dict()


def kafka_offsets(table: Any) -> dict[str, Any]:
    """A store's changelog offsets (``topic-partition``: offset) and the ``startingOffsets`` a
    Spark Kafka read continues from."""
    held = table.kafka_offsets()
    return {
        "offsets": {f"{topic}-{partition}": offset for (topic, partition), offset in held.items()},
        "startingOffsets": table.kafka_starting_offsets(),
    }


def history(catalog: Catalog, store: str) -> list[dict[str, Any]]:
    """A store's commits, newest first (see ``Catalog.history``)."""
    rows = catalog.history(store).to_pylist()
    for row in rows:
        row["timestamp_ms"] = int(row.pop("timestamp").timestamp() * 1000)
        if row["operation_parameters"] is not None:
            row["operation_parameters"] = dict(row["operation_parameters"])
    return rows


def query_key(
    catalog: Catalog,
    store: str,
    text: str,
    as_of: str | None = None,
    time_from: str | None = None,
    time_to: str | None = None,
) -> Any:
    """One key's answer from the store's partitions (Kafka's IQv2), as plain JSON values."""
    from catalog.operations.query import StateQueryRequest
    from stores.time import parse_instant_ms

    table = catalog.load(store)
    spec = table.spec
    key = typed_key(spec.key_type, text)
    query = table.kind.key_query(
        key,
        as_of=None if as_of is None else parse_instant_ms(as_of, "--as-of"),
        time_from=None if time_from is None else parse_instant_ms(time_from, "--from"),
        time_to=None if time_to is None else parse_instant_ms(time_to, "--to"),
    )
    result = catalog.query(StateQueryRequest.in_store(store).with_query(query))
    answers = list(result.get_partition_results().values())
    failed = [a for a in answers if not a.is_success()]
    if failed:
        raise InvalidOptionError(
            f"query {type(query).__name__} on {store!r} failed: {failed[0].get_failure_message()}"
        )
    found = [a.get_result() for a in answers if a.get_result() is not None]
    plain = [_plain(r) for r in found]
    if table.kind.entries_per_key:  # every partition's entries of the key
        value: Any = [entry for entries in plain for entry in entries]
    else:  # the key's one partition answers; missing keys answer null
        value = plain[0] if plain else None
    return {"store": store, "key": _plain(key), "result": value}


def _plain(value: Any) -> Any:
    """A typed answer as JSON values: records as objects, bytes as hex, iterators as lists."""
    import dataclasses
    import datetime as dt

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # KeyValue
        return {k: _plain(v) for k, v in value._asdict().items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)) or hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return str(value)


def _bar(args: argparse.Namespace, total: int | None, unit: str, desc: str) -> tqdm[Any] | None:
    """A progress bar on stderr, only for a person watching: a terminal, and no ``--json``."""
    if args.json or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, leave=False)


def _finish(bar: tqdm[Any] | None) -> None:
    if bar is not None:
        bar.refresh()  # the final count, however fast the work went
        bar.close()


def _stepper(bar: tqdm[Any] | None) -> Callable[[str], None]:
    """A ``progress`` callback that moves ``bar`` one step, naming it."""

    def step(name: str) -> None:
        if bar is not None:
            bar.set_postfix_str(name)
            bar.update(1)

    return step


def _compact(catalog: Catalog, args: argparse.Namespace) -> Any:
    total = len(args.partitions) if args.partitions else catalog.load(args.store).spec.num_partitions
    bar = _bar(args, total, "partition", f"compact {args.store}")

    def progress(line: str) -> None:
        if bar is not None:
            bar.update(1)
            bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    try:
        record = catalog.compact(
            args.store, partitions=args.partitions, progress=None if args.json else progress
        )
    finally:
        _finish(bar)
    if record is None:
        return {"store": args.store, "compacted": False, "reason": "already compact"}
    return {"store": args.store, "compacted": True, "commit": record.id,
            "base": record.base, **record.summary}  # fmt: skip


def _vacuum(catalog: Catalog, args: argparse.Namespace) -> Any:
    from catalog.operations.maintenance import vacuum, vacuum_all

    window = parse_duration_ms(args.older_than, "--older-than")
    retain = (
        None
        if args.retain_history is None
        else parse_duration_ms(args.retain_history, "--retain-history")
    )
    bar = _bar(args, len(args.stores) or None, "store", "vacuum")
    try:
        if not args.stores:

            def progress(done: int, total: int) -> None:
                if bar is not None:
                    bar.total = total  # known once the warehouse is listed
                    bar.update(done - bar.n)

            reports = vacuum_all(
                catalog.storage, older_than_ms=window, dry_run=args.dry_run,
                retain_history_ms=retain, progress=progress,
            )  # fmt: skip
        else:
            reports = []
            for name in args.stores:
                reports.append(
                    vacuum(
                        catalog.storage, name, older_than_ms=window, dry_run=args.dry_run,
                        retain_history_ms=retain,
                    )
                )  # fmt: skip
                if bar is not None:
                    bar.update(1)
    finally:
        _finish(bar)
    return [r.to_dict() for r in reports]


def _run(args: argparse.Namespace) -> Any:
    catalog = Catalog(args.root, single_writer=args.single_writer)
    if args.command == "list":
        return catalog.list()
    if args.command == "describe":
        return catalog.describe(args.store)
    if args.command == "history":
        return history(catalog, args.store)
    if args.command == "query":
        return query_key(catalog, args.store, args.key, args.as_of, args.time_from, args.time_to)
    if args.command == "drop":
        if not args.yes:
            raise InvalidOptionError(
                f"dropping store {args.store!r} deletes all its files; add --yes to confirm"
            )
        catalog.drop(args.store)
        return {"store": args.store, "dropped": True}
    if args.command == "compact":
        return _compact(catalog, args)
    if args.command == "kafka-import":
        return kafka_import(catalog, args)
    if args.command == "kafka-export":
        return kafka_export(catalog, args)
    if args.command == "kafka-rescale":
        return kafka_rescale(catalog, args)
    if args.command == "kafka-move":
        return kafka_move(catalog, args)
    if args.command == "erase":
        return erase_command(catalog, args)
    if args.command == "kafka-offsets":
        return {"store": args.store, **kafka_offsets(catalog.load(args.store))}
    return _vacuum(catalog, args)


def _show(result: Any) -> str:
    if isinstance(result, list) and all(isinstance(r, str) for r in result):
        return "\n".join(result)
    if isinstance(result, dict):
        return "\n".join(f"{k}: {v}" for k, v in result.items())
    lines = []
    for row in result:
        if "deleted_files" in row:
            verb = "would delete" if row["dry_run"] else "deleted"
            lines.append(
                f"{row['store']}: {verb} {row['deleted_files']} file(s), "
                f"{row['deleted_bytes']} bytes; kept {row['kept_young']} younger than the window"
            )
            lines += [f"  {path}" for path in row["deleted"]]
        else:
            lines.append("  ".join(f"{k}={v}" for k, v in row.items() if v is not None))
    return "\n".join(lines)


#: Errors of where the warehouse is, not of what a command asks: exit status 2.
_SETUP_ERRORS = frozenset({
    "BUCKET_NOT_FOUND", "STORAGE_UNREACHABLE", "STORAGE_CREDENTIALS", "MISSING_EXTRA",
    "STORAGE_UNAVAILABLE",
})  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code: 0, 1 for an error of the command, 2 for
    one of where the warehouse is (a missing bucket, an endpoint or credentials, an outage)."""
    args = _parser().parse_args(argv)
    try:
        result = _run(args)
    except StateStoreError as exc:
        print(f"state-store: {exc}", file=sys.stderr)
        return 2 if getattr(exc, "code", None) in _SETUP_ERRORS else 1
    print(json.dumps(result, indent=1) if args.json else _show(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
