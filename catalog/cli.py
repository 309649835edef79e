"""``state-store``: the operator's command line over any warehouse root (an fsspec URL).

    state-store [--root URL] list
    state-store [--root URL] describe STORE
    state-store [--root URL] history STORE
    state-store [--root URL] compact STORE [--partition N ...]
    state-store [--root URL] vacuum [STORE ...] [--older-than "7 days"] [--dry-run]
                                    [--retain-history "30 days"]

Every command takes ``--json`` for machine-readable output. Exit codes: 0 done, 1 the command
failed (the message carries the error's code), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from catalog.catalog import Catalog
from catalog.durations import parse_duration_ms
from stores.errors import StateStoreError


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
    return parser


def history(catalog: Catalog, store: str) -> list[dict[str, Any]]:
    """A store's commits, newest first (see ``Catalog.history``)."""
    rows = catalog.history(store).to_pylist()
    for row in rows:
        row["timestamp_ms"] = int(row.pop("timestamp").timestamp() * 1000)
    return rows


def _run(args: argparse.Namespace) -> Any:
    catalog = Catalog(args.root, single_writer=args.single_writer)
    if args.command == "list":
        return catalog.list()
    if args.command == "describe":
        return catalog.describe(args.store)
    if args.command == "history":
        return history(catalog, args.store)
    if args.command == "compact":
        record = catalog.compact(
            args.store,
            partitions=args.partitions,
            progress=None if args.json else lambda line: print(line, file=sys.stderr),
        )
        if record is None:
            return {"store": args.store, "compacted": False, "reason": "already compact"}
        return {"store": args.store, "compacted": True, "commit": record.id,
                "base": record.base, **record.summary}  # fmt: skip
    window = parse_duration_ms(args.older_than, "--older-than")
    names = args.stores or [None]
    retain = (
        None
        if args.retain_history is None
        else parse_duration_ms(args.retain_history, "--retain-history")
    )
    reports = [
        r.to_dict()
        for name in names
        for r in catalog.vacuum(
            name, older_than_ms=window, dry_run=args.dry_run, retain_history_ms=retain
        )
    ]
    return reports


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        result = _run(args)
    except StateStoreError as exc:
        print(f"state-store: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1) if args.json else _show(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
