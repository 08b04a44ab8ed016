"""A postpone-bucket table (`bucket` = -2) through every Spark entry point, as Paimon's Spark connector writes it.

`df.write.format("paimon")`, INSERT INTO a view, `writeStream.format("paimon")` and `paimon_ds.write` put rows
straight into real buckets (`postpone.batch-write-fixed-bucket`, Paimon's Spark writer, batch and streaming);
with the option false a write goes to the postpone buckets, which `spark.read` does not show until
`paimon_ds.compact` (one Spark task per partition) moves the rows into buckets. After every step the table equals a
model and every row sits in the bucket Paimon's hash of its key gives among its partition's buckets.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import paimon_ds
from paimon_ds import Table
from paimon_ds.format.bucket import bucket_ids
from paimon_ds.operation.scan import TableScan

OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "-2"}
POSTPONE = {"postpone.batch-write-fixed-bucket": "false"}


def frame(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, "id BIGINT, dt STRING, v STRING")


def check(spark, path: str, model: dict, counts: dict[str, int], through_spark: bool = False) -> None:
    """The table equals the model (read by the core; ``through_spark``: by spark.read), each row in its bucket."""
    got = (spark.read.format("paimon").load(path).toArrow() if through_spark
           else Table.load(path).to_arrow()).to_pylist()
    assert sorted((r["dt"], r["id"], r["v"]) for r in got) == sorted((dt, i, v) for (dt, i), v in model.items())
    table = Table.load(path)
    scan = TableScan(table)
    for e in scan.read_entries():
        if e.bucket >= 0:
            assert e.total_buckets == counts[scan.partition_dir(e.partition)]
    for split in table.new_scan().plan():
        rows = pa.Table.from_batches(list(table.new_read().read(split)), table.arrow_schema())
        n = counts[scan.partition_dir(split.partition)]
        assert set(bucket_ids([rows.column("id")], [table.table_schema.field("id").type], n)) <= {split.bucket}


def test_postpone_table_through_every_entry_point(spark, tmp_path, table_path):
    model: dict = {}
    counts = {"dt=d0": 3, "dt=d1": 3}
    # a new partition's count is postpone.default-bucket-num; it keeps it afterwards
    batch = [(i, "d0", "w1") for i in range(6)] + [(i, "d1", "w1") for i in range(4, 10)]
    (frame(spark, batch).write.format("paimon").options(**OPTIONS).option("postpone.default-bucket-num", "3")
     .mode("append").save(table_path))
    model.update({(dt, i): v for i, dt, v in batch})
    check(spark, table_path, model, counts)

    frame(spark, [(1, "d1", "sql"), (7, "d0", "sql")]).createOrReplaceTempView("postpone_src")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW postpone_t USING paimon OPTIONS (path '{table_path}')")
    spark.sql("INSERT INTO postpone_t SELECT * FROM postpone_src")
    model.update({("d1", 1): "sql", ("d0", 7): "sql"})
    check(spark, table_path, model, counts)

    source = tmp_path / "stream-in"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([2, 8], pa.int64()), "dt": ["d0", "d1"], "v": ["stream", "stream"]}),
                   source / "part-0.parquet")
    q = (spark.readStream.schema("id BIGINT, dt STRING, v STRING").parquet(str(source)).writeStream
         .format("paimon").option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True)
         .start(table_path))
    q.awaitTermination()
    model.update({("d0", 2): "stream", ("d1", 8): "stream"})
    check(spark, table_path, model, counts)

    # into the postpone buckets: not read until a compaction moves the rows
    frame(spark, [(3, "d0", "later"), (11, "d2", "later")]).write.format("paimon").options(**POSTPONE) \
        .mode("append").save(table_path)
    check(spark, table_path, model, counts, through_spark=True)
    assert paimon_ds.compact(spark, table_path).commit_kind == "COMPACT"
    model.update({("d0", 3): "later", ("d2", 11): "later"})
    counts["dt=d2"] = 3  # the first write stored the option in the table
    check(spark, table_path, model, counts)

    paimon_ds.write(frame(spark, [(4, "d1", "pds"), (12, "d2", "pds")]), table_path)
    model.update({("d1", 4): "pds", ("d2", 12): "pds"})
    check(spark, table_path, model, counts, through_spark=True)
