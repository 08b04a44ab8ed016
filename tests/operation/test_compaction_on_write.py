"""Every core write leaves its buckets as Paimon's writers would: compacted at the trigger, never above the stop
trigger (issue 32). Java Paimon 0.9 is the twin: the same batches through its own BatchWriteBuilder (whose writer
compacts before the commit) give the same sequence of APPEND / COMPACT snapshots, and Java reads every snapshot
we wrote equal to a model."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.mergetree.compact import CompactionOptions, sorted_runs
from paimon_ds.operation.compact import compact_in_process, plan_compaction, run_compaction
from paimon_ds.operation.stream_commit import StreamCommit
from paimon_ds.options.registry import Options

PK = {"primary-key": "id", "bucket": "1"}
DEFAULTS = CompactionOptions.from_options(Options({}))


def overlapping_batch(i: int, rows: int = 5000) -> pa.Table:
    """Rows 0..rows-1 shifted by 700 per batch, over 9,000 keys: each batch updates most keys of the last."""
    ids = (np.arange(rows, dtype=np.int64) + 700 * i) % 9000
    return pa.table({"id": ids, "v": np.full(rows, i, dtype=np.int64), "s": [f"b{i}"] * rows})


class Model:
    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, str]] = {}

    def apply(self, data: pa.Table) -> None:
        for k, v, s in zip(data["id"].to_pylist(), data["v"].to_pylist(), data["s"].to_pylist(), strict=True):
            self.rows[k] = (v, s)

    def sorted(self) -> list[tuple]:
        return sorted((k, *vs) for k, vs in self.rows.items())


def table_rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(t["id"].to_pylist(), t["v"].to_pylist(), t["s"].to_pylist(), strict=True))


def max_runs(table: Table, snapshot_id: int | None = None) -> int:
    """The most sorted runs any bucket holds at ``snapshot_id`` (default: the latest)."""
    groups: dict[tuple[bytes, int], list] = defaultdict(list)
    snapshot = table.snapshot_manager.snapshot(snapshot_id) if snapshot_id else table.latest_snapshot()
    for e in table.new_scan().read_entries(snapshot):
        groups[(e.partition, e.bucket)].append(e.file)
    return max(len(sorted_runs(files)) for files in groups.values())


JAVA_SNAPSHOT_ROWS = """
import json
from pypaimon.py4j.java_implementation import Table as JavaTable
out = {}
for sid in SNAPSHOT_IDS:
    t = JavaTable(table._j_table.copy({"scan.snapshot-id": str(sid)}), table._catalog_options)
    rb = t.new_read_builder()
    a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    out[sid] = sorted(zip(*(a[c].to_pylist() for c in COLUMNS)))
print(json.dumps(out))
"""


def java_snapshot_rows(java_oracle, path: str, columns: list[str]) -> dict[int, list[tuple]]:
    """Java Paimon 0.9's rows of every snapshot of the table (one JVM call), each sorted."""
    ids = Table.load(path).snapshot_manager.list_ids()
    script = f"SNAPSHOT_IDS = {ids!r}\nCOLUMNS = {columns!r}\n" + JAVA_SNAPSHOT_ROWS
    out = java_oracle.exec(path, script).strip().splitlines()[-1]
    return {int(k): [tuple(r) for r in rows] for k, rows in json.loads(out).items()}


def kinds(path: str) -> list[str]:
    return [s.commit_kind for s in Table.load(path).snapshots()]


WRITERS = {
    "Table.append": lambda path, data: Table.load(path).append(data),
    "write_arrow": lambda path, data: paimon_ds.write_arrow(path, data, primary_key="id", options={"bucket": "1"}),
}


