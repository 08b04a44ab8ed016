"""A streaming driver that writes a dynamic-bucket table with writeStream.format("paimon") (run as a script).

tests/spark/test_dynamic_bucket_entry_points.py starts it, kills it with SIGKILL and restarts it from its
checkpoint. Input: parquet files of (id, dt, v, op) rows, one file per micro-batch, repartitioned so that
several tasks write each batch. ``run`` keeps processing until killed; ``finish`` processes what is left
(Trigger.AvailableNow) and exits.

    python dyn_stream_job.py run|finish INPUT_DIR CHECKPOINT TABLE_PATH
"""

from __future__ import annotations

import sys

SCHEMA = "id BIGINT, dt STRING, v BIGINT, op STRING"


def main(mode: str, input_dir: str, checkpoint: str, table: str) -> None:
    import paimon_ds
    spark = paimon_ds.session("paimon_ds-dyn-stream-job", master="local[2]",
                              conf={"spark.sql.shuffle.partitions": "2"})
    rows = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(input_dir)
    trigger = {"availableNow": True} if mode == "finish" else {"processingTime": "0 seconds"}
    query = (rows.repartition(2).writeStream.format("paimon").option("checkpointLocation", checkpoint)
             .trigger(**trigger).start(table))
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
