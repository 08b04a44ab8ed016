"""The Spark-free API: Table.scan (columns, filters, limit, time travel; every result form), Table.append /
overwrite, write_arrow, snapshots / history and repr, on real tables on local disk."""

from __future__ import annotations

import datetime as dt
import os
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import (
    FilterError,
    MissingDependencyError,
    OptionError,
    SchemaError,
    SnapshotNotFound,
    Table,
    col,
    procedures,
    write_arrow,
)
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.change import AddColumn, commit_changes

UTC = dt.timezone.utc
D1, D2, D3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)

# ids 0..9; nulls in name (id 3, 7), score (id 4), ok (id 5); day cycles D1 D2 D3
ROWS = pa.table({
    "id": pa.array(range(10), pa.int64()),
    "name": ["a", "b", "c", None, "e", "f", "g", None, "i", "j"],
    "score": pa.array([0.5, 1.5, 2.5, 3.5, None, 5.5, 6.5, 7.5, 8.5, 9.5], pa.float64()),
    "day": [D1, D2, D3] * 3 + [D1],
    "ok": [True, False, True, False, True, None, True, False, True, False],
    "ts": pa.array([dt.datetime(2024, 1, 1, h, tzinfo=UTC) for h in range(10)], pa.timestamp("us", tz="UTC")),
})


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def data_files(path: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
                  if "bucket-" in d and f.startswith("data-"))


@pytest.fixture
def table(table_path) -> Table:
    """ROWS in a table partitioned by day, written in two commits (ids 0-4, then 5-9)."""
    write_arrow(table_path, ROWS.slice(0, 5), partition_by="day")
    write_arrow(table_path, ROWS.slice(5))
    return Table.load(table_path)


# ------------------------------------------------------------------ results
def test_every_result_form_gives_the_same_rows(table):
    scan = table.scan(columns=["name", "id"], filter="id >= 2")
    expected = [{"name": n, "id": i} for i, n in zip(range(2, 10), ROWS.column("name").to_pylist()[2:])]
    reader = scan.to_batches()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == pa.schema([("name", pa.string()), ("id", pa.int64())])
    from_batches = pa.Table.from_batches(list(reader))
    arrow = scan.to_arrow()
    for t in (from_batches, arrow, pa.table(scan)):  # pa.table(scan): the Arrow C stream
        assert t.schema.names == ["name", "id"]
        assert t.sort_by("id").to_pylist() == expected
    frame = scan.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["name", "id"]
    assert frame.sort_values("id").to_dict("records") == [
        {"name": r["name"], "id": r["id"]} for r in expected]
    assert pl.DataFrame(scan).sort("id").rows() == [(r["name"], r["id"]) for r in expected]
    assert sorted(duckdb.sql("SELECT id, name FROM scan WHERE id < 6").fetchall()) == [
        (2, "c"), (3, None), (4, "e"), (5, "f")]
    assert duckdb.connect().execute("SELECT count(*), sum(id) FROM scan").fetchall() == [(8, 44)]
    assert scan.count() == 8
    assert table.scan().count() == 10  # from file metadata alone
    assert table.scan(limit=3).count() == 3