@pytest.mark.parametrize("entry", sorted(WRITERS))
def test_core_writes_compact_as_javas_writers(entry, tmp_path, java_oracle):
    """12 writes of overlapping keys: after every commit no bucket is above the stop trigger, the APPEND /
    COMPACT sequence is Java's for the same writes, and Java reads each of our snapshots equal to the model."""
    ours = str(tmp_path / "warehouse" / "db.db" / "ours")
    java = str(tmp_path / "warehouse" / "db.db" / "java")
    paimon_ds.write_arrow(ours, overlapping_batch(0).slice(0, 0), primary_key="id", options={"bucket": "1"})
    model = Model()
    expected_at: dict[int, list[tuple]] = {}
    for i in range(12):
        data = overlapping_batch(i)
        WRITERS[entry](ours, data)
        java_oracle.write(java, data, primary_key="id", bucket=1)
        model.apply(data)
        table = Table.load(ours)
        assert max_runs(table) <= DEFAULTS.stop_trigger, f"write {i}"
        for s in table.snapshots():
            expected_at.setdefault(s.id, model.sorted())
    assert "COMPACT" in kinds(ours)
    assert kinds(ours) == kinds(java)
    # as Java's writer, the compaction is part of the commit: its snapshot has the data commit's user and identifier
    for path in (ours, java):
        snaps = Table.load(path).snapshots()
        for before, s in zip(snaps, snaps[1:]):
            if s.commit_kind == "COMPACT":
                assert (s.commit_user, s.commit_identifier) == (before.commit_user, before.commit_identifier), path
    assert java_snapshot_rows(java_oracle, ours, ["id", "v", "s"]) == expected_at
    assert table_rows(Table.load(ours).to_arrow()) == model.sorted()


def test_write_only_leaves_compaction_to_a_dedicated_job(tmp_path):
    """`write-only`: the writers and the committer never compact (Paimon: a dedicated compaction job does)."""
    path = str(tmp_path / "t")
    for i in range(8):
        paimon_ds.write_arrow(path, overlapping_batch(i, 500), primary_key="id",
                              options={"bucket": "1", "write-only": "true"})
    table = Table.load(path)
    assert kinds(path) == ["APPEND"] * 8
    assert max_runs(table) == 8
    assert compact_in_process(table, None, full=True) is not None
    assert max_runs(Table.load(path)) == 1


def test_the_issues_eight_appends_stay_within_the_triggers(tmp_path):
    """The issue's case: 8 Table.append calls of 5,000 rows to a bucket=1 primary-key table left 8 level-0 runs;
    now the commit compacts whenever universal compaction picks, so the bucket never holds more than the
    compaction trigger's runs after a commit, and the describe report finds nothing to suggest."""
    path = str(tmp_path / "t")
    paimon_ds.write_arrow(path, overlapping_batch(0).slice(0, 0), primary_key="id", options={"bucket": "1"})
    for i in range(8):
        Table.load(path).append(overlapping_batch(i))
        assert max_runs(Table.load(path)) < DEFAULTS.trigger, f"append {i}"


def test_fixed_bucket_append_tables_compact_small_files(tmp_path):
    """Append tables with fixed buckets: Paimon's writer compacts a bucket's small files once
    `compaction.min.file-num` (5) of them are there; unaware-bucket append tables are left to a dedicated job."""
    fixed, unaware = str(tmp_path / "fixed"), str(tmp_path / "unaware")
    for i in range(6):
        data = overlapping_batch(i, 100)
        paimon_ds.write_arrow(fixed, data, options={"bucket": "1", "bucket-key": "id"})
        paimon_ds.write_arrow(unaware, data)
    fixed_files = [e.file for e in Table.load(fixed).new_scan().read_entries()]
    assert kinds(fixed) == ["APPEND"] * 5 + ["COMPACT", "APPEND"]
    assert len(fixed_files) == 2
    assert kinds(unaware) == ["APPEND"] * 6
    assert Table.load(fixed).to_arrow().num_rows == 600


JAVA_COMPACT = """
P = jvm.org.apache.paimon
io = P.disk.IOManager.create(TMP)
wb = jvm.InvocationUtil.getBatchWriteBuilder(table._j_table)
w = wb.newWrite().withIOManager(io)
c = wb.newCommit()
w.compact(P.data.BinaryRow.EMPTY_ROW, 0, FULL)
c.commit(w.prepareCommit())
w.close()
c.close()
"""


