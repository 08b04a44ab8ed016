"""`make demo`: the main job on an embedded default (local Spark, local warehouse ./demo-warehouse).

Writes an events table partitioned by day with fixed buckets, appends to it, overwrites one day,
reads it back with a filter, travels back in time, and prints the snapshots -- then shows that the
table is a real Paimon table by listing its files. Then streams a synthetic CDC feed (inserts,
updates, deletes across partitions) into a primary-key table with Structured Streaming, checks the
result against the feed's own model, and prints the stream's snapshots (one per micro-batch).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import paimon_ds
from paimon_ds import Table


def main(warehouse: str = "demo-warehouse") -> None:
    path = os.path.abspath(os.path.join(warehouse, "demo.db", "events"))
    shutil.rmtree(path, ignore_errors=True)
    spark = paimon_ds.session("paimon_ds-demo")
    events = spark.sql("""
        SELECT id, concat('user-', id % 97) AS user, CAST(id % 1000 AS DOUBLE) / 10 AS amount,
               date_add(DATE'2024-01-01', CAST(id % 3 AS INT)) AS day
        FROM range(0, 300000)""")
    writer = events.write.format("paimon").option("partition", "day").option("bucket", "4") \
        .option("bucket-key", "id")
    writer.mode("append").save(path)
    print(f"1. appended {events.count():,} events to {path}")

    more = spark.sql("SELECT id, 'late' AS user, DOUBLE(1) AS amount, DATE'2024-01-03' AS day "
                     "FROM range(300000, 301000)")
    more.write.format("paimon").mode("append").save(path)
    fix = spark.sql("SELECT id, 'fixed' AS user, DOUBLE(0) AS amount, DATE'2024-01-02' AS day FROM range(0, 10)")
    fix.write.format("paimon").option("partitionOverwriteMode", "dynamic").mode("overwrite").save(path)
    print("2. appended 1,000 late events; replaced day 2024-01-02 with 10 corrected rows")

    table = spark.read.format("paimon").load(path)
    print("3. rows per day now:")
    table.groupBy("day").count().orderBy("day").show()
    print("   user-5's events on 2024-01-01:",
          table.filter("day = DATE'2024-01-01' AND user = 'user-5'").count())
    first = spark.read.format("paimon").option("scan.snapshot-id", "1").load(path)
    print(f"4. time travel to snapshot 1: {first.count():,} rows")

    print("5. snapshots:")
    t = Table.load(path)
    sm = t.snapshot_manager
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        print(f"   {s.id}  {s.commit_kind:<9}  total={s.total_record_count:>7,}  delta={s.delta_record_count:>+8,}")
    files = sum(len(s.files) for s in t.new_scan().plan())
    print(f"6. {files} live data files in {len(os.listdir(path))} top-level entries: {sorted(os.listdir(path))}")
    stream_cdc(spark, os.path.abspath(os.path.join(warehouse, "demo.db", "orders")))
    spark.stop()


CDC_DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
CDC_SCHEMA = pa.schema([("op", pa.string()), ("dt", pa.string()), ("id", pa.int64()),
                        ("customer", pa.string()), ("amount", pa.float64())])


def cdc_feed(batches: int = 5, seed: int = 7) -> tuple[list[list[dict]], dict[tuple[str, int], dict]]:
    """A change feed of orders: batch 0 inserts 3,000 rows over three days, each later batch updates
    (+U), deletes (-D) and inserts (+I) rows. Returns the batches and the rows that remain, by key."""
    rng = random.Random(seed)
    live: dict[tuple[str, int], dict] = {}
    out, next_id = [], 0
    for b in range(batches):
        rows = []
        if b == 0:
            inserts, changed = 3000, []
        else:
            inserts, changed = 300, rng.sample(sorted(live), 600)  # distinct keys: one change per key per batch
        for i, key in enumerate(changed):
            row = dict(live[key])
            if i % 3 == 0:  # a third of the changes delete the order
                rows.append(dict(row, op="-D"))
                del live[key]
            else:
                row.update(op="+U", amount=round(row["amount"] + rng.uniform(1, 50), 2))
                rows.append(row)
                live[key] = row
        for _ in range(inserts):
            row = {"op": "+I", "dt": rng.choice(CDC_DAYS), "id": next_id, "customer": f"c-{rng.randrange(200)}",
                   "amount": round(rng.uniform(5, 500), 2)}
            next_id += 1
            rows.append(row)
            live[(row["dt"], row["id"])] = row
        out.append(rows)
    return out, live


def stream_cdc(spark: SparkSession, path: str) -> None:
    """Structured Streaming: a CDC feed (one parquet file per micro-batch) into a primary-key table."""
    shutil.rmtree(path, ignore_errors=True)
    batches, live = cdc_feed()
    work = tempfile.mkdtemp(prefix="paimon_ds-demo-cdc-")
    try:
        source = os.path.join(work, "feed")
        os.makedirs(source)
        base = time.time() - 100
        for i, rows in enumerate(batches):
            f = os.path.join(source, f"changes-{i:03d}.parquet")
            pq.write_table(pa.Table.from_pylist(rows, schema=CDC_SCHEMA), f)
            os.utime(f, (base + i, base + i))  # the file source reads oldest first: keep the feed's order
        feed = spark.readStream.format("parquet").schema("op STRING, dt STRING, id BIGINT, customer STRING, "
                                                         "amount DOUBLE").option("maxFilesPerTrigger", 1).load(source)
        query = (feed.writeStream.format("paimon")
                 .option("primary-key", "dt,id").option("partition", "dt").option("bucket", "2")
                 .option("rowkind.field", "op")  # +I/+U/-D per row: deletes remove the key
                 .option("checkpointLocation", os.path.join(work, "checkpoint"))
                 .trigger(availableNow=True).start(path))
        try:
            query.awaitTermination()
        finally:
            query.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    changes = sum(len(b) for b in batches)
    print(f"7. streamed a CDC feed of {changes:,} changes in {len(batches)} micro-batches "
          f"(writeStream.format('paimon'), trigger(availableNow=True)) into {path}")

    orders = spark.read.format("paimon").load(path)
    orders.orderBy("dt", "id").show(5)
    count = orders.count()
    print(f"   {count:,} orders remain; the feed's model says {len(live):,}")
    assert count == len(live), f"the CDC table has {count} rows, the model {len(live)}"
    got = {(r["dt"], r["id"]): r.asDict() for r in orders.collect()}
    assert got == live, "the CDC table differs from the model of the feed"
    print("   per day:", ", ".join(f"{r['dt']}: {r['count']:,}" for r in orders.groupBy("dt").count()
                                    .orderBy("dt").collect()))

    print("8. the stream's snapshots (one APPEND per micro-batch, identifier = batch id; COMPACT by the committer):")
    sm = Table.load(path).snapshot_manager
    print(f"   {'id':>3}  {'commitKind':<10}  {'commitIdentifier':>16}  {'deltaRecordCount':>16}")
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        print(f"   {s.id:>3}  {s.commit_kind:<10}  {s.commit_identifier:>16}  {s.delta_record_count:>+16,}")


if __name__ == "__main__":
    main(*sys.argv[1:])
