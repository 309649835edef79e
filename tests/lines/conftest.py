"""The Spark lines' long tests start early and on both workers.

Each fallback line's Spark-facing run is one test of a quarter of an hour: one that started
last would end the suite alone while the other worker idles. pytest-xdist's ``worksteal``
gives each worker a contiguous part of the collection and lets an idle worker take the back
half of another's queue, so the first of them goes first and the second a little past the
middle, where the second worker starts (or steals); the lines' other tests follow the first.
"""

from __future__ import annotations

import pytest

LONG = "test_the_spark_facing_tests_pass_on_each_fallback_line"
#: The lines' tests after the long ones, longest first.
NEXT = ("test_the_readme_features_pass_through_spark_connect",
        "test_the_installed_wheel_runs_the_quickstart")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = getattr(item, "originalname", item.name)
        return 0 if name == LONG else 1 + NEXT.index(name) if name in NEXT else 1 + len(NEXT)

    items.sort(key=rank)  # stable: the rest keep their order
    long = [item for item in items if getattr(item, "originalname", "") == LONG]
    for item in long[1::2]:
        items.remove(item)
        items.insert(len(items) * 3 // 5, item)