def test_to_pandas_without_pandas_names_the_missing_package(table, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(MissingDependencyError, match="to_pandas needs pandas"):
        table.scan().to_pandas()
    assert isinstance(MissingDependencyError("x"), ImportError)


def test_columns_are_projected_in_the_order_asked(table):
    t = table.scan(columns=["ts", "id"]).to_arrow()
    assert t.schema.names == ["ts", "id"]
    assert t.sort_by("id").column("ts").to_pylist() == ROWS.column("ts").to_pylist()
    with pytest.raises(SchemaError, match=r"\['nope'\] are not in Paimon table .*columns: id, name, score"):
        table.scan(columns=["id", "nope"])
    with pytest.raises(SchemaError, match=r"\['id'\] are asked for more than once"):
        table.scan(columns=["id", "id"])
    with pytest.raises(SchemaError, match="a list of names"):
        table.scan(columns="id")


def test_an_empty_table_reads_no_rows_with_its_schema(table_path):
    write_arrow(table_path, ROWS.slice(0, 0))
    t = Table.load(table_path).scan().to_arrow()
    assert t.num_rows == 0 and t.schema.names == ROWS.schema.names


# ------------------------------------------------------------------ filters
# (SQL-like text, the same with Python operators, the ids kept): SQL semantics, so a null never matches
FILTERS = [
    ("id = 3", col("id") == 3, [3]),
    ("id == 3", col("id") == 3, [3]),
    ("id != 3", col("id") != 3, [0, 1, 2, 4, 5, 6, 7, 8, 9]),
    ("id <> 3", col("id") != 3, [0, 1, 2, 4, 5, 6, 7, 8, 9]),
    ("id < 2", col("id") < 2, [0, 1]),
    ("id <= 2", col("id") <= 2, [0, 1, 2]),
    ("id > 7", col("id") > 7, [8, 9]),
    ("id >= 7", col("id") >= 7, [7, 8, 9]),
    ("7 <= id", 7 <= col("id"), [7, 8, 9]),
    ("id > 7.5", col("id") > 7.5, [8, 9]),
    ("name = 'c'", col("name") == "c", [2]),
    ("name != 'c'", col("name") != "c", [0, 1, 4, 5, 6, 8, 9]),
    ("name IN ('a', 'e', 'zz')", col("name").isin(["a", "e", "zz"]), [0, 4]),
    ("name NOT IN ('a', 'e')", ~col("name").isin(["a", "e"]), [1, 2, 5, 6, 8, 9]),
    ("name IN ('a', NULL)", col("name").isin(["a", None]), [0]),
    ("name NOT IN ('a', NULL)", ~col("name").isin(["a", None]), []),
    ("name IS NULL", col("name").is_null(), [3, 7]),
    ("name IS NOT NULL", col("name").is_not_null(), [0, 1, 2, 4, 5, 6, 8, 9]),
    ("score BETWEEN 2 AND 6", col("score").between(2, 6), [2, 3, 5]),
    ("score NOT BETWEEN 2 AND 6", ~col("score").between(2, 6), [0, 1, 6, 7, 8, 9]),
    ("score > 5", col("score") > 5, [5, 6, 7, 8, 9]),
    ("NOT score > 5", ~(col("score") > 5), [0, 1, 2, 3]),
    ("score = NULL", col("score") == None, []),  # noqa: E711 - SQL's = NULL, which is never true
    ("day = DATE '2024-01-02'", col("day") == D2, [1, 4, 7]),
    ("day = '2024-01-02'", col("day") == "2024-01-02", [1, 4, 7]),
    ("day > DATE '2024-01-01' AND id < 5", (col("day") > D1) & (col("id") < 5), [1, 2, 4]),
    ("ts >= TIMESTAMP '2024-01-01 08:00:00'", col("ts") >= dt.datetime(2024, 1, 1, 8), [8, 9]),
    ("ts < '2024-01-01 01:00:00'", col("ts") < dt.datetime(2024, 1, 1, 1, tzinfo=UTC), [0]),
    ("ok", col("ok") == True, [0, 2, 4, 6, 8]),  # noqa: E712 - a filter, not a truth test
    ("ok = false", col("ok") == False, [1, 3, 7, 9]),  # noqa: E712
    ("NOT ok", ~(col("ok") == True), [1, 3, 7, 9]),  # noqa: E712
    ("ok IS NULL OR id = 0", col("ok").is_null() | (col("id") == 0), [0, 5]),
    ("(id < 2 OR id > 8) AND name IS NOT NULL", ((col("id") < 2) | (col("id") > 8)) & col("name").is_not_null(),
     [0, 1, 9]),
    ("NOT (id < 2 OR id > 8)", ~((col("id") < 2) | (col("id") > 8)), [2, 3, 4, 5, 6, 7, 8]),
    ("`id` IN (1, 2) or `name` = 'j'", col("id").isin([1, 2]) | (col("name") == "j"), [1, 2, 9]),
    ('"ID" = 4', col("ID") == 4, [4]),  # an unambiguous name matches ignoring case
]


@pytest.mark.parametrize("text,expr,expected", FILTERS, ids=[f[0] for f in FILTERS])
def test_filters_keep_exactly_the_matching_rows(table, text, expr, expected):
    assert ids(table.scan(filter=text).to_arrow()) == expected
    assert ids(table.scan(filter=expr).to_arrow()) == expected
    # the filter's columns need not be among those read
    assert table.scan(columns=["id"], filter=text).count() == len(expected)


def test_a_core_predicate_still_works_as_a_filter(table):
    assert ids(table.scan(filter=Leaf("in", "id", (1, 5))).to_arrow()) == [1, 5]
    assert ids(table.to_arrow(Leaf("<", "id", (2,)))) == [0, 1]


@pytest.mark.parametrize("text,message", [
    ("id >", r"syntax error in filter 'id >' at position 4: expected a column or a literal"),
    ("id > 1 AND", "syntax error .* expected a column or a literal"),
    ("id > 1 name", "syntax error .* at position 7: expected AND, OR or the end"),
    ("(id > 1", r"expected '\)'"),
    ("id @ 1", "position 3: unexpected '@'"),
    ("", "the filter is empty"),
    ("nope = 1", r"column 'nope', which is not in the table \(columns: id, name, score, day, ok, ts\)"),
    ("day = 'yesterday'", "column 'day' is date32.*'yesterday' cannot be compared"),
    ("name = 5", "column 'name' is string: it cannot be compared with 5"),
    ("ok = 1", "column 'ok' is bool"),
    ("DATE '2024-13-01' = day", r"DATE '2024-13-01' is not a date \(yyyy-mm-dd\)"),
    ("1 = 1", "a comparison needs a column"),
    ("id IS NULL AND 5 IS NULL", "IS NULL applies to a column"),
])
def test_bad_filters_are_refused_before_reading(table, text, message):
    with pytest.raises(FilterError, match=message):
        table.scan(filter=text)


def test_python_filters_refuse_and_or_not(table):
    with pytest.raises(FilterError, match="combine filters with & | ~"):
        (col("id") > 1) and (col("id") < 5)  # noqa: B015 - Python's `and` asks the filter for a truth value
    with pytest.raises(FilterError, match="a string, a paimon_ds.col"):
        table.scan(filter=5)


def test_filters_prune_partitions_and_files(table_path):
    # three commits of disjoint id ranges into each of two partitions: six files
    for part in range(3):
        write_arrow(table_path, pa.table({"id": pa.array([part * 100 + i for i in range(10)], pa.int64()),
                                          "day": [D1] * 5 + [D2] * 5}), partition_by="day")
    t = Table.load(table_path)
    files = lambda scan: sorted(f.file_name for s in scan.plan() for f in s.files)  # noqa: E731
    assert len(files(t.scan())) == 6
    assert len(files(t.scan(filter="day = DATE '2024-01-02'"))) == 3
    assert len(files(t.scan(filter="id >= 200"))) == 2
    assert len(files(t.scan(filter=(col("id") >= 200) & (col("day") == D1)))) == 1
    assert len(files(t.scan(filter="NOT id < 200"))) == 2
    assert len(files(t.scan(filter="id < 50 OR id > 205"))) == 3
    assert len(files(t.scan(filter="id != 5"))) == 6  # nothing can be said of != from min and max
    # the pruned files are never opened: the read works without them
    kept = {f.file_name for s in t.scan(filter="id >= 200 AND day = DATE '2024-01-01'").plan() for f in s.files}
    for path in data_files(table_path):
        if os.path.basename(path) not in kept:
            os.remove(path)
    assert ids(t.scan(filter="id >= 200 AND day = DATE '2024-01-01'").to_arrow()) == [200, 201, 202, 203, 204]
    with pytest.raises(FileNotFoundError):
        t.scan().to_arrow()


# ------------------------------------------------------------------ limit
def test_limit_stops_reading_at_its_rows(table_path):
    for i in range(6):  # six files in one bucket
        write_arrow(table_path, pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}))
    t = Table.load(table_path)
    assert t.scan(limit=25).to_arrow().num_rows == 25
    assert t.scan(limit=0).to_arrow().num_rows == 0
    assert t.scan(limit=100).to_arrow().num_rows == 60
    assert t.scan(filter="id >= 33", limit=5).to_arrow().num_rows == 5
    splits = t.scan().plan()
    first = splits[0].file_path(splits[0].files[0])
    for path in data_files(table_path):
        if path != first:
            os.remove(path)
    # limit 1 opens only the first file of the first split; a full read needs the others
    assert t.scan(limit=1).to_arrow().num_rows == 1
    assert t.scan(limit=10).to_arrow().num_rows == 10
    with pytest.raises(FileNotFoundError):
        t.scan(limit=11).to_arrow()
    with pytest.raises(OptionError, match="limit must be a non-negative integer"):
        t.scan(limit=-1)


