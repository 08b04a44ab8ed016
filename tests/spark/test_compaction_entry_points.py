"""Every Spark entry point that writes a primary-key table leaves each bucket within Paimon's universal-compaction
rules after its commit (issue 32), for the three merge engines that used to be left uncompacted.

Each entry point makes 12 commits of overlapping keys with Paimon's default triggers. After the run, every snapshot
of the table holds at most `num-sorted-run.stop-trigger` sorted runs per bucket, COMPACT snapshots are there, and
Java Paimon 0.9 reads every snapshot equal to the model of the data commits before it. `df.write.format` runs two
tasks that share the buckets (the committer compacts); `paimon_ds.write` clusters (its writers compact);
`writeStream` compacts on the query's background thread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Table
from tests.operation.test_compaction_on_write import DEFAULTS, java_snapshot_rows, max_runs, overlapping_batch

ROWS = 400
WRITES = 12
ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}


def options_of(engine: str) -> dict[str, str]:
    return {"primary-key": "id", "bucket": "2", **ENGINES[engine]}


def batches() -> list:
    return [overlapping_batch(i, ROWS) for i in range(WRITES)]


def model_after(engine: str, commits: int) -> list[tuple]:
    """The table's rows after the first ``commits`` writes."""
    rows: dict[int, tuple[int, str]] = {}
    for data in batches()[:commits]:
        for k, v, s in zip(data["id"].to_pylist(), data["v"].to_pylist(), data["s"].to_pylist(), strict=True):
            rows[k] = (rows[k][0] + v, s) if engine == "aggregation" and k in rows else (v, s)
    return sorted((k, *vs) for k, vs in rows.items())


def wait_until_settled(path: str, quiet_s: float = 3.0, limit_s: float = 120.0) -> None:
    """A stream's background compaction may still commit after the query ended: wait until no snapshot lands."""
    sm = Table.load(path).snapshot_manager
    deadline = time.monotonic() + limit_s
    last, since = sm.latest_id(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sm.latest_id()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return


def check(path: str, engine: str, java_oracle) -> None:
    table = Table.load(path)
    snapshots = table.snapshots()
    assert "COMPACT" in [s.commit_kind for s in snapshots], path
    data_commits = 0
    expected: dict[int, list[tuple]] = {}
    for s in snapshots:
        assert max_runs(table, s.id) <= DEFAULTS.stop_trigger, f"{path} snapshot {s.id}"
        data_commits += s.commit_kind != "COMPACT"
        expected[s.id] = model_after(engine, data_commits)
    assert data_commits == WRITES
    assert java_snapshot_rows(java_oracle, path, ["id", "v", "s"]) == expected


def df_of(spark, data, tasks: int = 2):
    return spark.createDataFrame(data.to_pandas()).repartition(tasks)


def test_batch_entry_points(spark, tmp_path, java_oracle):
    warehouse = tmp_path / "wh"
    paths = {name: str(warehouse / "db.db" / name) for name in ("dfwrite", "sqlinsert", "clustered", "pdsql")}
    engines = {"dfwrite": "deduplicate", "sqlinsert": "partial-update", "clustered": "aggregation",
               "pdsql": "deduplicate"}
    for name in ("sqlinsert", "pdsql"):  # attached tables, created with their options
        paimon_ds.write_arrow(paths[name], batches()[0].slice(0, 0), options=options_of(engines[name]))
    paimon_ds.attach(spark, str(warehouse))
    for data in batches():
        df = df_of(spark, data)
        df.write.format("paimon").options(**options_of(engines["dfwrite"])).mode("append").save(paths["dfwrite"])
        df.createOrReplaceTempView("src")
        spark.sql("INSERT INTO db.sqlinsert SELECT * FROM src")
        paimon_ds.write(df, paths["clustered"], options=options_of(engines["clustered"]))
        paimon_ds.sql(spark, "INSERT INTO db.pdsql SELECT * FROM src")
    for name, path in paths.items():
        check(path, engines[name], java_oracle)


def write_batch_files(directory: Path) -> None:
    """One parquet file per write, oldest first (the file source reads them in modification-time order)."""
    directory.mkdir(parents=True)
    for n, data in enumerate(batches()):
        f = directory / f"batch-{n:02d}.parquet"
        pq.write_table(data, f)
        os.utime(f, (1_700_000_000 + n, 1_700_000_000 + n))


@pytest.mark.parametrize("background", [True, False])
def test_streaming_entry_points(spark, tmp_path, java_oracle, background):
    write_batch_files(tmp_path / "in")
    source = (spark.readStream.schema("id BIGINT, v BIGINT, s STRING").option("maxFilesPerTrigger", 1)
              .parquet(str(tmp_path / "in")))
    flag = {"paimon_ds.background-compaction": str(background).lower()}
    streamed = str(tmp_path / "wh" / "db.db" / "streamed")
    q = (source.repartition(2).writeStream.format("paimon").options(**options_of("partial-update"), **flag)
         .option("checkpointLocation", str(tmp_path / "ck-stream")).trigger(availableNow=True).start(streamed))
    try:
        q.awaitTermination()
    finally:
        q.stop()
    batched = str(tmp_path / "wh" / "db.db" / "batched")
    writer = paimon_ds.foreach_batch_writer(batched, "compaction-test", {**options_of("aggregation"), **flag})
    q = (source.writeStream.foreachBatch(writer)
         .option("checkpointLocation", str(tmp_path / "ck-batches")).trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    for path, engine in ((streamed, "partial-update"), (batched, "aggregation")):
        wait_until_settled(path)
        check(path, engine, java_oracle)
