"""A write task's changelog file holds each partition's rows in a few large record batches
(``catalog.staging.PIECE_ROWS``) whatever the size of the batches Spark hands the task: LZ4
and the IPC format cost per batch, and readers take a file's batches as they are."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from catalog import Catalog
from catalog.log import changelog
from catalog.staging import PIECE_ROWS


def test_a_partitions_rows_are_kept_in_large_batches_in_the_order_added(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long", num_partitions=3)
    stager = table.stager("w1")
    n, batch = 7 * PIECE_ROWS + 1234, 5000  # about 2.3 pieces per partition
    for start in range(0, n, batch):
        keys = pa.array(np.arange(start, min(n, start + batch)), pa.int64())
        stager.add(keys, pa.compute.negate(keys))
    files = stager.flush()
    assert sorted(f.partition for f in files) == [0, 1, 2]
    written = []
    for ref in files:
        rows = changelog.read_changelog(catalog.storage, table.spec.name, ref)
        sizes = [b.num_rows for b in rows.to_batches()]
        # Pieces are joined once they reach PIECE_ROWS rows, and what is left at the flush
        # into one last batch.
        assert all(PIECE_ROWS <= s < PIECE_ROWS + batch for s in sizes[:-1]), sizes
        keys = [int.from_bytes(k, "big") for k in rows.column("key").to_pylist()]  # (Kafka's)
        assert keys == sorted(keys)  # each partition's rows in the order added
        written += keys
    assert sorted(written) == list(range(n))
    table.commit(files)
    read = table.to_arrow()
    assert read.num_rows == n
    assert sorted(zip(read.column("key").to_pylist(), read.column("value").to_pylist())) == [
        (k, -k) for k in range(n)
    ]
