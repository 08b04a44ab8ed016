"""Apache Paimon 1.4.1's `CompactProcedureTestBase` (paimon-spark-ut/.../spark/procedure/, run as
`CompactProcedureTest`), ported: its `CALL sys.compact(...)` statements and expected rows are the specification,
run through paimon_ds.sql. Adapted: a `foreachBatch` stream's one micro-batch is one INSERT of its rows (one
commit, as the batch is); the "many small files" cases write their 100 one-row commits with `Table.append` (the same
commits, without 100 Spark jobs). Sort compaction
(`order_strategy`) and incremental clustering are listed: paimon_ds refuses the first by name and does not
implement the second.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds.operation.scan import TableScan

from ._procs import load
from ._sql import rows, sql
from ._stream import location


def last(spark, wh, table: str = "T") -> tuple[int, str]:
    """Paimon's lastSnapshotId / lastSnapshotCommand."""
    s = load(spark, wh, table).latest_snapshot()
    return s.id, s.commit_kind


def files_per_split(spark, wh, table: str = "T") -> Counter:
    """The data files of each (partition directory, bucket) split of the latest snapshot."""
    scan = TableScan(load(spark, wh, table))
    return Counter((scan.partition_dir(e.partition), e.bucket) for e in scan.read_entries())


def test_minor_compact_strategy(spark, wh):
    """compact aware bucket pk table with minor compact strategy"""
    sql(spark, "CREATE TABLE T (id INT, value STRING, pt STRING) "
               "TBLPROPERTIES ('primary-key'='id, pt', 'bucket'='1', 'write-only'='true') PARTITIONED BY (pt)")
    sql(spark, "INSERT INTO T VALUES (1, 'a', 'p1'), (2, 'b', 'p2')")
    sql(spark, "INSERT INTO T VALUES (3, 'c', 'p1'), (4, 'd', 'p2')")
    assert last(spark, wh) == (2, "APPEND")
    minor = ("CALL sys.compact(table => 'T', compact_strategy => 'minor',"
             "options => 'num-sorted-run.compaction-trigger=3')")
    sql(spark, minor)
    assert last(spark, wh) == (2, "APPEND")  # two sorted runs: below the trigger
    sql(spark, "INSERT INTO T VALUES (1, 'a', 'p1')")
    sql(spark, minor)
    assert last(spark, wh) == (4, "COMPACT")
    assert files_per_split(spark, wh) == {("pt=p1", 0): 1, ("pt=p2", 0): 2}


@pytest.mark.skip(reason="sort compact: order_strategy => 'zorder' | 'hilbert' | 'order' is refused by paimon_ds "
                  "(sys.compact compacts by the table's rules only); what works: a full compaction, or rewriting "
                  "the rows sorted with INSERT OVERWRITE ... SELECT ... ORDER BY")
def test_sort_compact():
    """sort compact"""


@pytest.mark.skip(reason="sort compact (order_strategy) is refused by paimon_ds; see test_sort_compact")
def test_sort_compact_with_partition():
    """sort compact with partition"""


@pytest.mark.skip(reason="sort compact (order_strategy) is refused by paimon_ds; see test_sort_compact")
def test_sort_compact_with_multi_partitions():
    """sort compact with multi-partitions"""


@pytest.mark.skip(reason="sort compact (order_strategy) is refused by paimon_ds; see test_sort_compact")
def test_sort_compact_with_partition_filter():
    """sort compact with partition filter"""


def test_compact_for_pk(spark, wh):
    """compact for pk: the nine rows of one micro-batch (one INSERT here), compacted, read the same."""
    sql(spark, "CREATE TABLE T (a INT, b INT) TBLPROPERTIES ('primary-key'='a,b', 'bucket'='1')")
    values = ", ".join(f"({a}, {b})" for a in range(3) for b in range(3))
    sql(spark, f"INSERT INTO T VALUES {values}")
    expected = [(a, b) for a in range(3) for b in range(3)]
    assert rows(spark, "SELECT * FROM T") == expected
    assert rows(spark, "CALL paimon.sys.compact(table => 'T')") == [(True,)]
    assert rows(spark, "SELECT * FROM T") == expected


