"""A streaming driver the exactly-once tests start, SIGKILL and restart (run as a script).

Two queries read one file source of numbered events (one file per micro-batch) and write an
append table and a primary-key table (CDC: the `op` column is the row kind). ``run`` keeps
processing until killed; ``finish`` processes whatever is left (Trigger.AvailableNow) and exits.
The tables live in ``warehouse`` (default: BASE/warehouse; an s3:// URL with its storage options as JSON
for the S3 runs); input and checkpoints stay under BASE.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EVENT_SCHEMA = "event BIGINT, key BIGINT, value BIGINT, op STRING, file INT"


def main(mode: str, base: str, warehouse: str | None = None, storage: dict[str, str] | None = None) -> None:
    import paimon_ds
    root = Path(base)
    warehouse = warehouse or str(root / "warehouse")
    spark = paimon_ds.session("paimon_ds-stream-job", master="local[2]",
                              conf={"spark.sql.shuffle.partitions": "2"})
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(root / "input"))
    sinks = {
        "append": {"bucket": "-1"},
        # sequence.field: after a restart Spark may put two event files in one batch, whose rows repartition(2)
        # spreads over both tasks; without it the later Spark partition would win, not the later event
        "pk": {"primary-key": "key", "bucket": "4", "rowkind.field": "op", "sequence.field": "event",
               "num-sorted-run.compaction-trigger": "3"},
    }
    queries = []
    for name, options in sinks.items():
        # the PK table gets a repartitioned input: several tasks then write one bucket in one batch
        source = events.repartition(2) if name == "pk" else events
        writer = source.writeStream.format("paimon").options(**options).options(**(storage or {})) \
            .option("checkpointLocation", str(root / f"checkpoint-{name}")).queryName(name)
        trigger = {"availableNow": True} if mode == "finish" else {"processingTime": "0 seconds"}
        queries.append(writer.trigger(**trigger).start(f"{warehouse}/db.db/{name}"))
    print("started", flush=True)
    for q in queries:
        q.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(sys.argv[3:4]), *[json.loads(a) for a in sys.argv[4:5]])
