"""A primary-key table in Paimon's default mode (no `bucket` option: dynamic buckets) through every entry point.

One table takes turns of random upserts and deletes from `df.write.format("paimon")`, plain `spark.sql`
INSERT INTO and INSERT OVERWRITE on the attached table, `paimon_ds.write`, `paimon_ds.sql` (INSERT and
DELETE), a `writeStream.format("paimon")` query killed with SIGKILL and restarted, Java Paimon 0.9's own
dynamic-bucket writer, and df.write.format again. After every commit it equals a model, each key's rows sit
in one bucket and the hash index maps the key to that bucket; Java reads what paimon_ds reads.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.options.registry import OptionError
from tests.index.test_snapshot_assigner import check_one_bucket_per_key, index_of

JOB = Path(__file__).with_name("dyn_stream_job.py")
SCHEMA = "id BIGINT, dt STRING, v BIGINT, op STRING"
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64()), ("op", pa.string())])
DTS = ("d0", "d1", "d2")
KEYS = 150  # per partition
# Paimon's defaults but for a small target (so that buckets fill and new ones open within the test), few
# initial buckets, and a row-kind column (deletes through every entry point)
OPTIONS = {"primary-key": "dt,id", "partition": "dt", "rowkind.field": "op",
           "dynamic-bucket.target-row-num": "20", "dynamic-bucket.initial-buckets": "2"}

Key = tuple[str, int]


class Model:
    def __init__(self, seed: int) -> None:
        self.rows: dict[Key, tuple[int, str]] = {}
        self.rng = random.Random(seed)
        self.version = 0

    def changes(self, n: int, deletes: bool = True, dts: tuple[str, ...] = DTS,
                avoid: set[Key] | None = None) -> list[tuple]:
        """n rows of distinct keys (none of ``avoid``): upserts, and deletes of live keys (one order per write:
        no key twice)."""
        self.version += 1
        keys = self.rng.sample([(dt, i) for dt in dts for i in range(KEYS) if (dt, i) not in (avoid or ())], n)
        out = []
        for dt, i in keys:
            if deletes and (dt, i) in self.rows and self.rng.random() < 0.25:
                out.append((i, dt, self.version, "-D"))
            else:
                out.append((i, dt, self.version, "+U" if (dt, i) in self.rows else "+I"))
        return out

    def apply(self, rows: list[tuple]) -> None:
        for i, dt, v, op in rows:
            if op == "-D":
                self.rows.pop((dt, i), None)
            else:
                self.rows[(dt, i)] = (v, op)

    def overwrite(self, rows: list[tuple]) -> None:
        """Dynamic partition overwrite: the partitions written hold exactly these rows."""
        written = {dt for _, dt, _, _ in rows}
        self.rows = {k: v for k, v in self.rows.items() if k[0] not in written}
        self.apply(rows)

    def check(self, path: str, what: str) -> None:
        got = Table.load(path).to_arrow().to_pylist()
        table = {(r["dt"], r["id"]): (r["v"], r["op"]) for r in got}
        assert len(table) == len(got), f"after {what}: a key is read twice"
        assert table == self.rows, f"after {what}: the table differs from the model"
        homes = check_one_bucket_per_key(path)  # every key's rows in one bucket, the index agrees
        assert set(homes) == set(self.rows), what


def frame(spark, rows: list[tuple], partitions: int = 3):
    return spark.createDataFrame(rows, SCHEMA).repartition(partitions)


def run_stream(base: Path, path: str, model: Model, files: int, per_file: int, kills: int, seed: int) -> None:
    """writeStream.format("paimon") into the table, killed with SIGKILL ``kills`` times, then finished."""
    rng = random.Random(seed)
    inp, checkpoint = base / "stream-input", base / "stream-checkpoint"
    inp.mkdir(parents=True)
    start = time.time() - files - 10
    # A restarted query may read two files in one micro-batch, and its repartition keeps no order between
    # them: a key appears in one file only (it still meets the keys earlier writes left, upserts and deletes).
    streamed: set[Key] = set()
    for f in range(files):  # oldest first: the file source reads them in modification-time order
        rows = model.changes(per_file, avoid=streamed)
        streamed |= {(dt, i) for i, dt, _, _ in rows}
        model.apply(rows)
        file = inp / f"rows-{f:03d}.parquet"
        pq.write_table(pa.Table.from_pylist([dict(zip(ARROW_SCHEMA.names, r)) for r in rows], ARROW_SCHEMA), file)
        os.utime(file, (start + f, start + f))
    repo = str(JOB.parent.parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))

    def stream_snapshots() -> list:
        sm = Table.load(path).snapshot_manager
        return [s for s in (sm.snapshot(i) for i in sm.list_ids())
                if s.commit_user.startswith("spark-stream-") and s.commit_kind == "APPEND"]

    for _ in range(kills):
        before = len(stream_snapshots())
        proc = subprocess.Popen([sys.executable, str(JOB), "run", str(inp), str(checkpoint), path], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout.readline().strip() == "started", proc.stderr.read()[-3000:]
            deadline = time.time() + 180
            while len(stream_snapshots()) == before and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(rng.uniform(0.0, 1.5))  # kill while a later batch is in flight
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        check_one_bucket_per_key(path)  # whatever the kill interrupted, no key is in two buckets
    out = subprocess.run([sys.executable, str(JOB), "finish", str(inp), str(checkpoint), path], env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    # exactly once: one data snapshot per micro-batch Spark completed, under one commit user
    batches = sorted(int(n) for n in os.listdir(checkpoint / "commits") if n.isdigit())
    snaps = stream_snapshots()
    assert sorted(s.commit_identifier for s in snaps) == batches == list(range(len(batches)))
    assert len({s.commit_user for s in snaps}) == 1


def test_one_dynamic_bucket_table_through_every_entry_point(spark, tmp_path, java_oracle):
    warehouse = tmp_path / "wh"
    path = str(warehouse / "dynentry.db" / "t")
    model = Model(seed=18)

    # the first write creates the table: primary key, no bucket option (Paimon's default: dynamic buckets)
    rows = model.changes(120, deletes=False)
    frame(spark, rows).write.format("paimon").options(**OPTIONS).mode("append").save(path)
    model.apply(rows)
    model.check(path, "the first df.write.format")
    assert Table.load(path).bucket == -1 and "bucket" not in Table.load(path).schema().options
    paimon_ds.attach(spark, str(warehouse))

    for turn in range(2):
        rows = model.changes(60)
        frame(spark, rows).write.format("paimon").mode("append").save(path)
        model.apply(rows)
        model.check(path, f"df.write.format, turn {turn}")

        rows = model.changes(60)
        frame(spark, rows, 2).createOrReplaceTempView("dyn_src")
        spark.sql("INSERT INTO dynentry.t SELECT id, dt, v, op FROM dyn_src")
        model.apply(rows)
        model.check(path, f"spark.sql INSERT INTO, turn {turn}")

        rows = model.changes(40, deletes=False, dts=(DTS[turn],))
        frame(spark, rows, 2).createOrReplaceTempView("dyn_src")
        spark.sql("INSERT OVERWRITE dynentry.t WITH ('partitionOverwriteMode' = 'dynamic') "
                  "SELECT id, dt, v, '+I' AS op FROM dyn_src")
        model.overwrite([(i, dt, v, "+I") for i, dt, v, _ in rows])
        model.check(path, f"spark.sql INSERT OVERWRITE, turn {turn}")

        rows = model.changes(60)
        paimon_ds.write(frame(spark, rows), path)
        model.apply(rows)
        model.check(path, f"paimon_ds.write, turn {turn}")

        rows = model.changes(50)
        frame(spark, rows, 2).createOrReplaceTempView("dyn_src")
        paimon_ds.sql(spark, "INSERT INTO dynentry.t SELECT id, dt, v, op FROM dyn_src")
        model.apply(rows)
        model.check(path, f"paimon_ds.sql INSERT, turn {turn}")

        paimon_ds.sql(spark, f"DELETE FROM dynentry.t WHERE dt = '{DTS[2 - turn]}' AND id % 5 = {turn}")
        model.rows = {k: v for k, v in model.rows.items() if not (k[0] == DTS[2 - turn] and k[1] % 5 == turn)}
        model.check(path, f"paimon_ds.sql DELETE, turn {turn}")

    run_stream(tmp_path / "stream", path, model, files=8, per_file=30, kills=2, seed=18)
    model.check(path, "the streaming query")

    # Java Paimon 0.9 reads the same rows, then upserts the same keys with its own HashBucketAssigner
    java = java_oracle.read(path)
    assert {(r["dt"], r["id"]): (r["v"], r["op"]) for r in java.to_pylist()} == model.rows
    again = [(i, dt, 1000 + n, "+I") for n, ((dt, i), _) in enumerate(sorted(model.rows.items())[::2])]
    new = [(KEYS + n, DTS[n % 3], 2000 + n, "+I") for n in range(30)]
    java_oracle.write(path, pa.Table.from_pylist([dict(zip(ARROW_SCHEMA.names, r)) for r in again + new],
                                                 ARROW_SCHEMA))
    model.apply(again + new)
    model.check(path, "Java's upserts")

    # and paimon_ds continues from Java's index: the same keys again, and more new ones
    rows = [(i, dt, 3000 + n, "+U") for n, ((dt, i), _) in enumerate(sorted(model.rows.items())[1::3])]
    rows += [(KEYS + 30 + n, DTS[n % 3], 4000 + n, "+I") for n in range(30)]
    frame(spark, rows).write.format("paimon").mode("append").save(path)
    model.apply(rows)
    model.check(path, "df.write.format after Java")
    java = java_oracle.read(path)
    assert {(r["dt"], r["id"]): (r["v"], r["op"]) for r in java.to_pylist()} == model.rows
    sm = Table.load(path).snapshot_manager
    print(f"\n{len(sm.list_ids())} snapshots; buckets per partition: "
          f"{ {dt: sorted(b for d, b in index_of(path) if d == dt) for dt in DTS} }")


def test_the_first_primary_key_write_of_a_new_user(spark, tmp_path, java_oracle):
    """The first primary-key example of docs/tables/kinds.md: no bucket option."""
    path = str(tmp_path / "wh" / "db.db" / "users")
    df = spark.createDataFrame([(1, "ann"), (2, "bob"), (3, "cy")], "id BIGINT, name STRING")
    df.write.format("paimon").option("primary-key", "id").mode("append").save(path)
    spark.createDataFrame([(2, "BOB"), (4, "dee")], df.schema).write.format("paimon").mode("append").save(path)
    expected = [(1, "ann"), (2, "BOB"), (3, "cy"), (4, "dee")]
    assert sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect()) == expected
    assert sorted(tuple(r.values()) for r in java_oracle.read(path).to_pylist()) == expected
    assert Table.load(path).bucket == -1
    # Spark itself refuses a Python source's default save mode (ErrorIfExists) before paimon_ds is asked
    with pytest.raises(Exception, match="ErrorIfExists"):
        df.write.format("paimon").option("primary-key", "id").save(path)
    assert sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect()) == expected


def test_cross_partition_tables_are_refused_before_anything_is_written(spark, tmp_path):
    """A primary key without the partition key needs the global index's shuffle: every entry point without it
    refuses before any file is written, naming what works; paimon_ds.write does it."""
    path = str(tmp_path / "wh" / "db.db" / "x")
    df = spark.createDataFrame([(1, "a", 1), (2, "b", 2)], "id BIGINT, dt STRING, v BIGINT")
    opts = {"primary-key": "id", "partition": "dt"}
    with pytest.raises(Exception, match="cross-partition upsert table") as refused:
        df.write.format("paimon").options(**opts).mode("append").save(path)
    assert "paimon_ds.write(df, path)" in str(refused.value)
    assert not os.path.exists(path)  # not even the schema
    paimon_ds.write(df, path, options=opts)
    before = sorted(os.listdir(path))
    snapshots = Table.load(path).snapshot_manager.list_ids()
    with pytest.raises(Exception, match="cross-partition upsert table"):
        spark.createDataFrame([(1, "b", 5)], df.schema).write.format("paimon").mode("append").save(path)
    stream_input = tmp_path / "in"
    stream_input.mkdir()
    pq.write_table(pa.table({"id": pa.array([3], pa.int64()), "dt": ["c"], "v": pa.array([3], pa.int64())}),
                   stream_input / "f.parquet")
    query = (spark.readStream.schema("id BIGINT, dt STRING, v BIGINT").parquet(str(stream_input)).writeStream
             .format("paimon").option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True)
             .start(path))
    with pytest.raises(Exception, match="cross-partition upsert table"):
        query.awaitTermination()
    assert sorted(os.listdir(path)) == before and Table.load(path).snapshot_manager.list_ids() == snapshots
    assert sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect()) == [(1, "a", 1), (2, "b", 2)]
    with pytest.raises(OptionError):
        from paimon_ds.spark.write import refuse_cross_partition
        refuse_cross_partition(Table.load(path), "a test")


def index_sizes(path: str) -> dict[int, int]:
    """Keys per bucket of an unpartitioned dynamic-bucket table, from its hash index."""
    return {b: len(h) for (_, b), h in sorted(index_of_unpartitioned(path).items())}


def index_of_unpartitioned(path: str) -> dict[tuple[str, int], set]:
    from paimon_ds.index.bucket_assigner import snapshot_index_entries
    from paimon_ds.index.hash_index import read_hash_index
    table = Table.load(path)
    return {("", e.bucket): set(read_hash_index(table.store, e.partition, e.bucket, e.index_file).tolist())
            for e in snapshot_index_entries(table.store, table.latest_snapshot())}


@pytest.mark.parametrize("initial", [None, 4])
def test_a_million_new_keys_in_one_write(spark, tmp_path, initial):
    """1M new keys, target 100k, through df.write.format (4 tasks). The docs' bound: a write of M new keys
    into candidates with room R fills each to about target * max(1, M / R), R >= initial-buckets x target."""
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "dynamic-bucket.target-row-num": "100000"}
    if initial:
        opts["dynamic-bucket.initial-buckets"] = str(initial)
    spark.range(1_000_000, numPartitions=4).selectExpr("id", "id * 2 AS v").write.format("paimon") \
        .options(**opts).mode("append").save(path)
    first = index_sizes(path)
    buckets = initial or 16
    expected = 1_000_000 / buckets  # M / R x target: 250k each with 4 initial buckets, 62.5k with the default 16
    print(f"\ninitial-buckets={initial or 'default (16)'}: keys per bucket after 1M new keys: {first}")
    assert sorted(first) == list(range(buckets)) and sum(first.values()) == 1_000_000
    assert all(abs(n - expected) < 0.02 * expected for n in first.values()), first

    spark.range(1_000_000, 1_300_000, numPartitions=2).selectExpr("id", "id * 2 AS v").write.format("paimon") \
        .mode("append").save(path)
    second = index_sizes(path)
    print(f"after 300k more new keys: {second}")
    assert sum(second.values()) == 1_300_000
    grew = {b: second[b] - first.get(b, 0) for b in second if second[b] != first.get(b, 0)}
    # buckets that were full took no key; the new keys went to buckets with room or to new buckets
    assert all(first[b] < 100_000 for b in grew if b in first)
    assert all(first.get(b, 0) + grew[b] <= 100_000 * 1.02 for b in grew if first.get(b, 0) < 100_000)
    if initial:
        assert sorted(set(second) - set(first)) == [4, 5, 6, 7] and not set(grew) & set(first)
    assert spark.read.format("paimon").load(path).count() == 1_300_000


def test_the_same_new_key_in_two_spark_tasks(spark, tmp_path):
    """Both tasks of one df.write.format meet new keys 0..199 (and an indexed key 500): one row per key, in one
    bucket, and the later Spark partition's row wins."""
    from pyspark.sql import functions as F
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "dynamic-bucket.target-row-num": "30", "dynamic-bucket.initial-buckets": "3"}
    spark.createDataFrame([(500, -1)], "id BIGINT, v BIGINT").write.format("paimon").options(**opts) \
        .mode("append").save(path)
    rows = [(k, 0) for k in range(200)] + [(500, 0)] + [(k, 1) for k in range(200)] + [(500, 1)]
    df = spark.sparkContext.parallelize(rows, 2).toDF("id BIGINT, v BIGINT")
    assert [sorted({r.v for r in p}) for p in df.rdd.glom().collect()] == [[0], [1]]  # partition 1 holds v = 1
    assert df.select(F.spark_partition_id().alias("p")).distinct().count() == 2
    df.write.format("paimon").mode("append").save(path)
    got = sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect())
    assert got == [(k, 1) for k in range(200)] + [(500, 1)]
    homes = {k: b for (_, k), b in check_one_bucket_per_key_unpartitioned(path).items()}
    assert len(homes) == 201 and len(set(homes.values())) >= 3


def check_one_bucket_per_key_unpartitioned(path: str) -> dict[tuple[str, int], int]:
    """(partition '', id) -> bucket: each key's rows in one bucket (merged reads per bucket split)."""
    table = Table.load(path)
    where: dict[tuple[str, int], set[int]] = {}
    for split in table.new_scan().plan():
        for batch in table.new_read().read(split):
            for k in batch.column("id").to_pylist():
                where.setdefault(("", k), set()).add(split.bucket)
    assert all(len(b) == 1 for b in where.values())
    indexed = index_of_unpartitioned(path)
    seen: set = set()
    for hashes in indexed.values():
        assert not seen & hashes
        seen |= hashes
    return {k: next(iter(b)) for k, b in where.items()}
