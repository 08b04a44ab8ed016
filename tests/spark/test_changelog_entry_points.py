"""The lookup and full-compaction changelog producers through every Spark entry point.

Each entry point writes the steps of tests/interop/test_changelog_producers.py, one commit (or micro-batch) per
step, and must give the table the same snapshots (APPEND, then the COMPACT snapshot with the changelog) and the
same changelog, row for row, as paimon_ds's core writer, which that module checks against Java Paimon 0.9's:
`df.write.format("paimon")` in two tasks (they share the buckets: the committer lifts level 0),
SQL INSERT on an attached table, `paimon_ds.write` (clustered: its writers compact inline),
`writeStream.format("paimon")` and foreachBatch(`paimon_ds.foreach_batch_writer`), and `paimon_ds.compact` after
`write-only` commits.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

import paimon_ds
from paimon_ds import Table
from paimon_ds.operation.compact import compact_in_process
from tests.interop.test_changelog_producers import (
    VARIANTS,
    batch,
    paimon_ds_stream,
    paimon_ds_writes,
    steps_for,
    table_options,
)

SPARK_SCHEMA = "id INT, op STRING, a STRING, b INT"


def changelog(path: str) -> tuple[list[tuple], dict[int, list[tuple]]]:
    """Each snapshot's (commit kind, changelogRecordCount), and each snapshot's changelog rows."""
    snapshots = [(s.commit_kind, s.changelog_record_count) for s in Table.load(path).snapshots()]
    return snapshots, paimon_ds_stream(path)


def reference(tmp_path: Path, name: str) -> tuple[list[tuple], dict[int, list[tuple]]]:
    path = str(tmp_path / "core" / "db.db" / name)
    paimon_ds_writes(path, VARIANTS[name], steps_for(VARIANTS[name]))
    return changelog(path)


def two_tasks(spark, rows: list[tuple]):
    """The rows in two tasks, the first half in the first (a later task's rows win, as later rows do): the two
    updates of key 4 in the third step go to different tasks."""
    return spark.createDataFrame(spark.sparkContext.parallelize([(r[1], r[0], r[2], r[3]) for r in rows], 2),
                                 SPARK_SCHEMA)


def test_df_write_format_with_tasks_sharing_buckets(spark, tmp_path):
    """Several tasks add level-0 files to one bucket (a key's two updates in one commit come from two tasks, the
    later task winning as the later row does); the committer lifts them with one compaction per write."""
    for name in ("dedup_lookup_dv", "dedup_full"):
        path = str(tmp_path / "wh" / "db.db" / name)
        for step in steps_for(VARIANTS[name]):
            (two_tasks(spark, step).write.format("paimon").options(**table_options(VARIANTS[name]))
             .option("primary-key", "id").mode("append").save(path))
        assert changelog(path) == reference(tmp_path, name), name


def write_step_files(directory: Path, steps: list[list[tuple]]) -> None:
    """One parquet file per step, oldest first (the file source reads them in modification-time order)."""
    directory.mkdir(parents=True)
    for n, step in enumerate(steps):
        f = directory / f"step-{n}.parquet"
        pq.write_table(batch(step).select(["id", "op", "a", "b"]), f)
        os.utime(f, (1_700_000_000 + n, 1_700_000_000 + n))


def test_sql_clustered_and_streaming_writes(spark, tmp_path):
    name = "dedup_lookup"
    options = table_options(VARIANTS[name])
    steps = steps_for(VARIANTS[name])
    expected = reference(tmp_path, name)
    warehouse = tmp_path / "wh"

    # SQL INSERT on the attached table (the first step creates it)
    path = str(warehouse / "db.db" / "sqlt")
    paimon_ds.write_arrow(path, batch(steps[0]), primary_key="id", options=options)
    paimon_ds.attach(spark, str(warehouse))
    for step in steps[1:]:
        values = ", ".join(f"({i}, '{op}', {'NULL' if a is None else repr(a)}, {'NULL' if b is None else b})"
                           for op, i, a, b in step)
        spark.sql(f"INSERT INTO db.sqlt VALUES {values}")
    assert changelog(path) == expected, "SQL INSERT"

    # paimon_ds.write: clustered by bucket, each bucket's writer compacts inline
    path = str(warehouse / "db.db" / "clustered")
    for step in steps:
        paimon_ds.write(spark.createDataFrame([(r[1], r[0], r[2], r[3]) for r in step], SPARK_SCHEMA).coalesce(1),
                        path, options={**options, "primary-key": "id"})
    assert changelog(path) == expected, "paimon_ds.write"

    # writeStream.format("paimon") and foreachBatch, one micro-batch per step (the first three: the updates of one
    # key twice, re-inserts and deletes are in them)
    write_step_files(tmp_path / "steps", steps[:3])
    expected = (expected[0][:6], {sid: rows for sid, rows in expected[1].items() if sid <= 6})
    source = spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "steps"))
    path = str(warehouse / "db.db" / "streamed")
    q = (source.coalesce(1).writeStream.format("paimon").options(**options).option("primary-key", "id")
         .option("checkpointLocation", str(tmp_path / "ck-stream")).trigger(availableNow=True).start(path))
    try:
        q.awaitTermination()
    finally:
        q.stop()
    assert changelog(path) == expected, "writeStream"
    path = str(warehouse / "db.db" / "batches")
    q = (source.coalesce(1).writeStream
         .foreachBatch(paimon_ds.foreach_batch_writer(path, "changelog-test", {**options, "primary-key": "id"}))
         .option("checkpointLocation", str(tmp_path / "ck-batches")).trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    assert changelog(path) == expected, "foreachBatch"


def test_paimon_ds_compact_lifts_write_only_commits(spark, tmp_path):
    """`write-only` commits leave level 0; paimon_ds.compact writes the changelog the core compaction writes
    (which tests/interop checks against Java's dedicated compaction)."""
    name = "pu_lookup"
    steps = steps_for(VARIANTS[name])
    paths = [str(tmp_path / d / "db.db" / name) for d in ("spark", "core")]
    for path in paths:
        paimon_ds_writes(path, VARIANTS[name], steps[:1])
        for step in steps[1:]:
            Table.load(path, {"write-only": "true"}).append(batch(step))
    assert paimon_ds.compact(spark, paths[0]) is not None
    assert compact_in_process(Table.load(paths[1]), None) is not None
    assert changelog(paths[0]) == changelog(paths[1])
    kinds, rows = changelog(paths[0])
    assert kinds[-1][0] == "COMPACT" and kinds[-1][1] == len(rows[len(kinds)]) > 0
