"""Streaming reads of Paimon tables (paimon_ds.spark.stream.PaimonStreamReader over operation.stream.StreamScan).

Tables are written through the core API (no Spark on the writer side). Every query writes its
micro-batches with foreachBatch into one parquet file per batch id, replaced atomically, so a batch
Spark replays after a restart overwrites its earlier output: what the sink holds is what an
idempotent downstream would see, and it can be checked for loss, duplicates and order.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

import paimon_ds
from paimon_ds import Table

SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.int64()), ("v", pa.string())])
PK = {"primary-key": "id", "bucket": "1"}
Row = tuple  # (id, c, v), or (rowkind, id, op, v) for CDC reads


def commit(path: str, rows: list[dict[str, Any]], options: dict[str, str] | None = None,
           schema: pa.Schema = SCHEMA) -> int:
    """One commit through the core API; the id of its snapshot."""
    table = Table.for_write(path, schema, options or {})
    write = table.new_write()
    write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    snapshot = table.new_commit().commit(write.prepare_commit())
    assert snapshot is not None
    return snapshot.id


def tuples(rows: list[dict[str, Any]]) -> list[Row]:
    return sorted(tuple(r.values()) for r in rows)


def commit_kinds(path: str) -> list[str]:
    sm = Table.load(path).snapshot_manager
    return [sm.snapshot(i).commit_kind for i in sm.list_ids()]


class BatchSink:
    """foreachBatch target: micro-batch N becomes `N.parquet` (rows plus a batch_id column), replaced
    atomically, as an idempotent sink keyed by batch id. ``on_batch`` runs after a batch is stored."""

    def __init__(self, directory: Path, on_batch: Callable[[int], None] | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.on_batch = on_batch

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        data = df.toArrow()
        data = data.append_column("batch_id", pa.array([batch_id] * data.num_rows, pa.int64()))
        tmp = self.directory / f".{batch_id}.tmp"
        pq.write_table(data, tmp)
        os.replace(tmp, self.directory / f"{batch_id}.parquet")
        if self.on_batch is not None:
            self.on_batch(batch_id)

    def batches(self) -> dict[int, list[Row]]:
        """Each stored batch's rows (sorted), by batch id."""
        out = {}
        for f in self.directory.glob("*.parquet"):
            batch_id = int(f.stem)
            data = pq.read_table(f)
            assert data.column("batch_id").to_pylist() == [batch_id] * data.num_rows
            out[batch_id] = tuples(data.drop_columns(["batch_id"]).to_pylist())
        return dict(sorted(out.items()))

    def non_empty(self) -> list[list[Row]]:
        return [rows for rows in self.batches().values() if rows]

    def rows(self) -> list[Row]:
        return sorted(r for rows in self.batches().values() for r in rows)


class Consumer:
    """A streaming query's setup: the table, options, a checkpoint and a sink under ``directory``."""

    def __init__(self, path: str, directory: Path, options: dict[str, str] | None = None) -> None:
        self.path, self.options = path, options or {}
        self.checkpoint = directory / "checkpoint"
        self.sink = BatchSink(directory / "out")

    def start(self, spark: SparkSession, trigger: dict[str, Any]) -> StreamingQuery:
        return (spark.readStream.format("paimon").options(**self.options).load(self.path)
                .writeStream.foreachBatch(self.sink).option("checkpointLocation", str(self.checkpoint))
                .trigger(**trigger).start())


def run_available_now(spark: SparkSession, *consumers: Consumer) -> None:
    """One Trigger.AvailableNow run of each consumer, side by side; each must end by itself."""
    queries: list[StreamingQuery] = []
    try:
        for consumer in consumers:
            queries.append(consumer.start(spark, {"availableNow": True}))
        for q in queries:
            assert q.awaitTermination(120), "a Trigger.AvailableNow query did not stop by itself"
    finally:
        for q in queries:
            q.stop()


