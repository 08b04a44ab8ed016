"""Spark writes whose tasks or driver-side commit fail (issue 45): rows land once or not at all, and nothing of a
snapshot that landed is ever deleted.

Spark's V2 write calls the source's abort() whenever the driver-side commit() failed, also when its snapshot had
already landed: commit() raised after it, or the Python worker running commit() died right after creating
`snapshot-N`. An abort that deleted the job's files then left the table unreadable for good.

One Spark job in a subprocess (tests/spark/write_fault_job.py, `local[2,4]`: failed tasks are retried) runs the
cases that need Spark's own retries and real process deaths; its Python workers carry the faulty file system of
tests/faults (tests/spark/fault_site/sitecustomize.py). The cases Spark cannot produce here, or that need exact
control, drive the writers in this process as Spark would.

Speculation: Spark cannot run a speculative duplicate on one machine. In `local[N]` the scheduler never starts its
speculation thread (TaskSchedulerImpl.start: `if (!isLocal && conf.get(SPECULATION_ENABLED))`); in
`local-cluster[2,1,1024]` it marks a slow task speculatable ("Marking task 0 in stage 0.0 (on 192.0.2.2) as
speculatable because it ran more than 271.5 ms") but never launches the copy, though the second executor sat idle
for 23 s: every executor runs on the same host, and TaskSetManager never places a speculative attempt on a host
that already ran an attempt of that task (`!(speculative && hasAttemptOnHost(index, host))`). Checked on pyspark
4.3 (spark.speculation=true, interval 100ms, quantile 0.5, multiplier 1.5; a 25 s first attempt of 1 task of 4).
So the duplicate is emulated at the writer: two attempts of one task both write, one message reaches the commit.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from faults.faulty_fs import INJECTOR, Fault, install
from pyspark import cloudpickle
from pyspark.sql.types import LongType, StringType, StructField, StructType

from paimon_ds import CommitLandedError, Table
from paimon_ds.operation.maintenance import remove_orphan_files
from paimon_ds.spark.stream import PaimonStreamWriter, StreamCommitMessage, stream_job_prefix
from paimon_ds.spark.write import PaimonBatchWriter, PaimonCommitMessage

from . import write_fault_job as job_module
from ._helpers import files_under

TESTS_DIR = Path(__file__).resolve().parent.parent
JOB = Path(__file__).with_name("write_fault_job.py")
ROWS = job_module.ROWS
SCHEMA = StructType([StructField("id", LongType()), StructField("v", StringType())])
PK = {"primary-key": "id", "bucket": "2"}


# ---------------------------------------------------------------------------- the Spark job (a subprocess)
class JobRun:
    """What the job's Spark reported per case, its stderr, and where its tables and fault marks are."""

    def __init__(self, results: dict[str, Any], stderr: str, warehouse: Path, marks: Path, seconds: float) -> None:
        self.results, self.stderr, self.warehouse, self.marks, self.seconds = results, stderr, warehouse, marks, seconds

    def table(self, case: str) -> str:
        return str(self.warehouse / "db.db" / case)

    def fired(self, case: str) -> bool:
        """Whether the case's fault fired (its plan's once-file exists)."""
        return (self.marks / case).exists()


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> JobRun:
    base = tmp_path_factory.mktemp("write-faults")
    warehouse, marks = base / "warehouse", base / "marks"
    (warehouse / "db.db").mkdir(parents=True)
    marks.mkdir()
    # the faulty file system only in this job's processes: its sitecustomize on the job's PYTHONPATH alone
    path = [str(JOB.parent / "fault_site"), str(TESTS_DIR), str(TESTS_DIR.parent), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p),
               PAIMON_DS_TEST_FAULTS=json.dumps(job_module.fault_plans(str(warehouse), str(marks))))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(JOB), str(warehouse)], env=env, capture_output=True, text=True,
                          timeout=600)
    seconds = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"the job failed ({proc.returncode}):\n{proc.stderr[-5000:]}"
    print(f"write-fault job: {seconds:.1f} s")
    return JobRun(json.loads(lines[-1]), proc.stderr, warehouse, marks, seconds)


