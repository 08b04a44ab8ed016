"""Lazy scans: Table.to_polars (Polars' IO-source plugin), Table.to_duckdb (DuckDB's Arrow source protocol) and
Table.to_pyarrow_dataset. Each pushes projection, filters and row counts into Table.scan: the files a filter on a
partition column or on a stats column rules out are never opened (shown by deleting them), only the asked columns
are decoded (shown by what the scan asks the reader for), and the rows equal `scan().to_arrow()` exactly, on an
append table, a partitioned one and a primary-key table whose buckets need a merge (updates, deletes)."""

from __future__ import annotations

import datetime as dt
import os
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_ds import MissingDependencyError, NotExpressibleError, Table, col, write_arrow
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.read import TableRead
from paimon_ds.readers import lazy
from paimon_ds.schema.change import AddColumn, DropColumn, RenameColumn, commit_changes

D1, D2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)


def data_files(path: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
                  if "bucket-" in d and f.startswith("data-"))


def keep_only(table: Table, scan_filter: str) -> None:
    """Delete every data file the scan with ``scan_filter`` prunes (a read that opened one would fail)."""
    kept = {f.file_name for s in table.scan(filter=scan_filter).plan() for f in s.files}
    removed = [p for p in data_files(table.path) if os.path.basename(p) not in kept]
    assert removed, "the filter must prune some file for the test to show anything"
    for p in removed:
        os.remove(p)


def rows(data, *keys: str) -> list[dict]:
    """Rows of an Arrow table / Polars frame / DuckDB relation, sorted."""
    if isinstance(data, pl.DataFrame):
        data = data.to_arrow()
    elif isinstance(data, duckdb.DuckDBPyRelation):
        data = data.arrow()
        data = data.read_all() if isinstance(data, pa.RecordBatchReader) else data
    out = data.to_pylist()

    def order(value):  # a total order: None last, NaN after every number
        nan = isinstance(value, float) and value != value
        return (value is None, nan, 0.0 if nan else value)
    return sorted(out, key=lambda r: tuple(order(r[k]) for k in (keys or r.keys())))


def arrow_rows(table: Table, columns=None, filter=None, *keys: str) -> list[dict]:
    return rows(table.scan(columns=columns, filter=filter).to_arrow(), *keys)


@pytest.fixture
def read_columns(monkeypatch) -> list[list[str]]:
    """The columns every TableRead of the test was asked to decode."""
    asked: list[list[str]] = []
    original = TableRead.__init__

    def init(self, table, read_schema=None, *args, **kwargs):
        asked.append(list(read_schema.names) if read_schema is not None else table.arrow_schema().names)
        original(self, table, read_schema, *args, **kwargs)
    monkeypatch.setattr(TableRead, "__init__", init)
    return asked


# ------------------------------------------------------------------ the tables
def append_table(path: str) -> Table:
    """Unpartitioned: three commits of disjoint id ranges (0-9, 100-109, 200-209), one file each."""
    for part in range(3):
        ids = [part * 100 + i for i in range(10)]
        write_arrow(path, pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                                    "score": pa.array([i / 2 if i % 7 else None for i in ids], pa.float64())}))
    return Table.load(path)


def partitioned_table(path: str) -> Table:
    """Partitioned by day: three commits of disjoint id ranges into each of two days, six files."""
    for part in range(3):
        ids = [part * 100 + i for i in range(10)]
        write_arrow(path, pa.table({"id": pa.array(ids, pa.int64()), "day": [D1] * 5 + [D2] * 5,
                                    "name": [f"n{i}" if i % 4 else None for i in ids]}), partition_by="day")
    return Table.load(path)


def primary_key_table(path: str) -> Table:
    """Key (dt, k), bucket 1, a row-kind column: four commits of inserts, updates and deletes whose level-0 files
    need a merge. Merged: dt=x k=1 'a', k=2 'B2', k=5 'e'; dt=y k=3 'C', k=14 'n'; k=4 (x) and k=13 (y) deleted."""
    opts = {"bucket": "1", "rowkind.field": "kind"}
    write_arrow(path, pa.table({"k": pa.array([1, 2, 3, 4], pa.int32()), "dt": ["x", "x", "y", "x"],
                                "v": ["a", "b", "c", "d"], "kind": ["+I"] * 4}),
                primary_key=["dt", "k"], partition_by="dt", options=opts)
    t = Table.load(path)
    t.append(pa.table({"k": pa.array([2, 3, 13], pa.int32()), "dt": ["x", "y", "y"], "v": ["B", "C", "m"],
                       "kind": ["+U", "+U", "+I"]}))
    t.append(pa.table({"k": pa.array([4, 2, 5, 14], pa.int32()), "dt": ["x", "x", "x", "y"],
                       "v": ["d", "B2", "e", "n"], "kind": ["-D", "+U", "+I", "+I"]}))
    t.append(pa.table({"k": pa.array([13], pa.int32()), "dt": ["y"], "v": ["m"], "kind": ["-D"]}))
    t = Table.load(path)
    assert any(len(s.files) > 1 for s in t.scan().plan()), "the buckets must need a merge"
    return t


