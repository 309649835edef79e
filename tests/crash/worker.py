"""One step of the crash matrix, run as its own process (``python worker.py <json>``).

The test gives a fault rule file through ``$STATE_STORE_FAULTS``; this process performs one
catalog operation and, if it survives, prints one JSON line with what it was told (the
acknowledgement a user would have seen).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa

from catalog import Catalog


def rows_for(kind: str, keys: list[str], value: int) -> tuple[pa.Array, pa.Array, dict | None]:  # type: ignore[type-arg]
    values = pa.array([value] * len(keys), pa.int64())
    if kind == "versioned":
        return pa.array(keys), values, {"timestamp": pa.array([value] * len(keys), pa.int64())}
    return pa.array(keys), values, None


def main(task: dict) -> dict:  # type: ignore[type-arg]
    catalog = Catalog(task["root"], cache_dir=task["cache"], compact_after_files=0)
    op = task["op"]
    if op in ("append", "create"):
        if op == "create":
            from catalog.catalog import StoreTable

            spec = catalog.new_spec(task["store"], task["kind"], "string", "long", 2,
                                    **task.get("params", {}))  # fmt: skip
            table = StoreTable(catalog, spec)
        else:
            table = catalog.load(task["store"])
        files = table.stage(*rows_for(task["kind"], task["keys"], task["value"]),
                            write_id=task["write_id"])  # fmt: skip
        print(json.dumps({"staged": [dataclasses.asdict(f) for f in files]}), flush=True)
        record = table.commit(files, write_id=task["write_id"], creates=op == "create")
        return {"committed": record.id if record else None}
    if op == "abort":
        from catalog.commit_log import ChangelogFile

        table = catalog.load(task["store"])
        files = [ChangelogFile(**f) for f in task["files"]]
        table.abort_write(task["write_id"], files, task["after"])
        return {"aborted": True}
    if op == "read":
        rows = catalog.load(task["store"]).to_arrow().to_pylist()
        return {"rows": sorted([r["key"], r["value"]] for r in rows)}
    if op == "drop":
        catalog.drop(task["store"])
        return {"dropped": True}
    if op == "vacuum":
        return {"deleted": catalog.vacuum(task["store"], older_than_ms=0)[0].deleted}
    if op == "compact":
        record = catalog.compact(task["store"])
        return {"compacted": record.id if record else None}
    raise ValueError(op)


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
