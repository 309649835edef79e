"""Fixtures only: a crash runner per test over a copy of a warehouse built once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from catalog.log import commits as commit_log
from tests.crash.harness import STORE, Crash
from tests.crash.worker import rows_for

KINDS = {"keyvalue": {}, "versioned": {"history_retention_ms": 86_400_000}}


@pytest.fixture(scope="session")
def crash_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per kind, a warehouse whose store ``s`` (4 partitions) has two commits: ``w1`` wrote
    a, b = 1 and ``w2`` wrote b, c = 2 (``harness.TEMPLATE_ROWS``)."""
    templates = {}
    for kind, params in KINDS.items():
        root = tmp_path_factory.mktemp(f"template-{kind}") / "warehouse"
        catalog = Catalog(str(root), cache_dir=str(root.parent / "cache"), compact_after_files=0)
        table = StoreTable(catalog, catalog.new_spec(STORE, kind, "string", "long", 4, **params))
        table.commit(table.stage(*rows_for(kind, ["a", "b"], 1), write_id="w1"), write_id="w1",
                     creates=True)  # fmt: skip
        table.commit(table.stage(*rows_for(kind, ["b", "c"], 2), write_id="w2"), write_id="w2")
        templates[kind] = root
    commit_log._RECORDS.clear()
    return templates


@pytest.fixture
def crash(tmp_path: Path) -> Iterator[Crash]:
    """A runner over an empty warehouse (``seed`` it from ``crash_templates``)."""
    commit_log._RECORDS.clear()  # the templates' copies share store ids
    yield Crash(tmp_path)
    commit_log._RECORDS.clear()
