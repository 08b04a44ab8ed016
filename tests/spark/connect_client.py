"""A Spark Connect client process (paimon_ds installed here, not on the server): one scenario, its results
as JSON on the last line of stdout. Usage: connect_client.py URL BASE_DIR SCENARIO."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import paimon_ds
from paimon_ds import Catalog, procedures


def rows(df) -> list[list]:
    return sorted([list(r) for r in df.collect()], key=lambda r: [(v is None, v) for v in r])


def error_of(fn) -> dict:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test asserts the type and message
        return {"type": f"{type(e).__module__}.{type(e).__name__}", "message": str(e)}
    return {"type": None, "message": None}


def batch(spark: SparkSession, base: Path) -> dict:
    """A primary-key table (two commits, the second an upsert) and an append table, read back filtered."""
    pk, log = str(base / "wh/db.db/pk"), str(base / "wh/db.db/log")
    first = spark.createDataFrame([(i, f"v{i}", float(i)) for i in range(10)], "id INT, name STRING, score DOUBLE")
    first.write.format("paimon").mode("append").option("primary-key", "id").option("bucket", "2").save(pk)
    upsert = spark.createDataFrame([(i, f"w{i}", i * 10.0) for i in range(5, 15)], "id INT, name STRING, score DOUBLE")
    upsert.write.format("paimon").mode("append").save(pk)
    events = [(i, f"2026-11-0{1 + i % 2}", f"e{i}") for i in range(8)]
    # Avro data files: snappy blocks, which the server's pure-Python fastavro writes through pyarrow
    spark.createDataFrame(events[:4], "n BIGINT, dt STRING, what STRING").write.format("paimon") \
        .mode("append").option("partition", "dt").option("file.format", "avro").save(log)
    spark.createDataFrame(events[4:], "n BIGINT, dt STRING, what STRING").write.format("paimon") \
        .mode("append").save(log)
    return {
        "pk_filtered": rows(spark.read.format("paimon").load(pk).where("id >= 4 AND id < 12")),
        "pk_all": rows(spark.read.format("paimon").load(pk)),
        "log_filtered": rows(spark.read.format("paimon").load(log).where("dt = '2026-11-02'")),
        "log_all": rows(spark.read.format("paimon").load(log)),
    }


def api(spark: SparkSession, base: Path) -> dict:
    """attach + plain spark.sql, and the Python table API, each over Connect."""
    warehouse = str(base / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    catalog.create_table("db.t", pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"})
    out: dict = {}
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("INSERT INTO db.t VALUES (2, 'B')")
    out["sql_select"] = rows(spark.sql("SELECT id, v FROM db.t WHERE id >= 2"))
    out["sql_tables"] = rows(spark.sql("SHOW TABLES IN db").select("tableName"))
    out["sql_snapshots"] = rows(spark.sql("SELECT snapshot_id, commit_kind FROM global_temp.`db.t$snapshots`"))
    out["paimon_sql"] = error_of(lambda: paimon_ds.sql(spark, "ALTER TABLE db.t SET TBLPROPERTIES ('a' = 'b')"))

    path = str(base / "wh/db.db/t")
    paimon_ds.write(spark.createDataFrame([(4, "d"), (5, "e")], "id INT, v STRING"), path)  # clustered write
    out["compact"] = paimon_ds.compact(spark, path, full=True).commit_kind
    paimon_ds.delete(spark, path, "id = 1")
    paimon_ds.update(spark, path, {"v": "upper(v)"}, "id >= 4")
    source = spark.createDataFrame([(3, "merged"), (9, "new")], "id INT, v STRING")
    paimon_ds.merge(spark, path, source, "t.id = s.id", [paimon_ds.Update()], [paimon_ds.Insert()])
    out["latest"] = rows(paimon_ds.read(spark, path))
    out["at_snapshot_2"] = rows(paimon_ds.read(spark, path, snapshot_id=2))
    out["snapshots_before_expire"] = rows(paimon_ds.system_table(spark, path, "snapshots").select("snapshot_id"))
    out["expired"] = procedures.expire_snapshots(path, retain_max=2, retain_min=1).expired
    out["after_expire"] = rows(paimon_ds.read(spark, path))

    # A second session of the same server (a reconnecting client) shares its session catalog, not its conf
    other = SparkSession.builder.remote(URL).create()
    paimon_ds.register(other)
    paimon_ds.attach(other, warehouse)
    other.sql("INSERT INTO db.t VALUES (7, 'g')")
    out["other_session"] = rows(other.sql("SELECT id, v FROM db.t"))
    return out


def stream(spark: SparkSession, base: Path) -> dict:
    """JSON files into a table with writeStream.format("paimon"), availableNow, two runs of one checkpoint."""
    source, target, checkpoint = base / "in", str(base / "wh/db.db/events"), str(base / "checkpoint")
    source.mkdir(parents=True, exist_ok=True)
    runs = []
    for run, ids in enumerate((range(0, 30), range(30, 50))):
        (source / f"part-{run}.json").write_text("".join(json.dumps({"id": i, "run": run}) + "\n" for i in ids))
        query = spark.readStream.format("json").schema("id BIGINT, run INT").load(str(source)) \
            .writeStream.format("paimon").option("checkpointLocation", checkpoint) \
            .trigger(availableNow=True).start(target)
        query.awaitTermination()
        runs.append(query.lastProgress["batchId"] if query.lastProgress else None)
    out = {"rows": rows(spark.read.format("paimon").load(target)), "last_batch_ids": runs}

    # the table itself as a stream (its snapshots, then later commits) into a primary-key table
    copy, copy_checkpoint = str(base / "wh/db.db/latest_run"), str(base / "checkpoint-copy")
    for extra in ([], [(50, 2), (51, 2)]):
        if extra:
            spark.createDataFrame(extra, "id BIGINT, run INT").write.format("paimon").mode("append").save(target)
        spark.readStream.format("paimon").load(target).groupBy("run") \
            .agg(F.max("id").alias("max_id"), F.count("*").alias("n")) \
            .writeStream.format("paimon").outputMode("complete").option("checkpointLocation", copy_checkpoint) \
            .option("primary-key", "run").option("bucket", "1").trigger(availableNow=True).start(copy) \
            .awaitTermination()
    out["per_run"] = rows(spark.read.format("paimon").load(copy))

    return out


def foreach_batch(spark: SparkSession, base: Path) -> dict:
    """writeStream.foreachBatch(paimon_ds.foreach_batch_writer(...)): upserts into a dynamic-bucket PK table
    through the package's shuffle, one commit per micro-batch (two runs of one checkpoint)."""
    source, target = base / "in", str(base / "wh/db.db/by_batch")
    source.mkdir(parents=True, exist_ok=True)
    writer = paimon_ds.foreach_batch_writer(target, "connect-test", {"primary-key": "id", "bucket": "-1"})
    for run, ids in enumerate((range(0, 20), range(10, 30))):  # the second run upserts ids 10..19
        (source / f"part-{run}.json").write_text("".join(json.dumps({"id": i, "run": run}) + "\n" for i in ids))
        spark.readStream.format("json").schema("id BIGINT, run INT").load(str(source)).writeStream \
            .foreachBatch(writer).option("checkpointLocation", str(base / "checkpoint")) \
            .trigger(availableNow=True).start().awaitTermination()
    snapshots = paimon_ds.system_table(spark, target, "snapshots").where("commit_kind = 'APPEND'")
    return {"rows": rows(spark.read.format("paimon").load(target)),
            "commits": rows(snapshots.select("commit_user", "commit_identifier"))}


URL = ""
SCENARIOS = {"batch": batch, "api": api, "stream": stream, "foreach_batch": foreach_batch}


def main() -> None:
    global URL
    URL, base, scenario = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    started = time.time()
    spark = SparkSession.builder.remote(URL).getOrCreate()
    paimon_ds.register(spark)
    result = SCENARIOS[scenario](spark, base)
    result["connect"] = type(spark).__module__
    result["elapsed_s"] = round(time.time() - started, 1)
    spark.stop()
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
