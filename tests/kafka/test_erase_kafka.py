"""An erasure's tombstones sent to the application's live changelog topic (issue 38): after
the store's records, the topic holds one null-valued record per erased key, in the key's
partition; a missing topic is refused before anything is erased."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog import Catalog
from stores.errors import InvalidOptionError
from tests.catalog.kafka.test_state_dir import build
from tests.kafka.cluster import Broker


def test_tombstones_go_to_the_changelog_topic_after_its_records(
    kafka_broker: Broker, tmp_path: Path
) -> None:
    catalog = Catalog(str(tmp_path / "warehouse"), cache_dir=str(tmp_path / "cache"))
    table = build(catalog, "timestamped")
    topic = "erase-app-s-changelog"
    kafka_broker.create_topic(topic, 2, {"cleanup.policy": "compact"})
    kafka_broker.produce(topic, table.export_kafka_changelog("erase-app"))
    held = kafka_broker.end_offsets(topic)
    present = {r["key"].encode() for r in table.to_arrow().to_pylist()} & {b"k1", b"k2", b"k5"}
    assert present
    with pytest.raises(InvalidOptionError, match="TOPIC_NOT_FOUND"):
        table.erase(["k1"], reason="r", application_id="nobody",
                    tombstones=f"kafka://{kafka_broker.bootstrap}")  # fmt: skip
    assert table.log.read(table.log.latest_id()).operation != "erase"
    report = table.erase(["k1", "k2", "k5"], reason="r", application_id="erase-app",
                         tombstones=f"kafka://{kafka_broker.bootstrap}")  # fmt: skip
    assert report.commit is not None and report.tombstones is not None
    records = kafka_broker.consume(topic)
    sent = records.to_pylist()
    new = [r for r in sent if r["offset"] >= held[r["partition"]]]
    assert sorted((r["key"], r["partition"]) for r in new) == sorted(
        (r["key"], r["partition"]) for r in report.tombstones.to_pylist()
    )
    assert {r["key"] for r in new} == present and all(r["value"] is None for r in new)
