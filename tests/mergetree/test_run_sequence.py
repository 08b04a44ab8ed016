"""Sequence numbers of tasks that share a bucket in one commit (core API, no Spark).

Each task's writer merges its rows per key before they reach the table, so every level-0 run it writes
holds one row per key and takes one number: base + 1 + task * RUNS_PER_TASK + run. A higher task's rows
win over a lower task's, a later run's over an earlier one's, and within a run the merge already kept
the later row. Writers that own their bucket (task None) keep per-row numbers base + 1 + n.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.manifest.meta import DataFileMeta
from paimon_ds.mergetree.files import MAX_WRITE_TASKS, RUNS_PER_TASK, read_kv_file, run_sequence
from paimon_ds.mergetree.kv import SEQ
from paimon_ds.operation.stream import StreamScan
from paimon_ds.operation.write import BucketRestore

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
OPTIONS = {"primary-key": "id", "bucket": "1"}


def rows(ids: list[int] | np.ndarray, tag: int) -> pa.Table:
    """Rows of ``ids`` in that order; v = tag * 1_000_000 + position, so a value names its row."""
    ids = np.asarray(ids, dtype=np.int64)
    v = tag * 1_000_000 + np.arange(len(ids), dtype=np.int64)
    return pa.table({"id": ids, "v": v, "s": pa.array(v.astype(str))}, schema=SCHEMA)


def last_wins(parts: list[pa.Table]) -> dict[int, int]:
    """The model: every row in task order, then row order; the last row of a key wins."""
    out: dict[int, int] = {}
    for t in parts:
        out.update(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
    return out


def first_wins(parts: list[pa.Table]) -> dict[int, int]:
    out: dict[int, int] = {}
    for t in parts:
        for k, v in zip(t.column("id").to_pylist(), t.column("v").to_pylist()):
            out.setdefault(k, v)
    return out


def contents(path: str) -> dict[int, int]:
    t = Table.load(path).to_arrow()
    assert t.column("s").to_pylist() == [str(v) for v in t.column("v").to_pylist()]
    got = dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
    assert len(got) == t.num_rows
    return got


def write_tasks(path: str, tasks: dict[int, list[pa.Table]], options: dict[str, str],
                ) -> tuple[list, dict[int, int]]:
    """One commit in which writer ``task`` writes its batches; -> (the tasks' messages, spills per task)."""
    table = Table.for_write(path, SCHEMA, options)
    restore = BucketRestore.from_table(table)
    messages, spills = [], {}
    for task, batches in tasks.items():
        write = table.new_write(restore=restore, task=task)
        for b in batches:
            write.write_arrow(b)
        spills[task] = sum(len(w.spills) for w in write.writers.values())
        messages += write.prepare_commit()
    table.new_commit().commit(messages)
    return messages, spills


def file_sequences(files: list[DataFileMeta]) -> list[int]:
    assert all(f.min_sequence_number == f.max_sequence_number for f in files)
    return sorted(f.min_sequence_number for f in files)


def test_a_later_task_wins_over_an_earlier_one_whatever_the_row_positions(table_path):
    # key 1: first row of task 1, last row of task 0. The old interleaving (task i's row n took base + 1 +
    # n * 65536 + i) gave task 1's row 1 + 1 = 2 and task 0's row 5 1 + 5 * 65536: task 0 won, wrongly.
    t0 = rows([3, 2, 7, 2, 8, 1], 0)
    t1 = rows([1, 3, 3, 9], 1)
    messages, _ = write_tasks(table_path, {0: [t0], 1: [t1]}, OPTIONS)
    assert contents(table_path) == last_wins([t0, t1]) == {
        1: 1_000_000, 2: 3, 3: 1_000_002, 7: 2, 8: 4, 9: 1_000_003}
    assert file_sequences([f for m in messages for f in m.new_files]) == [0, RUNS_PER_TASK]

    # the next commit starts above the bucket's highest number; task 0 wins over nothing older
    t0b = rows([9, 1], 2)
    messages, _ = write_tasks(table_path, {0: [t0b]}, OPTIONS)
    assert file_sequences([f for m in messages for f in m.new_files]) == [RUNS_PER_TASK + 1]
    assert contents(table_path) == last_wins([t0, t1, t0b])
    # a streaming read of the first commit merges its two tasks' runs per key the same way
    table = Table.load(table_path)
    (unit,) = StreamScan(table).unit(1, full=False)
    delta = pa.Table.from_batches(list(table.new_read().read(unit.split, delta=True)))
    assert dict(zip(delta.column("id").to_pylist(), delta.column("v").to_pylist())) == last_wins([t0, t1])


def test_spilled_runs_merge_into_one_run_with_one_number(table_path):
    rng = np.random.default_rng(3)
    # 64 KB buffer: every 4000-row batch (~170 KB in the kv layout) spills
    options = {**OPTIONS, "write-buffer-size": "64 kb"}
    tasks = {t: [rows(rng.integers(0, 3000, 4000), 10 * t + b) for b in range(5)] for t in (0, 1, 2)}
    messages, spills = write_tasks(table_path, tasks, options)
    assert all(n >= 4 for n in spills.values()), spills
    assert file_sequences([f for m in messages for f in m.new_files]) == [0, RUNS_PER_TASK, 2 * RUNS_PER_TASK]
    assert contents(table_path) == last_wins([b for t in (0, 1, 2) for b in tasks[t]])


def test_a_task_without_spilling_writes_one_number_per_run(table_path):
    rng = np.random.default_rng(4)
    options = {**OPTIONS, "write-buffer-size": "64 kb", "write-buffer-spillable": "false"}
    tasks = {t: [rows(rng.integers(0, 3000, 4000), 10 * t + b) for b in range(4)] for t in (5, 2)}
    messages, _ = write_tasks(table_path, tasks, options)
    seqs = file_sequences([f for m in messages for f in m.new_files])
    # four runs per task (one per buffer), task 2's below task 5's whatever order the tasks ran in
    assert seqs == [2 * RUNS_PER_TASK + r for r in range(4)] + [5 * RUNS_PER_TASK + r for r in range(4)]
    assert contents(table_path) == last_wins([b for t in (2, 5) for b in tasks[t]])


def test_first_row_keeps_the_first_row_of_the_lowest_task(table_path):
    rng = np.random.default_rng(5)
    options = {**OPTIONS, "merge-engine": "first-row", "write-buffer-size": "64 kb",
               "write-buffer-spillable": "false"}
    tasks = {t: [rows(rng.integers(0, 3000, 4000), 10 * t + b) for b in range(3)] for t in (1, 0)}
    write_tasks(table_path, tasks, options)
    assert contents(table_path) == first_wins([b for t in (0, 1) for b in tasks[t]])
    # the committer lifted the level-0 runs (first-row readers skip level 0)
    assert all(f.level > 0 for s in Table.load(table_path).new_scan().plan() for f in s.files)


def test_changelog_files_take_the_number_of_their_run(table_path):
    """changelog-producer=input: every input row, in arrival order per key, numbered as the run it went to."""
    options = {**OPTIONS, "changelog-producer": "input", "write-buffer-size": "64 kb",
               "write-buffer-spillable": "false"}
    rng = np.random.default_rng(6)
    batches = [rows(rng.integers(0, 500, 4000), b) for b in range(3)]
    messages, _ = write_tasks(table_path, {1: batches}, options)
    table = Table.load(table_path)
    data = [f for m in messages for f in m.new_files]
    changelog = [f for m in messages for f in m.changelog_files]
    assert file_sequences(data) == file_sequences(changelog) == [RUNS_PER_TASK + r for r in range(3)]
    for run, f in enumerate(sorted(changelog, key=lambda f: f.min_sequence_number)):
        kv = pa.concat_tables(read_kv_file(table.store, f"{table.root}/bucket-0/{f.file_name}", f.schema_id))
        assert set(kv.column(SEQ).to_pylist()) == {RUNS_PER_TASK + run}
        # the run's input rows, stably sorted by key: a key's rows stay in arrival order
        expected = batches[run].take(pa.array(np.argsort(batches[run].column("id").to_numpy(), kind="stable")))
        assert kv.select(["id", "v"]).to_pylist() == expected.select(["id", "v"]).to_pylist()
    assert contents(table_path) == last_wins(batches)


def test_a_writer_that_owns_its_bucket_numbers_every_row(table_path):
    table = Table.for_write(table_path, SCHEMA, OPTIONS)
    write = table.new_write()
    write.write_arrow(rows([5, 1, 5, 2], 0))
    (message,) = write.prepare_commit()
    (f,) = message.new_files
    kv = pa.concat_tables(read_kv_file(table.store, f"{table.root}/bucket-0/{f.file_name}", f.schema_id))
    # merged per key (the later 5 kept), each row with its own number as Paimon's single writer gives
    assert kv.select(["id", SEQ]).to_pylist() == [{"id": 1, SEQ: 1}, {"id": 2, SEQ: 3}, {"id": 5, SEQ: 2}]
    assert (f.min_sequence_number, f.max_sequence_number) == (1, 3)


def test_run_and_task_limits(table_path):
    assert run_sequence(99, 2, 7) == 99 + 1 + 2 * RUNS_PER_TASK + 7
    with pytest.raises(ValueError, match=f"at most {MAX_WRITE_TASKS} tasks"):
        run_sequence(0, MAX_WRITE_TASKS, 0)
    table = Table.for_write(table_path, SCHEMA, OPTIONS)
    write = table.new_write(restore=BucketRestore(), task=3)
    write.write_arrow(rows([1, 2], 0))
    (writer,) = write.writers.values()
    writer.spillable = False
    writer.runs = RUNS_PER_TASK - 1  # the last run a task may write in one commit
    writer.flush_memory()
    assert file_sequences(writer.new_files) == [3 * RUNS_PER_TASK + RUNS_PER_TASK - 1]  # base -1
    writer.write(rows([3], 1), np.zeros(1, dtype=np.int8))
    with pytest.raises(RuntimeError, match=f"wrote {RUNS_PER_TASK} level-0 sorted runs"):
        writer.flush_memory()
    write.abort()


def test_pypaimon_streams_every_changelog_record_of_runs_that_share_a_number(table_path, pypaimon_oracle):
    """Changelog files hold several rows of a key under one number: Paimon's readers do not merge
    changelog files, so pypaimon's streaming reader gives every input record, a file's in its order."""
    options = {**OPTIONS, "changelog-producer": "input"}
    parts = {0: [rows([1, 2, 1, 3, 1], 0)], 1: [rows([2, 1, 2], 1)]}
    write_tasks(table_path, parts, options)
    got = pypaimon_oracle.stream_read(table_path, from_snapshot=1)
    records = [(r["_row_kind"], r["id"], r["v"]) for r in got.to_pylist()]
    assert sorted(records) == sorted(("+I", i, v) for t in parts.values() for b in t
                                     for i, v in zip(b.column("id").to_pylist(), b.column("v").to_pylist()))
    for task in parts:  # within a task's file a key's records keep their arrival order
        for key in (1, 2):
            vs = [v for _, i, v in records if i == key and v // 1_000_000 == task]
            assert vs == sorted(vs)
    table = Table.load(table_path)
    ours = [pa.Table.from_batches(list(table.new_read(row_kind_column="k").read(u.split, changelog=u.changelog)))
            for u in StreamScan(table).unit(1, full=False)]
    assert sorted((r["k"], r["id"], r["v"]) for t in ours for r in t.to_pylist()) == sorted(records)
