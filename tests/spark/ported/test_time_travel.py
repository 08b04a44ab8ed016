"""Apache Paimon 1.4.1's `SparkTimeTravelITCase` and `SparkTimeTravelWithDataFrameITCase` (paimon-spark-ut/src/test/
java/org/apache/paimon/spark/), ported: their statements, read options and expected rows are the specification.

We follow 1.4.1's version. Release 0.9.0 holds the same cases (paimon-spark-common) except three: there a version
or timestamp before any snapshot read nothing (`VERSION AS OF 2` on an empty table, `TIMESTAMP AS OF <before the
first snapshot>`: empty; `scan.timestamp-millis = 0`: the earliest snapshot's rows) and an unknown tag failed with
"Cannot find a time travel version for unknown". 1.4.1 refuses the first ones ("There is currently no snapshot",
"... earlier than or equal to timestamp") and names the missing tag; paimon_ds refuses them as 1.2+ does (see
SnapshotManager.at_or_before), so 1.4.1's cases are the specification.

Paimon's cases write through Java's TableWrite (`writeTable`: one writer, one commit, one file); here through
paimon_ds's own Table.append (an INSERT would write a file per Spark task, and `$files` counts files), the DataFrame
suite's first commit, which holds a -D row beside its inserts, with a row-kind column. Paimon's `createTag` and
`expireSnapshots` are the procedures `sys.create_tag` / `sys.expire_snapshots`. Time travel in SQL goes through
paimon_ds.sql: plain spark.sql refuses `VERSION AS OF` on a Python data source's relation
(`[UNSUPPORTED_FEATURE.TIME_TRAVEL] ... Time travel on the relation`, checked in test_travel_to_version).
Rows are compared as multisets (Java's `collectAsList` order is the file order, which a test must not rely on)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from paimon_ds import Catalog, Table
from paimon_ds.spark.catalog import WAREHOUSE_CONF

from ._sql import rows, sql

HELLO = [(1, "Hello"), (2, "Paimon")]
TEST_CASE = [(3, "Test"), (4, "Case")]


def table_path(spark, table: str) -> str:
    """The path of ``table`` in the current database of the attached warehouse (Paimon's tablePath / getTable)."""
    return Catalog(spark.conf.get(WAREHOUSE_CONF)).table_path(f"{spark.catalog.currentDatabase()}.{table}")


def write(spark, table: str, data: list[tuple]) -> None:
    """Paimon's writeTable: one commit of ``data`` by one writer (an INSERT writes a file per Spark task, and
    `$files` counts files)."""
    target = Table.load(table_path(spark, table))
    names = target.arrow_schema().names
    target.append(pa.Table.from_pylist([dict(zip(names, row)) for row in data], schema=target.arrow_schema()))


def same(actual: list[tuple], expected: list[tuple]) -> None:
    assert sorted(actual, key=repr) == sorted(expected, key=repr)


def two_snapshots(spark, anchor=None):
    """CREATE TABLE t (k INT, v STRING), snapshot 1 (1 Hello, 2 Paimon), ``anchor()`` between, snapshot 2."""
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    write(spark, "t", HELLO)
    taken = anchor() if anchor else None
    write(spark, "t", TEST_CASE)
    return taken


def local_now() -> str:
    """Java's LocalDateTime.now().toString() in the session's time zone (UTC in the tests' session; Paimon's test
    relies on the JVM's zone being the session's): ISO text with a 'T', which Spark casts to a timestamp."""
    time.sleep(0.005)
    text = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None).isoformat()
    time.sleep(0.005)
    return text


# ------------------------------------------------------------------------------------------ SparkTimeTravelITCase
def test_travel_to_version(spark, wh):
    two_snapshots(spark)
    same(rows(spark, "SELECT * FROM t"), HELLO + TEST_CASE)
    same(rows(spark, "SELECT * FROM t VERSION AS OF 1"), HELLO)
    # plain spark.sql cannot route it: the attached relation is a Python source's, which Spark does not travel
    with pytest.raises(AnalysisException, match=r"UNSUPPORTED_FEATURE.TIME_TRAVEL"):
        spark.sql("SELECT * FROM t VERSION AS OF 1").collect()


def test_travel_to_timestamp_string(spark, wh):
    anchor = two_snapshots(spark, local_now)
    same(rows(spark, "SELECT * FROM t"), HELLO + TEST_CASE)
    same(rows(spark, f"SELECT * FROM t TIMESTAMP AS OF '{anchor}'"), HELLO)