# ------------------------------------------------------------------ time travel
def test_time_travel_by_snapshot_tag_and_timestamp(table_path):
    first = write_arrow(table_path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    procedures.create_tag(table_path, "v1")
    second = write_arrow(table_path, pa.table({"id": pa.array([3], pa.int64())}))
    t = Table.load(table_path)
    assert ids(t.scan().to_arrow()) == [1, 2, 3]
    assert ids(t.scan(snapshot_id=first.id).to_arrow()) == [1, 2]
    assert ids(t.scan(tag="v1").to_arrow()) == [1, 2]
    assert ids(t.scan(timestamp=first.time_millis).to_arrow()) == [1, 2]
    assert ids(t.scan(timestamp=dt.datetime.fromtimestamp(second.time_millis / 1000)).to_arrow()) == [1, 2, 3]
    assert ids(t.scan(snapshot_id=second.id, filter="id > 1").to_arrow()) == [2, 3]
    # the old snapshot reads with the schema it was written under
    commit_changes(table_path, [AddColumn("extra", "STRING")])
    write_arrow(table_path, pa.table({"id": pa.array([4], pa.int64()), "extra": ["x"]}))
    t = Table.load(table_path)
    assert t.scan(snapshot_id=first.id).to_arrow().schema.names == ["id"]
    assert t.scan(filter="extra IS NOT NULL").to_arrow().to_pylist() == [{"id": 4, "extra": "x"}]
    with pytest.raises(OptionError, match="one of snapshot_id, tag or timestamp; got snapshot_id and tag"):
        t.scan(snapshot_id=1, tag="v1")
    with pytest.raises(SnapshotNotFound, match="snapshot 99 does not exist"):
        t.scan(snapshot_id=99).to_arrow()
    with pytest.raises(SnapshotNotFound, match="tag 'nope' does not exist"):
        t.scan(tag="nope").to_arrow()
    with pytest.raises(SnapshotNotFound, match="at or before 5"):
        t.scan(timestamp=5).to_arrow()


# ------------------------------------------------------------------ primary-key tables
@pytest.mark.parametrize("options", [{}, {"bucket": "2"}, {"deletion-vectors.enabled": "true", "bucket": "1"}],
                         ids=["dynamic-bucket", "fixed-bucket", "deletion-vectors"])
def test_primary_key_tables_read_merged(table_path, options):
    first = write_arrow(table_path, pa.table({"k": pa.array([1, 2, 3], pa.int32()), "dt": ["x", "x", "y"],
                                              "v": ["a", "b", "c"]}),
                primary_key=["dt", "k"], partition_by="dt", options=options)
    t = Table.load(table_path)
    t.append(pa.table({"k": pa.array([2, 4], pa.int32()), "dt": ["x", "y"], "v": ["B", "d"]}))
    t.append(pd.DataFrame({"k": [3], "dt": ["y"], "v": ["C"]}))
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: (r["dt"], r["k"]))
    assert rows == [{"k": 1, "dt": "x", "v": "a"}, {"k": 2, "dt": "x", "v": "B"},
                    {"k": 3, "dt": "y", "v": "C"}, {"k": 4, "dt": "y", "v": "d"}]
    # a filter on a value column sees only the merged (latest) row of each key
    assert t.scan(filter="v = 'b' OR v = 'c'").count() == 0
    assert t.scan(columns=["v"], filter="v IN ('B', 'C')").to_arrow().sort_by("v").column("v").to_pylist() == [
        "B", "C"]
    assert t.scan(columns=["k"], filter="k >= 2 AND dt = 'y'").to_arrow().sort_by("k").column("k").to_pylist() == [
        3, 4]
    # (deletion-vector tables: the first write's level-0 files are compacted up by a COMPACT snapshot)
    assert first.commit_kind == ("COMPACT" if "deletion-vectors.enabled" in options else "APPEND")
    assert t.scan(snapshot_id=first.id).count() == 3
    assert t.scan().count() == 4
    assert t.scan(limit=1).count() == 1