PK_ROWS = [("x", 1, "a"), ("x", 2, "B2"), ("x", 5, "e"), ("y", 3, "C"), ("y", 14, "n")]


# ------------------------------------------------------------------ Polars
def test_polars_results_equal_to_arrow_on_every_kind_of_table(tmp_path):
    for make in (append_table, partitioned_table, primary_key_table):
        t = make(str(tmp_path / make.__name__))
        lf = t.to_polars()
        assert lf.collect_schema() == pl.from_arrow(t.arrow_schema().empty_table()).schema
        assert rows(lf.collect()) == arrow_rows(t)
    pk = Table.load(str(tmp_path / "primary_key_table"))
    got = pk.to_polars().select("dt", "k", "v").collect()
    assert sorted(got.iter_rows()) == PK_ROWS
    # a value column filter sees only the merged rows: the deleted k=4 'd' and the replaced 'b' are gone
    assert pk.to_polars().filter(pl.col("v").is_in(["b", "d", "m"])).collect().height == 0
    assert rows(pk.to_polars().filter(pl.col("v") >= "C").collect(), "k") == arrow_rows(pk, None, "v >= 'C'", "k")


@pytest.mark.parametrize("kind", ["partitioned", "primary_key"])
def test_polars_partition_filter_skips_files(tmp_path, kind):
    if kind == "partitioned":
        t = partitioned_table(str(tmp_path / "t"))
        expected = arrow_rows(t, None, "day = DATE '2024-01-02'")
        keep_only(t, "day = DATE '2024-01-02'")
        assert rows(t.to_polars().filter(pl.col("day") == D2).collect()) == expected
        with pytest.raises(FileNotFoundError):
            t.to_polars().collect()
    else:
        t = primary_key_table(str(tmp_path / "t"))
        keep_only(t, "dt = 'y'")
        got = t.to_polars().filter(pl.col("dt") == "y").select("dt", "k", "v").collect()
        assert sorted(got.iter_rows()) == [r for r in PK_ROWS if r[0] == "y"]


def test_polars_stats_filter_skips_files(tmp_path):
    t = partitioned_table(str(tmp_path / "t"))
    expr = (pl.col("id") >= 200) & (pl.col("day") == D1)
    expected = arrow_rows(t, None, "id >= 200 AND day = DATE '2024-01-01'")
    assert [r["id"] for r in expected] == [200, 201, 202, 203, 204]
    keep_only(t, "id >= 200 AND day = DATE '2024-01-01'")
    assert rows(t.to_polars().filter(expr).collect()) == expected
    # is_between, is_in, reversed comparisons and ORs of translatable parts prune too
    assert rows(t.to_polars().filter(pl.col("id").is_between(201, 202) & (pl.lit(dt.date(2024, 1, 1)) == pl.col("day")))
                .collect(), "id") == [r for r in expected if r["id"] in (201, 202)]
    assert rows(t.to_polars().filter(pl.col("id").is_in([203, 999]) & (pl.col("day") <= D1)).collect()) == \
        [r for r in expected if r["id"] == 203]
    assert rows(t.to_polars().filter(((pl.col("id") > 203) | (pl.col("id") == 200)) & (pl.col("day") == D1))
                .collect()) == [r for r in expected if r["id"] in (200, 204)]


def test_polars_stats_filter_skips_files_of_a_primary_key_table_by_key(tmp_path):
    t = primary_key_table(str(tmp_path / "t"))
    # a key column's stats prune (never a value column's: an older version of a row may match where the newest
    # does not); the filter reads the merged rows
    kept = {f.file_name for s in t.scan(filter="k >= 10").plan() for f in s.files}
    assert 0 < len(kept) < len(data_files(t.path))
    keep_only(t, "k >= 10")
    got = t.to_polars().filter(pl.col("k") >= 10).select("dt", "k", "v").collect()
    assert sorted(got.iter_rows()) == [("y", 14, "n")]


