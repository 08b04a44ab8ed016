"""Reading through Spark: time travel, user-given read schemas, filter push-down and pruning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from ._helpers import by_key, latest_snapshot, load, read_arrow, save, snapshot_ids, sorted_rows


@pytest.fixture
def three_commits(spark, table_path) -> tuple[str, list[list[dict]]]:
    """A table with three appends; returns the path and each commit's rows."""
    commits = []
    for c in range(3):
        df = spark.range(c * 10, c * 10 + 3 + c).withColumn("c", F.lit(c))
        save(df, table_path)
        commits.append(df.toArrow().to_pylist())
    assert snapshot_ids(table_path) == [1, 2, 3]
    return table_path, commits


def test_time_travel_by_snapshot_id(spark, three_commits):
    path, commits = three_commits
    for sid in (1, 2, 3):
        expected = by_key([r for c in commits[:sid] for r in c])
        assert sorted_rows(read_arrow(spark, path, **{"scan.snapshot-id": str(sid)})) == expected
    assert sorted_rows(read_arrow(spark, path)) == by_key([r for c in commits for r in c])


def test_time_travel_by_timestamp(spark, three_commits):
    """scan.timestamp-millis reads the latest snapshot committed at or before it; before the first snapshot it is
    an error, as in Paimon 1.2+ (StaticFromTimestampStartingScanner's constructor raises "There is currently no
    snapshot earlier than or equal to timestamp [...]", apache/paimon#5423, up to master). Paimon 0.9 and 1.0
    read nothing then (the scanner's NoSnapshot: an empty read), not the earliest snapshot."""
    path, commits = three_commits
    from paimon_ds import Table
    sm = Table.load(path).snapshot_manager
    t1, t2, t3 = (sm.snapshot(i).time_millis for i in (1, 2, 3))
    assert t1 < t2 < t3
    cases = {t1: 1, t2 - 1: 1, t2: 2, t3 - 1: 2, t3 + 60_000: 3}
    for ts, sid in cases.items():
        expected = by_key([r for c in commits[:sid] for r in c])
        assert sorted_rows(read_arrow(spark, path, **{"scan.timestamp-millis": str(ts)})) == expected, (ts, sid)
    with pytest.raises(Exception, match=f"no snapshot of .* was committed at or before {t1 - 1} .*There is currently "
                                        rf"no snapshot earlier than or equal to timestamp \[{t1 - 1}\], the "
                                        rf"earliest snapshot's timestamp is \[{t1}\]"):
        load(spark, path, **{"scan.timestamp-millis": str(t1 - 1)}).collect()


def test_time_travel_by_tag(spark, three_commits):
    path, commits = three_commits
    # a Paimon tag is a copy of the snapshot file under tag/tag-<name>
    Path(path, "tag").mkdir()
    shutil.copy(Path(path, "snapshot", "snapshot-1"), Path(path, "tag", "tag-t1"))
    assert sorted_rows(read_arrow(spark, path, **{"scan.tag-name": "t1"})) == by_key(commits[0])
    with pytest.raises(Exception, match="tag 'nope' does not exist"):
        load(spark, path, **{"scan.tag-name": "nope"}).collect()


def test_time_travel_to_missing_snapshot_is_a_clear_error(spark, three_commits):
    path, _ = three_commits
    with pytest.raises(Exception, match="snapshot 9 does not exist"):
        load(spark, path, **{"scan.snapshot-id": "9"}).collect()


def test_time_travel_after_overwrite_sees_old_data(spark, three_commits):
    path, commits = three_commits
    save(spark.range(500, 502).withColumn("c", F.lit(9)), path, mode="overwrite")
    assert sorted_rows(read_arrow(spark, path)) == [{"id": 500, "c": 9}, {"id": 501, "c": 9}]
    assert sorted_rows(read_arrow(spark, path, **{"scan.snapshot-id": "3"})) == by_key(
        [r for c in commits for r in c])