# ------------------------------------------------------------------ writes
def test_append_overwrite_and_partition_overwrite_round_trip(table, table_path):
    before = table.scan().to_arrow()
    snap = table.append(pa.table({"id": pa.array([10], pa.int32()), "name": ["k"], "score": [10.5],
                                  "day": [D3], "ok": [None], "ts": [None]}))
    assert snap.commit_kind == "APPEND" and snap.delta_record_count == 1
    assert ids(table.scan().to_arrow()) == list(range(11))
    # a static partition: its key column may be left out; other partitions stay
    snap = table.overwrite(pa.table({"id": pa.array([20, 21], pa.int64()), "name": ["u", "v"], "score": [1.0, 2.0],
                                     "ok": [True, True], "ts": pa.array([None, None], pa.timestamp("us", tz="UTC"))}),
                           partition={"day": "2024-01-02"})
    assert snap.commit_kind == "OVERWRITE"
    assert ids(table.scan().to_arrow()) == [0, 2, 3, 5, 6, 8, 9, 10, 20, 21]
    assert ids(table.scan(filter="day = DATE '2024-01-02'").to_arrow()) == [20, 21]
    # dynamic partition overwrite: only the partitions written are replaced
    dynamic = Table.load(table_path, {"dynamic-partition-overwrite": "true"})
    dynamic.overwrite(before.filter(pa.compute.equal(before["day"], pa.scalar(D1))))
    assert ids(table.scan().to_arrow()) == [0, 2, 3, 5, 6, 8, 9, 10, 20, 21]
    assert ids(table.scan(filter="day = DATE '2024-01-01'").to_arrow()) == [0, 3, 6, 9]
    # a plain overwrite replaces the whole table
    table.overwrite(ROWS.slice(0, 2))
    assert ids(table.scan().to_arrow()) == [0, 1]
    assert table.scan().to_arrow().sort_by("id").to_pylist() == ROWS.slice(0, 2).to_pylist()
    # write_arrow overwrite
    snap = write_arrow(table_path, ROWS.slice(4, 1), mode="overwrite")
    assert snap.commit_kind == "OVERWRITE" and ids(Table.load(table_path).scan().to_arrow()) == [4]