def test_java_and_paimon_ds_alternate_writes_and_compactions(tmp_path, java_oracle):
    """One table written by turns by Java Paimon 0.9 (its writer compacts before its commit) and paimon_ds (the
    commit compacts), with dedicated compactions of both between them: nothing is lost, no bucket is ever above
    the stop trigger, and both read every snapshot equal to the model."""
    path = str(tmp_path / "warehouse" / "db.db" / "t")
    model = Model()
    expected_at: dict[int, list[tuple]] = {}

    def record() -> None:
        table = Table.load(path)
        assert max_runs(table) <= DEFAULTS.stop_trigger
        for s in table.snapshots():
            expected_at.setdefault(s.id, model.sorted())

    for i in range(12):
        data = overlapping_batch(i, 2000)
        if i % 2:
            Table.load(path).append(data)
        else:
            java_oracle.write(path, data, primary_key="id", bucket=1)
        model.apply(data)
        record()
        if i == 5:
            script = f"TMP = {str(tmp_path / 'io')!r}\nFULL = True\n" + JAVA_COMPACT
            java_oracle.exec(path, script)
            record()
        if i == 8:
            assert compact_in_process(Table.load(path), None, full=True) is not None
            record()
    kinds_seen = [s.commit_kind for s in Table.load(path).snapshots()]
    assert kinds_seen.count("APPEND") == 12 and kinds_seen.count("COMPACT") >= 3
    assert java_snapshot_rows(java_oracle, path, ["id", "v", "s"]) == expected_at
    for sid, rows in expected_at.items():
        assert table_rows(Table.load(path).scan(snapshot_id=sid).to_arrow()) == rows, f"snapshot {sid}"


def test_a_commits_compaction_that_loses_to_javas_is_dropped_and_the_data_stays(tmp_path, java_oracle, caplog):
    """The compaction after a commit races a concurrent Java compaction of the same bucket: Java's commits first,
    ours finds an input gone and is dropped (its files deleted, as Paimon's committer drops a conflicting
    compaction); the data commit stands, nothing is lost, and both read the model."""
    path = str(tmp_path / "warehouse" / "db.db" / "t")
    model = Model()
    paimon_ds.write_arrow(path, overlapping_batch(0).slice(0, 0), primary_key="id", options={"bucket": "1"})
    for i in range(4):  # 4 runs (write-only jobs): the next commit's compaction picks (size amplification)
        data = overlapping_batch(i, 1000)
        Table.load(path, {"write-only": "true"}).append(data)
        model.apply(data)
    java_compaction = f"TMP = {str(tmp_path / 'io')!r}\nFULL = True\n" + JAVA_COMPACT

    def racing(buckets: set, full: bool, user: str, identifier: int):
        table = Table.load(path)
        tasks = plan_compaction(table, True, only=buckets)
        messages = [run_compaction(table, t, True) for t in tasks]
        java_oracle.exec(path, java_compaction)  # Java compacts the bucket meanwhile
        written = {f.file_name for m in messages for f in m.compact_after}
        try:
            return table.new_commit(user).commit_or_abort(messages, identifier)
        finally:
            racing.files = written

    data = overlapping_batch(4, 1000)
    table = Table.load(path)
    write = table.new_write()
    write.write_arrow(data)
    with caplog.at_level("WARNING"):
        snapshot = table.new_commit(compact_buckets=racing).commit(write.prepare_commit())
    model.apply(data)
    assert snapshot is not None and snapshot.commit_kind == "APPEND"
    assert "lost to a concurrent one" in caplog.text
    # our APPEND, then Java's COMPACT; ours (of the APPEND's user) never landed
    last_two = Table.load(path).snapshots()[-2:]
    assert [s.commit_kind for s in last_two] == ["APPEND", "COMPACT"]
    assert last_two[1].commit_user != snapshot.commit_user
    on_disk = {p.name for p in (tmp_path / "warehouse" / "db.db" / "t" / "bucket-0").iterdir()}
    assert racing.files and not (racing.files & on_disk)  # the dropped compaction's files are gone
    assert table_rows(Table.load(path).to_arrow()) == model.sorted()
    assert table_rows(java_oracle.read(path)) == model.sorted()


def stream_batch(path: str, data: pa.Table) -> list:
    table = Table.load(path)
    write = table.new_write()
    write.write_arrow(data)
    return write.prepare_commit()