def wait_until(q: StreamingQuery, condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not q.isActive:
            raise AssertionError(f"the query ended while waiting for {what}: {q.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


# ------------------------------------------------------------------ 1. acceptance
N_COMMITS = 15


def writer_commits(pk: bool) -> list[list[dict[str, Any]]]:
    """Three new ids per commit; on the primary-key table each commit from the third on also upserts
    a key written two commits before (its delta must carry the new value)."""
    out = []
    for c in range(1, N_COMMITS + 1):
        rows = [{"id": 100 * c + i, "c": c, "v": f"new-{c}"} for i in range(3)]
        if pk and c >= 3:
            rows.append({"id": 100 * (c - 2), "c": c, "v": f"upsert-{c}"})
        out.append(rows)
    return out


@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
def test_stream_gets_every_commit_once_in_order_across_a_restart(spark, tmp_path, pk):
    path = str(tmp_path / "a")
    options = {"primary-key": "id", "bucket": "2"} if pk else {}
    commits = writer_commits(pk)
    expected = tuples([r for rows in commits for r in rows])
    commit(path, commits[0], options)  # the table exists before the stream starts
    consumer = Consumer(path, tmp_path)  # default scan mode: latest-full
    sink, trigger = consumer.sink, {"processingTime": "0.5 seconds"}
    done, stopping = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    committed = [1]

    def writer() -> None:
        try:
            for rows in commits[1:]:
                commit(path, rows, options)
                committed[0] += 1
                if committed[0] == 7:  # the rest lands while the reader stops and restarts
                    stopping.wait(60)
                time.sleep(0.15)
        except BaseException as e:  # noqa: BLE001 - re-raised by the test thread
            failures.append(e)
        finally:
            done.set()

    thread = threading.Thread(target=writer, daemon=True)
    q = consumer.start(spark, trigger)
    try:
        # batch 0 is the table at start: commit 1 only, since the writer waits for it (commits
        # before the start would be merged into that full scan)
        wait_until(q, lambda: 0 in sink.batches(), "the first micro-batch")
        thread.start()
        wait_until(q, lambda: committed[0] >= 6 and any(r[1] >= 3 for r in sink.rows()), "some deltas")
    finally:
        stopping.set()
        q.stop()  # mid-stream, perhaps mid-batch: the restart replays or continues
    seen_before_restart = len(sink.rows())
    q = consumer.start(spark, trigger)  # same checkpoint
    try:
        wait_until(q, lambda: done.is_set() and len(sink.rows()) >= len(expected), "every committed row")
        time.sleep(1)  # a trigger or two more: nothing else may arrive
    finally:
        q.stop()
        thread.join(30)
    if failures:
        raise failures[0]
    assert committed[0] == N_COMMITS
    assert 0 < seen_before_restart < len(expected), "the restart did not happen mid-stream"
    batches = sink.batches()
    assert list(batches) == list(range(len(batches))), "batch ids did not continue from the checkpoint"
    assert batches[0] == tuples(commits[0])
    rows = sink.rows()
    assert len(rows) == len(set(rows)), "a row arrived twice"
    assert rows == expected
    # snapshot order: every batch holds later commits than the batches before it
    non_empty = sink.non_empty()
    for earlier, later in zip(non_empty, non_empty[1:]):
        assert max(r[1] for r in earlier) <= min(r[1] for r in later)
    # without read limits a commit's rows are never split across batches
    for c in range(1, N_COMMITS + 1):
        assert sum(1 for rows in non_empty if any(r[1] == c for r in rows)) == 1


# ------------------------------------------------------------------ 2. scan modes
MODE_COMMITS = [  # a primary-key table's three commits; the third upserts id 10
    [{"id": 10, "c": 1, "v": "a"}, {"id": 11, "c": 1, "v": "a"}],
    [{"id": 20, "c": 2, "v": "b"}, {"id": 21, "c": 2, "v": "b"}],
    [{"id": 10, "c": 3, "v": "upsert"}, {"id": 30, "c": 3, "v": "c"}],
]
C4 = [{"id": 40, "c": 4, "v": "d"}, {"id": 11, "c": 4, "v": "upsert"}]  # committed after the first run
FULL_AT_2 = [(10, 1, "a"), (11, 1, "a"), (20, 2, "b"), (21, 2, "b")]
FULL_AT_3 = [(10, 3, "upsert"), (11, 1, "a"), (20, 2, "b"), (21, 2, "b"), (30, 3, "c")]
DELTA_2 = [(20, 2, "b"), (21, 2, "b")]
DELTA_3 = [(10, 3, "upsert"), (30, 3, "c")]
MODES: dict[str, tuple[dict[str, str], list[Row]]] = {  # options, rows of a run at snapshot 3
    "latest-full": ({}, FULL_AT_3),
    # Paimon's Spark source starts at the latest snapshot's own delta (PaimonSourceTest; PaimonMicroBatchStream)
    "latest": ({"scan.mode": "latest"}, DELTA_3),
    "from-snapshot": ({"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}, DELTA_2 + DELTA_3),
    "from-snapshot-full": ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}, FULL_AT_2 + DELTA_3),
    "from-timestamp": ({"scan.mode": "from-timestamp"}, DELTA_2 + DELTA_3),  # + snapshot 2's time
}


def test_scan_modes(spark, tmp_path):
    path = str(tmp_path / "t")
    for rows in MODE_COMMITS:
        commit(path, rows, PK)
        time.sleep(0.01)  # distinct commit times, for from-timestamp
    sm = Table.load(path).snapshot_manager
    times = [sm.snapshot(i).time_millis for i in (1, 2, 3)]
    assert times == sorted(set(times))
    consumers = {mode: Consumer(path, tmp_path / mode, options) for mode, (options, _) in MODES.items()}
    consumers["from-timestamp"].options["scan.timestamp-millis"] = str(times[1])
    # one running query per mode (query start-up is what costs: one each, not an AvailableNow run per phase)
    queries = {mode: c.start(spark, {"processingTime": "0.5 seconds"}) for mode, c in consumers.items()}
    try:
        for mode, c in consumers.items():
            # batch 0 checkpoints the start position
            wait_until(queries[mode], lambda c=c: 0 in c.sink.batches(), f"batch 0 of {mode}")
        assert consumers["latest-full"].sink.batches()[0] == FULL_AT_3  # the table at start is one batch
        assert ({m: c.sink.rows() for m, c in consumers.items()}
                == {m: sorted(rows) for m, (_, rows) in MODES.items()})
        commit(path, C4, PK)
        for mode, c in consumers.items():
            n = len(MODES[mode][1]) + len(C4)
            wait_until(queries[mode], lambda c=c, n=n: len(c.sink.rows()) >= n, f"commit 4 in {mode}")
        time.sleep(1)  # a trigger or two more: nothing else may arrive
    finally:
        for q in queries.values():
            q.stop()
    assert ({m: c.sink.rows() for m, c in consumers.items()}
            == {m: sorted(rows + tuples(C4)) for m, (_, rows) in MODES.items()})
    # commit 4 came as one batch of its own in every mode
    assert all(c.sink.non_empty()[-1] == tuples(C4) for c in consumers.values())


# ------------------------------------------------------------------ 3. compaction
def test_compact_snapshots_emit_nothing(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = [
        [{"id": 1, "c": 1, "v": "a"}, {"id": 2, "c": 1, "v": "a"}, {"id": 3, "c": 1, "v": "a"}],
        [{"id": 2, "c": 2, "v": "b"}, {"id": 4, "c": 2, "v": "b"}],
        [{"id": 1, "c": 3, "v": "c"}, {"id": 5, "c": 3, "v": "c"}],
        [{"id": 3, "c": 4, "v": "d"}],
    ]
    for i, rows in enumerate(commits):
        commit(path, rows, PK)
        if i in (1, 2):
            assert paimon_ds.compact(spark, path, full=True) is not None
    assert commit_kinds(path) == ["APPEND", "APPEND", "COMPACT", "APPEND", "COMPACT", "APPEND"]
    consumer = Consumer(path, tmp_path, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    run_available_now(spark, consumer)
    assert consumer.sink.rows() == tuples([r for rows in commits for r in rows])


# ------------------------------------------------------------------ 4. admission control
def single_file_commits(path: str, first: int, last: int) -> list[list[Row]]:
    """Append commits ``first``..``last`` of three rows each, one data file per commit."""
    out = []
    for c in range(first, last + 1):
        rows = [{"id": 10 * c + i, "c": c, "v": "x"} for i in range(3)]
        commit(path, rows)
        out.append(tuples(rows))
    return out


FROM_1 = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}


def test_read_limits_split_the_deltas_into_micro_batches(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = single_file_commits(path, 1, 4)  # 3 rows, 1 file each
    limits = {"files-1": {"read.stream.maxFilesPerTrigger": "1"}, "rows-6": {"read.stream.maxRowsPerTrigger": "6"}}
    consumers = {name: Consumer(path, tmp_path / name, {**FROM_1, **limit}) for name, limit in limits.items()}
    run_available_now(spark, *consumers.values())
    # a batch takes splits (here: one commit's file) until the next would exceed the limit
    groups = {"files-1": [[0], [1], [2], [3]], "rows-6": [[0, 1], [2, 3]]}
    expected = {name: [sorted(r for i in g for r in commits[i]) for g in grouping] for name, grouping in groups.items()}
    assert {name: c.sink.non_empty() for name, c in consumers.items()} == expected


def _commits_of(path: str, sizes: list[int]) -> list[list[Row]]:
    """One single-file commit per size, of that many rows."""
    out = []
    for c, size in enumerate(sizes, start=1):
        rows = [{"id": 10 * c + i, "c": c, "v": "x"} for i in range(size)]
        commit(path, rows)
        out.append(tuples(rows))
    return out


def test_read_limits_combine(spark, tmp_path):
    """maxRowsPerTrigger with maxFilesPerTrigger, as Paimon's composite limit (PaimonReadLimitGuard): each applies;
    a split is taken while the batch is under both (rows 4, splits 3)."""
    path = str(tmp_path / "t")
    commits = _commits_of(path, [5, 1, 1, 1, 1, 1])
    consumer = Consumer(path, tmp_path, {**FROM_1, "read.stream.maxRowsPerTrigger": "4",
                                         "read.stream.maxFilesPerTrigger": "3"})
    run_available_now(spark, consumer)
    # 5 rows pass maxRows alone; then three splits reach maxFiles; then the rest
    groups = [[0], [1, 2, 3], [4, 5]]
    assert consumer.sink.non_empty() == [sorted(r for i in g for r in commits[i]) for g in groups]


def test_min_rows_under_available_now_ends_the_run_as_paimon(spark, tmp_path):
    """Trigger.AvailableNow with minRowsPerTrigger and maxTriggerDelayMs, as Paimon's source behaves: Spark passes
    the default read limit under AvailableNow too, so a batch under minRows within the delay is held back, and Spark
    ends an AvailableNow run at the first trigger without data: the rest waits for the next run, whose first batch
    never waits (Trigger.Once passes ReadAllAvailable: no limit applies)."""
    path = str(tmp_path / "t")
    commits = _commits_of(path, [3, 3, 1, 1, 1, 1])
    consumer = Consumer(path, tmp_path, {**FROM_1, "read.stream.maxFilesPerTrigger": "2",
                                         "read.stream.minRowsPerTrigger": "3",
                                         "read.stream.maxTriggerDelayMs": "600000"})
    run_available_now(spark, consumer)
    # batch 1 never waits; batch 2 takes 2 rows, and the split maxFiles refuses makes 3 (Paimon counts it); the last
    # 2 rows are under 3 within the delay
    assert consumer.sink.non_empty() == [commits[0] + commits[1], commits[2] + commits[3]]
    run_available_now(spark, consumer)
    assert consumer.sink.non_empty() == [commits[0] + commits[1], commits[2] + commits[3], commits[4] + commits[5]]


def test_max_files_per_trigger_cuts_a_commit_between_its_partitions(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = [[{"id": 10 * c + i, "c": c, "v": p} for i, p in enumerate("xxyy")] for c in (1, 2)]
    for rows in commits:
        commit(path, rows, {"partition": "v"})  # one file, and one split, per partition
    consumer = Consumer(path, tmp_path, {**FROM_1, "read.stream.maxFilesPerTrigger": "1"})
    run_available_now(spark, consumer)
    batches = consumer.sink.non_empty()  # a batch per (commit, partition), commit after commit
    per_partition = [tuples([r for r in rows if r["v"] == p]) for rows in commits for p in "xy"]
    assert len(batches) == 4
    assert sorted(batches[:2]) == per_partition[:2] and sorted(batches[2:]) == per_partition[2:]


def test_max_files_per_trigger_after_a_full_scan(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = single_file_commits(path, 1, 4)
    consumer = Consumer(path, tmp_path, {"read.stream.maxFilesPerTrigger": "1"})  # latest-full
    run_available_now(spark, consumer)
    # the full scan is one split of 4 files, and a batch takes at least one split
    full = sorted(r for rows in commits for r in rows)
    assert consumer.sink.non_empty() == [full]
    later = single_file_commits(path, 5, 6)
    run_available_now(spark, consumer)
    assert consumer.sink.non_empty() == [full, *later]


# ------------------------------------------------------------------ 5. availableNow
def test_available_now_reads_what_was_committed_at_start(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = single_file_commits(path, 1, 3)
    late = [{"id": 99, "c": 99, "v": "late"}]

    def commit_during_the_run(batch_id: int) -> None:
        if batch_id == 0:
            commit(path, late)

    # one commit per batch, so the run is still going when the late commit lands
    consumer = Consumer(path, tmp_path, {**FROM_1, "read.stream.maxFilesPerTrigger": "1"})
    consumer.sink.on_batch = commit_during_the_run
    run_available_now(spark, consumer)
    assert Table.load(path).snapshot_manager.latest_id() == 4
    assert consumer.sink.non_empty() == commits
    run_available_now(spark, consumer)  # the next run picks the late commit up
    assert consumer.sink.non_empty() == [*commits, tuples(late)]


# ------------------------------------------------------------------ 6. row kinds
CDC_SCHEMA = pa.schema([("id", pa.int64()), ("op", pa.string()), ("v", pa.string())])
CDC_COMMITS = [
    [{"id": 1, "op": "+I", "v": "a"}, {"id": 2, "op": "+I", "v": "a"}, {"id": 3, "op": "+I", "v": "a"}],
    [{"id": 2, "op": "+U", "v": "b"}, {"id": 3, "op": "-D", "v": "a"}, {"id": 4, "op": "+I", "v": "b"}],
    [{"id": 1, "op": "-D", "v": "a"}, {"id": 4, "op": "+U", "v": "c"}],
]


def test_cdc_deltas_with_and_without_row_kinds(spark, tmp_path):
    path = str(tmp_path / "t")
    for rows in CDC_COMMITS:
        commit(path, rows, {**PK, "rowkind.field": "op"}, CDC_SCHEMA)
    assert tuples(Table.load(path).to_arrow().to_pylist()) == [(2, "+U", "b"), (4, "+U", "c")]
    options = {**FROM_1, "read.stream.maxFilesPerTrigger": "1"}  # one delta per batch
    kinds = Consumer(path, tmp_path / "kinds", {**options, "paimon_ds.row-kind-column": "rowkind"})
    plain = Consumer(path, tmp_path / "plain", options)
    run_available_now(spark, kinds, plain)
    # every change with its kind, deletes included
    assert kinds.sink.non_empty() == [sorted((r["op"], *r.values()) for r in rows) for rows in CDC_COMMITS]
    # without the row kinds a delete is no row of the table: dropped
    assert plain.sink.non_empty() == [tuples([r for r in rows if r["op"] != "-D"]) for rows in CDC_COMMITS]


# ------------------------------------------------------------------ 7. refusals
def test_partial_update_table_refuses_streaming_reads(spark, tmp_path):
    path = str(tmp_path / "t")
    commit(path, [{"id": 1, "c": 1, "v": "a"}], {**PK, "merge-engine": "partial-update"})
    with pytest.raises(StreamingQueryException,
                       match=r"streaming reads of a partial-update table need a changelog \(changelog-producer"):
        run_available_now(spark, Consumer(path, tmp_path))


def test_expired_snapshots_are_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = single_file_commits(path, 1, 3)
    behind = Consumer(path, tmp_path / "behind", FROM_1)
    run_available_now(spark, behind)  # its checkpoint now points at snapshot 4, not yet committed
    assert behind.sink.non_empty() == [sorted(r for rows in commits for r in rows)]
    single_file_commits(path, 4, 5)
    snapshot_dir = Path(path) / "snapshot"
    for i in (1, 2, 3, 4):  # expire snapshots 1-4, as snapshot expiration leaves the table
        (snapshot_dir / f"snapshot-{i}").unlink()
    (snapshot_dir / "EARLIEST").write_text("5")
    with pytest.raises(StreamingQueryException,
                       match=r"scan.snapshot-id 1 of .* has expired \(the earliest snapshot is 5\)"):
        run_available_now(spark, Consumer(path, tmp_path / "new", FROM_1))
    with pytest.raises(StreamingQueryException,
                       match=r"snapshot 4 of .* expired before this stream read it \(the earliest is 5\)"):
        run_available_now(spark, behind)