def test_travel_to_timestamp_number(spark, wh):
    def anchor_seconds() -> int:
        # Paimon sleeps 1 s "to avoid precision problem": here only until the next whole second
        time.sleep(1 - time.time() % 1 + 0.01)
        return int(time.time())

    anchor = two_snapshots(spark, anchor_seconds)
    same(rows(spark, "SELECT * FROM t"), HELLO + TEST_CASE)
    same(rows(spark, f"SELECT * FROM t TIMESTAMP AS OF {anchor}"), HELLO)


def test_travel_to_old_schema(spark, wh):
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    write(spark, "t", HELLO)
    sql(spark, "ALTER TABLE t ADD COLUMN dt STRING")
    write(spark, "t", [(3, "Test", "0401"), (4, "Case", "0402")])
    same(rows(spark, "SELECT * FROM t"), [(1, "Hello", None), (2, "Paimon", None), (3, "Test", "0401"),
                                          (4, "Case", "0402")])
    # the version's own schema: column dt is not there
    df = sql(spark, "SELECT * FROM t VERSION AS OF 1")
    assert df.columns == ["k", "v"]
    same(rows(spark, "SELECT * FROM t VERSION AS OF 1"), HELLO)


def test_travel_to_non_existed_version(spark, wh):
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    with pytest.raises(Exception, match="There is currently no snapshot"):
        rows(spark, "SELECT * FROM t VERSION AS OF 2")


def test_travel_to_timestamp_before_the_earliest_snapshot(spark, wh):
    anchor = int(time.time())
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    with pytest.raises(Exception, match="There is currently no snapshot earlier than or equal to timestamp"):
        rows(spark, f"SELECT * FROM t TIMESTAMP AS OF {anchor}")


def test_system_table_time_travel(spark, wh):
    anchor = two_snapshots(spark, local_now)
    assert len(rows(spark, "SELECT * FROM `t$files`")) == 2
    assert len(rows(spark, "SELECT * FROM `t$files` VERSION AS OF 1")) == 1
    assert len(rows(spark, f"SELECT * FROM `t$files` TIMESTAMP AS OF '{anchor}'")) == 1


def three_snapshots(spark) -> None:
    two_snapshots(spark)
    write(spark, "t", [(5, "Time"), (6, "Travel")])


def test_travel_to_tag(spark, wh):
    three_snapshots(spark)
    sql(spark, "CALL sys.create_tag(table => 't', tag => 'tag2', snapshot => 2)")
    same(rows(spark, "SELECT * FROM t VERSION AS OF 'tag2'"), HELLO + TEST_CASE)


def test_travel_to_non_existing_tag(spark, wh):
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    with pytest.raises(Exception, match="Tag 'unknown' doesn't exist"):
        rows(spark, "SELECT * FROM t VERSION AS OF 'unknown'")


def test_travel_to_tag_with_snapshot_expiration(spark, wh):
    three_snapshots(spark)
    sql(spark, "CALL sys.create_tag(table => 't', tag => 'tag2', snapshot => 2)")
    # Paimon: table.copy(snapshot.num-retained.max = min = 1).newCommit("").expireSnapshots()
    sql(spark, "CALL sys.expire_snapshots(table => 't', retain_max => 1, retain_min => 1)")
    assert len(rows(spark, "SELECT * FROM `t$snapshots`")) == 1
    same(rows(spark, "SELECT * FROM t VERSION AS OF 'tag2'"), HELLO + TEST_CASE)


def test_travel_to_tag_with_digital_name(spark, wh):
    two_snapshots(spark)
    sql(spark, "CALL sys.create_tag(table => 't', tag => '1', snapshot => 2)")
    # a tag named '1' wins over snapshot 1
    same(rows(spark, "SELECT * FROM t VERSION AS OF '1'"), HELLO + TEST_CASE)


def test_travel_with_watermark(spark, wh):
    """Paimon's writeTableWithWatermark commits with a watermark (1, none, 10); a commit without one keeps the
    latest snapshot's (FileStoreCommitImpl), so snapshot 2 holds 1. paimon_ds's batch commits take no watermark:
    the snapshot files are given theirs as a Flink writer records them, snapshot 2 by paimon_ds's commit."""
    sql(spark, "CREATE TABLE t (k INT, v STRING)")
    path = table_path(spark, "t")

    def set_watermark(snapshot_id: int, watermark: int) -> None:
        file = Path(path) / "snapshot" / f"snapshot-{snapshot_id}"
        obj = json.loads(file.read_text())
        obj["watermark"] = watermark
        file.write_text(json.dumps(obj))

    write(spark, "t", HELLO)
    set_watermark(1, 1)
    write(spark, "t", [(1, "Null"), (2, "Watermark")])
    assert Table.load(path).snapshot_manager.snapshot(2).watermark == 1  # carried over, as Paimon carries it
    write(spark, "t", [(3, "Time"), (4, "Travel")])
    set_watermark(3, 10)
    every = HELLO + [(1, "Null"), (2, "Watermark"), (3, "Time"), (4, "Travel")]
    same(rows(spark, "SELECT * FROM t version as of 'watermark-1'"), HELLO)
    with pytest.raises(Exception, match=r"There is currently no snapshot later than or equal to watermark\[11\]"):
        rows(spark, "SELECT * FROM t version as of 'watermark-11'")
    same(rows(spark, "SELECT * FROM t version as of 'watermark-9'"), every)
    same(rows(spark, "SELECT * FROM t version as of 'watermark-10'"), every)


