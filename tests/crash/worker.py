"""One step of the crash matrix, run as its own process (``python worker.py <json>``).

The test gives a fault rule file through ``$STATE_STORE_FAULTS``; this process performs one
catalog operation and, if it survives, prints one JSON line with what it was told (the
acknowledgement a user would have seen). A writer first prints the files it staged, as a Spark
task reports them to the driver, so that a test can hand them to an abort in another process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa

from catalog import Catalog

#: How long a writer waits at the barrier for the test's go (it never should: the test
#: releases it as soon as every writer is ready or dead).
BARRIER_TIMEOUT_S = 60.0


def rows_for(kind: str, keys: list[str], value: int) -> tuple[pa.Array, pa.Array, dict[str, pa.Array] | None]:
    """The arrays ``StoreTable.stage`` takes for ``keys`` all set to ``value`` (a versioned
    store's rows are stamped ``value`` ms, so later writes with larger values are newer)."""
    values = pa.array([value] * len(keys), pa.int64())
    if kind == "versioned":
        return pa.array(keys), values, {"timestamp": pa.array([value] * len(keys), pa.int64())}
    return pa.array(keys), values, None


def _barrier(folder: str, name: str) -> None:
    """Say this writer is ready, then wait for the test's ``go`` (all writers commit at once)."""
    Path(folder, f"ready-{name}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while not os.path.exists(os.path.join(folder, "go")):
        if time.monotonic() > deadline:
            raise TimeoutError("the test never opened the barrier")
        time.sleep(0.005)


def main(task: dict[str, Any]) -> dict[str, Any]:
    catalog = Catalog(
        task["root"], cache_dir=task["cache"], compact_after_files=task.get("compact_after_files", 0)
    )
    op = task["op"]
    if op in ("append", "create"):
        if op == "create":
            from catalog.catalog import StoreTable

            spec = catalog.new_spec(task["store"], task["kind"], "string", "long", 4,
                                    **task.get("params", {}))  # fmt: skip
            table = StoreTable(catalog, spec)
        else:
            table = catalog.load(task["store"])
        files = table.stage(*rows_for(task["kind"], task["keys"], task["value"]),
                            write_id=task["write_id"])  # fmt: skip
        print(json.dumps({"staged": [dataclasses.asdict(f) for f in files]}), flush=True)
        if "barrier" in task:
            _barrier(task["barrier"], task["write_id"])
        record = table.commit(files, write_id=task["write_id"], creates=op == "create")
        return {"committed": record.id if record else None}
    if op == "abort":
        from catalog.catalog import StoreTable
        from catalog.log.records import ChangelogFile

        # As the Spark writer's abort: a table over the planned spec, whether or not the store
        # exists (a first write's abort runs when it may not); only its name matters.
        table = StoreTable(catalog, catalog.new_spec(task["store"], "keyvalue", "string", "long"))
        files = [ChangelogFile(**f) for f in task["files"]]
        table.abort_write(task["write_id"], files, task["after"])
        return {"aborted": True}
    if op == "read":
        rows = catalog.load(task["store"]).to_arrow().to_pylist()
        return {"rows": sorted([r["key"], r["value"]] for r in rows)}
    if op == "lookup":  # point lookups (IQv2): these build the partitions' RocksDB caches
        from catalog.operations.query import StateQueryRequest, query
        from stores.query.queries import KeyQuery, VersionedKeyQuery

        table = catalog.load(task["store"])
        builder = VersionedKeyQuery if table.spec.kind == "versioned" else KeyQuery
        found = []
        for key in task["keys"]:
            request = StateQueryRequest.in_store(task["store"]).with_query(builder.with_key(key))
            answer = query(catalog, request).get_only_partition_result()
            result = None if answer is None else answer.get_result()
            if result is not None:
                found.append([key, getattr(result, "value", result)])
        return {"rows": sorted(found)}
    if op == "drop":
        catalog.drop(task["store"])
        return {"dropped": True}
    if op == "vacuum":
        reports = catalog.vacuum(
            task["store"], older_than_ms=0, retain_history_ms=task.get("retain_history_ms")
        )
        return {"deleted": reports[0].deleted}
    if op == "erase":
        report = catalog.load(task["store"]).erase(task["keys"], reason="crash test")
        return {"erased": report.commit}
    if op == "compact":
        record = catalog.compact(task["store"])
        return {"compacted": record.id if record else None}
    raise ValueError(op)


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
