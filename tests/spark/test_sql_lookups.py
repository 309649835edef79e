"""SQL lookups (``datasource.sql_lookups``): ``state_store_get`` and ``state_store_asof_join``.

The referee is the store's Python API: Kafka's IQv2 through ``Catalog.query`` with the kind's
own ``key_query`` (``get(key)``, ``get(key, as_of)``, a window store's ``fetch(key, 0, MAX)``,
a session store's ``fetch(key)``), asked about every key and time the SQL asks about.
"""

from __future__ import annotations

from typing import Any

import pytest

from catalog import Catalog
from catalog.operations.query import StateQueryRequest
from datasource.sql_lookups import register_sql
from stores.protocols import VersionedRecord
from stores.records import ValueAndTimestamp, ValueTimestampHeaders, Windowed
from tests.asof_cases import EVENTS, VERSIONS

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "c", "d", "e", None]
WINDOW_MS = 60_000


def save(df: Any, root: str, store: str, **options: str) -> None:
    writer = df.write.format("state_store").option("root", root).option("store", store)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.mode("append").save()


@pytest.fixture(scope="module")
def root(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A warehouse with a store of every kind, and the functions registered over it."""
    root = str(tmp_path_factory.mktemp("sql_lookups") / "warehouse")
    versions = spark.createDataFrame(VERSIONS, "key string, value double, timestamp bigint")
    save(versions, root, "rates", kind="versioned", historyRetention="7000",
         segmentInterval="1000", numPartitions="3")  # fmt: skip
    plain = spark.createDataFrame([("a", 1), ("b", 2), ("c", 3)], "key string, value bigint")
    save(plain, root, "counts", numPartitions="2")
    stamped = spark.createDataFrame(
        [("a", "x", 1_000, [("trace", b"t1"), ("n", None)]), ("b", "y", None, [])],
        "key string, value string, timestamp bigint, "
        "headers array<struct<key: string, value: binary>>",
    )
    save(stamped, root, "latest", kind="timestamped", headers="true")
    windows = spark.createDataFrame(
        [("a", 0, 1, 10), ("a", WINDOW_MS, 2, 70_000), ("b", 0, 5, 20), ("c", 120_000, 9, None)],
        "key string, window_start bigint, value bigint, timestamp bigint",
    )
    save(windows, root, "clicks", kind="window", windowSize=str(WINDOW_MS), retention="1 day",
         timestamped="true", numPartitions="2")  # fmt: skip
    sessions = spark.createDataFrame(
        [("a", 0, 100, "s1"), ("a", 5_000, 6_000, "s2"), ("c", 10, 10, "s3")],
        "key string, session_start bigint, session_end bigint, value string",
    )
    save(sessions, root, "visits", kind="session", retention="1 day", numPartitions="2")
    register_sql(spark, root=root)
    spark.createDataFrame(
        [(i, k, t) for i, (k, t) in enumerate(EVENTS)], "id int, key string, at bigint"
    ).selectExpr("id", "key", "timestamp_millis(at) AS at").createOrReplaceTempView("events")
    spark.createDataFrame([(i, k) for i, k in enumerate(KEYS)], "id int, key string")\
        .createOrReplaceTempView("lookup_keys")  # fmt: skip
    return root


def referee(root: str, store: str, key: str | None, as_of: int | None = None) -> list[dict]:
    """Rows (column -> value, times in epoch ms) that the store's IQv2 answers for ``key``:
    one row of nulls for a point lookup that finds nothing, none for a key with no entries."""
    table = Catalog(root).load(store)
    columns = [f.name for f in table.arrow_schema() if f.name != "key"]
    nothing = [] if table.kind.entries_per_key else [dict.fromkeys(columns)]
    if key is None:
        return nothing
    query = table.kind.key_query(key, as_of=as_of)
    result = Catalog(root).query(StateQueryRequest.in_store(store).with_query(query))
    found = [r.get_result() for r in result.get_partition_results().values()]
    found = [r for r in found if r is not None]
    if not table.kind.entries_per_key:
        if not found:
            return nothing
        row = fields(found[0], columns)
        if "headers" in columns:  # Kafka's TimestampedKeyQuery answers no headers: the read's
            read = [r for r in table.to_arrow().to_pylist() if r["key"] == key]
            row["headers"] = [(h["key"], h["value"]) for h in read[0]["headers"]]
        return [row]
    rows = []
    for entries in found:
        for entry in entries:
            if isinstance(entry.key, Windowed):
                times = {"session_start": entry.key.window.start,
                         "session_end": entry.key.window.end}  # fmt: skip
            else:
                times = {"window_start": entry.key, "window_end": entry.key + WINDOW_MS}
            rows.append(fields(entry.value, columns, **times))
    return rows


def fields(record: Any, columns: list[str], **times: int) -> dict:
    row: dict[str, Any] = dict(times)
    if isinstance(record, VersionedRecord):
        row.update(value=record.value, valid_from=record.timestamp, valid_to=record.valid_to)
    elif isinstance(record, (ValueAndTimestamp, ValueTimestampHeaders)):
        row.update(value=record.value, timestamp=None if record.timestamp < 0 else record.timestamp)
        if isinstance(record, ValueTimestampHeaders):
            row["headers"] = [tuple(h) for h in record.headers]
    else:
        row["value"] = record
    return {c: row.get(c) for c in columns}


def timed(spark: Any, query: str, times: list[str]) -> list[dict]:
    """``query``'s rows with the ``times`` columns as epoch ms, computed by Spark."""
    view = "lookup_result"
    spark.sql(query).createOrReplaceTempView(view)
    others = [c for c in spark.table(view).columns if c not in times]
    select = ", ".join(
        [*(f"`{c}`" for c in others), *(f"unix_millis(`{c}`) AS `{c}`" for c in times)]
    )
    return [r.asDict(recursive=True) for r in spark.sql(f"SELECT {select} FROM {view}").collect()]


def headers_as_tuples(rows: list[dict]) -> list[dict]:
    for row in rows:
        if row.get("headers") is not None:
            row["headers"] = [(h["key"], h["value"]) for h in row["headers"]]
    return rows


def test_a_versioned_store_as_of_each_rows_time_answers_get_key_as_of(
    spark: Any, root: str
) -> None:
    got = timed(
        spark,
        "SELECT e.id, r.value, r.valid_from, r.valid_to FROM events e, "
        "LATERAL state_store_get('rates', e.key, e.at) r",
        ["valid_from", "valid_to"],
    )
    got_by_id = {r.pop("id"): r for r in got}
    assert sorted(got_by_id) == list(range(len(EVENTS)))  # every event: one row
    for i, (key, at) in enumerate(EVENTS):
        # a null time finds nothing, as in asof_join (not the latest version)
        expected = referee(root, "rates", None if at is None else key, at)
        assert [got_by_id[i]] == expected, (key, at)
    assert any(r["value"] is not None for r in got) and any(r["value"] is None for r in got)


def test_the_as_of_forms_a_literal_time_takes(spark: Any, root: str) -> None:
    expected = referee(root, "rates", "a", 2_500)
    assert expected[0]["value"] == 2.0
    for as_of in (
        "2500",
        "CAST(2500 AS INT)",
        "'1970-01-01T00:00:02.500Z'",
        "timestamp_millis(2500)",
        "CAST(timestamp_millis(2500) AS TIMESTAMP_NTZ)",
    ):
        query = f"SELECT * FROM state_store_get('rates', 'a', {as_of})"
        assert timed(spark, query, ["valid_from", "valid_to"]) == expected, as_of


def test_a_versioned_store_without_as_of_answers_the_latest_version(spark: Any, root: str) -> None:
    got = timed(
        spark,
        "SELECT k.key, r.* FROM lookup_keys k, LATERAL state_store_get('rates', k.key) r",
        ["valid_from", "valid_to"],
    )
    by_key = {r.pop("key"): r for r in got}
    assert set(by_key) == set(KEYS)
    for key in KEYS:
        assert [by_key[key]] == referee(root, "rates", key), key
    assert by_key["a"]["value"] == 3.0 and by_key["d"]["value"] is None  # d was deleted


def test_key_value_and_timestamped_stores_answer_get(spark: Any, root: str) -> None:
    for store, times in (("counts", []), ("latest", ["timestamp"])):
        got = headers_as_tuples(timed(
            spark, f"SELECT k.key, r.* FROM lookup_keys k, LATERAL state_store_get('{store}', k.key) r",
            times,
        ))  # fmt: skip
        by_key = {r.pop("key"): r for r in got}
        assert set(by_key) == set(KEYS), store
        for key in KEYS:
            assert [by_key[key]] == referee(root, store, key), (store, key)
    row = headers_as_tuples(
        timed(spark, "SELECT * FROM state_store_get('latest', 'a')", ["timestamp"])
    )
    assert row == [{"value": "x", "timestamp": 1_000, "headers": [("trace", b"t1"), ("n", None)]}]


def test_window_and_session_stores_answer_every_entry_of_the_key(spark: Any, root: str) -> None:
    for store, times in (
        ("clicks", ["window_start", "window_end", "timestamp"]),
        ("visits", ["session_start", "session_end"]),
    ):
        got = timed(
            spark,
            f"SELECT k.key, r.* FROM lookup_keys k, LATERAL state_store_get('{store}', k.key) r",
            times,
        )
        for key in KEYS:
            mine = sorted(
                ({c: v for c, v in r.items() if c != "key"} for r in got if r["key"] == key),
                key=lambda r: r[times[0]],
            )
            assert mine == referee(root, store, key), (store, key)
        assert len(got) == sum(len(referee(root, store, k)) for k in KEYS) > 2


def test_the_table_form_joins_every_row_as_get_key_as_of_answers(spark: Any, root: str) -> None:
    for query in (
        "SELECT * FROM state_store_asof_join(TABLE(events), 'rates', 'key', 'at')",
        "SELECT * FROM state_store_asof_join(TABLE(events) PARTITION BY (key), 'rates', 'key', 'at')",
    ):
        got = timed(spark, query, ["at", "valid_from", "valid_to"])
        assert sorted(r["id"] for r in got) == list(range(len(EVENTS))), query
        for row in got:
            key, at = EVENTS[row["id"]]
            assert (row["key"], row["at"]) == (key, at)
            answer = {c: row[c] for c in ("value", "valid_from", "valid_to")}
            assert [answer] == referee(root, "rates", None if at is None else key, at)


def test_the_table_form_batches_across_chunks_and_takes_a_prefix(spark: Any, root: str) -> None:
    many = spark.range(3 * 1024).selectExpr(
        "CAST(id AS INT) AS id", "element_at(array('a', 'b', 'c', 'd', 'e'), CAST(id % 5 + 1 AS INT)) AS key",
        "timestamp_millis(id * 7 % 10000) AS at",
    )  # fmt: skip
    many.createOrReplaceTempView("many_events")
    got = timed(
        spark,
        "SELECT * FROM state_store_asof_join(TABLE(many_events), 'rates', 'key', 'at', 'rate_')",
        ["at", "rate_valid_from", "rate_valid_to"],
    )
    assert len(got) == 3 * 1024
    lateral = timed(
        spark,
        "SELECT m.id, r.value AS rate_value, r.valid_from AS rate_valid_from, "
        "r.valid_to AS rate_valid_to FROM many_events m, "
        "LATERAL state_store_get('rates', m.key, m.at) r",
        ["rate_valid_from", "rate_valid_to"],
    )
    by_id = {r["id"]: r for r in lateral}
    for row in got:
        assert {c: row[c] for c in by_id[row["id"]]} == by_id[row["id"]]
    assert len({r["rate_value"] for r in got}) > 2


def test_a_query_reads_the_commit_that_was_newest_when_spark_analyzed_it(
    spark: Any, root: str
) -> None:
    before = spark.sql("SELECT * FROM state_store_get('counts', 'z')")  # analyzed here
    assert before.collect()[0].value is None
    save(spark.createDataFrame([("z", 26)], "key string, value bigint"), root, "counts")
    assert before.collect()[0].value is None  # the same DataFrame keeps its commit
    assert spark.sql("SELECT * FROM state_store_get('counts', 'z')").collect()[0].value == 26


def error_of(spark: Any, query: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.sql(query).collect()
    return str(caught.value)


@pytest.mark.parametrize(
    ("query", "code", "names"),
    [
        ("SELECT * FROM state_store_get('nope', 'a')", "STORE_NOT_FOUND", ["'nope'", "rates"]),
        ("SELECT * FROM state_store_get('rates', 1)", "KEY_TYPE_MISMATCH",
         ["'rates'", "int", "string keys"]),
        ("SELECT * FROM state_store_get('counts', 'a', 5)", "NOT_VERSIONED",
         ["'counts'", "keyvalue", "versioned"]),
        ("SELECT * FROM state_store_get('clicks', 'a', 5)", "NOT_VERSIONED", ["'clicks'", "window"]),
        ("SELECT * FROM state_store_get('rates', 'a', true)", "TIMESTAMP_TYPE",
         ["boolean", "timestamp"]),
        ("SELECT * FROM lookup_keys k, LATERAL state_store_get(k.key, k.key)", "STORE_ARGUMENT",
         ["constant string"]),
        ("SELECT * FROM state_store_asof_join(TABLE(events), 'counts', 'key', 'at')",
         "NOT_VERSIONED", ["'counts'", "as-of join"]),
        ("SELECT * FROM state_store_asof_join(TABLE(events), 'rates', 'currency', 'at')",
         "MISSING_COLUMN", ["'currency'", "id, key, at"]),
        ("SELECT * FROM state_store_asof_join(TABLE(events), 'rates', 'id', 'at')",
         "KEY_TYPE_MISMATCH", ["'id'", "int", "'rates'", "string keys"]),
        ("SELECT * FROM state_store_asof_join(TABLE(events), 'rates', 'key', 'key', 1)",
         "STORE_ARGUMENT", ["prefix", "constant string"]),
        ("SELECT * FROM state_store_asof_join(TABLE(SELECT key, at, 1 AS value FROM events), "
         + "'rates', 'key', 'at')", "COLUMN_EXISTS", ["'value'", "prefix"]),
        ("SELECT * FROM state_store_asof_join('events', 'rates', 'key', 'at')", "TABLE_ARGUMENT",
         ["TABLE("]),
    ],
)  # fmt: skip
def test_errors_name_the_store_the_key_type_and_what_is_expected(
    spark: Any, root: str, query: str, code: str, names: list[str]
) -> None:
    message = error_of(spark, query)
    assert f"[{code}]" in message, message
    for name in names:
        assert name in message, (name, message)
