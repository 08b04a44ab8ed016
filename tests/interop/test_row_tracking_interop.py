"""Row tracking and data evolution (Paimon 1.x) against pypaimon 2.1, the reference for them.

pypaimon writes row-tracking and data-evolution tables (partial-column updates by `_ROW_ID`, deletes as
deletion vectors) -> paimon_ds reads exactly what pypaimon reads, with `_ROW_ID` and `_SEQUENCE_NUMBER`,
at every snapshot, through the core and `spark.read.format("paimon")`, in parquet, ORC and Avro, with
filters and projections. paimon_ds writes row-tracking tables (Spark and core, several commits, a
compaction) -> pypaimon reads the same rows with the same ids, and pypaimon updates columns of a
data-evolution table paimon_ds wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.options.registry import OptionError
from paimon_ds.predicate.predicates import And, Leaf

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("a", pa.string()), ("b", pa.int32()),
                    ("c", pa.float64())])
SYSTEM = ["_ROW_ID", "_SEQUENCE_NUMBER"]
COLUMNS = {"paimon_ds.row-tracking-columns": "true"}

# pypaimon 2.1's own APIs, run in the oracle's process (tests/oracles/paimon_oracle.py: `path`, `table`, `data`)
PP_STEPS = """
import pyarrow as pa
from pypaimon.table.file_store_table import FileStoreTable


def append(data):
    commit_arrow(FileStoreTable.from_path(path), data)


def update(data):  # the columns of `data` but _ROW_ID, of the rows it names
    t = FileStoreTable.from_path(path)
    wb = t.new_batch_write_builder()
    cols = [c for c in data.column_names if c != "_ROW_ID"]
    messages = wb.new_update().with_update_type(cols).update_by_arrow_with_row_id(data)
    commit = wb.new_commit()
    commit.commit(messages)
    commit.close()


def delete(row_ids):  # data-evolution deletes: deletion vectors of the row-id groups' anchor files
    t = FileStoreTable.from_path(path)
    wb = t.new_batch_write_builder()
    commit = wb.new_commit()
    commit.commit(wb.new_update().delete_by_row_id(row_ids))
    commit.close()


def rows(ids, b0=0):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": ["x" if i % 2 == 0 else "y" for i in ids],
                     "a": [f"a{i}" for i in ids], "b": pa.array([b0 + i for i in ids], pa.int32()),
                     "c": [i / 2 for i in ids]})


def by_row_id(**columns):
    return pa.table({"_ROW_ID": pa.array(columns.pop("_ROW_ID"), pa.int64()), **columns})