def test_polars_projection_decodes_only_the_asked_columns(tmp_path, read_columns):
    t = partitioned_table(str(tmp_path / "t"))
    assert rows(t.to_polars().select("name").collect()) == arrow_rows(t, ["name"])
    assert read_columns and all(c == ["name"] for c in read_columns)
    read_columns.clear()
    # the predicate's columns are read as well, and dropped after filtering
    got = t.to_polars().filter(pl.col("id") > 205).select("name").collect()
    assert rows(got) == arrow_rows(t, ["name"], "id > 205")
    assert read_columns and all(c == ["id", "name"] for c in read_columns)
    read_columns.clear()
    assert t.to_polars().select(pl.len()).collect().item() == 30  # a count decodes one narrow column
    assert read_columns and all(len(c) == 1 for c in read_columns)
    assert t.to_polars().filter(pl.col("id") > 205).select(pl.len()).collect().item() == 4


def test_polars_untranslatable_predicates_still_apply_exactly(tmp_path):
    t = partitioned_table(str(tmp_path / "t"))
    frame = pl.from_arrow(t.scan().to_arrow())
    for expr in [
        pl.col("name").str.starts_with("n10"),
        (pl.col("id") + 1) > 205,
        (pl.col("id") > 200) & pl.col("name").str.ends_with("3"),
        (pl.col("id") > 205) | pl.col("name").str.ends_with("3"),   # an OR with an unknown part prunes nothing
        ~((pl.col("id") > 5) & pl.col("name").str.ends_with("3")),  # NOT of AND: the unknown part is kept
        ~((pl.col("id") < 5) | (pl.col("day") == D1)),
        pl.col("name").is_null() | (pl.col("id") == 7),
        pl.col("id") != 101,
        pl.col("name").is_in(["n1", None]),
        pl.col("day").cast(pl.Datetime) > dt.datetime(2024, 1, 1, 12),
        pl.col("id") > 2.5,
    ]:
        assert rows(t.to_polars().filter(expr).collect()) == rows(frame.filter(expr)), expr


def test_polars_row_counts_are_pushed_and_stop_reading(tmp_path):
    t = append_table(str(tmp_path / "t"))
    order = pl.from_arrow(t.scan().to_arrow())
    assert t.to_polars().head(4).collect().equals(order.head(4))
    # head before a filter takes the first rows, then filters them (no pruning may change which rows are first)
    assert t.to_polars().head(12).filter(pl.col("id") > 5).collect().equals(order.head(12).filter(pl.col("id") > 5))
    assert t.to_polars().filter(pl.col("id") > 5).head(3).collect().height == 3
    splits = t.scan().plan()
    first = splits[0].file_path(splits[0].files[0])
    for path in data_files(t.path):
        if path != first:
            os.remove(path)
    assert t.to_polars().head(7).collect().height == 7  # only the first file is opened
    with pytest.raises(FileNotFoundError):
        t.to_polars().collect()


def test_lazy_reads_keep_a_scans_columns_filter_and_time_travel(tmp_path):
    t = append_table(str(tmp_path / "t"))
    first = t.snapshots()[0].id
    lf = t.scan(columns=["id", "name"], filter="id >= 5").to_polars()
    assert lf.collect_schema().names() == ["id", "name"]
    assert rows(lf.filter(pl.col("id") < 103).collect()) == arrow_rows(t, ["id", "name"], "id >= 5 AND id < 103")
    rel = t.scan(columns=["id", "name"], filter="id >= 5").to_duckdb(duckdb.connect())
    assert rel.columns == ["id", "name"]
    assert rows(rel.filter("id < 103")) == arrow_rows(t, ["id", "name"], "id >= 5 AND id < 103")
    assert sorted(t.to_polars(snapshot_id=first).collect()["id"].to_list()) == list(range(10))
    assert sorted(r[0] for r in t.to_duckdb(duckdb.connect(), snapshot_id=first).project("id").fetchall()) == \
        list(range(10))
    assert sorted(t.to_pyarrow_dataset(snapshot_id=first).to_table().column("id").to_pylist()) == list(range(10))
    # a scan's own limit comes before Polars' filter
    limited = t.scan(limit=3).to_polars().filter(pl.col("id") > 1).collect()
    assert limited.equals(pl.from_arrow(t.scan(limit=3).to_arrow()).filter(pl.col("id") > 1))


