"""A multi-JVM Spark application (local-cluster: 2 executor JVMs) on tables in S3, configured by
conf/spark-cluster-s3.conf alone.

The application's S3 endpoint and credentials come only from Spark conf `spark.hadoop.fs.s3a.*` (no
per-job options, no AWS_* variables): paimon_ds.register binds them into the source class the executors'
Python workers unpickle. One application covers batch appends and a dynamic partition overwrite, a
primary-key table with upserts and a full compaction, and a restarted availableNow stream; this process
then checks every table from S3 with the core API and Java Paimon 0.9 on a local copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from paimon_ds import Table

from .test_cluster import EXECUTOR_ID_UDF, private_spark_home

pytestmark = pytest.mark.cluster

CONF_FILE = Path(__file__).resolve().parents[2] / "conf" / "spark-cluster-s3.conf"
# local-cluster[2,1,1024]: workers offer 1024 MiB, so executors must ask for less than the file's 4g
LOCAL_CLUSTER_SIZES = {"spark.executor.memory": "512m", "spark.python.worker.memory": "256m",
                       "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "4"}

JOB = textwrap.dedent('''
    import json, os, sys, time
    t0 = time.time()
    import paimon_ds
    from pyspark.sql import functions as F

    args = json.loads(sys.argv[1])
    spark = paimon_ds.session("paimon_ds-cluster-s3-test", master="local-cluster[2,1,1024]", conf=args["conf"])
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
    while status().size() < 3 and time.time() - t0 < 90:  # the driver's block manager and both executors'
        time.sleep(0.2)
    started = time.time() - t0

    EXECUTOR_ID_UDF

    executor = F.udf(executor_id, "string")
    text = lambda tag: F.concat(F.lit(tag), F.col("id").cast("string"))  # noqa: E731
    out = {"block_managers": status().size(), "seconds": {"start": round(started, 1)}}
    mark = time.time()

    def phase(name):  # wall time of each part, for the test's log
        global mark
        out["seconds"][name], mark = round(time.time() - mark, 1), time.time()

    def rows(df):
        return sorted([list(r) for r in df.collect()], key=lambda r: r[0])

    # -- foundation: a partitioned fixed-bucket append table, two appends, one dynamic partition overwrite
    events = args["events"]
    for lo, hi, tag in ((0, 60, "a"), (60, 90, "b")):
        df = spark.range(lo, hi, numPartitions=4).select(
            "id", F.concat(F.lit("d"), (F.col("id") % 3).cast("string")).alias("dt"), text(tag).alias("v"),
            executor("id").alias("executor"))
        df.write.format("paimon").mode("append").option("partition", "dt").option("bucket", "2") \\
            .option("bucket-key", "id").save(events)
        phase(f"events_append_{tag}")
    fix = spark.range(1000, 1005, numPartitions=2).select(
        "id", F.lit("d1").alias("dt"), text("c").alias("v"), executor("id").alias("executor"))
    fix.write.format("paimon").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(events)
    phase("events_overwrite")
    back = spark.read.format("paimon").load(events).filter("(dt = 'd1' AND id >= 1002) OR (dt = 'd0' AND id >= 60)")
    out["events_filtered"] = rows(back.select("id", "dt", "v"))
    phase("events_read")

    # -- primary key: two commits (the second upserts 30..39 and adds 40..49), then a full compaction
    users = args["users"]
    for lo, hi, tag in ((0, 40, "p1-"), (30, 50, "p2-")):
        df = spark.range(lo, hi, numPartitions=4).select("id", text(tag).alias("v"),
                                                          executor("id").alias("executor"))
        df.write.format("paimon").mode("append").option("primary-key", "id").option("bucket", "2").save(users)
        phase(f"users_{tag.rstrip('-')}")
    snap = paimon_ds.compact(spark, users, full=True)
    out["compact"] = [snap.id, snap.commit_kind] if snap is not None else None
    phase("compact")
    out["users"] = rows(spark.read.format("paimon").load(users).select("id", "v"))
    phase("users_read")

    # -- streaming: json files -> a primary-key table, two availableNow runs from one checkpoint
    clicks, inbox, checkpoint = args["clicks"], args["inbox"], args["checkpoint"]

    def put(name, ids, tag):
        tmp = os.path.join(inbox, "." + name)  # the file source skips hidden files: no half-written input
        with open(tmp, "w") as f:
            f.writelines(json.dumps({"id": i, "v": f"{tag}{i}"}) + "\\n" for i in ids)
        os.rename(tmp, os.path.join(inbox, name))

    def run_stream():
        source = spark.readStream.schema("id BIGINT, v STRING").option("maxFilesPerTrigger", 1).json(inbox)
        query = (source.withColumn("executor", executor("id")).writeStream.format("paimon")
                 .option("primary-key", "id").option("bucket", "2").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(clicks))
        query.awaitTermination()
        return {"id": str(query.id),
                "batches": {str(p.batchId): p.numInputRows for p in query.recentProgress if p.numInputRows}}

    put("f1.json", range(0, 10), "s1-")
    put("f2.json", range(10, 20), "s1-")
    first = run_stream()
    phase("clicks_run1")
    put("f3.json", range(15, 25), "s2-")
    second = run_stream()
    out["stream_runs"] = [first, second]
    phase("clicks_run2")
    print(json.dumps(out))
    spark.stop()
''').replace("EXECUTOR_ID_UDF\n", EXECUTOR_ID_UDF)


def read_conf(path: Path) -> tuple[dict[str, str], list[str]]:
    """The settings of a spark-defaults style file, and the settings with no comment line right above them."""
    settings, uncommented, previous = {}, [], ""
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            settings[key] = value.strip()
            if not previous.startswith("#"):
                uncommented.append(key)
        previous = line
    return settings, uncommented


def cluster_conf(s3_server) -> dict[str, str]:
    settings, uncommented = read_conf(CONF_FILE)
    assert uncommented == [], f"settings without a comment in {CONF_FILE.name}: {uncommented}"
    placeholders = {"<PYTHON>": sys.executable, "<S3_ENDPOINT>": s3_server.endpoint,
                    "<ACCESS_KEY>": s3_server.ACCESS_KEY, "<SECRET_KEY>": s3_server.SECRET_KEY}
    conf = {}
    for key, value in settings.items():
        for placeholder, real in placeholders.items():
            value = value.replace(placeholder, real)
        assert "<" not in value, f"{key} has an unknown placeholder: {value}"
        conf[key] = value
    return {**conf, **LOCAL_CLUSTER_SIZES}


def core_rows(path: str, options: dict[str, str]) -> list[dict]:
    return sorted(Table.load(path, None, options).to_arrow().to_pylist(), key=lambda r: r["id"])


def snapshots(path: str, options: dict[str, str]) -> list:
    sm = Table.load(path, None, options).snapshot_manager
    return [sm.snapshot(i) for i in sm.list_ids()]


def without(rows: list[dict], column: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k != column} for r in rows]


def test_cluster_on_s3_configured_by_spark_conf(s3_server, java_oracle, tmp_path):
    conf = cluster_conf(s3_server)
    assert {k for k in conf if k.startswith("spark.hadoop.fs.s3a.")} == {
        "spark.hadoop.fs.s3a.endpoint", "spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key",
        "spark.hadoop.fs.s3a.path.style.access"}
    warehouse = f"s3://{s3_server.new_bucket('cluster')}/warehouse"
    paths = {name: f"{warehouse}/db.db/{name}" for name in ("events", "users", "clicks")}
    inbox, checkpoint = tmp_path / "inbox", tmp_path / "checkpoint"
    inbox.mkdir()
    script = tmp_path / "job.py"
    script.write_text(JOB)
    # S3 settings reach the application only through Spark conf: no AWS variables, files or profiles
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") or k == "AWS_CA_BUNDLE"}
    env.update(SPARK_HOME=private_spark_home(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"))
    args = {"conf": conf, **paths, "inbox": str(inbox), "checkpoint": str(checkpoint)}
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(script), json.dumps(args)], env=env, capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)
    elapsed = time.time() - t0
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"local-cluster app on S3: {out}, wall {elapsed:.1f}s")
    assert out["block_managers"] == 3  # the driver's and one per executor JVM
    options = s3_server.options()

    # foundation: d0 and d2 from both appends; d1 only as the dynamic overwrite left it
    events = core_rows(paths["events"], options)
    assert without(events, "executor") == sorted(
        [{"id": i, "dt": f"d{i % 3}", "v": f"{'a' if i < 60 else 'b'}{i}"} for i in range(90) if i % 3 != 1]
        + [{"id": i, "dt": "d1", "v": f"c{i}"} for i in range(1000, 1005)], key=lambda r: r["id"])
    assert out["events_filtered"] == ([[i, "d0", f"b{i}"] for i in range(60, 90, 3)]
                                      + [[i, "d1", f"c{i}"] for i in (1002, 1003, 1004)])
    # the data commits; a commit whose tasks left a bucket at compaction.min.file-num small files is followed by
    # its COMPACT snapshot (the same rows), as Paimon's append writer compacts
    events_snaps = snapshots(paths["events"], options)
    assert [(s.commit_kind, s.total_record_count) for s in events_snaps if s.commit_kind != "COMPACT"] == [
        ("APPEND", 60), ("APPEND", 90), ("OVERWRITE", 65)]
    for before, s in zip(events_snaps, events_snaps[1:]):
        if s.commit_kind == "COMPACT":
            assert s.total_record_count == before.total_record_count

    # primary key: 30..39 upserted by the second commit, then one full compaction
    users = core_rows(paths["users"], options)
    expected_users = [{"id": i, "v": f"p1-{i}"} for i in range(30)] + [{"id": i, "v": f"p2-{i}"} for i in range(30, 50)]
    assert without(users, "executor") == expected_users
    assert out["users"] == [[r["id"], r["v"]] for r in expected_users]
    # the full compaction, unless the second commit's own compaction already left one run (then nothing to do)
    assert out["compact"] in (None, [3, "COMPACT"])
    # 60 records in the files before the compaction (the upserts' old versions too), 50 after it
    users_snaps = snapshots(paths["users"], options)
    assert [(s.commit_kind, s.total_record_count) for s in users_snaps if s.commit_kind != "COMPACT"] == [
        ("APPEND", 40), ("APPEND", 60)]
    assert (users_snaps[-1].commit_kind, users_snaps[-1].total_record_count) == ("COMPACT", 50)

    # streaming: one micro-batch per input file, each committed once under the query's id (kept by the
    # checkpoint across the restart), 30 input rows written once, 15..19 upserted by the second run
    clicks = core_rows(paths["clicks"], options)
    assert without(clicks, "executor") == ([{"id": i, "v": f"s1-{i}"} for i in range(15)]
                                           + [{"id": i, "v": f"s2-{i}"} for i in range(15, 25)])
    first, second = out["stream_runs"]
    assert first["id"] == second["id"]
    assert (first["batches"], second["batches"]) == ({"0": 10, "1": 10}, {"2": 10})
    stream_snaps = snapshots(paths["clicks"], options)
    assert [(s.id, s.commit_kind, s.commit_identifier, s.delta_record_count) for s in stream_snaps] == [
        (1, "APPEND", 0, 10), (2, "APPEND", 1, 10), (3, "APPEND", 2, 10)]
    assert {s.commit_user for s in stream_snaps} == {f"spark-stream-{first['id']}"}

    # the batch writes ran in tasks of both executor JVMs (executor ids 0 and 1), the stream's in either
    writers = {name: Counter(r["executor"] for r in rows) for name, rows in
               (("events", events), ("users", users), ("clicks", clicks))}
    print(f"rows by executor: {writers}")
    assert set(writers["events"]) == set(writers["users"]) == {"0", "1"}
    assert set(writers["clicks"]) <= {"0", "1"}

    # Java Paimon 0.9 reads the same rows from local copies (catalog layout kept); one JVM per table, together
    def java_read(name: str) -> list[dict]:
        local = tmp_path / "copy" / "warehouse" / "db.db" / name
        local.parent.mkdir(parents=True, exist_ok=True)
        return sorted(java_oracle.read(s3_server.download(paths[name], local)).to_pylist(), key=lambda r: r["id"])

    t1 = time.time()
    with ThreadPoolExecutor(3) as pool:
        java = dict(zip(paths, pool.map(java_read, paths)))
    print(f"Java oracle reads: {time.time() - t1:.1f}s")
    assert java == {"events": events, "users": users, "clicks": clicks}