"""


def pp_run(oracle, path: str, steps: str) -> None:
    """Run pypaimon steps (calls of PP_STEPS' append / update / delete) on the table, one process."""
    oracle.exec(path, PP_STEPS + steps)


def pp_tracked(oracle, path: str, tmp_path: Path, snapshots: list[int | None] | None = None) -> list[pa.Table]:
    """pypaimon's reads (latest, or at each of ``snapshots``) of every column plus _ROW_ID and
    _SEQUENCE_NUMBER (a projection it offers on row-tracking tables), by row id."""
    snapshots = snapshots or [None]
    outs = [tmp_path / f"pp-tracked-{os.urandom(4).hex()}.parquet" for _ in snapshots]
    script = f"""
import pyarrow as pa
import pyarrow.parquet as pq
for sid, out in zip({snapshots!r}, {[str(o) for o in outs]!r}):
    t = table if sid is None else table.copy({{"scan.snapshot-id": str(sid)}})
    rb = t.new_read_builder().with_projection([f.name for f in t.fields] + {SYSTEM!r})
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    pq.write_table(got.cast(pa.schema([f.with_nullable(True) for f in got.schema])), out)
"""
    oracle.exec(path, script)
    return [pq.read_table(o).sort_by("_ROW_ID") for o in outs]


def pp_latest(oracle, path: str, tmp_path: Path) -> pa.Table:
    return pp_tracked(oracle, path, tmp_path)[0]


def core_tracked(path: str, **options: str) -> pa.Table:
    return Table.load(path, {**COLUMNS, **options}).to_arrow().sort_by("_ROW_ID")


def spark_tracked(spark, path: str, **options: str) -> pa.Table:
    df = spark.read.format("paimon").options(**COLUMNS, **options).load(path)
    return df.toArrow().sort_by("_ROW_ID")


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal values, column by column (types as each reader gives them: compared as Python values)."""
    return a.column_names == b.column_names and a.to_pylist() == b.to_pylist()


def rows(ids: list[int], b0: int = 0) -> pa.Table:
    return pa.table({"id": ids, "p": ["x" if i % 2 == 0 else "y" for i in ids], "a": [f"a{i}" for i in ids],
                     "b": pa.array([b0 + i for i in ids], pa.int32()), "c": [i / 2 for i in ids]}, schema=SCHEMA)


# ------------------------------------------------------------------ pypaimon writes, paimon_ds reads

def pypaimon_data_evolution_table(oracle, path: str, fmt: str) -> int:
    """A partitioned data-evolution table: two appends, three partial-column updates (one column twice),
    a delete by row id (deletion vectors), then another append. Returns the number of snapshots."""
    oracle.write(path, rows(list(range(6))), partition="p", options={
        "row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true",
        "file.format": fmt})
    pp_run(oracle, path, """
append(rows(list(range(6, 10))))
update(by_row_id(_ROW_ID=[0, 4, 7], b=pa.array([100, 104, 107], pa.int32())))
update(by_row_id(_ROW_ID=[1, 7], a=["A1", "A7"], c=[10.5, None]))
update(by_row_id(_ROW_ID=[0], b=pa.array([1000], pa.int32())))
delete([2, 8])
append(rows(list(range(10, 13))))
""")
    return 7


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_pypaimon_data_evolution_table_is_read_as_pypaimon_reads_it(pypaimon_oracle, table_path, tmp_path, spark,
                                                                    fmt):
    snapshots = pypaimon_data_evolution_table(pypaimon_oracle, table_path, fmt)
    # every snapshot, with its merged files and deletion vectors as they were
    for sid, expected in zip(range(1, snapshots + 1),
                             pp_tracked(pypaimon_oracle, table_path, tmp_path, list(range(1, snapshots + 1)))):
        assert same(core_tracked(table_path, **{"scan.snapshot-id": str(sid)}), expected), f"snapshot {sid}"
    expected = pp_latest(pypaimon_oracle, table_path, tmp_path)
    # sanity: the updates and the delete are what the oracle shows
    shown = {r["_ROW_ID"]: (r["id"], r["a"], r["b"], r["c"], r["_SEQUENCE_NUMBER"]) for r in expected.to_pylist()}
    assert shown[0] == (0, "a0", 1000, 0.0, 5) and shown[1] == (2, "A1", 2, 10.5, 5)
    assert shown[4] == (3, "a3", 104, 1.5, 3) and shown[7] == (8, "A7", 107, None, 4)
    assert 2 not in shown and 8 not in shown and sorted(shown) == [0, 1, 3, 4, 5, 6, 7, 9, 10, 11, 12]

    assert same(core_tracked(table_path), expected)
    assert same(spark_tracked(spark, table_path), expected)
    assert same(spark_tracked(spark, table_path, **{"scan.snapshot-id": "4"}),
                pp_tracked(pypaimon_oracle, table_path, tmp_path, [4])[0])
    plain = pypaimon_oracle.read(table_path).sort_by("id")
    assert same(Table.load(table_path).to_arrow().sort_by("id"), plain)
    assert same(spark.read.format("paimon").load(table_path).toArrow().sort_by("id"), plain)

    # filters on merged columns and on row ids: core predicates and Spark's pushed filters
    def where(mask) -> pa.Table:
        return expected.filter(mask)
    pred = And((Leaf(">=", "b", (100,)), Leaf("in", "_ROW_ID", (0, 4, 5, 7))))
    assert same(Table.load(table_path, COLUMNS).to_arrow(pred).sort_by("_ROW_ID"),
                where(pc.and_(pc.greater_equal(expected["b"], 100),
                              pc.is_in(expected["_ROW_ID"], pa.array([0, 4, 5, 7], pa.int64())))))
    df = spark.read.format("paimon").options(**COLUMNS).load(table_path)
    got = df.where("a LIKE 'A%' OR _SEQUENCE_NUMBER = 2").toArrow().sort_by("_ROW_ID")
    assert same(got, where(pc.or_(pc.starts_with(expected["a"], "A"), pc.equal(expected["_SEQUENCE_NUMBER"], 2))))
    assert df.where("_ROW_ID = 7").select("id", "a").collect() == [(8, "A7")]
    # a projection: only some columns, system columns among them, in the order asked
    projected = spark.read.format("paimon").schema("_ROW_ID bigint, b int").load(table_path).toArrow()
    assert projected.sort_by("_ROW_ID").to_pylist() == expected.select(["_ROW_ID", "b"]).to_pylist()
    assert spark.read.format("paimon").load(table_path).where("b >= 100").count() == 3
    # only `b`: some row-id groups' newest file lacks it (read for its row count only), an older one gives it
    only_b = spark.read.format("paimon").schema("b int").load(table_path).collect()
    assert sorted(r.b for r in only_b) == sorted(expected["b"].to_pylist())


def test_pypaimon_row_tracking_table_keeps_ids_through_our_compaction(pypaimon_oracle, table_path, tmp_path, spark):
    """Row tracking without data evolution: pypaimon's ids are ours; our compaction (of interleaved
    partitions: the compacted files keep ids physically) changes neither rows nor ids for Spark and the core,
    and pypaimon still reads the same rows."""
    pypaimon_oracle.write(table_path, rows(list(range(6))), partition="p", options={"row-tracking.enabled": "true"})
    pp_run(pypaimon_oracle, table_path, "append(rows(list(range(6, 12))))\nappend(rows(list(range(12, 18))))")
    expected = pp_latest(pypaimon_oracle, table_path, tmp_path)
    assert expected["_ROW_ID"].to_pylist() == list(range(18))
    assert same(core_tracked(table_path), expected) and same(spark_tracked(spark, table_path), expected)

    snap = paimon_ds.compact(spark, table_path, full=True)
    assert snap is not None and snap.commit_kind == "COMPACT" and snap.next_row_id == 18
    assert same(core_tracked(table_path), expected) and same(spark_tracked(spark, table_path), expected)
    # pypaimon 2.1 reads the same rows and sequence numbers; it takes ids from _FIRST_ROW_ID only, which
    # Paimon leaves null on compacted files (and we, where a file's ids have gaps): it shows null ids
    cols = ["id", "p", "a", "b", "c", "_SEQUENCE_NUMBER"]
    theirs = pp_latest(pypaimon_oracle, table_path, tmp_path)
    assert same(theirs.select(cols).sort_by("id"), expected.select(cols).sort_by("id"))
    assert theirs["_ROW_ID"].null_count == 18
    assert same(pypaimon_oracle.read(table_path).sort_by("id"), expected.select(SCHEMA.names).sort_by("id"))


# ------------------------------------------------------------------ paimon_ds writes, pypaimon reads

@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_our_row_tracking_table_is_read_by_pypaimon_with_our_ids(pypaimon_oracle, table_path, tmp_path, spark, fmt):
    """Spark and core writes (several files per commit), a compaction, then more appends: pypaimon reads the
    same rows with the same ids and sequence numbers, which are 0..n-1 and the snapshot ids."""
    opts = {"row-tracking.enabled": "true", "file.format": fmt}
    for i in range(3):
        df = spark.createDataFrame(rows(list(range(10 * i, 10 * i + 8))).to_pandas()).repartition(3)
        df.write.format("paimon").options(**opts).mode("append").save(table_path)
    before = core_tracked(table_path)
    assert before["_ROW_ID"].to_pylist() == list(range(24))
    assert sorted(set(before["_SEQUENCE_NUMBER"].to_pylist())) == [1, 2, 3]
    assert len(Table.load(table_path).new_scan().plan()[0].files) > 3  # several files per commit
    assert same(pp_latest(pypaimon_oracle, table_path, tmp_path), before)

    snap = paimon_ds.compact(spark, table_path, full=True)
    assert snap is not None and snap.commit_kind == "COMPACT"
    (compacted,) = [f for s in Table.load(table_path).new_scan().plan() for f in s.files]
    assert compacted.first_row_id == 0 and compacted.write_cols[-2:] == ("_ROW_ID", "_SEQUENCE_NUMBER")
    assert same(core_tracked(table_path), before)
    assert same(pp_latest(pypaimon_oracle, table_path, tmp_path), before)

    more = rows([100, 101, 102])  # the core's write continues at nextRowId
    t = Table.for_write(table_path, more.schema, {})
    w = t.new_write()
    w.write_arrow(more)
    t.new_commit().commit(w.prepare_commit())
    spark.createDataFrame(rows([200, 201]).to_pandas()).write.format("paimon").mode("append").save(table_path)
    after = core_tracked(table_path)
    assert after["_ROW_ID"].to_pylist() == list(range(29))
    assert after.slice(0, 24).equals(before)
    assert after.slice(24)["_SEQUENCE_NUMBER"].to_pylist() == [5, 5, 5, 6, 6]
    assert same(pp_latest(pypaimon_oracle, table_path, tmp_path), after)
    assert same(spark_tracked(spark, table_path), after)
    # pypaimon continues the table: its rows take the ids after ours
    pp_run(pypaimon_oracle, table_path, "append(rows([300, 301]))")
    final = pp_latest(pypaimon_oracle, table_path, tmp_path)
    assert final["_ROW_ID"].to_pylist() == list(range(31)) and same(core_tracked(table_path), final)


def test_pypaimon_updates_columns_of_our_data_evolution_table(pypaimon_oracle, table_path, tmp_path, spark):
    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "partition": "p"}
    spark.createDataFrame(rows(list(range(8))).to_pandas()).write.format("paimon").options(**opts) \
        .mode("append").save(table_path)
    pp_run(pypaimon_oracle, table_path, "update(by_row_id(_ROW_ID=[1, 2, 6], b=pa.array([-1, -2, -6], pa.int32())))")
    spark.createDataFrame(rows([8, 9]).to_pandas()).write.format("paimon").mode("append").save(table_path)
    pp_run(pypaimon_oracle, table_path, 'update(by_row_id(_ROW_ID=[9, 2], a=["nine", "two"]))')
    expected = pp_latest(pypaimon_oracle, table_path, tmp_path)
    assert expected.num_rows == 10 and sorted(expected["b"].to_pylist()).count(-2) == 1
    assert same(core_tracked(table_path), expected) and same(spark_tracked(spark, table_path), expected)
    assert same(spark.read.format("paimon").load(table_path).toArrow().sort_by("id"),
                pypaimon_oracle.read(table_path).sort_by("id"))
    # our files' stats say b >= 0, but pypaimon's newer b (no stats) holds -2: the scan prunes whole row-id
    # groups, by the stats of each column's newest file, so the row is found
    minus_two = expected.filter(pc.equal(expected["b"], -2))
    assert minus_two.num_rows == 1
    assert same(Table.load(table_path, COLUMNS).to_arrow(Leaf("=", "b", (-2,))).sort_by("_ROW_ID"), minus_two)
    assert same(spark_tracked(spark, table_path).filter(pc.equal(pc.field("b"), -2)), minus_two)
    assert spark.read.format("paimon").load(table_path).where("b = -2").count() == 1
    # where the newest file holding `a` is ours, its stats prune the group
    all_files = [f for s in Table.load(table_path).new_scan().plan() for f in s.files]
    planned = [f for s in Table.load(table_path).new_scan(Leaf("=", "a", ("zzz",))).plan() for f in s.files]
    assert 0 < len(planned) < len(all_files)
    assert Table.load(table_path).to_arrow(Leaf("=", "a", ("zzz",))).num_rows == 0


def test_row_level_changes_and_tracking_columns_are_refused(spark, table_path):
    opts = {"row-tracking.enabled": "true"}
    spark.createDataFrame(rows([1, 2, 3]).to_pandas()).write.format("paimon").options(**opts) \
        .mode("append").save(table_path)
    before = sorted(str(p) for p in Path(table_path).rglob("*"))
    for run in (lambda: paimon_ds.delete(spark, table_path, "id = 1"),
                lambda: paimon_ds.update(spark, table_path, {"b": "b + 1"}, "id = 2")):
        with pytest.raises(OptionError, match="row-tracking table"):
            run()
    with pytest.raises(Exception, match="row-tracking.enabled is not true"):
        other = str(Path(table_path).parent / "plain")
        spark.createDataFrame(rows([1]).to_pandas()).write.format("paimon").mode("append").save(other)
        spark.read.format("paimon").options(**COLUMNS).load(other).collect()
    assert sorted(str(p) for p in Path(table_path).rglob("*")) == before


def test_streaming_reads_give_row_ids_and_refuse_partial_column_commits(pypaimon_oracle, table_path, tmp_path,
                                                                         spark):
    opts = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    for ids in ([1, 2, 3], [4, 5]):
        spark.createDataFrame(rows(ids).to_pandas()).write.format("paimon").options(**opts) \
            .mode("append").save(table_path)
    got: list = []

    def run() -> None:
        query = (spark.readStream.format("paimon").options(**COLUMNS, **{"scan.mode": "from-snapshot",
                                                                       "scan.snapshot-id": "1"}).load(table_path)
                 .writeStream.foreachBatch(lambda df, _: got.extend(df.select("id", *SYSTEM).collect()))
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()

    run()
    assert sorted(tuple(r) for r in got) == [(1, 0, 1), (2, 1, 1), (3, 2, 1), (4, 3, 2), (5, 4, 2)]
    pp_run(pypaimon_oracle, table_path, "update(by_row_id(_ROW_ID=[0], a=['new']))")
    with pytest.raises(Exception, match="partial-column files"):
        run()


def test_streaming_writes_compact_and_keep_ids(pypaimon_oracle, table_path, tmp_path, spark):
    """writeStream into a row-tracking table: each micro-batch takes new ids, the compaction after a batch
    (compaction.min.file-num) keeps them, and pypaimon reads the same ids."""
    source = tmp_path / "source"
    source.mkdir()
    for i in range(4):
        pq.write_table(rows(list(range(10 * i, 10 * i + 3))), source / f"part-{i}.parquet")
    query = (spark.readStream.schema(spark.createDataFrame(rows([0]).to_pandas()).schema)
             .option("maxFilesPerTrigger", 1).parquet(str(source))
             .writeStream.format("paimon").options(**{"row-tracking.enabled": "true", "compaction.min.file-num": "2"})
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True)
             .start(table_path))
    query.awaitTermination()
    sm = Table.load(table_path).snapshot_manager
    kinds = [sm.snapshot(i).commit_kind for i in sm.list_ids()]
    assert kinds.count("APPEND") == 4 and "COMPACT" in kinds
    got = core_tracked(table_path)
    assert got["_ROW_ID"].to_pylist() == list(range(12))
    # each batch's rows took consecutive ids, in batch order, with the batch's snapshot id as sequence number
    appends = [i for i in sm.list_ids() if sm.snapshot(i).commit_kind == "APPEND"]
    assert got["_SEQUENCE_NUMBER"].to_pylist() == [s for s in appends for _ in range(3)]
    assert sorted(got["id"].to_pylist()[i * 3] // 10 for i in range(4)) == [0, 1, 2, 3]
    assert len([f for s in Table.load(table_path).new_scan().plan() for f in s.files]) < 4
    assert same(pp_latest(pypaimon_oracle, table_path, tmp_path), got)
