"""Building a partition's RocksDB cache (what lookups need) against raw rocksdict doing the same.

    python bench/cache_build.py --rows 1000000

One key-value partition of ``rows`` rows (16-byte keys, 100-byte values) is materialized by
``PartitionCache`` twice: from its changelog (one commit, applied through the store's bulk put
in one write batch) and from a compaction's snapshot (SST ingest). The peers, in the same run,
write the same serialized keys and values with raw rocksdict (raw mode): one ``WriteBatch``,
and one SST file written and ingested. Each figure is the median of 3 fresh builds; ratios are
peer time / ours (1.0: as fast; goal of issue 8: >= 0.8x of SST ingest).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
from rocksdict import IngestExternalFileOptions, Options, Rdict, SstFileWriter, WriteBatch

from catalog import Catalog
from catalog.caches.partitions import PartitionCache
from catalog.log import commits as commit_log
from catalog.operations.compaction import compact


def median_of(build: Callable[[Path], None], work: Path, repeat: int) -> float:
    times = []
    for i in range(repeat):
        target = work / f"build-{uuid4()}-{i}"
        start = time.perf_counter()
        build(target)
        times.append(time.perf_counter() - start)
        shutil.rmtree(target, ignore_errors=True)
    return statistics.median(times)


def uuid4() -> str:
    import uuid

    return uuid.uuid4().hex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-cache-build-"))
    try:
        keys = pa.array([f"{i:016x}" for i in range(args.rows)])
        values = pa.array(["v" * 100] * args.rows)
        logged = Catalog(str(work / "logged"), compact_after_files=0)
        table = logged.create_store("s", "keyvalue", "string", "string", 1)
        table.commit(table.stage(keys, values))
        compacted = Catalog(str(work / "compacted"), compact_after_files=0)
        table_c = compacted.create_store("s", "keyvalue", "string", "string", 1)
        table_c.commit(table_c.stage(keys, values))
        compact(table_c)
        raw_keys = sorted(k.encode() for k in keys.to_pylist())
        raw_values = [v.encode() for v in values.to_pylist()]

        def ours(catalog: Catalog) -> Callable[[Path], None]:
            def build(target: Path) -> None:
                commit_log._RECORDS.clear()
                loaded = catalog.load("s")
                cache = PartitionCache(
                    catalog.storage, loaded.spec, loaded.spec.name, 0, str(target)
                )
                assert cache.catch_up(loaded.log.latest_id()) == loaded.log.latest_id()

            return build

        def raw_batch(target: Path) -> None:
            db = Rdict(str(target), Options(raw_mode=True))
            batch = WriteBatch(raw_mode=True)
            for key, value in zip(raw_keys, raw_values):
                batch.put(key, value)
            db.write(batch)
            db.flush()
            db.close()

        def raw_ingest(target: Path) -> None:
            target.mkdir(parents=True)
            db = Rdict(str(target / "db"), Options(raw_mode=True))
            writer = SstFileWriter(Options(raw_mode=True))
            writer.open(str(target / "load.sst"))
            for key, value in zip(raw_keys, raw_values):
                writer[key] = value
            writer.finish()
            options = IngestExternalFileOptions()
            options.set_move_files(True)
            db.ingest_external_file([str(target / "load.sst")], options)
            db.close()

        figures = {
            "cache from changelog": median_of(ours(logged), work, args.repeat),
            "raw WriteBatch": median_of(raw_batch, work, args.repeat),
            "cache from snapshot": median_of(ours(compacted), work, args.repeat),
            "raw SST ingest": median_of(raw_ingest, work, args.repeat),
        }
        for name, value in figures.items():
            print(f"{name:<22} median {value:6.3f} s  {args.rows / value:12,.0f} rows/s")
        print(f"ratio raw WriteBatch / cache from changelog: "
              f"{figures['raw WriteBatch'] / figures['cache from changelog']:.2f}x")  # fmt: skip
        print(f"ratio raw SST ingest / cache from snapshot:  "
              f"{figures['raw SST ingest'] / figures['cache from snapshot']:.2f}x  (goal >= 0.8x)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