def test_scan_pyarrow_dataset_reads_a_scan(tmp_path, read_columns):
    t = partitioned_table(str(tmp_path / "t"))
    got = pl.scan_pyarrow_dataset(t.scan()).filter(pl.col("id") > 205).select("id").collect()
    assert sorted(got["id"].to_list()) == [206, 207, 208, 209]
    assert read_columns and all(c == ["id"] for c in read_columns)
    # the pyarrow Dataset keywords: columns, a pyarrow filter (applied exactly, naming an unlisted column too),
    # batch_size; pyarrow's tuning keywords are taken and ignored
    reader = t.scan().to_batches(columns=["name"], filter=pc.field("id") < 3, batch_size=1, use_threads=True)
    batches = list(reader)
    assert [b.num_rows for b in batches] == [1, 1, 1] and reader.schema.names == ["name"]
    with pytest.raises(TypeError, match="unexpected keyword"):
        t.scan().to_batches(colums=["id"])
    assert pl.scan_pyarrow_dataset(t.scan()).head(2).collect().height == 2


# ------------------------------------------------------------------ DuckDB
def test_duckdb_results_equal_to_arrow_on_every_kind_of_table(tmp_path):
    con = duckdb.connect()
    for make in (append_table, partitioned_table, primary_key_table):
        t = make(str(tmp_path / make.__name__))
        assert rows(t.to_duckdb(con)) == arrow_rows(t)
    pk = Table.load(str(tmp_path / "primary_key_table"))
    pk.to_duckdb(con, "pk")
    assert sorted(con.sql("SELECT dt, k, v FROM pk").fetchall()) == PK_ROWS
    assert con.sql("SELECT count(*) FROM pk WHERE v IN ('b', 'd', 'm')").fetchall() == [(0,)]
    assert sorted(con.sql("SELECT k FROM pk WHERE v >= 'C' AND dt = 'x'").fetchall()) == [(1,), (5,)]


def test_duckdb_partition_and_stats_filters_skip_files(tmp_path):
    t = partitioned_table(str(tmp_path / "t"))
    con = duckdb.connect()
    t.to_duckdb(con, "t")
    query = "SELECT id, day, name FROM t WHERE id >= 200 AND day = DATE '2024-01-01'"
    expected = arrow_rows(t, None, "id >= 200 AND day = DATE '2024-01-01'")
    keep_only(t, "id >= 200 AND day = DATE '2024-01-01'")
    assert rows(con.sql(query)) == expected
    assert sorted(con.sql("SELECT id FROM t WHERE day = DATE '2024-01-01' AND id BETWEEN 201 AND 202")
                  .fetchall()) == [(201,), (202,)]
    assert sorted(con.sql("SELECT id FROM t WHERE day = DATE '2024-01-01' AND id IN (203, 999)").fetchall()) == [(203,)]
    with pytest.raises(duckdb.Error):
        con.sql("SELECT * FROM t").fetchall()
    # primary-key table: the partition and the key's stats prune
    pk = primary_key_table(str(tmp_path / "pk"))
    keep_only(pk, "dt = 'y' AND k >= 10")
    rel = pk.to_duckdb(con)
    assert rel.filter("dt = 'y' AND k >= 10").project("dt, k, v").fetchall() == [("y", 14, "n")]


def test_duckdb_projection_decodes_only_the_asked_columns(tmp_path, read_columns):
    t = partitioned_table(str(tmp_path / "t"))
    con = duckdb.connect()
    t.to_duckdb(con, "t")
    assert sorted(con.sql("SELECT name FROM t WHERE id > 205").fetchall(), key=str) == [
        ("n206",), ("n207",), ("n209",), (None,)]
    assert read_columns and all(c == ["id", "name"] for c in read_columns)
    read_columns.clear()
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(30,)]
    assert read_columns and all(len(c) == 1 for c in read_columns)
    assert con.sql("SELECT count(*) FROM t WHERE id > 205").fetchall() == [(4,)]


def test_duckdb_filters_it_cannot_hand_over_still_apply(tmp_path):
    t = partitioned_table(str(tmp_path / "t"))
    con = duckdb.connect()
    t.to_duckdb(con, "t")
    arrow = t.scan().to_arrow()  # noqa: F841 - read by DuckDB's replacement scan below
    for where in ["id % 3 = 0", "name LIKE 'n10%'", "NOT (id > 5 AND name LIKE '%3')", "id > 205 OR name IS NULL",
                  "day > DATE '2024-01-01' AND id < 105", "id <> 101 AND id > 2.5"]:
        assert sorted(con.sql(f"SELECT * FROM t WHERE {where}").fetchall()) == \
            sorted(con.sql(f"SELECT * FROM arrow WHERE {where}").fetchall()), where


