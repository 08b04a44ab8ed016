"""Spark writes whose tasks or driver-side commit fail, for tests/spark/test_write_faults.py (run as a script).

One Spark session (`local[2,4]`: a failed task is tried up to 4 times) runs every case of CASES on its own table
under WAREHOUSE, then prints one JSON line: case -> what Spark reported. The test checks the tables afterwards.
The faults come from tests/spark/fault_site/sitecustomize.py in every Python process of the job, armed by the
plans of fault_plans() in the PAIMON_DS_TEST_FAULTS environment variable (test_write_faults.run_job sets both).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 2000
# primary-key tables whose writers flush a file every few hundred rows: a task has files on disk long before its end
FLUSHING_PK = {"primary-key": "id", "bucket": "2", "write-buffer-size": "8 kb", "write-buffer-spillable": "false"}


def fault_plans(warehouse: str, marks: str) -> list[dict[str, Any]]:
    """The faults of the job's cases (see fault_site/sitecustomize.py), each fired once in the whole job."""
    def plan(case: str, op: str, path: str, fault: str, nth: int = 1) -> dict[str, Any]:
        return {"op": op, "path": f"{warehouse}/db.db/{case}/{path}", "fault": fault, "nth": nth,
                "once": f"{marks}/{case}"}
    return [
        # a task's Python worker dies as it closes its second data file (its first one complete on disk)
        plan("task_killed", "close", r"bucket-\d+/data-[^/]*\.parquet$", "kill", nth=2),
        # the worker running the driver's commit() dies right after creating snapshot-1
        plan("commit_killed", "link", r"snapshot/snapshot-1$", "kill-after"),
        # snapshot-1 is created but the answer is lost
        plan("commit_answer_lost", "link", r"snapshot/snapshot-1$", "after"),
        # the stream's commit of batch 0 dies right after creating snapshot-1
        plan("stream_commit_killed", "link", r"snapshot/snapshot-1$", "kill-after"),
    ]


def rows(spark, start: int, count: int):
    return spark.range(start, start + count, numPartitions=2).selectExpr("id", "concat('v', id) AS v")


def outcome(write: Callable[[], None]) -> dict[str, Any]:
    """Whether ``write`` succeeded, the error Spark raised if not (its start, and the message of an error the
    source's abort() raised, which Spark attaches to it as suppressed), and how long it took."""
    started = time.monotonic()
    error = aborted = None
    try:
        write()
    except Exception as e:  # noqa: BLE001 - reported to the test, which judges it
        text = f"{type(e).__name__}: {e}"
        error = text[:3000]
        found = re.search(r"CommitLandedError: ([^\n]*)", text)
        aborted = found.group(1) if found else None
    return {"ok": error is None, "error": error, "abort_error": aborted,
            "seconds": round(time.monotonic() - started, 1)}


def failing_upstream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Passes rows on in small batches; the first attempt of task 0 raises once 500 of its rows went to the writer."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    sent = 0
    for batch in batches:
        for start in range(0, batch.num_rows, 50):
            yield batch.slice(start, 50)
            sent += 50
            if ctx.partitionId() == 0 and ctx.attemptNumber() == 0 and sent == 500:
                time.sleep(0.5)  # the writer takes those rows (and flushes files) first
                raise RuntimeError("injected failure upstream of the writer (first attempt of task 0)")


def upstream_fails(spark, path: str) -> dict[str, Any]:
    df = rows(spark, 0, ROWS)
    df = df.mapInArrow(failing_upstream, df.schema)
    return outcome(lambda: df.write.format("paimon").mode("append").options(**FLUSHING_PK).save(path))


def task_killed(spark, path: str) -> dict[str, Any]:
    return outcome(lambda: rows(spark, 0, ROWS).write.format("paimon").mode("append").options(**FLUSHING_PK)
                   .save(path))


def commit_killed(spark, path: str) -> dict[str, Any]:
    first = outcome(lambda: rows(spark, 0, ROWS).write.format("paimon").mode("append").save(path))
    second = outcome(lambda: rows(spark, ROWS, ROWS).write.format("paimon").mode("append").save(path))
    return {**first, "second": second}


def commit_answer_lost(spark, path: str) -> dict[str, Any]:
    return outcome(lambda: rows(spark, 0, ROWS).write.format("paimon").mode("append").save(path))


def stream_commit_killed(spark, path: str) -> dict[str, Any]:
    """Two input files, one micro-batch each (Trigger.AvailableNow); the commit of batch 0 dies after it landed, the
    query fails; run again from its checkpoint, it replays batch 0 and goes on."""
    base = Path(path).parent.parent.parent / "stream"
    source = base / "input"
    source.mkdir(parents=True)
    for f in range(2):
        pq.write_table(pa.table({"id": pa.array(range(f * ROWS, (f + 1) * ROWS), pa.int64())}), source / f"{f}.parquet")

    def run() -> None:
        events = spark.readStream.schema("id BIGINT").option("maxFilesPerTrigger", 1).parquet(str(source))
        query = events.selectExpr("id", "concat('v', id) AS v").writeStream.format("paimon") \
            .option("checkpointLocation", str(base / "checkpoint")).trigger(availableNow=True).start(path)
        query.awaitTermination()
    first = outcome(run)
    return {**first, "restart": outcome(run)}


CASES: dict[str, Callable[[Any, str], dict[str, Any]]] = {
    "upstream_fails": upstream_fails,
    "task_killed": task_killed,
    "commit_killed": commit_killed,
    "commit_answer_lost": commit_answer_lost,
    "stream_commit_killed": stream_commit_killed,
}


def main(warehouse: str) -> None:
    import paimon_ds
    spark = paimon_ds.session("paimon_ds-write-faults", master="local[2,4]",
                              conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    results = {name: case(spark, f"{warehouse}/db.db/{name}") for name, case in CASES.items()}
    print(json.dumps(results), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