def ids(path: str) -> list[int]:
    return sorted(Table.load(path).to_arrow().column("id").to_pylist())


def unreferenced(path: str) -> list[str]:
    """Files of the table no snapshot uses (what remove_orphan_files would delete now)."""
    return remove_orphan_files(Table.load(path).store, older_than_ms=0, dry_run=True)


def test_task_failing_upstream_is_retried_and_leaves_nothing(job: JobRun):
    """The first attempt of a task fails upstream of the writer after 500 of its rows reached it (and it flushed
    files): Spark retries the task, the write succeeds with every row once, and nothing of the failed attempt is
    left once remove_orphan_files ran. (Seen so far: nothing at all, as its writer meets the failure in its input
    and deletes its files; a worker Spark destroys first would leave them to remove_orphan_files.)"""
    result = job.results["upstream_fails"]
    assert result["ok"], result["error"]
    assert "injected failure upstream of the writer" in job.stderr  # the first attempt did fail
    path = job.table("upstream_fails")
    assert ids(path) == list(range(ROWS))
    orphans = remove_orphan_files(Table.load(path).store, older_than_ms=0)
    assert all(re.fullmatch(r"bucket-\d/data-[0-9a-f-]+-\d+\.parquet", o) for o in orphans), orphans
    assert ids(path) == list(range(ROWS))
    assert unreferenced(path) == []


def test_task_whose_worker_dies_is_retried_and_its_files_are_orphans(job: JobRun):
    """The Python worker of a task's first attempt dies (SIGKILL) as it closes its second data file: Spark retries
    the task, every row lands once, and the dead attempt's files are orphans that remove_orphan_files deletes."""
    result = job.results["task_killed"]
    assert result["ok"], result["error"]
    assert job.fired("task_killed")
    path = job.table("task_killed")
    assert ids(path) == list(range(ROWS))
    orphans = unreferenced(path)
    assert orphans and all(re.fullmatch(r"bucket-\d/data-[0-9a-f-]+-\d+\.parquet", o) for o in orphans), orphans
    assert sorted(remove_orphan_files(Table.load(path).store, older_than_ms=0)) == sorted(orphans)
    assert ids(path) == list(range(ROWS))
    assert unreferenced(path) == []


def test_driver_commit_killed_after_its_snapshot_landed(job: JobRun):
    """The worker running the driver's commit() dies right after creating snapshot-1. Spark reports the job failed
    and calls abort(), which must delete nothing (the snapshot uses the files) and say that the commit landed; the
    table reads the rows once, and a second write works."""
    result = job.results["commit_killed"]
    assert job.fired("commit_killed")
    assert not result["ok"]
    # abort()'s error, which Spark attaches to the commit's as suppressed
    assert "landed as snapshot 1" in result["abort_error"] and "do not run the write again" in result["abort_error"]
    assert result["second"]["ok"], result["second"]["error"]
    path = job.table("commit_killed")
    assert ids(path) == list(range(2 * ROWS))
    table = Table.load(path)
    sm = table.snapshot_manager
    assert [sm.snapshot(i).commit_kind for i in sm.list_ids()] == ["APPEND", "APPEND"]
    # the dead worker's temporary snapshot file is all that is left over
    orphans = unreferenced(path)
    assert all(re.fullmatch(r"snapshot/snapshot-1\.[0-9a-f]+\.tmp", o) for o in orphans), orphans
    remove_orphan_files(table.store, older_than_ms=0)
    assert ids(path) == list(range(2 * ROWS))


def test_driver_commit_whose_answer_was_lost_is_reported_done(job: JobRun):
    """The create of snapshot-1 is applied but its answer lost: the commit recognises its own snapshot and the
    write is reported done, its rows once."""
    result = job.results["commit_answer_lost"]
    assert job.fired("commit_answer_lost")
    assert result["ok"], result["error"]
    path = job.table("commit_answer_lost")
    assert ids(path) == list(range(ROWS))
    assert Table.load(path).snapshot_manager.list_ids() == [1]
    assert unreferenced(path) == []


