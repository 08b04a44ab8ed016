"""Issue 36's DDL and procedures, issue 37's procedure results: TRUNCATE TABLE, ALTER TABLE ... DROP PARTITION,
TRUNCATE TABLE ... PARTITION and the procedures expire_partitions, create_tag_from_timestamp,
rollback_to_timestamp, rename_tag, expire_tags, purge_files, mark_partition_done, rollback, through
paimon_ds.sql; each result's rows and column names as Paimon's Spark procedures (RollbackProcedure,
RollbackToTimestampProcedure: Paimon 1.2+; the others as named in each test); Java Paimon 0.9 reads the table
after each statement."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog, Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("v", pa.int64())])


def rows(df) -> tuple[list[str], list[tuple]]:
    return df.columns, [tuple(r) for r in df.collect()]


def java_rows(java_oracle, path: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in java_oracle.read(path).to_pylist())


@pytest.fixture
def shop(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("p")
    catalog.create_table("p.t", SCHEMA, partition_keys=["dt"])
    path = catalog.table_path("p.t")
    for i, dt in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        Table.load(path).append(pa.Table.from_pylist([{"id": i, "dt": dt, "v": 10 * i}], schema=SCHEMA))
    paimon_ds.attach(spark, warehouse)
    return path


def spark_refuses(spark, statement: str) -> str:
    """What plain spark.sql does with a statement on an attached table (it never reaches the Paimon table)."""
    try:
        spark.sql(statement).collect()
    except Exception as e:  # noqa: BLE001 - Spark's analysis errors differ between versions
        return type(e).__name__
    return "ran"


def test_drop_partition_truncate(spark, shop, java_oracle):
    path = shop
    # plain spark.sql: Spark does not route these to a Python data source; the table is unchanged
    outcomes = [spark_refuses(spark, q) for q in ("TRUNCATE TABLE p.t", "ALTER TABLE p.t DROP PARTITION (dt = 'x')")]
    print("spark.sql outcomes:", outcomes)
    assert Table.load(path).latest_snapshot().id == 3
    assert paimon_ds.sql(spark, "ALTER TABLE p.t DROP PARTITION (dt = '2024-01-01')") is None
    t = Table.load(path)
    assert t.latest_snapshot().commit_kind == "OVERWRITE" and t.latest_snapshot().id == 4
    assert java_rows(java_oracle, path) == [(1, "2024-01-02", 10), (2, "2024-01-03", 20)]
    with pytest.raises(paimon_ds.spark.sql.SqlError, match="do not exist"):
        paimon_ds.sql(spark, "ALTER TABLE p.t DROP PARTITION (dt = '2024-01-01')")
    paimon_ds.sql(spark, "ALTER TABLE p.t DROP IF EXISTS PARTITION (dt = '2024-01-01')")
    paimon_ds.sql(spark, "TRUNCATE TABLE p.t PARTITION (dt = '2024-01-02')")
    assert java_rows(java_oracle, path) == [(2, "2024-01-03", 20)]
    assert sorted(tuple(r) for r in paimon_ds.sql(spark, "SELECT * FROM p.t").collect()) == [(2, "2024-01-03", 20)]
    paimon_ds.sql(spark, "TRUNCATE TABLE p.t")
    t = Table.load(path)
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert t.to_arrow().num_rows == 0 and java_rows(java_oracle, path) == []
    # the table takes writes again, Java reads them
    t.append(pa.Table.from_pylist([{"id": 7, "dt": "x", "v": 1}], schema=SCHEMA))
    assert java_rows(java_oracle, path) == [(7, "x", 1)]


def test_rollback_results(spark, shop, java_oracle):
    """Paimon 1.2+'s RollbackProcedure / RollbackToTimestampProcedure: (previous_snapshot_id, current_snapshot_id);
    rollback takes version, or snapshot, or tag."""
    path = shop
    sm = Table.load(path).snapshot_manager
    assert rows(paimon_ds.sql(spark, "CALL sys.create_tag(table => 'p.t', tag => 'one', snapshot => 1)")) == (
        ["result"], [(True,)])
    out = paimon_ds.sql(spark, "CALL sys.rollback(table => 'p.t', version => '2')")
    assert rows(out) == (["previous_snapshot_id", "current_snapshot_id"], [(3, 2)])
    assert out.schema.simpleString() == "struct<previous_snapshot_id:bigint,current_snapshot_id:bigint>"
    assert java_rows(java_oracle, path) == [(0, "2024-01-01", 0), (1, "2024-01-02", 10)]
    assert rows(paimon_ds.sql(spark, "CALL sys.rollback(table => 'p.t', tag => 'one')"))[1] == [(2, 1)]
    Table.load(path).append(pa.Table.from_pylist([{"id": 5, "dt": "z", "v": 5}], schema=SCHEMA))
    Table.load(path).append(pa.Table.from_pylist([{"id": 6, "dt": "z", "v": 6}], schema=SCHEMA))
    assert rows(paimon_ds.sql(spark, "CALL sys.rollback(table => 'p.t', snapshot => 2)"))[1] == [(3, 2)]
    Table.load(path).append(pa.Table.from_pylist([{"id": 8, "dt": "z", "v": 8}], schema=SCHEMA))
    at = sm.snapshot(2).time_millis
    out = paimon_ds.sql(spark, f"CALL sys.rollback_to_timestamp(table => 'p.t', timestamp => {at})")
    assert rows(out) == (["previous_snapshot_id", "current_snapshot_id"], [(3, 2)])
    assert java_rows(java_oracle, path) == [(0, "2024-01-01", 0), (5, "z", 5)]
    with pytest.raises(paimon_ds.spark.sql.SqlError, match="exactly one"):
        paimon_ds.sql(spark, "CALL sys.rollback(table => 'p.t', snapshot => 1, tag => 'one')")


def test_tag_procedures(spark, shop, java_oracle):
    """CreateTagFromTimestampProcedure (0.9): (tagName, snapshot, commit_time, watermark); RenameTagProcedure,
    ExpireTagsProcedure (1.0): `result` true, `expired_tags` (or 'No expired tags.')."""
    path = shop
    sm = Table.load(path).snapshot_manager
    s2 = sm.snapshot(2)
    out = paimon_ds.sql(spark, f"CALL sys.create_tag_from_timestamp(table => 'p.t', tag => 'a', "
                               f"timestamp => {s2.time_millis})")
    assert rows(out) == (["tagName", "snapshot", "commit_time", "watermark"],
                         [("a", 2, s2.time_millis, "null")])
    assert out.schema.simpleString() == "struct<tagName:string,snapshot:bigint,commit_time:bigint,watermark:string>"
    assert rows(paimon_ds.sql(spark, "CALL sys.rename_tag(table => 'p.t', tag => 'a', target_tag => 'b')")) == (
        ["result"], [(True,)])
    assert sm.tag_names() == ["b"]
    out = java_oracle.exec(path, "import json\n"
                                 "print(json.dumps([str(x) for x in table._j_table.tagManager().allTagNames()]))")
    assert json.loads(out.strip().splitlines()[-1]) == ["b"]
    assert rows(paimon_ds.sql(spark, "CALL sys.expire_tags(table => 'p.t')")) == (
        ["expired_tags"], [("No expired tags.",)])
    paimon_ds.sql(spark, "CALL sys.create_tag_from_timestamp('p.t', 'c', 0, '1 d')")  # snapshot 1, kept a day
    assert rows(paimon_ds.sql(spark, "CALL sys.expire_tags(table => 'p.t', older_than => '2999-01-01 00:00:00')")
                ) == (["expired_tags"], [("b",), ("c",)])
    assert sm.tag_names() == []


def test_partition_procedures(spark, shop, java_oracle):
    """ExpirePartitionsProcedure (0.9): `expired_partitions` rows `dt=...` (or 'No expired partitions.');
    MarkPartitionDoneProcedure (0.9): `result` true, a `_SUCCESS` file as SuccessFileMarkDoneAction writes;
    PurgeFilesProcedure (1.4): `result` 'Success', the table truncated to one empty snapshot."""
    path = shop
    out = paimon_ds.sql(spark, "CALL sys.expire_partitions(table => 'p.t', expiration_time => '1 d', "
                               "timestamp_formatter => 'yyyy-MM-dd')")
    assert rows(out) == (["expired_partitions"], [("dt=2024-01-01",), ("dt=2024-01-02",), ("dt=2024-01-03",)])
    assert Table.load(path).latest_snapshot().commit_kind == "OVERWRITE"
    assert java_rows(java_oracle, path) == []
    assert rows(paimon_ds.sql(spark, "CALL sys.expire_partitions('p.t', '1 d')")) == (
        ["expired_partitions"], [("No expired partitions.",)])
    Table.load(path).append(pa.Table.from_pylist([{"id": 9, "dt": "2024-02-01", "v": 9}], schema=SCHEMA))
    out = paimon_ds.sql(spark, "CALL sys.mark_partition_done(table => 'p.t', partitions => 'dt=2024-02-01')")
    assert rows(out) == (["result"], [(True,)])
    success = json.loads(open(os.path.join(path, "dt=2024-02-01", "_SUCCESS")).read())
    assert sorted(success) == ["creationTime", "modificationTime"]
    assert java_rows(java_oracle, path) == [(9, "2024-02-01", 9)]
    assert rows(paimon_ds.sql(spark, "CALL sys.purge_files(table => 'p.t')")) == (["result"], [("Success",)])
    purged = Table.load(path)  # Paimon 1.4's purgeFiles: truncated, one snapshot left, no data file
    assert [purged.snapshot_manager.latest().commit_kind] == ["OVERWRITE"]
    assert len(purged.snapshot_manager.list_ids()) == 1
    assert not [f for _, _, files in os.walk(path) for f in files if f.startswith("data-")]
    assert java_rows(java_oracle, path) == []


def test_maintenance_procedure_results(spark, shop, java_oracle):
    """CompactManifestProcedure (1.0): `result` true, one COMPACT snapshot whose manifests Java reads;
    ExpireSnapshotsProcedure (0.9 to 1.4): `deleted_snapshots_count` int; RemoveOrphanFilesProcedure (1.0+):
    `(deletedFileCount, deletedFileTotalLenInBytes)`; CreateTagProcedure / DeleteTagProcedure: `result` true."""
    path = shop
    out = paimon_ds.sql(spark, "CALL sys.compact_manifest(table => 'p.t')")
    assert rows(out) == (["result"], [(True,)])
    t = Table.load(path)
    latest = t.latest_snapshot()
    assert (latest.id, latest.commit_kind, latest.delta_record_count) == (4, "COMPACT", 0)
    assert java_rows(java_oracle, path) == [(0, "2024-01-01", 0), (1, "2024-01-02", 10), (2, "2024-01-03", 20)]
    assert rows(paimon_ds.sql(spark, "CALL sys.compact_manifest('p.t')")) == (["result"], [(True,)])
    assert Table.load(path).latest_snapshot().id == 4  # one manifest already: nothing to commit
    assert rows(paimon_ds.sql(spark, "CALL sys.create_tag('p.t', 'k', 1)")) == (["result"], [(True,)])
    assert rows(paimon_ds.sql(spark, "CALL sys.delete_tag('p.t', 'k')")) == (["result"], [(True,)])
    out = paimon_ds.sql(spark, "CALL sys.expire_snapshots(table => 'p.t', retain_max => 2, retain_min => 1)")
    assert rows(out) == (["deleted_snapshots_count"], [(2,)])
    assert out.schema.simpleString() == "struct<deleted_snapshots_count:int>"
    orphan = os.path.join(path, "dt=2024-01-01", "orphan.parquet")
    open(orphan, "wb").close()
    os.utime(orphan, (0, 0))
    out = paimon_ds.sql(spark, "CALL sys.remove_orphan_files(table => 'p.t', older_than => '2999-01-01 00:00:00')")
    assert out.columns == ["deletedFileCount", "deletedFileTotalLenInBytes"]
    assert [tuple(r) for r in out.collect()] == [(1, 0)]  # an empty file
    assert java_rows(java_oracle, path) == [(0, "2024-01-01", 0), (1, "2024-01-02", 10), (2, "2024-01-03", 20)]