# ------------------------------------------------------------------------------ SparkTimeTravelWithDataFrameITCase
T1 = [(1, 2, "1"), (5, 6, "3")]
T1_LATEST = T1 + [(7, 2, "7"), (8, 4, "8")]


@pytest.fixture
def t1(spark, wh) -> str:
    """SparkReadTestBase.beforeEach: t1 (a INT NOT NULL, b BIGINT, c STRING), primary key a, one bucket; snapshot 1
    writes (1,2,'1'), (3,4,'2'), (5,6,'3') and deletes (3,4,'2') in the same commit. Returns tablePath1."""
    sql(spark, "CREATE TABLE t1 (a INT NOT NULL, b BIGINT, c STRING) "
               "TBLPROPERTIES ('bucket' = '1', 'primary-key' = 'a', 'file.format' = 'avro')")
    path = table_path(spark, "t1")
    table = Table.load(path)
    data = pa.table({"a": pa.array([1, 3, 5, 3], pa.int32()), "b": pa.array([2, 4, 6, 4], pa.int64()),
                     "c": ["1", "2", "3", "2"], "kind": ["+I", "+I", "+I", "-D"]})
    writer = table.new_write(row_kind_column="kind")
    writer.write_arrow(data)
    table.new_commit().commit_or_abort(writer.prepare_commit())
    return path


def load(spark, path: str | None = None, **options) -> list[tuple]:
    reader = spark.read.format("paimon")
    for key, value in options.items():
        reader = reader.option(key, value)
    return rows_of(reader.load(path) if path else reader.load())


def rows_of(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def snapshot_two(spark) -> None:
    write(spark, "t1", [(7, 2, "7"), (8, 4, "8")])


def test_df_travel_to_version(spark, t1):
    snapshot_two(spark)
    same(load(spark, **{"path": t1, "scan.snapshot-id": 1}), T1)
    same(load(spark, path=t1), T1_LATEST)


def test_df_travel_to_timestamp(spark, t1):
    time.sleep(0.005)
    anchor = int(time.time() * 1000)
    time.sleep(0.005)
    snapshot_two(spark)
    same(load(spark, t1, **{"scan.timestamp-millis": anchor}), T1)
    same(load(spark, t1), T1_LATEST)


def test_df_travel_to_old_schema(spark, t1):
    time.sleep(0.005)
    anchor = int(time.time() * 1000)
    time.sleep(0.005)
    sql(spark, "ALTER TABLE t1 ADD COLUMN dt STRING")
    write(spark, "t1", [(7, 2, "7", "7"), (8, 4, "8", "8")])
    df = spark.read.format("paimon").option("path", t1).option("scan.timestamp-millis", anchor).load()
    assert df.columns == ["a", "b", "c"]
    same(rows_of(df), T1)
    same(load(spark, path=t1), [(1, 2, "1", None), (5, 6, "3", None), (7, 2, "7", "7"), (8, 4, "8", "8")])


def test_df_travel_to_non_existed_version(spark, t1):
    with pytest.raises(Exception, match=r"The specified scan snapshotId 3 is out of available snapshotId range "
                                        r"\[1, 1\]"):
        load(spark, **{"path": t1, "scan.snapshot-id": 3})


def test_df_travel_to_timestamp_before_the_earliest_snapshot(spark, t1):
    with pytest.raises(Exception, match=r"There is currently no snapshot earlier than or equal to timestamp \[0\]"):
        load(spark, **{"path": t1, "scan.timestamp-millis": 0})


def test_df_travel_to_tag(spark, t1):
    snapshot_two(spark)
    sql(spark, "CALL sys.create_tag(table => 't1', tag => 'tag1', snapshot => 1)")
    same(load(spark, t1, **{"scan.tag-name": "tag1"}), T1)
    same(load(spark, t1), T1_LATEST)


def test_df_illegal_version(spark, t1):
    # Paimon: "Could not parse value '1.5' for key 'scan.snapshot-id'"; paimon_ds's option check says the same
    with pytest.raises(Exception, match=r"invalid value '1.5' for option 'scan.snapshot-id': not a 64-bit integer"):
        load(spark, **{"path": t1, "scan.snapshot-id": 1.5})