def test_stream_commit_killed_after_its_batch_landed(job: JobRun):
    """The commit of micro-batch 0 dies right after its snapshot landed: Spark aborts the batch (which deletes
    nothing) and the query fails; run again from its checkpoint, the query replays batch 0, which is recognised
    and dropped, and goes on: every row once, one snapshot per batch."""
    result = job.results["stream_commit_killed"]
    assert job.fired("stream_commit_killed")
    assert not result["ok"]
    assert "abort of batch 0 to" in job.stderr and "deletes nothing: the batch is committed" in job.stderr
    assert result["restart"]["ok"], result["restart"]["error"]
    path = job.table("stream_commit_killed")
    assert ids(path) == list(range(2 * ROWS))
    sm = Table.load(path).snapshot_manager
    data = [s for s in (sm.snapshot(i) for i in sm.list_ids()) if s.commit_kind == "APPEND"]
    assert sorted(s.commit_identifier for s in data) == [0, 1]
    orphans = unreferenced(path)  # the dead worker's temporary snapshot file, and the dropped replay's nothing
    assert all(re.fullmatch(r"snapshot/snapshot-1\.[0-9a-f]+\.tmp", o) for o in orphans), orphans


# ---------------------------------------------------------------------------- the writers, driven as Spark does
def batches(start: int, count: int, size: int = 250) -> list[pa.RecordBatch]:
    table = pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                      "v": [f"v{i}" for i in range(start, start + count)]})
    return table.to_batches(max_chunksize=size)


def shipped(writer: Any) -> Any:
    """The writer as a task or the driver's commit gets it: pickled by Spark, loaded in another process."""
    return pickle.loads(cloudpickle.dumps(writer))


def message_files(message: PaimonCommitMessage) -> set[str]:
    return {f.file_name for m in message.messages for f in m.new_files}


@pytest.fixture
def faulty() -> Iterator[None]:
    """The faulty file system of tests/faults for the tables the test opens (not armed until the test arms it)."""
    uninstall = install()
    try:
        yield
    finally:
        INJECTOR.disarm()
        uninstall()


@pytest.mark.parametrize("options", [{}, PK], ids=["append", "primary-key"])
def test_speculative_duplicate_task(tmp_path, options):
    """Two attempts of one task (a speculative duplicate) both write all of its rows; only the winner's message
    reaches the commit. The rows are there once, the loser's files are orphans that remove_orphan_files deletes,
    and nothing else is deleted."""
    path = str(tmp_path / "t")
    writer = PaimonBatchWriter(path, options, SCHEMA, False, None)
    winner = shipped(writer).write(iter(batches(0, ROWS)))
    loser = shipped(writer).write(iter(batches(0, ROWS)))
    other_task = shipped(writer).write(iter(batches(ROWS, ROWS)))
    shipped(writer).commit([winner, other_task])
    assert ids(path) == list(range(2 * ROWS))
    orphans = unreferenced(path)
    assert {o.rsplit("/", 1)[-1] for o in orphans} == message_files(loser)
    before = set(files_under(path))
    assert sorted(remove_orphan_files(Table.load(path).store, older_than_ms=0)) == sorted(orphans)
    assert before - set(files_under(path)) == set(orphans)
    assert ids(path) == list(range(2 * ROWS))


def test_abort_after_a_landed_commit_deletes_nothing(tmp_path):
    """Spark calls abort() after a commit() whose worker died once the snapshot landed: abort deletes nothing and
    raises CommitLandedError naming the snapshot."""
    path = str(tmp_path / "t")
    writer = PaimonBatchWriter(path, PK, SCHEMA, False, None)
    messages = [shipped(writer).write(iter(batches(i * ROWS, ROWS))) for i in range(2)]
    shipped(writer).commit(messages)
    before = files_under(path)
    with pytest.raises(CommitLandedError, match="landed as snapshot 1 .*do not run the write again"):
        shipped(writer).abort(messages)
    assert files_under(path) == before
    assert ids(path) == list(range(2 * ROWS))


