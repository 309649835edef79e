"""``state-store erase``: keys erased from a store everywhere (``StoreTable.erase``), their
keys read from a file, and how a key given as text is read as the store's key type."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import pyarrow.parquet as pq

from catalog.catalog import Catalog
from stores.errors import InvalidOptionError


def add_erase(commands: Any) -> None:
    """The ``erase`` command's arguments."""
    erase = commands.add_parser(
        "erase",
        help="erase keys from every version, commit, snapshot and cache of a store "
        "(then vacuum --older-than 0 deletes the old files)",
    )
    erase.add_argument("store")
    erase.add_argument(
        "--keys-from", required=True, metavar="FILE",
        help="the keys: one per line as text (binary: hex; struct: JSON), or a Parquet file "
        "with a 'key' column",
    )  # fmt: skip
    erase.add_argument("--reason", required=True, help="why: kept in the audit record")
    erase.add_argument("--dry-run", action="store_true", help="report what would be rewritten")
    erase.add_argument(
        "--application-id", help="also send the tombstones of its changelog topic (needs "
        "--tombstones)",
    )  # fmt: skip
    erase.add_argument("--kafka-store", help="the application's name of the store")
    erase.add_argument(
        "--tombstones", metavar="kafka://SERVERS|FILE",
        help="where the tombstones go: the changelog topic, or a new Parquet file",
    )  # fmt: skip


def erase_command(catalog: Catalog, args: argparse.Namespace) -> dict[str, Any]:
    """Run ``erase`` (the audit key comes from ``$STATE_STORE_AUDIT_KEY``, never an
    argument: a command line is kept in shell histories)."""
    table = catalog.load(args.store)
    keys = read_keys(args.keys_from, table.spec.key_type)
    report = table.erase(
        keys, reason=args.reason, dry_run=args.dry_run, application_id=args.application_id,
        kafka_store=args.kafka_store, tombstones=args.tombstones,
    )  # fmt: skip
    return report.to_dict()


def read_keys(path: str, key_type: Any) -> list[Any]:
    """The keys of file ``path``: a Parquet file's ``key`` column, else one key per line.

    Raises:
        InvalidOptionError: no such file, or a Parquet file without a ``key`` column.
    """
    if not os.path.isfile(path):
        raise InvalidOptionError(f"option '--keys-from': no file {path!r}", code="PATH_NOT_FOUND")
    with open(path, "rb") as handle:
        parquet = handle.read(4) == b"PAR1"
    if parquet:
        table = pq.read_table(path)
        if "key" not in table.column_names:
            raise InvalidOptionError(
                f"option '--keys-from': {path!r} has no 'key' column; columns: "
                f"{', '.join(table.column_names)}",
                code="MISSING_COLUMN",
            )
        return table.column("key").to_pylist()
    with open(path, encoding="utf-8") as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    return [typed_key(key_type, line) for line in lines if line]


def typed_key(key_type: Any, text: str) -> Any:
    """A key given as text, as a value of ``key_type`` (binary: hex; a struct: JSON)."""
    if key_type in ("long", "integer", "short", "byte"):
        return int(text)
    if key_type in ("double", "float"):
        return float(text)
    if key_type == "boolean":
        return text.strip().lower() == "true"
    if key_type == "binary":
        return bytes.fromhex(text)
    if isinstance(key_type, dict):
        return json.loads(text)
    return text


__all__ = ["add_erase", "erase_command", "read_keys", "typed_key"]
