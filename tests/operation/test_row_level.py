"""Row-level changes without Spark (Table.delete / update / upsert / merge / overwrite(filter=), write_arrow modes):
exact rows per call on append, append-with-deletion-vectors and primary-key tables (fixed buckets partitioned,
dynamic buckets), each result read back by Java Paimon 0.9; the same calls through the Spark path
(paimon_ds.delete / update / merge) give the same rows; a commit landing between a statement's read and its
commit is kept or detected; bad input writes nothing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_ds
from paimon_ds import Delete, Insert, Table, Update, col, write_arrow
from paimon_ds.errors import PaimonDsError, RowLevelError, TableAlreadyExists
from paimon_ds.operation import row_level
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.predicate.expressions import parse_filter

KINDS = {
    "append": {},
    "append_partitioned": {"partition_by": ["p"]},
    "append_dv": {"options": {"deletion-vectors.enabled": "true"}},
    "pk_fixed_partitioned": {"primary_key": ["p", "id"], "partition_by": ["p"], "options": {"bucket": "2"}},
    "pk_dynamic": {"primary_key": ["id"]},  # Paimon's default bucket=-1
}

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def rows(*tuples) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, t)) for t in tuples], schema=SCHEMA)


INITIAL = rows((1, "a", 10, "x1"), (2, "a", 20, None), (3, "b", 30, "x3"), (4, "b", 40, "x4"),
               (5, "b", 50, "x5"), (6, "a", 60, "x6"))


def contents(table) -> list[tuple]:
    t = table if isinstance(table, pa.Table) else Table.load(table).scan().to_arrow()
    return sorted(tuple(r[n] for n in SCHEMA.names) for r in t.to_pylist())


def new_table(path: str, kind: str) -> Table:
    write_arrow(path, INITIAL, **KINDS[kind])
    return Table.load(path)


# the scenario: each step, run on the core; and the rows it leaves
UPSERT = rows((1, "a", 100, "u1"), (9, "b", 900, "u9"))
MERGE_SOURCE = rows((2, "a", 1, "m2"), (3, "b", 2, "m3"), (7, "a", 3, "m7"))
OVERWRITE = rows((50, "b", 5, "o50"), (51, "b", 6, None))

STEPS = [
    ("delete", lambda t: t.delete("v > 50"),
     [(1, "a", 10, "x1"), (2, "a", 20, None), (3, "b", 30, "x3"), (4, "b", 40, "x4"), (5, "b", 50, "x5")]),
    ("update", lambda t: t.update({"v": pc.field("v") + 1, "s": "'x'"}, col("id") <= 2),
     [(1, "a", 11, "x"), (2, "a", 21, "x"), (3, "b", 30, "x3"), (4, "b", 40, "x4"), (5, "b", 50, "x5")]),
    ("upsert", lambda t: t.upsert(UPSERT, on=None if t.table_schema.primary_keys else ["id"]),
     [(1, "a", 100, "u1"), (2, "a", 21, "x"), (3, "b", 30, "x3"), (4, "b", 40, "x4"), (5, "b", 50, "x5"),
      (9, "b", 900, "u9")]),
    ("merge", lambda t: t.merge(MERGE_SOURCE, "t.id = s.id")
     .when_matched_delete("s.v = 1").when_matched_update({"v": "s.v"}).when_not_matched_insert_all()
     .when_not_matched_by_source_update({"s": "'gone'"}, "t.id = 4").execute(),
     [(1, "a", 100, "u1"), (3, "b", 2, "x3"), (4, "b", 40, "gone"), (5, "b", 50, "x5"), (7, "a", 3, "m7"),
      (9, "b", 900, "u9")]),
    ("overwrite", lambda t: t.overwrite(OVERWRITE, filter="p = 'b'"),
     [(1, "a", 100, "u1"), (7, "a", 3, "m7"), (50, "b", 5, "o50"), (51, "b", 6, None)]),
]


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_call_on_each_table_kind_read_back_by_java(kind, tmp_path, java_oracle):
    path = str(tmp_path / "wh" / "db.db" / kind)  # the warehouse layout Java's catalog opens
    table = new_table(path, kind)
    for name, step, expected in STEPS:
        before = table.snapshot_manager.latest_id()
        result = step(table)
        snapshot = result.snapshot if isinstance(result, row_level.RowLevelResult) else result
        assert snapshot is not None and snapshot.id > before, name
        assert contents(path) == sorted(expected), name
        assert contents(java_oracle.read(path)) == sorted(expected), f"Java Paimon 0.9 after {name}"
    first = Table.load(path).snapshots()
    if not kind.startswith("pk"):  # copy-on-write, or by position in deletion vectors (no file rewritten): one
        # OVERWRITE snapshot (Paimon 1.4; 0.9 committed deletion vectors in a COMPACT one)
        assert first[1].commit_kind == "OVERWRITE"


def test_results_say_what_changed_and_no_match_writes_nothing(tmp_path):
    for kind in ("append", "pk_dynamic", "append_dv"):
        table = new_table(str(tmp_path / kind), kind)
        latest = table.snapshot_manager.latest_id()
        assert table.delete("v > 1000") is None
        assert table.update({"v": 0}, "id = 99") is None
        assert table.snapshot_manager.latest_id() == latest
        on = None if kind.startswith("pk") else "id"
        result = table.upsert(UPSERT, on=on)
        assert (result.rows_updated, result.rows_inserted) == (1, 1)
        result = table.merge(MERGE_SOURCE, on=["id"]).when_matched_delete().when_not_matched_insert(
            {"id": "s.id", "p": "s.p", "v": 0}).execute()
        assert (result.rows_updated, result.rows_inserted, result.rows_deleted) == (0, 1, 2)
        assert contents(str(tmp_path / kind)) == sorted([
            (1, "a", 100, "u1"), (4, "b", 40, "x4"), (5, "b", 50, "x5"), (6, "a", 60, "x6"), (7, "a", 0, None),
            (9, "b", 900, "u9")])
        assert table.delete() is not None  # every row
        assert contents(str(tmp_path / kind)) == []


def test_merge_takes_the_spark_paths_clause_objects_and_sql_semantics(tmp_path):
    path = str(tmp_path / "t")
    table = new_table(path, "pk_dynamic")
    src = rows((1, "a", 5, "n1"), (2, "a", 6, "n2"), (8, "b", 7, "n8"), (10, "b", 8, "n10"))
    # the first clause whose condition holds acts
    result = table.merge(src, "t.id = s.id AND s.v > 0", clauses=[
        Update({"s": "s.s"}, "t.v >= 20"), Delete("s.s = 'n1'"), Update({"v": pc.field("s.v") * 100}),
        Insert(None, "s.id < 10")]).execute()
    assert (result.rows_updated, result.rows_deleted, result.rows_inserted) == (1, 1, 1)
    assert contents(path) == sorted([(2, "a", 20, "n2"), (3, "b", 30, "x3"), (4, "b", 40, "x4"), (5, "b", 50, "x5"),
                                     (6, "a", 60, "x6"), (8, "b", 7, "n8")])
    # a target row matched by two source rows: an error, nothing written
    latest = table.snapshot_manager.latest_id()
    with pytest.raises(RowLevelError, match="more than one source row"):
        table.merge(rows((3, "b", 1, "a"), (3, "b", 2, "b")), "t.id = s.id").when_matched_update_all().execute()
    assert table.snapshot_manager.latest_id() == latest


def test_bad_input_raises_before_anything_is_written(tmp_path):
    append = new_table(str(tmp_path / "append"), "append")
    pk = new_table(str(tmp_path / "pk"), "pk_dynamic")
    agg = write_arrow(str(tmp_path / "agg"), INITIAL, primary_key=["id"],
                      options={"merge-engine": "aggregation"}) and Table.load(str(tmp_path / "agg"))
    cases = [
        (lambda: append.delete("nope > 1"), PaimonDsError, "nope"),
        (lambda: append.update({"nope": 1}), RowLevelError, "nope"),
        (lambda: append.update({"v": "'abc'"}), RowLevelError, "abc"),
        (lambda: append.update({"v": "w"}), RowLevelError, "'w' is not a column"),
        (lambda: pk.update({"id": 5}), RowLevelError, "primary-key"),
        (lambda: agg.delete("id = 1"), RowLevelError, "aggregation"),
        (lambda: agg.upsert(UPSERT), RowLevelError, "aggregation"),
        (lambda: pk.upsert(rows((1, "a", 1, None), (1, "a", 2, None), (2, "a", 3, None))), RowLevelError,
         r"more than once, e.g. \[\{'id': 1\}\]"),
        (lambda: append.upsert(UPSERT), RowLevelError, "on="),
        (lambda: pk.upsert(UPSERT, on=["v"]), RowLevelError, "by its key"),
        (lambda: pk.upsert(UPSERT.drop_columns(["s"])), PaimonDsError, "missing column"),
        (lambda: append.merge(MERGE_SOURCE, "t.v > s.v").when_matched_delete().execute(), RowLevelError,
         "equality"),
        (lambda: append.merge(MERGE_SOURCE, "t.id = s.id").when_matched_update({"zz": 1}).execute(),
         RowLevelError, "zz"),
        (lambda: pk.merge(MERGE_SOURCE, "t.id = s.id").when_matched_update({"id": "s.id"}).execute(),
         RowLevelError, "primary-key"),
        (lambda: append.merge(MERGE_SOURCE, "t.id = s.id").execute(), RowLevelError, "WHEN clause"),
        (lambda: append.overwrite(OVERWRITE, filter="p = 'a'"), RowLevelError, "do not satisfy"),
        (lambda: pk.overwrite(OVERWRITE, filter="v > 5"), RowLevelError, "do not satisfy"),
        (lambda: append.overwrite(OVERWRITE, partition={"p": "b"}, filter="p = 'b'"), PaimonDsError, "not both"),
    ]
    before = {t.path: t.snapshot_manager.latest_id() for t in (append, pk, agg)}
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    assert {t.path: t.snapshot_manager.latest_id() for t in (append, pk, agg)} == before
    assert contents(append.path) == contents(INITIAL) == contents(pk.path)


def test_write_arrow_modes_error_and_ignore(tmp_path):
    path = str(tmp_path / "t")
    assert write_arrow(path, INITIAL, mode="error") is not None  # no table: created
    with pytest.raises(TableAlreadyExists, match="mode='error'"):
        write_arrow(path, UPSERT, mode="error")
    assert write_arrow(path, UPSERT, mode="ignore") is None
    assert contents(path) == contents(INITIAL)
    assert write_arrow(str(tmp_path / "u"), UPSERT, mode="ignore").id == 1


def test_clauses_are_core_imports_and_filters_take_qualified_names():
    from paimon_ds.spark import rowlevel
    assert paimon_ds.Update is row_level.Update is rowlevel.Update
    assert paimon_ds.Delete is row_level.Delete and paimon_ds.Insert is row_level.Insert
    assert parse_filter("s.v > t.v AND t.id = 1").sql() == "s.v > t.v AND t.id = 1"


# ------------------------------------------------------------------ a commit between read and commit
def _between_read_and_commit(monkeypatch, name: str, concurrent) -> None:
    """Run ``concurrent`` when the statement has read the table and is about to write and commit."""
    original = getattr(row_level, name)
    pending = [concurrent]

    def hooked(*args, **kwargs):
        if pending:  # once: the concurrent statement goes through here too
            pending.pop()()
        return original(*args, **kwargs)
    monkeypatch.setattr(row_level, name, hooked)


def test_a_concurrent_append_is_kept(tmp_path, monkeypatch):
    for kind in ("append", "pk_dynamic"):
        path = str(tmp_path / kind)
        table = new_table(path, kind)
        other = Table.load(path)
        with monkeypatch.context() as m:
            _between_read_and_commit(m, "write_changes", lambda o=other: o.append(rows((100, "a", 1, "late"))))
            table.delete("id <= 5")
        assert contents(path) == [(6, "a", 60, "x6"), (100, "a", 1, "late")], kind


def test_a_concurrent_rewrite_of_the_same_file_is_a_conflict(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    table = new_table(path, "append")
    other = Table.load(path)
    with monkeypatch.context() as m:
        _between_read_and_commit(m, "write_changes", lambda: other.update({"s": "'other'"}, "id = 6"))
        with pytest.raises(CommitConflict, match="removed by another commit"):
            table.delete("id = 1")
    after = Table.load(path)
    assert after.snapshot_manager.latest_id() == 2  # the other statement's; ours left nothing
    assert contents(path) == [(1, "a", 10, "x1"), (2, "a", 20, None), (3, "b", 30, "x3"), (4, "b", 40, "x4"),
                              (5, "b", 50, "x5"), (6, "a", 60, "other")]
    # deletion vectors: a delete by position of a file another commit rewrote meanwhile
    path = str(tmp_path / "dv")
    table = new_table(path, "append_dv")
    other = Table.load(path)
    with monkeypatch.context() as m:
        _between_read_and_commit(m, "append_deletions", lambda: other.update({"s": "'other'"}, "id = 6"))
        with pytest.raises(CommitConflict):
            table.delete("id = 1")
    assert contents(path)[0] == (1, "a", 10, "x1") and Table.load(path).snapshot_manager.latest_id() == 2


# ------------------------------------------------------------------ the same calls through Spark
def test_same_rows_as_the_spark_path(tmp_path, spark):
    """Each step on the core and, on a copy, through paimon_ds.delete / update / merge on Spark (overwrite by filter
    is a Spark DELETE then an append there): the rows agree after every step. The Java reads of the same steps are
    in test_each_call_on_each_table_kind_read_back_by_java."""
    src = {name: spark.createDataFrame(t.to_pylist(), "id long, p string, v long, s string")
           for name, t in (("upsert", UPSERT), ("merge", MERGE_SOURCE))}
    spark_steps = {
        "delete": lambda p: paimon_ds.delete(spark, p, "v > 50"),
        "update": lambda p: paimon_ds.update(spark, p, {"v": "v + 1", "s": "'x'"}, "id <= 2"),
        "upsert": lambda p: paimon_ds.merge(spark, p, src["upsert"], "t.id = s.id", [Update()], [Insert()]),
        "merge": lambda p: paimon_ds.merge(spark, p, src["merge"], "t.id = s.id", [Delete("s.v = 1"),
                                           Update({"v": "s.v"})], [Insert()], [Update({"s": "'gone'"}, "t.id = 4")]),
        # Spark has no overwrite by filter: its DELETE, then the rows appended (by the core: the same writer)
        "overwrite": lambda p: (paimon_ds.delete(spark, p, "p = 'b'"), Table.load(p).append(OVERWRITE)),
    }
    for kind in [k for k in KINDS if k != "append"]:  # the partitioned append table takes the same path
        core, via_spark = str(tmp_path / f"{kind}_core"), str(tmp_path / f"{kind}_spark")
        table = new_table(core, kind)
        new_table(via_spark, kind)
        for name, step, _ in STEPS:
            step(table)
            spark_steps[name](via_spark)
            assert contents(core) == contents(via_spark), f"{kind} after {name}"


def test_copy_on_write_rewrites_only_the_files_holding_a_changed_row(tmp_path):
    path = str(tmp_path / "t")
    table = new_table(path, "append")
    table.append(rows((100, "c", 1, "late"), (101, "c", 2, None)))

    def files() -> set[str]:
        return {e.file.file_name for e in Table.load(path).new_scan().read_entries()}
    late = files() - {e.file.file_name for e in Table.load(path).new_scan().read_entries(
        Table.load(path).snapshot_manager.snapshot(1))}
    table.update({"s": "'y'"}, "id = 1")
    table.upsert(rows((2, "a", 0, "u2"), (7, "a", 7, "u7")), on="id")   # keys pruned by the files' id stats
    table.merge(rows((3, "b", 0, None)), ["id"]).when_matched_delete().execute()
    table.delete("id = 4")
    assert late <= files()  # the second append's file was never rewritten
    assert contents(path) == sorted([(1, "a", 10, "y"), (2, "a", 0, "u2"), (5, "b", 50, "x5"), (6, "a", 60, "x6"),
                                     (7, "a", 7, "u7"), (100, "c", 1, "late"), (101, "c", 2, None)])