def test_user_read_schema_projects_columns(spark, table_path):
    df = spark.sql("SELECT id, concat('s', id) AS s, id * 2 AS x, array(id) AS a FROM range(20)")
    save(df, table_path)
    sub = spark.read.format("paimon").schema("id bigint, s string").load(table_path)
    assert sub.columns == ["id", "s"]
    assert sorted_rows(sub.toArrow()) == [{"id": i, "s": f"s{i}"} for i in range(20)]
    # the given order wins, and a column may be read alone
    rev = spark.read.format("paimon").schema("a array<bigint>, s string").load(table_path)
    assert rev.columns == ["a", "s"]
    assert sorted(rev.collect(), key=lambda r: r.s) == sorted(((([i], f"s{i}")) for i in range(20)),
                                                              key=lambda r: r[1])
    # a column the table does not have is named in the error
    with pytest.raises(Exception, match=r"column\(s\) \['nope'\] are not in Paimon table"):
        spark.read.format("paimon").schema("id bigint, nope string").load(table_path).collect()


# ---------------------------------------------------------------- filter push-down

@pytest.fixture
def four_partitions(spark, table_path) -> tuple[str, list[dict]]:
    """4 partitions x 1 data file; ids of partition k are 1000k..1000k+999 (disjoint file stats)."""
    df = spark.range(0, 4000, numPartitions=1).selectExpr(
        "id",
        "concat('d', cast(id DIV 1000 AS string)) AS dt",
        "concat('d', cast(id DIV 1000 AS string), '-', cast(id AS string)) AS s",
        "IF(id >= 3000 AND id % 2 = 0, NULL, id) AS n")
    save(df, table_path, partition="dt")
    assert latest_snapshot(table_path).total_record_count == 4000
    return table_path, df.toArrow().to_pylist()


def test_session_enables_filter_push_down(spark):
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"


@pytest.mark.parametrize("condition, keep, partitions", [
    # partition column: pruned by partition values
    ("dt = 'd1'", lambda r: r["dt"] == "d1", 1),
    ("dt IN ('d0', 'd2')", lambda r: r["dt"] in ("d0", "d2"), 2),
    # data columns: pruned by file stats
    ("id >= 3500", lambda r: r["id"] >= 3500, 1),
    ("id > 1999", lambda r: r["id"] > 1999, 2),
    ("id <= 999", lambda r: r["id"] <= 999, 1),
    ("id < 1000", lambda r: r["id"] < 1000, 1),
    ("id IN (5, 2500)", lambda r: r["id"] in (5, 2500), 2),
    ("id = 1234", lambda r: r["id"] == 1234, 1),
    ("n IS NULL", lambda r: r["n"] is None, 1),
    ("startswith(s, 'd2-')", lambda r: r["s"].startswith("d2-"), 1),
    ("s LIKE 'd3-%'", lambda r: r["s"].startswith("d3-"), 1),
    # both kinds at once
    ("dt = 'd1' AND id > 1500", lambda r: r["dt"] == "d1" and r["id"] > 1500, 1),
    # nothing matches: no file is read (an empty scan still gives Spark one, empty, partition)
    ("id > 10000", lambda r: False, 1),
    # not pushed (Or) or not selective: still correct, nothing pruned
    ("id < 10 OR id > 3990", lambda r: r["id"] < 10 or r["id"] > 3990, 4),
    ("n IS NOT NULL", lambda r: r["n"] is not None, 4),
])
def test_filters_prune_and_give_correct_rows(spark, four_partitions, condition, keep, partitions):
    path, rows = four_partitions
    df = load(spark, path)
    assert df.rdd.getNumPartitions() == 4  # one split per partition without a filter
    filtered = df.where(condition)
    assert sorted_rows(filtered.toArrow()) == by_key([r for r in rows if keep(r)])
    assert filtered.rdd.getNumPartitions() == partitions


def test_filter_with_time_travel(spark, four_partitions):
    path, rows = four_partitions
    save(spark.sql("SELECT 9999L AS id, 'd1' AS dt, 'd1-x' AS s, 1L AS n"), path)
    old = load(spark, path, **{"scan.snapshot-id": "1"}).where("dt = 'd1'")
    assert sorted_rows(old.toArrow()) == by_key([r for r in rows if r["dt"] == "d1"])
    new = load(spark, path).where("dt = 'd1'")
    # partition d1 only: its two files, one split each (spread over the 2 cores, as Spark spreads files)
    assert new.count() == 1001 and new.rdd.getNumPartitions() == 2
