"""Every benchmark of the project in one run, each against its peer measured in the same run.

    python bench/all.py            # the README's sizes (about 30 minutes on 2 cores)
    python bench/all.py --quick    # a fifth of the rows, to check that everything runs

Each script below prints its own figures and ratios (see its docstring for what it measures
and against what: parquet, a do-nothing Python Arrow source and writer, raw rocksdict,
delta-rs, Spark's own ``statestore`` reader, a Spark SQL join). This runs them one after another, shows their output, and ends
with a summary: every line that states a ratio, grouped by script. Ratios are the store's
speed relative to its peer (1.0x: as fast), so a noisy machine still gives honest figures.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_RATIO = re.compile(r"\d\.\d\dx|^ratio ")


def runs(quick: bool) -> list[tuple[str, list[str]]]:
    """(title, command line) of every figure, at full or quick size."""
    rows = 200_000 if quick else 1_000_000
    keys = 40_000 if quick else 200_000
    small = 40_000 if quick else 200_000
    out: list[tuple[str, list[str]]] = []
    sizes = ["200k", "800k"] if quick else ["1m", "4m"]
    out.append(("write and read through Spark as stores grow, every kind, both key orders",
                ["scale.py", "--sizes", *sizes]))  # fmt: skip
    out.append(("write and read through Spark, timestamped with headers",
                ["write_read.py", "--rows", str(rows), "--kind", "timestamped", "--headers"]))  # fmt: skip
    out.append(("versioned history (versions=all) through Spark",
                ["history.py", "--keys", str(keys), "--versions", "5"]))  # fmt: skip
    out.append(("whole store as of T through Spark vs delta-rs",
                ["asof_read.py", "--keys", str(keys), "--versions", "5"]))  # fmt: skip
    out.append(("state read through Spark vs Spark's statestore reader",
                ["statestore_peer.py", "--rows", str(rows)]))  # fmt: skip
    for kind in ("keyvalue", "timestamped", "versioned", "window", "session"):
        out.append((f"first read after 200 appends vs one commit, {kind}",
                    ["appends.py", "--rows", str(small), "--appends", "200", "--kind", kind]))  # fmt: skip
    for kind in ("timestamped", "versioned", "window", "session"):
        out.append((f"first read without Spark vs a keyvalue store, {kind}",
                    ["first_read.py", "--rows", str(small), "--kind", kind]))  # fmt: skip
    out.append(("cache build vs raw rocksdict", ["cache_build.py", "--rows", str(rows)]))
    out.append(("single-key as-of vs raw rocksdict seek_for_prev", ["asof_lookup.py"]))
    out.append(("as-of join through Spark vs Spark SQL joins", ["asof_join.py"]))
    out.append(("Kafka changelog import and export without Spark, every kind",
                ["changelog_columns.py", "--rows", str(rows)]))  # fmt: skip
    out.append(("Python append from Arrow vs delta-rs write_deltalake (parquet the floor)",
                ["python_write.py", "--rows", str(rows)]))  # fmt: skip
    out.append(("storage faults per backend vs each library's default retries",
                ["storage_faults.py", "--defaults", "--repeat", "1" if quick else "3"]))  # fmt: skip
    out.append(("Kafka Streams: changelog and state dir routes, an application's start",
                ["kafka_interop.py", "--rows", str(rows), "--kafka"]))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the rows")
    args = parser.parse_args()
    summary: list[tuple[str, list[str]]] = []
    started = time.perf_counter()
    for title, command in runs(args.quick):
        script = HERE / command[0]
        print(f"\n=== {title}: {' '.join(command)}", flush=True)
        if not script.exists():
            summary.append((title, [f"(no {command[0]} in this checkout)"]))
            continue
        proc = subprocess.run(
            [sys.executable, str(script), *command[1:]],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        lines = proc.stdout.splitlines()
        print("\n".join(lines), flush=True)
        if proc.returncode:
            print(proc.stderr[-3000:], flush=True)
            lines = [*lines, f"FAILED (exit {proc.returncode})"]
        summary.append((title, [ln.strip() for ln in lines if _RATIO.search(ln) or "FAILED" in ln]))
    print(f"\n=== summary ({time.perf_counter() - started:.0f} s)")
    for title, lines in summary:
        print(f"\n{title}")
        for line in lines or ["(no ratio printed)"]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