def test_duckdb_limit_stops_reading(tmp_path):
    t = append_table(str(tmp_path / "t"))
    assert len(t.to_duckdb().limit(4).fetchall()) == 4
    splits = t.scan().plan()
    first = splits[0].file_path(splits[0].files[0])
    for path in data_files(t.path):
        if path != first:
            os.remove(path)
    assert len(t.to_duckdb().limit(3).fetchall()) == 3
    assert len(t.scan(limit=5).to_duckdb().fetchall()) == 5


# ------------------------------------------------------------------ pyarrow Dataset
def test_pyarrow_dataset_of_append_and_partitioned_tables(tmp_path):
    for make in (append_table, partitioned_table):
        t = make(str(tmp_path / make.__name__))
        dataset = t.to_pyarrow_dataset()
        assert dataset.schema == t.arrow_schema()
        assert rows(dataset.to_table()) == arrow_rows(t)
    t = Table.load(str(tmp_path / "partitioned_table"))
    dataset = t.to_pyarrow_dataset()
    # each fragment's partition expression lets pyarrow (and DuckDB, Polars over it) skip partitions unopened
    keep_only(t, "day = DATE '2024-01-02'")
    got = dataset.to_table(filter=(pc.field("day") == D2) & (pc.field("id") > 105))
    assert sorted(got.column("id").to_pylist()) == [106, 107, 108, 109, 205, 206, 207, 208, 209]
    assert sorted(duckdb.connect().from_arrow(dataset).filter("day = DATE '2024-01-02' AND id < 10")
                  .project("id").fetchall()) == [(5,), (6,), (7,), (8,), (9,)]
    # and each file's exact min / max (integer columns without nulls): a stats filter skips files unopened too
    t = append_table(str(tmp_path / "stats"))
    dataset = t.to_pyarrow_dataset()
    keep_only(t, "id >= 200")
    assert sorted(dataset.to_table(filter=pc.field("id") >= 205, columns=["id"]).column("id").to_pylist()) == [
        205, 206, 207, 208, 209]
    with pytest.raises(OSError):
        dataset.to_table()


def test_pyarrow_dataset_of_primary_key_tables(tmp_path):
    t = primary_key_table(str(tmp_path / "t"))
    with pytest.raises(NotExpressibleError, match=r"need a merge.*full compaction.*to_polars\(\), to_duckdb\(\) "
                                                  r"or scan\(\)\.to_arrow\(\)"):
        t.to_pyarrow_dataset()
    compact_in_process(t, None, full=True)
    t = Table.load(t.path)
    dataset = t.to_pyarrow_dataset()  # one file per bucket, no retraction left: the files are the table
    assert sorted(dataset.to_table(columns=["dt", "k", "v", "kind"]).to_pylist(), key=lambda r: (r["dt"], r["k"])) \
        == arrow_rows(t, ["dt", "k", "v", "kind"], None, "dt", "k")
    assert sorted((r["dt"], r["k"], r["v"]) for r in dataset.to_table().to_pylist()) == PK_ROWS


def test_pyarrow_dataset_refuses_deletion_vectors(tmp_path):
    path = str(tmp_path / "dv")
    write_arrow(path, pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}), primary_key="k",
                options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t = Table.load(path)
    t.append(pa.table({"k": pa.array([1], pa.int32()), "v": ["A"]}))
    with pytest.raises(NotExpressibleError, match="deletion vectors"):
        t.to_pyarrow_dataset()
    assert sorted(t.to_polars().collect().iter_rows()) == [(1, "A"), (2, "b")]
    assert sorted(t.to_duckdb(duckdb.connect()).fetchall()) == [(1, "A"), (2, "b")]