def test_inputs_pandas_readers_iterables_and_c_streams(table_path):
    frame = pd.DataFrame({"v": ["x", "y", None], "id": [3, 1, 2]}, index=[10, 20, 30])  # index left out
    snap = write_arrow(table_path, frame, primary_key="id", options={"bucket": "1"})
    t = Table.load(table_path)
    assert repr(t) == f"Table('{table_path}', columns=[v STRING, id BIGINT NOT NULL], primary_keys=['id'], " \
                      f"bucket=1, snapshot={snap.id})"
    batches = [pa.record_batch({"id": pa.array([4], pa.int8()), "v": pa.array(["w"], pa.large_string())})] * 2
    t.append(pa.RecordBatchReader.from_batches(batches[0].schema, batches))
    t.append(iter([pa.record_batch({"v": ["p"], "id": [5]})]))
    t.append(pl.DataFrame({"id": [6], "v": ["q"]}))  # an Arrow C stream
    t.append(pd.DataFrame({"id": pd.Series([7], dtype="int32"), "v": pd.Categorical(["c"])}))
    assert t.append(iter([])) is None
    rows = t.scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "v": "y"}, {"id": 2, "v": None}, {"id": 3, "v": "x"}, {"id": 4, "v": "w"},
                    {"id": 5, "v": "p"}, {"id": 6, "v": "q"}, {"id": 7, "v": "c"}]
    # a scan is a C stream too: a copy of the table through it
    copy = str(os.path.dirname(table_path)) + "/copy"
    write_arrow(copy, t.scan(filter="id <= 2"), primary_key=["id"])
    assert Table.load(copy).scan().to_arrow().sort_by("id").to_pylist() == rows[:2]


def _state(path: str) -> tuple:
    t = Table.load(path)
    return t.snapshot_manager.latest_id(), data_files(path), t.scan().to_arrow().sort_by("id").to_pylist()


@pytest.mark.parametrize("data,message", [
    (pa.table({"id": [1]}), r"missing column\(s\) \['v'\]"),
    (pa.table({"id": [1], "v": ["a"], "w": [1]}), r"column\(s\) \['w'\] not in the table"),
    (pa.table({"id": ["1"], "v": ["a"]}), "column 'id' is string in the data, which cannot be written as the "
                                          "table's int32"),
    (pa.table({"id": [1.5], "v": ["a"]}), "column 'id' is double"),
    (pd.DataFrame({"id": [1], "v": [dt.date(2024, 1, 1)]}), "column 'v' is date32"),
    (pa.table({"id": [2**40], "v": ["a"]}), "column 'id': a value of the data's int64 does not fit the table's int32"),
    ([pa.record_batch({"id": [1], "v": ["a"]}), pa.record_batch({"id": [None], "v": ["b"]})],
     "column 'id' is NOT NULL in the table but the data has 1 null"),
    ([pa.record_batch({"id": [1], "v": ["a"]}), pa.record_batch({"id": [2**40], "v": ["b"]})],
     "does not fit the table's int32"),
    ("not data", "cannot write str"),
])
def test_bad_input_is_refused_and_leaves_the_table_unchanged(table_path, data, message):
    write_arrow(table_path, pa.table({"id": pa.array([0], pa.int32()), "v": ["z"]}), primary_key="id")
    t = Table.load(table_path)
    before = _state(table_path)
    with pytest.raises(SchemaError, match=message):
        t.append(data)
    with pytest.raises(SchemaError, match=message):
        write_arrow(table_path, data)
    assert _state(table_path) == before


