"""Streaming upserts into a primary-key table: issue 4's soak acceptance (`make soak`) and a small version.

A parquet file source feeds one file per micro-batch (maxFilesPerTrigger=1) into
writeStream.format("paimon") on a bucket=8 deduplicate table, with trigger(availableNow=True). Every
file holds distinct keys drawn from a shared key space, so batches update each other's rows. After
the run, every snapshot of the table is walked: the sorted runs of each bucket (each level-0 file is
one run, each non-empty level above is one) must never exceed num-sorted-run.stop-trigger -- the
committer's compaction keeps them bounded -- and the table must equal the model (last value per key).

Latency is Spark's own per-batch measure (StreamingQueryProgress.durationMs, every batch retained by
raising spark.sql.streaming.numRecentProgressUpdates): triggerExecution is the whole micro-batch
(offsets, read, write tasks, Paimon commit + compaction, checkpoint log); addBatch is the sink part
(write tasks, commit and compaction).

Sizes of the soak: SOAK_STREAM_BATCHES (default 200), SOAK_STREAM_ROWS (rows per batch, default 20k),
SOAK_STREAM_KEYS (key space, default 200k).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from paimon_ds import Table
from paimon_ds.mergetree.compact import CompactionOptions, sorted_runs
from paimon_ds.operation.scan import TableScan
from tests.spark.test_compaction_entry_points import wait_until_settled

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
SPARK_SCHEMA = "id BIGINT, v BIGINT, name STRING, amount DOUBLE"
OPTIONS = {"primary-key": "id", "bucket": "8", "merge-engine": "deduplicate"}
# Paimon's default num-sorted-run.stop-trigger: compaction-trigger (5) + 3
STOP_TRIGGER = 8
PROGRESS_RETENTION = "spark.sql.streaming.numRecentProgressUpdates"


def _batch(i: int, rows: int, key_space: int) -> pa.Table:
    """Micro-batch ``i``: ``rows`` distinct keys (so the last writer of a key is unambiguous), v unique."""
    ids = np.random.default_rng(1000 + i).choice(key_space, size=rows, replace=False).astype(np.int64)
    v = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
    return pa.table({"id": ids, "v": v, "name": pa.array(np.char.add(f"b{i}-", (ids % 1000).astype(str))),
                     "amount": v.astype(np.float64) / 4}, schema=SCHEMA)


def _write_source(directory: Path, batches: int, rows: int, key_space: int) -> pa.Table:
    """One parquet file per micro-batch, modification times one second apart (the file source takes
    files oldest first); returns the model: the last row written for every key, sorted by id."""
    directory.mkdir(parents=True)
    base = time.time() - batches - 10
    tables = []
    for i in range(batches):
        t = _batch(i, rows, key_space)
        f = directory / f"batch-{i:05d}.parquet"
        pq.write_table(t, f)
        os.utime(f, (base + i, base + i))
        tables.append(t)
    everything = pa.concat_tables(tables)
    ids = everything.column("id").to_numpy()
    # np.unique over the reversed keys finds each key's last occurrence
    _, first_in_reversed = np.unique(ids[::-1], return_index=True)
    return everything.take(len(ids) - 1 - first_in_reversed).sort_by("id")


@dataclass
class SoakResult:
    wall_s: float
    rows: int
    trigger_ms: list[int]
    add_batch_ms: list[int]
    max_runs_per_snapshot: dict[int, int]  # snapshot id -> the most sorted runs of any bucket
    files_per_bucket: dict[int, int]
    runs_per_bucket: dict[int, int]
    commit_kinds: Counter
    data_identifiers: list[int]


def _run_stream(spark: SparkSession, tmp_path: Path, batches: int, rows: int, key_space: int,
                options: dict[str, str] = OPTIONS) -> tuple[SoakResult, pa.Table, str]:
    source, path = tmp_path / "source", str(tmp_path / "warehouse" / "db.db" / "t")
    model = _write_source(source, batches, rows, key_space)
    old_retention = spark.conf.get(PROGRESS_RETENTION)
    spark.conf.set(PROGRESS_RETENTION, str(batches + 100))  # keep every batch's progress, not the last 100
    try:
        stream = spark.readStream.format("parquet").schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1) \
            .load(str(source))
        start = time.perf_counter()
        query = stream.writeStream.format("paimon").options(**options) \
            .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start(path)
        try:
            query.awaitTermination()
            wall = time.perf_counter() - start
            progress = [p for p in query.recentProgress if p.numInputRows > 0]
        finally:
            query.stop()
    finally:
        spark.conf.set(PROGRESS_RETENTION, old_retention)
    assert query.exception() is None
    assert [p.batchId for p in progress] == list(range(batches))
    assert sum(p.numInputRows for p in progress) == batches * rows
    wait_until_settled(path, limit_s=300.0)

    table = Table.load(path)
    sm = table.snapshot_manager
    max_runs: dict[int, int] = {}
    kinds: Counter = Counter()
    data_ids = []
    for sid in sm.list_ids():
        snapshot = sm.snapshot(sid)
        kinds[snapshot.commit_kind] += 1
        if snapshot.commit_kind != "COMPACT":
            data_ids.append(snapshot.commit_identifier)
        files: dict[int, list] = {}
        for e in TableScan(table).read_entries(snapshot):
            files.setdefault(e.bucket, []).append(e.file)
        max_runs[sid] = max(len(sorted_runs(fs)) for fs in files.values())
    last: dict[int, list] = {}
    for e in TableScan(table).read_entries(table.latest_snapshot()):
        last.setdefault(e.bucket, []).append(e.file)
    result = SoakResult(wall, batches * rows, [p.durationMs["triggerExecution"] for p in progress],
                        [p.durationMs["addBatch"] for p in progress], max_runs,
                        {b: len(fs) for b, fs in sorted(last.items())},
                        {b: len(sorted_runs(fs)) for b, fs in sorted(last.items())}, kinds, data_ids)
    return result, model, path


def _check(result: SoakResult, model: pa.Table, path: str, batches: int, buckets: int | None = 8) -> None:
    """The invariants of both sizes."""
    table = Table.load(path)
    assert CompactionOptions.from_options(table.options).stop_trigger == STOP_TRIGGER
    over = {sid: n for sid, n in result.max_runs_per_snapshot.items() if n > STOP_TRIGGER}
    assert not over, f"snapshots with more than {STOP_TRIGGER} sorted runs in a bucket: {over}"
    # exactly one data snapshot per micro-batch, identified by its batch id (the retained ones: the last batches);
    # compaction ran
    kept = len(result.data_identifiers)
    assert result.data_identifiers == list(range(batches - kept, batches))
    assert result.commit_kinds["COMPACT"] >= 1
    if buckets is not None:
        assert sorted(result.files_per_bucket) == list(range(buckets))
    # the table declares the key NOT NULL; the model's schema is nullable
    assert table.to_arrow().sort_by("id").cast(model.schema).equals(model)


def _percentile(values: list[int], q: float) -> float:
    return float(np.percentile(np.array(values, dtype=np.float64), q))


def _report(result: SoakResult, stop_trigger: int, batches: int, rows: int, key_space: int,
            table: str = "PK table bucket=8 (deduplicate)") -> str:
    t, a = result.trigger_ms, result.add_batch_ms
    worst = max(result.max_runs_per_snapshot.values())
    # rows of batches 1.. over the wall time left after batch 0
    sustained = (result.rows - rows) / (result.wall_s - t[0] / 1000)
    lines = [
        f"streaming upserts: {batches} micro-batches x {rows:,} rows over {key_space:,} keys -> "
        f"{table}, trigger(availableNow), Spark local[2]",
        f"  wall time (query start to end)        {result.wall_s:10.1f} s",
        f"  throughput, whole run                 {result.rows / result.wall_s:10,.0f} rows/s",
        f"  sustained throughput after batch 0    {sustained:10,.0f} rows/s   (batch 0 starts Spark's Python"
        f" workers: {t[0]:,} ms)",
        f"  batch latency, triggerExecution p50   {_percentile(t, 50):10,.0f} ms   p99 {_percentile(t, 99):,.0f} ms"
        f"   max {max(t):,} ms",
        f"  batch latency, addBatch (sink) p50    {_percentile(a, 50):10,.0f} ms   p99 {_percentile(a, 99):,.0f} ms"
        f"   max {max(a):,} ms",
        "    (Spark's StreamingQueryProgress.durationMs of every batch; addBatch = write tasks + Paimon commit"
        " + compaction)",
        f"  snapshots                             {sum(result.commit_kinds.values()):10d}   "
        + ", ".join(f"{k} {n}" for k, n in sorted(result.commit_kinds.items())),
        f"  max sorted runs per bucket, any snapshot {worst:7d}   (stop-trigger {stop_trigger})",
        f"  files per bucket at the end           {list(result.files_per_bucket.values())}",
        f"  sorted runs per bucket at the end     {list(result.runs_per_bucket.values())}",
    ]
    return "\n".join(lines)


def test_stream_upserts_small(spark, tmp_path):
    """12 micro-batches: compaction keeps the sorted runs bounded and the table equals the model."""
    batches, rows, key_space = 12, 2_000, 10_000
    result, model, path = _run_stream(spark, tmp_path, batches, rows, key_space)
    print("\n" + _report(result, STOP_TRIGGER, batches, rows, key_space))
    _check(result, model, path, batches)


@pytest.mark.soak
def test_stream_upserts_soak(spark, tmp_path):
    batches = int(os.environ.get("SOAK_STREAM_BATCHES", 200))
    rows = int(os.environ.get("SOAK_STREAM_ROWS", 20_000))
    key_space = int(os.environ.get("SOAK_STREAM_KEYS", 200_000))
    result, model, path = _run_stream(spark, tmp_path, batches, rows, key_space)
    print("\n" + _report(result, STOP_TRIGGER, batches, rows, key_space))  # the figures, even if a check fails
    _check(result, model, path, batches)


@pytest.mark.soak
@pytest.mark.parametrize("background", [True, False], ids=["background", "inline"])
def test_stream_upserts_default_options_soak(spark, tmp_path, background):
    """Issue 32: a 200-batch stream into a primary-key table with Paimon's defaults (no bucket option: dynamic
    buckets; deduplicate), with the query's compaction on a background thread (the default) and inline after
    each batch. Both keep every snapshot within the stop trigger; the report gives the batch latencies that
    the background compaction buys, and the snapshot count after the commits' own expiry (default retention:
    1 h, so every snapshot of a short run stays; SOAK_STREAM_TIME_RETAINED shortens it to show the bound)."""
    batches = int(os.environ.get("SOAK_STREAM_BATCHES", 200))
    rows = int(os.environ.get("SOAK_STREAM_ROWS", 20_000))
    key_space = int(os.environ.get("SOAK_STREAM_KEYS", 200_000))
    options = {"primary-key": "id", "paimon_ds.background-compaction": str(background).lower()}
    if os.environ.get("SOAK_STREAM_TIME_RETAINED"):
        options["snapshot.time-retained"] = os.environ["SOAK_STREAM_TIME_RETAINED"]
    result, model, path = _run_stream(spark, tmp_path, batches, rows, key_space, options)
    print(f"\n[compaction: {'background' if background else 'inline'}, default options]\n"
          + _report(result, STOP_TRIGGER, batches, rows, key_space, "PK table, default options"))
    _check(result, model, path, batches, buckets=None)
    assert max(result.files_per_bucket.values()) <= 2 * STOP_TRIGGER