@pytest.mark.parametrize("bucket", [1, -1])
def test_compact_aware_bucket_pk_table(spark, wh, bucket):
    sql(spark, f"CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('primary-key'='id, pt', "
               f"'bucket'='{bucket}', 'write-only'='true') PARTITIONED BY (pt)")
    sql(spark, "INSERT INTO T VALUES (1, 'a', 'p1'), (2, 'b', 'p2')")
    sql(spark, "INSERT INTO T VALUES (3, 'c', 'p1'), (4, 'd', 'p2')")
    sql(spark, "CALL sys.compact(table => 'T', partitions => 'pt=\"p1\"')")
    assert last(spark, wh) == (3, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T')")
    assert last(spark, wh) == (4, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T')")  # compact condition no longer met
    assert last(spark, wh)[0] == 4
    assert rows(spark, "SELECT * FROM T ORDER BY id") == [(1, "a", "p1"), (2, "b", "p2"), (3, "c", "p1"),
                                                          (4, "d", "p2")]


def _hundred_one_row_commits(spark, wh) -> None:
    table = load(spark, wh)
    schema = pa.schema([("id", pa.int32()), ("value", pa.string()), ("pt", pa.string())])
    for i in range(100):
        table.append(pa.table({"id": [i], "value": ["a"], "pt": [f"p{i % 2}"]}, schema=schema))


@pytest.mark.parametrize("bucket", [3, -1])
def test_compact_aware_bucket_pk_table_with_many_small_files(spark, wh, bucket):
    """The 100 INSERTs are 100 `Table.append` commits of one row."""
    sql(spark, f"CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('primary-key'='id, pt', "
               f"'bucket'='{bucket}', 'write-only'='true', 'source.split.target-size'='128m', "
               f"'source.split.open-file-cost'='32m') PARTITIONED BY (pt)")
    _hundred_one_row_commits(spark, wh)
    sql(spark, "CALL sys.compact(table => 'T')")
    assert last(spark, wh)[1] == "COMPACT"
    assert rows(spark, "SELECT COUNT(*) FROM T") == [(100,)]


THREE_COMMITS = ("(1, 'a', 'p1'), (2, 'b', 'p2')", "(3, 'c', 'p1'), (4, 'd', 'p2')", "(5, 'e', 'p1'), (6, 'f', 'p2')")


def test_compact_unaware_bucket_append_table(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('bucket'='-1', 'write-only'='true', "
               "'compaction.min.file-num'='2') PARTITIONED BY (pt)")
    for values in THREE_COMMITS:
        sql(spark, f"INSERT INTO T VALUES {values}")
    sql(spark, "CALL sys.compact(table => 'T', partitions => 'pt=\"p1\"')")
    assert last(spark, wh) == (4, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T')")
    assert last(spark, wh) == (5, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T')")  # compact condition no longer met
    assert last(spark, wh)[0] == 5
    assert rows(spark, "SELECT * FROM T ORDER BY id") == [(1, "a", "p1"), (2, "b", "p2"), (3, "c", "p1"),
                                                          (4, "d", "p2"), (5, "e", "p1"), (6, "f", "p2")]


def test_compact_unaware_bucket_append_table_with_many_small_files(spark, wh):
    """The 100 INSERTs are 100 `Table.append` commits of one row."""
    sql(spark, "CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('bucket'='-1', 'write-only'='true') "
               "PARTITIONED BY (pt)")
    _hundred_one_row_commits(spark, wh)
    sql(spark, "CALL sys.compact(table => 'T')")
    assert last(spark, wh)[1] == "COMPACT"
    assert rows(spark, "SELECT COUNT(*) FROM T") == [(100,)]


def test_compact_with_wrong_usage(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('bucket'='-1', 'write-only'='true') "
               "PARTITIONED BY (pt)")
    wrong = {
        "CALL sys.compact(table => 'T', partitions => 'pt = \"p1\"', where => 'pt = \"p1\"')":
            "partitions and where cannot be used together",
        "CALL sys.compact(table => 'T', partitions => 'id = 1')": "Only partition predicate is supported",
        "CALL sys.compact(table => 'T', where => 'id > 1 AND pt = \"p1\"')": "Only partition predicate is supported",
        "CALL sys.compact(table => 'T', order_strategy => 'sort', order_by => 'pt')":
            "order_by should not contain partition cols",
        "CALL sys.compact(table => 'T', order_strategy => 'sort', order_by => 'id', partition_idle_time =>'5s')":
            "sort compact do not support 'partition_idle_time'",
    }
    for statement, message in wrong.items():
        with pytest.raises(ValueError, match=message):
            sql(spark, statement)


def test_compact_with_where(spark, wh):
    """The bucket directories are listed as Paimon lists them: the compacted partition holds its new file beside
    the two it replaced (nothing is deleted before the snapshots expire)."""
    sql(spark, "CREATE TABLE T (id INT, value STRING, dt STRING, hh INT) TBLPROPERTIES ('bucket'='1', "
               "'bucket-key'='id', 'write-only'='true', 'compaction.min.file-num'='1') PARTITIONED BY (dt, hh)")
    sql(spark, "INSERT INTO T VALUES (1, '1', '2024-01-01', 0), (2, '2', '2024-01-01', 1)")
    sql(spark, "INSERT INTO T VALUES (3, '3', '2024-01-01', 0), (4, '4', '2024-01-01', 1)")
    sql(spark, "INSERT INTO T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    sql(spark, "INSERT INTO T VALUES (7, '7', '2024-01-02', 0), (8, '8', '2024-01-02', 1)")
    sql(spark, "CALL sys.compact(table => 'T', where => 'dt = \"2024-01-01\" and hh >= 1')")
    assert last(spark, wh)[1] == "COMPACT"
    root = location(spark, wh, "T")
    counts = {d: len(os.listdir(f"{root}/{d}/bucket-0")) for d in
              ("dt=2024-01-01/hh=0", "dt=2024-01-01/hh=1", "dt=2024-01-02/hh=0", "dt=2024-01-02/hh=1")}
    assert counts == {"dt=2024-01-01/hh=0": 2, "dt=2024-01-01/hh=1": 3, "dt=2024-01-02/hh=0": 2,
                      "dt=2024-01-02/hh=1": 2}


def test_to_where_method():
    """toWhere method in CompactProcedure: Paimon's SparkProcedureUtils.toWhere turns `partitions` into the
    disjunction of conjunctions; paimon_ds parses the same text into the same partitions (one spec per `;`)."""
    specs = paimon_ds.format.partition.parse_partition_specs("f0=0,f1=0,f2=0;f0=1,f1=1,f2=1;f0=1,f1=2,f2=2;f3=3")
    where = " OR ".join("(" + " AND ".join(f"{k}={v}" for k, v in s.items()) + ")" for s in specs)
    assert where == "(f0=0 AND f1=0 AND f2=0) OR (f0=1 AND f1=1 AND f2=1) OR (f0=1 AND f1=2 AND f2=2) OR (f3=3)"


def test_compact_unaware_bucket_append_table_with_option(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, value STRING, pt STRING) TBLPROPERTIES ('bucket'='-1', 'write-only'='true') "
               "PARTITIONED BY (pt)")
    for values in THREE_COMMITS:
        sql(spark, f"INSERT INTO T VALUES {values}")
    sql(spark, "CALL sys.compact(table => 'T', partitions => 'pt=\"p1\"', options => 'compaction.min.file-num=2')")
    assert last(spark, wh) == (4, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T', options => 'compaction.min.file-num=2')")
    assert last(spark, wh) == (5, "COMPACT")
    sql(spark, "CALL sys.compact(table => 'T')")  # compact condition no longer met
    assert last(spark, wh)[0] == 5
    assert rows(spark, "SELECT * FROM T ORDER BY id") == [(1, "a", "p1"), (2, "b", "p2"), (3, "c", "p1"),
                                                          (4, "d", "p2"), (5, "e", "p1"), (6, "f", "p2")]


IDLE_SECONDS = 10  # as Paimon's case: a shorter idle time races a loaded machine's INSERT and CALL


def _idle_case(spark, wh, properties: str) -> None:
    sql(spark, f"CREATE TABLE T (id INT, value STRING, dt STRING, hh INT) TBLPROPERTIES ({properties}) "
               "PARTITIONED BY (dt, hh)")
    sql(spark, "INSERT INTO T VALUES (1, '1', '2024-01-01', 0), (2, '2', '2024-01-01', 1)")
    sql(spark, "INSERT INTO T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    sql(spark, "INSERT INTO T VALUES (3, '3', '2024-01-01', 0), (4, '4', '2024-01-01', 1)")
    sql(spark, "INSERT INTO T VALUES (7, '7', '2024-01-02', 0), (8, '8', '2024-01-02', 1)")
    time.sleep(IDLE_SECONDS)
    sql(spark, "INSERT INTO T VALUES (9, '9', '2024-01-01', 0), (10, '10', '2024-01-02', 0)")
    sql(spark, f"CALL sys.compact(table => 'T', partition_idle_time => '{IDLE_SECONDS}s')")
    splits = files_per_split(spark, wh)
    assert len(splits) == 4
    assert last(spark, wh)[1] == "COMPACT"
    # the hh=0 partitions were written within the idle time: left alone
    assert {d: n for (d, _), n in splits.items()} == {"dt=2024-01-01/hh=0": 3, "dt=2024-01-01/hh=1": 1,
                                                      "dt=2024-01-02/hh=0": 3, "dt=2024-01-02/hh=1": 1}


@pytest.mark.parametrize("bucket", [1, -1])
def test_compact_with_partition_idle_time_for_pk_table(spark, wh, bucket):
    dynamic = ", 'dynamic-bucket.initial-buckets'='1'" if bucket == -1 else ""
    _idle_case(spark, wh, f"'primary-key'='id, dt, hh', 'bucket'='{bucket}', 'write-only'='true'{dynamic}")


def test_compact_with_partition_idle_time_for_unaware_bucket_append_table(spark, wh):
    _idle_case(spark, wh, "'bucket'='-1', 'write-only'='true', 'compaction.min.file-num'='2'")


def _stage_tasks(spark, statement: str) -> list[int]:
    """The task count of each stage the statement's jobs ran (Paimon's SparkListener of submitted stages)."""
    tracker = spark.sparkContext.statusTracker()
    group = f"compact-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, statement)
    try:
        sql(spark, statement)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    stages = sorted({s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds})
    return [tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s) is not None]


def test_aware_bucket_compaction_read_parallelism(spark, wh):
    """The compaction job runs min(buckets, max(default parallelism, shuffle partitions)) tasks: the stages of
    the CALL are read through Spark's status tracker (PySpark has no SparkListener); the last stage of each call
    is its compaction. Adapted: 10 more one-row commits before the second call, as paimon_ds runs tasks only for
    the buckets that need compaction (Paimon runs one per bucket, each finding nothing to do after the first)."""
    sql(spark, "CREATE TABLE T (id INT, value STRING) TBLPROPERTIES ('primary-key'='id', 'bucket'='3', "
               "'write-only'='true')")
    table = load(spark, wh)
    schema = pa.schema([("id", pa.int32()), ("value", pa.string())])

    def ten_commits() -> None:
        for i in range(1, 11):
            table.append(pa.table({"id": [i], "value": [str(i)]}, schema=schema))
    ten_commits()
    assert len(load(spark, wh).snapshot_manager.list_ids()) == 10
    assert len({b for (_, b) in files_per_split(spark, wh)}) == 3
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        first = _stage_tasks(spark, "CALL sys.compact(table => 'T')")
        ten_commits()
        spark.conf.set("spark.sql.shuffle.partitions", "5")
        second = _stage_tasks(spark, "CALL sys.compact(table => 'T')")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert (first[-1], second[-1]) == (2, 3)


@pytest.mark.skip(reason="paimon_ds compacts the small files of an unaware-bucket table's partition in one task "
                  "(the partition's one bucket); Paimon splits them into task groups by source.split.open-file-cost, "
                  "whose count the case checks; the files compacted and the snapshot committed are the same")
def test_unaware_bucket_compaction_read_parallelism():
    """test unaware-bucket compaction read parallelism"""


def test_type_cast_in_where(spark, wh):
    sql(spark, "CREATE TABLE t (id INT, value STRING, day_part LONG) TBLPROPERTIES ('compaction.min.file-num'='2') "
               "PARTITIONED BY (day_part)")
    sql(spark, "INSERT INTO t VALUES (1, 'a', 20250810)")
    sql(spark, "INSERT INTO t VALUES (2, 'b', 20250810)")
    sql(spark, "INSERT INTO t VALUES (3, 'c', 20250811)")
    sql(spark, "CALL sys.compact(table => 't', where => 'day_part < 20250811 and day_part > 20250809')")
    assert last(spark, wh, "t")[1] == "COMPACT"


CLUSTERING = ("incremental clustering ('clustering.incremental' = 'true' with clustering.columns / "
              "clustering.strategy): paimon_ds does not implement it (it takes the clustering options as tuning "
              "without effect), so its compaction neither sorts the rows by the z-order curve nor writes the "
              "levels the case checks; what works: a full compaction")


@pytest.mark.skip(reason=CLUSTERING)
def test_cluster_for_unpartitioned_table():
    """cluster for unpartitioned table"""


@pytest.mark.skip(reason=CLUSTERING)
def test_cluster_for_partitioned_table():
    """cluster for partitioned table"""


@pytest.mark.skip(reason=CLUSTERING)
def test_cluster_for_partitioned_table_with_partition_filter():
    """cluster for partitioned table with partition filter"""


@pytest.mark.skip(reason=CLUSTERING)
def test_cluster_with_deletion_vectors():
    """cluster with deletion vectors"""


@pytest.mark.skip(reason="sort compact (order_strategy => 'zorder' / 'hilbert') is refused by paimon_ds; see "
                  "test_sort_compact")
def test_sort_compact_with_null_values_in_string_clustering_column():
    """sort compact with null values in string clustering column"""