def test_pyarrow_dataset_across_schema_evolution(tmp_path):
    """Files written before a column was added read it as nulls; a column dropped and added again under its old
    name is not the old one (a new field id); a renamed column cannot be read by name: refused."""
    t = append_table(str(tmp_path / "t"))
    commit_changes(t.path, [AddColumn("extra", "STRING")])
    t = Table.load(t.path)
    t.append(pa.table({"id": pa.array([7000], pa.int64()), "name": ["x"], "score": [1.0], "extra": ["e"]}))
    t = Table.load(t.path)
    assert rows(t.to_pyarrow_dataset().to_table()) == arrow_rows(t)
    assert t.to_pyarrow_dataset().to_table(filter=pc.field("extra").is_valid()).num_rows == 1
    commit_changes(t.path, [DropColumn("score")])
    commit_changes(t.path, [AddColumn("score", "DOUBLE")])
    t = Table.load(t.path)
    with pytest.raises(NotExpressibleError, match="written before a column was renamed or retyped"):
        t.to_pyarrow_dataset()
    assert rows(t.to_polars().collect()) == arrow_rows(t)
    assert all(r["score"] is None for r in arrow_rows(t))
    path = str(tmp_path / "renamed")
    append_table(path)
    commit_changes(path, [RenameColumn("name", "label")])
    with pytest.raises(NotExpressibleError, match="renamed"):
        Table.load(path).to_pyarrow_dataset()


# ------------------------------------------------------------------ optional packages
def test_missing_polars_or_duckdb_names_the_extra(tmp_path, monkeypatch):
    t = append_table(str(tmp_path / "t"))
    monkeypatch.setitem(sys.modules, "polars", None)
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(MissingDependencyError, match=r"to_polars needs polars.*paimon_ds\[polars\]"):
        t.to_polars()
    with pytest.raises(MissingDependencyError, match=r"to_duckdb needs duckdb.*paimon_ds\[duckdb\]"):
        t.to_duckdb()
    assert t.scan(filter=col("id") < 2).to_arrow().num_rows == 2


def test_float_filters_keep_what_polars_and_duckdb_keep(tmp_path):
    """NaN (the greatest value, equal to itself, in Polars and DuckDB) and the two zeros (equal in both, ordered in
    Paimon's stats) never make a file be skipped that holds a row the engine keeps."""
    path = str(tmp_path / "f")
    for values in ([float("nan"), 1.0], [-0.0, 2.0], [0.0, None], [float("nan"), float("nan")]):
        write_arrow(path, pa.table({"id": pa.array(range(len(values)), pa.int64()),
                                    "score": pa.array(values, pa.float64())}))
    t = Table.load(path)
    frame = pl.from_arrow(t.scan().to_arrow())
    for expr in [pl.col("score") > 1.5, pl.col("score") == 0.0, pl.col("score") >= 0.0, pl.col("score") < 0.0,
                 pl.col("score") <= -0.0, pl.col("score") == float("nan"), pl.col("score").is_in([0.0, 2.0]),
                 ~(pl.col("score") < 1.0), pl.col("score").is_nan()]:
        got, expected = t.to_polars().filter(expr).collect(), frame.filter(expr)
        assert repr(rows(got, "id", "score")) == repr(rows(expected, "id", "score")), expr  # repr: nan == nan
    con = duckdb.connect()
    t.to_duckdb(con, "t")
    arrow = t.scan().to_arrow()  # noqa: F841 - read by DuckDB's replacement scan below
    for where in ["score > 1.5", "score = 0.0", "score >= 0.0", "score < 0.0", "score <= -0.0", "score = 'NaN'",
                  "score IN (0.0, 2.0)", "NOT (score < 1.0)", "isnan(score)"]:
        assert repr(sorted(con.sql(f"SELECT id, score FROM t WHERE {where}").fetchall(), key=str)) == \
            repr(sorted(con.sql(f"SELECT id, score FROM arrow WHERE {where}").fetchall(), key=str)), where


def test_duckdb_without_the_source_protocol_falls_back(tmp_path, monkeypatch):
    """A DuckDB whose Arrow scan takes no source object (1.x) gets the pyarrow Dataset where the table has one
    (DuckDB pushes into it: the pruned files are never opened), else the Arrow C stream."""
    monkeypatch.setattr(lazy, "duckdb_source_class", lambda: None)
    t = partitioned_table(str(tmp_path / "t"))
    con = duckdb.connect()
    t.to_duckdb(con, "t")
    expected = arrow_rows(t, ["id"], "day = DATE '2024-01-02' AND id > 205")
    keep_only(t, "day = DATE '2024-01-02'")
    assert rows(con.sql("SELECT id FROM t WHERE day = DATE '2024-01-02' AND id > 205")) == expected
    pk = primary_key_table(str(tmp_path / "pk"))
    assert sorted(pk.to_duckdb(con).project("dt, k, v").fetchall()) == PK_ROWS
