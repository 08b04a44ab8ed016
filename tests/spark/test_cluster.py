"""A real multi-JVM Spark application (local-cluster: a master, 2 workers, 2 executor JVMs) writes and reads.

Proves nothing depends on driver-local state: tasks in separate executor JVMs write the data files,
the driver commits once, and another Spark application reads the result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pyspark
import pytest

from paimon_ds import Table

from ._helpers import data_files_on_disk, java_bucket_of_bigint, live_files, load, snapshot_ids

pytestmark = pytest.mark.cluster

ROWS = 20_000
BUCKETS = 4

# The executor a Python worker serves: the JVM above it (worker <- pyspark.daemon <- executor JVM) names
# its executor id. Source text for the cluster jobs, so the UDF pickles by value.
EXECUTOR_ID_UDF = textwrap.dedent('''
    def executor_id(_):
        pid = os.getpid()
        for _ in range(5):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\\0")
            if b"--executor-id" in argv:
                return argv[argv.index(b"--executor-id") + 1].decode()
            with open(f"/proc/{pid}/status") as f:
                pid = int(next(line for line in f if line.startswith("PPid:")).split()[1])
        return "driver?"
''')

JOB = textwrap.dedent('''
    import json, os, sys, time
    t0 = time.time()
    import paimon_ds
    from pyspark.sql import functions as F

    path, rows, buckets = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    spark = paimon_ds.session("paimon_ds-cluster-test", master="local-cluster[2,1,1024]")
    started = time.time() - t0

    EXECUTOR_ID_UDF

    df = spark.range(0, rows, numPartitions=8).select(
        "id", F.concat(F.lit("d"), (F.col("id") % 3).cast("string")).alias("dt"),
        F.udf(executor_id, "string")("id").alias("executor"))
    (df.write.format("paimon").mode("append")
       .option("partition", "dt").option("bucket", buckets).option("bucket-key", "id").save(path))
    back = spark.read.format("paimon").load(path)
    ids = [r.id for r in back.select("id").collect()]
    print(json.dumps({
        "count": len(ids), "distinct": len(set(ids)), "sum": sum(ids),
        "by_executor": {r.executor: r["count"] for r in back.groupBy("executor").count().collect()},
        # block managers: the driver's and one per executor JVM
        "block_managers": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size(),
        "read_partitions": back.rdd.getNumPartitions(),
        "started_s": round(started, 1), "elapsed_s": round(time.time() - t0, 1),
    }))
    spark.stop()
''').replace("EXECUTOR_ID_UDF\n", EXECUTOR_ID_UDF)


def private_spark_home(tmp_path: Path) -> str:
    """SPARK_HOME for local-cluster: the pyspark package, linked, so workers' work/ dirs land in tmp_path."""
    home = tmp_path / "spark_home"
    home.mkdir()
    pkg = Path(pyspark.__file__).parent
    for entry in pkg.iterdir():
        if entry.name != "work":
            (home / entry.name).symlink_to(entry)
    return str(home)


def test_local_cluster_write_and_read(spark, tmp_path):
    path = str(tmp_path / "warehouse" / "db.db" / "t")
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ, SPARK_HOME=private_spark_home(tmp_path), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(script), path, str(ROWS), str(BUCKETS)], env=env,
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)
    elapsed = time.time() - t0
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"local-cluster app: {out}, wall {elapsed:.1f}s")

    # the application read back exactly what it wrote
    assert (out["count"], out["distinct"], out["sum"]) == (ROWS, ROWS, ROWS * (ROWS - 1) // 2)
    # rows were written by tasks in (at least) two separate executor JVMs
    assert len(out["by_executor"]) >= 2 and "driver?" not in out["by_executor"], out["by_executor"]
    assert sum(out["by_executor"].values()) == ROWS and out["block_managers"] >= 3

    # one data commit, made on the driver, holding every task's files; then the commit's compaction of the
    # buckets the tasks shared (8 tasks put up to 8 small files into each: over compaction.min.file-num)
    assert snapshot_ids(path) == [1, 2]
    appended, snap = Table.load(path).snapshots()
    assert appended.commit_kind == "APPEND" and appended.total_record_count == appended.delta_record_count == ROWS
    assert snap.commit_kind == "COMPACT" and snap.total_record_count == ROWS
    files = live_files(path)
    on_disk = {os.path.basename(f) for f in data_files_on_disk(path)}
    assert len({name for _, name in files}) == len(files) and {name for _, name in files} <= on_disk
    assert {rel.split("/")[0] for rel, _ in files} == {"dt=d0", "dt=d1", "dt=d2"}
    assert {rel.split("/")[1] for rel, _ in files} == {f"bucket-{b}" for b in range(BUCKETS)}

    # this process's own Spark application reads the same table
    back = load(spark, path)
    rows = back.collect()
    assert sorted(r.id for r in rows) == list(range(ROWS))
    assert all(r.dt == f"d{r.id % 3}" for r in rows)
    assert Counter(r.executor for r in rows) == Counter(out["by_executor"])
    # and every row sits in the bucket Paimon's hash gives it
    table = Table.load(path)
    for split in table.new_scan().plan():
        for batch in table.new_read().read(split):
            assert {java_bucket_of_bigint(i, BUCKETS) for i in batch.column("id").to_pylist()} == {split.bucket}
