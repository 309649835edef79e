"""Store kinds are plug-ins: a kind is one class, registered once; the catalog and the
connector find it, and its parameters, by the registry alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kinds import (
    KINDS,
    STORE_MUST_ANSWER,
    Param,
    Scan,
    StoreEngine,
    StoreKind,
    all_params,
    kind_of,
    register,
)
from catalog.kinds.keyvalue import KeyValueKind
from datasource.options import CREATION_OPTIONS, OPTIONS, PARAM_OF_OPTION, READ_PARAMS, StoreOptions
from stores.errors import InvalidOptionError


class _Echo(KeyValueKind):
    """A key-value store under another name, with a required parameter of its own."""

    name: ClassVar[str] = "echo"
    params: ClassVar[tuple[Param, ...]] = (
        Param("echo_delay_ms", "echoDelay", "duration", required=True, example="'1 s'"),
    )

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        return {"echo_delay_ms": int(given["echo_delay_ms"])}


@pytest.fixture
def echo() -> Iterator[StoreKind]:
    kind = register(_Echo())
    try:
        yield kind
    finally:
        KINDS.pop("echo")


def test_a_registered_kind_is_found_and_stores_work_with_it(
    catalog: Catalog, echo: StoreKind
) -> None:
    assert kind_of("echo") is echo
    assert "echoDelay" in [p.option for p in all_params()]
    with pytest.raises(InvalidOptionError, match=r"\[MISSING_OPTION\].*'echoDelay'"):
        catalog.create_store("e", "echo", "string", "long", 2)
    with pytest.raises(
        InvalidOptionError, match=r"takes no option 'windowSize'; its options: 'echoDelay'"
    ):
        catalog.create_store("e", "echo", "string", "long", 2, echo_delay_ms=5, window_size_ms=9)
    table = catalog.create_store("e", "echo", "string", "long", 2, echo_delay_ms=5)
    table.commit(table.stage(pa.array(["a", "b", "a"]), pa.array([1, 2, 3], pa.int64())))
    rows = catalog.load("e").to_arrow().to_pylist()
    assert sorted((r["key"], r["value"]) for r in rows) == [("a", 3), ("b", 2)]
    assert catalog.load("e").spec.params == {"echo_delay_ms": 5}


def test_kinds_that_disagree_on_a_parameter_or_a_name_are_refused() -> None:
    class Clash(_Echo):
        name: ClassVar[str] = "clash"
        params: ClassVar[tuple[Param, ...]] = (Param("retention_ms", "ttl", "duration"),)

    with pytest.raises(InvalidOptionError, match=r"'retention_ms' as option 'ttl'.*'retention'"):
        register(Clash())
    with pytest.raises(InvalidOptionError, match="already registered"):
        register(KeyValueKind())
    assert "clash" not in KINDS


def test_the_connector_s_creation_options_are_the_kinds_parameters() -> None:
    declared = {p.option: p.key for kind in KINDS.values() for p in kind.params}
    assert PARAM_OF_OPTION == declared
    assert CREATION_OPTIONS == ("kind", "numPartitions", "partitioner", *declared)


def test_the_connector_s_read_options_are_the_kinds_read_options() -> None:
    declared = {p.option: p for kind in KINDS.values() for p in kind.read_params}
    assert READ_PARAMS == declared
    assert set(declared) <= set(OPTIONS)
    # A read option of one kind is parsed as its kind declares it, and checked by it.
    options = StoreOptions.parse({"store": "s", "windowStartFrom": "5", "windowStartTo": "9"})
    assert options.reads == {"windowStartFrom": 5, "windowStartTo": 9}
    assert options.scan() == Scan(time_from=5, time_to=9)
    with pytest.raises(InvalidOptionError, match="'windowStartFrom' \\(9 ms\\) is after"):
        StoreOptions.parse({"store": "s", "windowStartFrom": "9", "windowStartTo": "5"}).scan()


def test_each_kind_links_an_engine_and_columns_say_when_the_store_must_answer() -> None:
    for kind in KINDS.values():
        assert isinstance(kind.engine, StoreEngine)
        assert kind.layout({}) == kind.engine.layout({})

    # An engine that computes nothing from columns leaves every answer to the store.
    engine = KINDS["keyvalue"].engine
    assert StoreEngine.scan_columns(engine, {}, [], {}, Scan()) is STORE_MUST_ANSWER
    assert StoreEngine.store_rows(engine, {}, [], {}) is STORE_MUST_ANSWER
    assert StoreEngine.overlay_rows(engine, [], {}) is STORE_MUST_ANSWER
    # A key-value store's state is computed from columns: the store need not answer.
    table = pa.table({"key": [b"a", b"a"], "value": [b"1", b"2"]})
    rows = KINDS["keyvalue"].store_rows({}, [table], {})
    assert rows is not STORE_MUST_ANSWER and rows["default"][1].to_pylist() == [b"2"]


class _OlderEngine(type(KINDS["keyvalue"].engine)):  # type: ignore[misc]
    """An engine written before ``scan_columns`` took ``key_order``."""

    def scan_columns(  # type: ignore[override]
        self, runs: Any, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> Any:
        return super().scan_columns(runs, commits, params, scan)


class _Older(KeyValueKind):
    name: ClassVar[str] = "older"
    engine: ClassVar[StoreEngine] = _OlderEngine()


def test_an_engine_without_key_order_serves_table_reads_in_key_order(catalog: Catalog) -> None:
    register(_Older())
    try:
        table = catalog.create_store("o", "older", "string", "long", 1)
        table.commit(table.stage(pa.array(["b", "c", "a"]), pa.array([2, 3, 1]), None))
        assert table.to_arrow().column("key").to_pylist() == ["a", "b", "c"]
        keyvalue = catalog.create_store("kv", "keyvalue", "string", "long", 1)
        keyvalue.commit(keyvalue.stage(pa.array(["b", "c", "a"]), pa.array([2, 3, 1]), None))
        assert keyvalue.to_arrow().column("key").to_pylist() == ["b", "c", "a"]  # as written
    finally:
        KINDS.pop("older")