def test_abort_that_cannot_tell_whether_the_commit_landed_deletes_nothing(tmp_path, faulty, caplog):
    """A store error while abort() reads the snapshots above the write's start: it cannot tell whether its commit
    landed, so it deletes nothing; the files are orphans, which remove_orphan_files deletes once the store works."""
    path = str(tmp_path / "t")
    # (not shipped: the faulty file system's classes cannot be pickled)
    writer = PaimonBatchWriter(path, {}, SCHEMA, False, None)
    messages = [writer.write(iter(batches(0, ROWS)))]
    # another writer commits snapshot 1 meanwhile; then Spark aborts this job (say a task failed)
    other = PaimonBatchWriter(path, {}, SCHEMA, False, None)
    other.commit([other.write(iter(batches(ROWS, 10)))])
    INJECTOR.arm(1, Fault.BEFORE, match=lambda op, p: op in ("open-read", "read") and p.endswith("/snapshot-1"))
    with caplog.at_level(logging.ERROR, logger="paimon_ds.spark.write"):
        writer.abort(messages)
    assert INJECTOR.fired is not None
    assert "deletes nothing: could not tell whether its commit landed" in caplog.text
    assert message_files(messages[0]) <= {f.rsplit("/", 1)[-1] for f in files_under(path)}
    assert ids(path) == list(range(ROWS, ROWS + 10))
    deleted = remove_orphan_files(Table.load(path).store, older_than_ms=0)
    assert {d.rsplit("/", 1)[-1] for d in deleted} == message_files(messages[0])
    assert ids(path) == list(range(ROWS, ROWS + 10))


def test_commit_that_raised_after_landing_is_reported_done(tmp_path, faulty, monkeypatch, caplog):
    """The create of snapshot-1 lands but the store never answers (one attempt: OutcomeUnknown): commit() finds its
    snapshot and reports the write done instead of failing a job whose rows are in the table."""
    monkeypatch.setattr("paimon_ds.fs.file_io.CREATE_ATTEMPTS", 1)
    path = str(tmp_path / "t")
    writer = PaimonBatchWriter(path, {}, SCHEMA, False, None)  # (not shipped, as above)
    messages = [writer.write(iter(batches(0, ROWS)))]
    INJECTOR.arm(1, Fault.AFTER, match=lambda op, p: op == "link" and p.endswith("/snapshot/snapshot-1"))
    with caplog.at_level(logging.WARNING, logger="paimon_ds.spark.write"):
        writer.commit(messages)
    assert INJECTOR.fired is not None
    assert "raised after it landed as snapshot 1" in caplog.text
    assert ids(path) == list(range(ROWS))
    assert Table.load(path).snapshot_manager.list_ids() == [1]


def test_stream_abort_of_a_landed_batch_deletes_nothing_and_its_replay_is_dropped(tmp_path):
    """Spark aborts a micro-batch whose commit landed (its worker died after the snapshot): abort deletes nothing.
    The restarted query replays the batch: the replay's files are dropped and the rows stay once."""
    path = str(tmp_path / "t")
    query = "q-1"
    options = {**PK, "paimon_ds.background-compaction": "false"}  # no compaction running while files are counted

    def batch_messages(batch_id: int, start: int) -> StreamCommitMessage:
        # as a task of the micro-batch writes them (PaimonStreamWriter.write, which needs Spark's task context)
        table = PaimonStreamWriter(path, options, SCHEMA, False, None).table
        write = table.new_write(job_prefix=stream_job_prefix(query, str(batch_id)))
        for b in batches(start, ROWS):
            write.write_arrow(b)
        return StreamCommitMessage(write.prepare_commit(), query, None)

    first = batch_messages(0, 0)
    PaimonStreamWriter(path, options, SCHEMA, False, None).commit([first], 0)
    before = files_under(path)
    PaimonStreamWriter(path, options, SCHEMA, False, None).abort([first], 0)
    assert files_under(path) == before
    replay = batch_messages(0, 0)
    PaimonStreamWriter(path, options, SCHEMA, False, None).commit([replay], 0)
    assert ids(path) == list(range(ROWS))
    assert unreferenced(path) == []  # the replay's files were deleted
    PaimonStreamWriter(path, options, SCHEMA, False, None).commit([batch_messages(1, ROWS)], 1)
    assert ids(path) == list(range(2 * ROWS))