def test_a_streams_background_compaction_runs_beside_it_and_is_cancelled_on_abort(tmp_path):
    """A stream's compaction runs on the query's background thread: the batch's commit returns before it, the next
    batches wait only at the stop trigger, and an abort cancels a compaction that has not finished (nothing of it
    is committed)."""
    path = str(tmp_path / "t")
    paimon_ds.write_arrow(path, overlapping_batch(0).slice(0, 0), primary_key="id", options={"bucket": "4"})
    model = Model()
    stream = StreamCommit(Table.load(path), "query", background=True)
    gate = threading.Event()
    stream.background.submit(gate.wait)  # the thread is busy: the batches' compactions queue behind this
    for batch_id in range(5):
        data = overlapping_batch(batch_id, 2000)
        stream.commit(stream_batch(path, data), batch_id)
        model.apply(data)
    # five data commits landed while the compaction thread was held: none compacted yet (5 runs, at the trigger
    # but below the stop trigger: no batch had to wait)
    assert kinds(path) == ["APPEND"] * 5
    gate.set()
    stream.background.wait()
    assert kinds(path)[-1] == "COMPACT" and max_runs(Table.load(path)) < DEFAULTS.trigger
    assert {s.commit_user for s in Table.load(path).snapshots() if s.commit_kind == "COMPACT"} == {"query-compact"}

    # back-pressure: held again, the batches pile up runs until one would exceed the stop trigger, then wait
    gate.clear()
    stream.background.submit(gate.wait)
    threading.Timer(3.0, gate.set).start()
    before = len(Table.load(path).snapshots())
    for batch_id in range(5, 5 + DEFAULTS.stop_trigger + 2):
        data = overlapping_batch(batch_id, 2000)
        stream.commit(stream_batch(path, data), batch_id)
        model.apply(data)
        assert max_runs(Table.load(path)) <= DEFAULTS.stop_trigger, f"batch {batch_id}"
    assert "COMPACT" in [s.commit_kind for s in Table.load(path).snapshots()[before:]]
    stream.background.wait()

    # cancelled: a queued compaction that starts after the abort commits nothing and leaves no file
    gate.clear()
    stream.background.submit(gate.wait)
    data = overlapping_batch(99, 2000)
    stream.commit(stream_batch(path, data), 99)
    model.apply(data)
    latest = Table.load(path).snapshot_manager.latest_id()
    threading.Timer(0.5, gate.set).start()
    stream.cancel()
    assert Table.load(path).snapshot_manager.latest_id() == latest
    live = {e.file.file_name for e in Table.load(path).new_scan().read_entries()}
    table = Table.load(path)
    referenced = {e.file.file_name for s in table.snapshots() for e in table.new_scan().read_entries(s)}
    on_disk = {p.name for d in (tmp_path / "t").glob("bucket-*") for p in d.iterdir()}
    assert live <= on_disk and on_disk <= referenced  # no file of the cancelled compaction
    assert table_rows(Table.load(path).to_arrow()) == model.sorted()


def test_compaction_optimization_interval(tmp_path):
    """`compaction.optimization-interval` (Paimon 1.x UniversalCompaction): a bucket's first pick in a process, and the
    first after the interval, compacts every run into the top level; in between, the usual triggers."""
    hourly, always = str(tmp_path / "hourly"), str(tmp_path / "always")
    for path, interval in ((hourly, "1 h"), (always, "1 ms")):
        paimon_ds.write_arrow(path, overlapping_batch(0).slice(0, 0), primary_key="id",
                              options={"bucket": "1", "compaction.optimization-interval": interval})
        for i in range(3):
            Table.load(path).append(overlapping_batch(i, 300))
            time.sleep(0.01)
    assert kinds(hourly) == ["APPEND", "COMPACT", "APPEND", "APPEND"]
    assert kinds(always) == ["APPEND", "COMPACT"] * 3
    top = CompactionOptions.from_options(Options({})).num_levels - 1
    assert {e.file.level for e in Table.load(always).new_scan().read_entries()} == {top}
    assert max_runs(Table.load(hourly)) == 3