def test_bad_write_arguments_are_refused(table, table_path):
    before = _state(table_path)
    with pytest.raises(OptionError, match=r"\['id'\] are not partition keys .*partition keys: \['day'\]"):
        table.overwrite(ROWS, partition={"id": 1})
    with pytest.raises(OptionError, match="partition value day='soon' is not a date32"):
        table.overwrite(ROWS, partition={"day": "soon"})
    with pytest.raises(SchemaError, match="column 'day' holds values other than the partition's"):
        table.overwrite(ROWS, partition={"day": D1})
    with pytest.raises(OptionError, match="mode must be 'append', 'overwrite', 'error' or 'ignore', got 'upsert'"):
        write_arrow(table_path, ROWS, mode="upsert")
    with pytest.raises(OptionError, match="option primary-key='id' differs from the table's primary-key"):
        write_arrow(table_path, ROWS, primary_key="id")
    assert _state(table_path) == before
    with pytest.raises(SchemaError, match="no data to take its schema from"):
        write_arrow(table_path + "-new", iter([]))


def test_write_arrow_creates_tables_with_paimon_defaults(table_path):
    write_arrow(table_path, pa.table({"k": [1, 2], "p": ["a", "b"], "v": [1.0, 2.0]}), primary_key="k,p",
                partition_by=["p"], options={"merge-engine": "deduplicate"})
    t = Table.load(table_path)
    assert (t.schema().primary_keys, t.schema().partition_keys, t.bucket) == (("k", "p"), ("p",), -1)
    assert t.schema().options["merge-engine"] == "deduplicate"
    write_arrow(table_path, pa.table({"k": [1], "p": ["a"], "v": [9.0]}))
    assert t.scan().to_arrow().sort_by("k").to_pylist() == [{"k": 1, "p": "a", "v": 9.0},
                                                            {"k": 2, "p": "b", "v": 2.0}]


def test_cross_partition_tables_are_refused_without_spark(table_path):
    with pytest.raises(OptionError, match=r"cross-partition upsert table \(its primary key \['k'\] lacks a partition"):
        write_arrow(table_path, pa.table({"k": [1], "p": ["a"]}), primary_key="k", partition_by="p")
    assert not Table.exists(table_path)


# ------------------------------------------------------------------ metadata
def test_snapshots_history_and_repr(table, table_path):
    table.overwrite(ROWS.slice(0, 3))
    history = table.history()
    assert [(h["snapshot_id"], h["commit_kind"], h["total_record_count"], h["delta_record_count"])
            for h in history] == [(3, "OVERWRITE", 3, -7), (2, "APPEND", 10, 5), (1, "APPEND", 5, 5)]
    assert all(isinstance(h["commit_time"], dt.datetime) and h["commit_time"].tzinfo is UTC for h in history)
    assert history[0]["commit_time"] >= history[1]["commit_time"] >= history[2]["commit_time"]
    assert [h["snapshot_id"] for h in table.history(limit=2)] == [3, 2]
    assert [s.id for s in table.snapshots()] == [1, 2, 3]
    assert repr(table) == (f"Table('{table_path}', columns=[id BIGINT, name STRING, score DOUBLE, day DATE, "
                           "ok BOOLEAN, ts TIMESTAMP(6) WITH LOCAL TIME ZONE], partition_keys=['day'], bucket=-1, "
                           "snapshot=3)")
    assert repr(table.scan(columns=["id"], filter=col("id") > 1, limit=2, snapshot_id=1)) == (
        f"Scan(path='{table_path}', columns=['id'], filter='id > 1', limit=2, scan.snapshot-id=1)")
    assert repr(col("a") == "x") == "<filter a = 'x'>"
    assert paimon_ds.parse_filter("a = 1 AND NOT b IN (2, 3)").sql() == "a = 1 AND NOT (b IN (2, 3))"
