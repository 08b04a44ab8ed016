"""Universal compaction of primary-key tables: the policy on hand-built runs, then real tables.

The policy tests derive each expected CompactUnit by hand from the rules of Paimon 0.9's
UniversalCompaction (sizes in made-up bytes):
- size amplification: with at least `trigger` runs, if the runs above the oldest are together more
  than `max-size-amplification-percent` % of the oldest (strictly), compact everything to the top level;
- size ratio: with at least `trigger` runs, grow a candidate from the newest run while the next run
  is at most (100 + size-ratio) % of the candidate's size; a candidate of two or more runs is compacted;
- file number: with more than `trigger` runs, start the candidate with the newest (runs - trigger + 1)
  runs and grow it by size ratio;
- the output level is the level below the first run left out; it is never level 0 (the unit then
  takes runs up to and including the first one above level 0), and is the top level when every run
  is taken; deletes are dropped only when the output level is at least the highest non-empty level.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.manifest.files import ManifestList
from paimon_ds.manifest.meta import DataFileMeta
from paimon_ds.mergetree.compact import (
    CompactionOptions,
    CompactUnit,
    SortedRun,
    UniversalCompaction,
    drop_delete,
    sorted_runs,
)
from paimon_ds.operation.compact import plan_compaction, run_compaction
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.operation.write import BucketRestore
from paimon_ds.options.registry import Options

# ---------------------------------------------------------------------------------------------- policy

_names = iter(range(1_000_000))


def _file(size: int, level: int) -> DataFileMeta:
    return DataFileMeta(file_name=f"f{next(_names)}", file_size=size, row_count=1, level=level)


def runs(*spec: tuple[int, int]) -> list[SortedRun]:
    """Sorted runs, newest first, from (level, size) pairs: one file per run."""
    return [SortedRun(level, [_file(size, level)]) for level, size in spec]


def policy(trigger: int, max_size_amp: int = 200, size_ratio: int = 1) -> UniversalCompaction:
    return UniversalCompaction(CompactionOptions(trigger=trigger, stop_trigger=trigger + 3, num_levels=trigger + 1,
                                                 max_size_amp=max_size_amp, size_ratio=size_ratio))


def shape(unit: CompactUnit | None) -> tuple[int, list[tuple[int, int]]] | None:
    """(output level, [(level, size) of each input run]) -- what a unit compacts and where to."""
    if unit is None:
        return None
    return unit.output_level, [(r.level, r.total_size) for r in unit.runs]


def test_below_the_trigger_nothing_is_picked():
    # 2 runs < trigger 3: neither size amplification (20 vs 1 would be 2000 %) nor size ratio apply
    assert policy(3, max_size_amp=100).pick(3, runs((0, 20), (2, 1))) is None
    assert policy(3).pick(3, runs()) is None


def test_size_amplification_compacts_everything_to_the_top_level():
    # 10 + 10 = 20 above an oldest run of 15: 2000 > 100 * 15, so all runs go to level 3 (of 4 levels)
    pick = policy(3, max_size_amp=100).pick(4, runs((0, 10), (0, 10), (3, 15)))
    assert shape(pick) == (3, [(0, 10), (0, 10), (3, 15)])


def test_size_amplification_threshold_is_strict_and_size_ratio_comes_next():
    # 5 + 5 = 10 over 15: 1000 > 1500 is false. Size ratio: 5 * 1.01 >= 5 takes the second run,
    # 10 * 1.01 < 15 stops; two runs -> output one level below the run left out (3 - 1 = 2).
    assert shape(policy(3, max_size_amp=100).pick(4, runs((0, 5), (0, 5), (3, 15)))) == (2, [(0, 5), (0, 5)])
    # exactly at the threshold: 1 + 2 = 3 over 3 is 300 > 300, false; size ratio: 1 * 1.01 < 2 stops at
    # one run; 3 runs is not more than trigger 3: nothing
    assert policy(3, max_size_amp=100).pick(3, runs((0, 1), (1, 2), (2, 3))) is None
    # one more byte above the oldest run tips it over: 400 > 300
    assert shape(policy(3, max_size_amp=100).pick(3, runs((0, 2), (1, 2), (2, 3)))) == \
        (2, [(0, 2), (1, 2), (2, 3)])


def test_size_ratio_threshold_decides_how_far_the_candidate_grows():
    # 4 runs = trigger 4, so only size amplification and size ratio can pick.
    # amplification: 27 * 100 > 200 * 1000 is false.
    spec = ((0, 8), (1, 9), (2, 10), (5, 1000))
    # ratio 10 %: 8 * 1.10 = 8.8 < 9 -> a candidate of one run, nothing to compact
    assert policy(4, size_ratio=10).pick(6, runs(*spec)) is None
    # ratio 20 %: 9.6 >= 9 (17), 20.4 >= 10 (27), 32.4 < 1000 stops -> 3 runs to level 5 - 1 = 4
    assert shape(policy(4, size_ratio=20).pick(6, runs(*spec))) == (4, [(0, 8), (1, 9), (2, 10)])


def test_file_number_trigger_starts_with_the_newest_runs():
    # 5 runs > trigger 3: amplification 1111 * 100 > 200 * 10000 is false; size ratio stops at
    # 1 * 1.01 < 10. By file number the candidate starts with 5 - 3 + 1 = 3 runs (size 111);
    # 111 * 1.01 < 1000 stops; the output is the level below the first run left out: 3 - 1 = 2.
    pick = policy(3).pick(5, runs((0, 1), (1, 10), (2, 100), (3, 1000), (4, 10000)))
    assert shape(pick) == (2, [(0, 1), (1, 10), (2, 100)])


def test_file_number_candidate_keeps_growing_by_size_ratio():
    # candidate of 3 runs (1 + 2 + 3 = 6); the next run, 6, is within 6 * 1.01: taken (12);
    # 12 * 1.01 < 100 stops -> 4 runs, output 4 - 1 = 3. (Size ratio alone stopped at 1 * 1.01 < 2.)
    pick = policy(3).pick(5, runs((0, 1), (1, 2), (2, 3), (3, 6), (4, 100)))
    assert shape(pick) == (3, [(0, 1), (1, 2), (2, 3), (3, 6)])


def test_output_level_is_never_zero():
    # size ratio takes the three 2s (6); 6 * 1.01 < 500 stops. The run left out is at level 0, so the
    # output would be 0: the unit takes runs up to the first one above level 0 -- here there is
    # none, all runs are taken, and the output is the top level.
    pick = policy(4).pick(3, runs((0, 2), (0, 2), (0, 2), (0, 500)))
    assert shape(pick) == (2, [(0, 2), (0, 2), (0, 2), (0, 500)])
    # the same with a level-1 and a level-2 run below: the unit stops after the level-1 run
    # (output level 1), leaving the level-2 run alone (amplification: 1106 * 100 < 200 * 100000)
    pick = policy(4).pick(4, runs((0, 2), (0, 2), (0, 2), (0, 500), (1, 600), (2, 100_000)))
    assert shape(pick) == (1, [(0, 2), (0, 2), (0, 2), (0, 500), (1, 600)])
    # two level-0 runs picked by ratio in front of a level-1 run: that run joins, output level 1
    pick = policy(3).pick(4, runs((0, 3), (0, 3), (1, 7), (3, 100)))
    assert shape(pick) == (1, [(0, 3), (0, 3), (1, 7)])


def test_unit_output_level_for_each_candidate_size():
    levels = [0, 0, 2, 3, 5]
    rs = [SortedRun(level, [_file(1, level)]) for level in levels]
    outputs = {count: UniversalCompaction._unit(rs, 5, count).output_level for count in range(1, 6)}
    taken = {count: len(UniversalCompaction._unit(rs, 5, count).runs) for count in range(1, 6)}
    # 1 run: the next run is level 0 -> extend through it to the level-2 run (output 2, 3 runs taken)
    # 2 runs: next is level 2 -> output 1; 3: next is level 3 -> 2; 4: next is level 5 -> 4; 5: all -> top
    assert outputs == {1: 2, 2: 1, 3: 2, 4: 4, 5: 5}
    assert taken == {1: 3, 2: 2, 3: 3, 4: 4, 5: 5}


def test_runs_made_of_several_files_count_their_total_size():
    # a level-1 run of three files (4 + 4 + 4 = 12) is one run of size 12
    l1 = SortedRun(1, [_file(4, 1), _file(4, 1), _file(4, 1)])
    rs = runs((0, 6), (0, 6)) + [l1] + runs((3, 1000))
    # amplification: 24 * 100 < 200 * 1000. Ratio: 6 -> 12 (6.06 >= 6); 12.12 >= 12 -> 24;
    # 24.24 < 1000 stops: 3 runs, output 3 - 1 = 2, with all three files of the level-1 run
    unit = policy(4).pick(4, rs)
    assert shape(unit) == (2, [(0, 6), (0, 6), (1, 12)])
    assert len(unit.files) == 5


def test_repeated_flushes_follow_the_universal_rules():
    """Flush a run of size 1 at level 0, pick, apply the unit (sizes add up); repeat. Derived by hand."""
    strategy = policy(3, max_size_amp=100, size_ratio=1)
    expected = [
        [(0, 1)],
        [(0, 1), (0, 1)],
        [(2, 3)],                  # 3 runs: 2 * 100 > 100 * 1 (amplification) -> all to level 2
        [(0, 1), (2, 3)],
        [(1, 2), (2, 3)],          # 200 > 300 no; ratio 1, 1 -> 2; 2.02 < 3: 2 runs to level 2 - 1 = 1
        [(0, 1), (1, 2), (2, 3)],  # 300 > 300 no; 1.01 < 2: no ratio pick; 3 runs is not > 3
        [(2, 7)],                  # 400 > 300: amplification
        [(0, 1), (2, 7)],
        [(1, 2), (2, 7)],          # ratio: 2 runs to level 1
        [(0, 1), (1, 2), (2, 7)],  # nothing
        [(1, 4), (2, 7)],          # 400 > 700 no; ratio 1, 1 (2), 2 (4); 4.04 < 7: 3 runs to level 1
        [(0, 1), (1, 4), (2, 7)],  # nothing
        [(1, 6), (2, 7)],          # 600 > 700 no; ratio 1, 1 (2); 2.02 < 4 -> output 0, so take the L1 run
        [(0, 1), (1, 6), (2, 7)],  # 700 > 700 no; nothing
        [(2, 15)],                 # 800 > 700: amplification
    ]
    state: list[tuple[int, int]] = []
    for step, want in enumerate(expected, 1):
        state = [(0, 1)] + state
        unit = strategy.pick(3, runs(*state))
        if unit is not None:
            n = len(unit.runs)
            assert [(r.level, r.total_size) for r in unit.runs] == state[:n]
            state = [(unit.output_level, sum(size for _, size in state[:n]))] + state[n:]
        assert state == want, f"step {step}"


def test_pick_full():
    strategy = policy(5)
    assert strategy.pick_full(6, []) is None
    # one run already at the top level: nothing to do
    assert strategy.pick_full(6, runs((5, 10))) is None
    # one run below the top level is moved up; several runs are all merged into the top level
    assert shape(strategy.pick_full(6, runs((2, 10)))) == (5, [(2, 10)])
    assert shape(strategy.pick_full(6, runs((0, 1), (3, 2), (5, 3)))) == (5, [(0, 1), (3, 2), (5, 3)])


def test_deletes_are_dropped_only_at_or_above_the_highest_level():
    rs = runs((0, 1), (0, 1), (2, 10), (4, 100))
    assert drop_delete(CompactUnit(1, rs[:2]), rs) is False  # level 2 and 4 lie below: keep the deletes
    assert drop_delete(CompactUnit(3, rs[:3]), rs) is False  # level 4 still lies below
    assert drop_delete(CompactUnit(4, rs), rs) is True       # nothing older remains
    assert drop_delete(CompactUnit(5, rs), rs) is True
    only_l0 = runs((0, 1), (0, 1))
    assert drop_delete(CompactUnit(0, only_l0), only_l0) is False  # never at level 0


def test_sorted_runs_orders_level0_newest_first_then_levels():
    def f(name: str, level: int, lo: int, hi: int, min_key: bytes = b"") -> DataFileMeta:
        return DataFileMeta(file_name=name, file_size=1, row_count=1, level=level, min_sequence_number=lo,
                            max_sequence_number=hi, min_key=min_key)
    files = [f("a", 0, 0, 9), f("b", 3, 0, 5, b"\x02"), f("c", 0, 10, 19), f("d", 1, 0, 3),
             f("e", 3, 0, 5, b"\x01")]
    got = [(r.level, [x.file_name for x in r.files]) for r in sorted_runs(files)]
    assert got == [(0, ["c"]), (0, ["a"]), (1, ["d"]), (3, ["e", "b"])]


def test_compaction_options_follow_paimon_defaults():
    o = CompactionOptions.from_options(Options({}))
    assert (o.trigger, o.stop_trigger, o.num_levels, o.max_size_amp, o.size_ratio) == (5, 8, 6, 200, 1)
    o = CompactionOptions.from_options(Options({"num-sorted-run.compaction-trigger": "3"}))
    assert (o.trigger, o.stop_trigger, o.num_levels) == (3, 6, 4)
    o = CompactionOptions.from_options(Options({"num-sorted-run.compaction-trigger": "3",
                                                "num-sorted-run.stop-trigger": "4", "num-levels": "7",
                                                "full-compaction.delta-commits": "2"}))
    assert (o.trigger, o.stop_trigger, o.num_levels, o.full_compaction_delta_commits) == (3, 4, 7, 2)


# ---------------------------------------------------------------------------------------------- tables

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("name", pa.string()), ("op", pa.string())])
PK_OPTIONS = {"primary-key": "id", "bucket": "4", "rowkind.field": "op"}
KEYS = 4000


class Model:
    """The deduplicate engine in plain Python: last write per key wins, -D removes the key."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[int, str]] = {}

    def apply(self, data: pa.Table) -> None:
        for r in data.to_pylist():
            if r["op"] == "-D":
                self.rows.pop(r["id"], None)
            else:
                self.rows[r["id"]] = (r["v"], r["name"])

    def expected(self) -> list[tuple]:
        return [(k, v, n, "+I") for k, (v, n) in sorted(self.rows.items())]


def batch(rng: np.random.Generator, commit: int, size: int, delete_share: float = 0.1) -> pa.Table:
    """``size`` distinct keys (so the model never depends on the order of one key's rows in a commit)."""
    ids = np.sort(rng.choice(KEYS, size=size, replace=False))
    ops = np.where(rng.random(size) < delete_share, "-D", "+I")
    return pa.table({"id": ids, "v": np.full(size, commit, dtype=np.int64),
                     "name": [f"n{commit}-{i % 97}" for i in ids], "op": ops}, schema=SCHEMA)


def rows_of(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t.column(n).to_pylist() for n in SCHEMA.names)))


def read_rows(path: str) -> list[tuple]:
    return rows_of(Table.load(path).to_arrow())


def bucket_runs(path: str) -> dict[tuple[bytes, int], list[SortedRun]]:
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for e in Table.load(path).new_scan().read_entries():
        groups[(e.partition, e.bucket)].append(e.file)
    return {k: sorted_runs(v) for k, v in groups.items()}


def run_shapes(path: str) -> dict[int, list[tuple[int, int]]]:
    """bucket -> [(level, number of files)] of each sorted run, newest first."""
    return {b: [(r.level, len(r.files)) for r in rs] for (_, b), rs in sorted(bucket_runs(path).items())}


def core_write(path: str, data: pa.Table, options: dict[str, str], clustered: bool = True):
    """One commit with the core API; clustered: the task owns its buckets and compacts them inline."""
    table = Table.for_write(path, SCHEMA, options)
    restore = BucketRestore.from_table(table, with_files=clustered)
    write = table.new_write(restore=restore, clustered=clustered)
    write.write_arrow(data)
    return table.new_commit().commit(write.prepare_commit())


def snapshots(path: str) -> list:
    table = Table.load(path)
    sm = table.snapshot_manager
    return [sm.snapshot(i) for i in sm.list_ids()]


def referenced_files(path: str) -> tuple[set[str], set[str]]:
    """(data files, manifest-dir files) that some snapshot of the table references."""
    table = Table.load(path)
    lists = ManifestList(table.io, table.root)
    data: set[str] = set()
    meta: set[str] = set()
    for s in snapshots(path):
        for name in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.index_manifest):
            if name:
                meta.add(name)
        for name in (s.base_manifest_list, s.delta_manifest_list):
            meta.update(m.file_name for m in lists.read(name))
        data.update(e.file.file_name for e in table.new_scan().read_entries(s))
    return data, meta


def files_on_disk(path: str) -> tuple[set[str], set[str]]:
    root = Path(path)
    data = {p.name for p in root.rglob("data-*")}
    meta = {p.name for p in (root / "manifest").iterdir()}
    return data, meta


def test_fifty_clustered_commits_stay_under_the_stop_trigger_then_full_compaction(spark, table_path, java_oracle):
    """Issue 3's compaction acceptance, with every commit checked against the model.

    Commits alternate between the core clustered TableWrite and paimon_ds.write (Spark, clustered by
    bucket) -- every fifth commit goes through Spark -- with batch sizes varying 20x, so runs of
    different sizes meet the size-ratio and amplification rules.
    """
    rng = np.random.default_rng(3)
    model = Model()
    stop_trigger = CompactionOptions.from_options(Options({})).stop_trigger
    most_runs = 0
    for commit in range(1, 51):
        data = batch(rng, commit, int(rng.integers(60, 1200)))
        if commit % 5 == 0:
            paimon_ds.write(spark.createDataFrame(data.to_pandas()), table_path, options=PK_OPTIONS, parallelism=4)
        else:
            core_write(table_path, data, PK_OPTIONS)
        model.apply(data)
        shapes = run_shapes(table_path)
        assert sorted(shapes) == [0, 1, 2, 3]
        counts = [len(s) for s in shapes.values()]
        assert max(counts) <= stop_trigger, f"commit {commit}: {shapes}"
        most_runs = max(most_runs, *counts)
        assert read_rows(table_path) == model.expected(), f"commit {commit}"
    kinds = [s.commit_kind for s in snapshots(table_path)]
    assert kinds.count("APPEND") == 50
    assert kinds.count("COMPACT") >= 5, kinds  # writers compacted inline, many times
    assert most_runs >= 4  # runs did pile up between compactions (the bound was not trivially met)

    snap = paimon_ds.compact(spark, table_path, full=True)
    assert snap is not None and snap.commit_kind == "COMPACT"
    assert snapshots(table_path)[-1].id == snap.id
    shapes = run_shapes(table_path)
    num_levels = CompactionOptions.from_options(Options({})).num_levels
    assert {b: [level for level, _ in s] for b, s in shapes.items()} == {b: [num_levels - 1] for b in range(4)}
    expected = model.expected()
    assert read_rows(table_path) == expected
    # full compaction outputs the top level, where deletes are dropped: the files hold exactly the live rows
    entries = Table.load(table_path).new_scan().read_entries()
    assert sum(e.file.row_count for e in entries) == len(expected)
    assert all(e.file.delete_row_count == 0 for e in entries)
    # nothing left to do: a second full compaction commits nothing
    assert paimon_ds.compact(spark, table_path, full=True) is None
    assert rows_of(java_oracle.read(table_path)) == expected


def _table_with_l0_runs(path: str, commits: int, rng: np.random.Generator, model: Model) -> None:
    """``commits`` write-only commits: every bucket gets that many level-0 runs, nothing compacted (the table is
    write-only: its writers and committers leave compaction to a dedicated job)."""
    for commit in range(1, commits + 1):
        data = batch(rng, commit, 600)
        core_write(path, data, {**PK_OPTIONS, "write-only": "true"}, clustered=False)
        model.apply(data)
    assert {b: len(s) for b, s in run_shapes(path).items()} == {b: commits for b in range(4)}


def test_dedicated_compaction_keeps_an_append_that_landed_meanwhile(table_path):
    rng = np.random.default_rng(5)
    model = Model()
    _table_with_l0_runs(table_path, 6, rng, model)
    planned_at = Table.load(table_path).latest_snapshot().id
    table = Table.load(table_path)
    tasks = plan_compaction(table, full=True)
    assert sorted(t.bucket for t in tasks) == [0, 1, 2, 3]
    messages = [run_compaction(table, t, full=True) for t in tasks]

    # another writer's append lands first (snapshot N+1), updating keys the compaction rewrites
    data = batch(rng, 7, 900)
    appended = core_write(table_path, data, PK_OPTIONS, clustered=False)
    model.apply(data)
    assert appended.id == planned_at + 1
    appended_files = {e.file.file_name for e in Table.load(table_path).new_scan().read_entries()
                      if e.file.level == 0} - {f.file_name for m in messages for f in m.compact_before}

    snap = Table.load(table_path).new_commit().commit(messages)
    assert (snap.id, snap.commit_kind) == (planned_at + 2, "COMPACT")
    # both survive: the append's level-0 run stays on top of the compacted top-level run
    assert run_shapes(table_path) == {b: [(0, 1), (5, 1)] for b in range(4)}
    live = {e.file.file_name for e in Table.load(table_path).new_scan().read_entries()}
    assert appended_files <= live and len(appended_files) == 4
    assert read_rows(table_path) == model.expected()


def test_second_compaction_of_the_same_inputs_conflicts_and_leaves_nothing(spark, table_path):
    rng = np.random.default_rng(7)
    model = Model()
    _table_with_l0_runs(table_path, 5, rng, model)
    table = Table.load(table_path)
    # compaction B is planned and run from the same snapshot as A, but A commits first
    b_messages = [run_compaction(table, t, full=True) for t in plan_compaction(table, full=True)]
    b_outputs = {f.file_name for m in b_messages for f in m.compact_after}
    assert len(b_outputs) == 4 and all(name in files_on_disk(table_path)[0] for name in b_outputs)

    a = paimon_ds.compact(spark, table_path, full=True)  # compaction A: the Spark job
    assert a.commit_kind == "COMPACT"
    before = snapshots(table_path)
    commit = Table.load(table_path).new_commit()
    with pytest.raises(CommitConflict, match="already removed"):
        commit.commit(b_messages)
    commit.abort(b_messages)  # what the compaction job does with a failed commit

    assert [s.id for s in snapshots(table_path)] == [s.id for s in before]
    assert run_shapes(table_path) == {b: [(5, 1)] for b in range(4)}
    assert read_rows(table_path) == model.expected()
    # no files behind: every data file and manifest on disk is referenced by a snapshot, none of B's
    on_disk, referenced = files_on_disk(table_path), referenced_files(table_path)
    assert on_disk == referenced
    assert not b_outputs & on_disk[0]


def test_full_compaction_every_third_commit(table_path):
    options = {**PK_OPTIONS, "full-compaction.delta-commits": "3"}
    rng = np.random.default_rng(11)
    model = Model()
    for commit in range(1, 10):
        data = batch(rng, commit, 400)
        core_write(table_path, data, options)
        model.apply(data)
        shapes = run_shapes(table_path)
        latest = Table.load(table_path).latest_snapshot()
        if commit % 3 == 0:
            # one run per bucket, at the top level (num-levels 6 -> level 5), in a COMPACT snapshot
            assert latest.commit_kind == "COMPACT"
            assert shapes == {b: [(5, 1)] for b in range(4)}, f"commit {commit}"
        else:
            # no compaction: one level-0 run per commit since the last full compaction (3 runs < trigger 5)
            assert latest.commit_kind == "APPEND"
            want = [(0, 1)] * (commit % 3) + ([(5, 1)] if commit > 3 else [])
            assert shapes == {b: want for b in range(4)}, f"commit {commit}"
        assert read_rows(table_path) == model.expected()
    kinds = [s.commit_kind for s in snapshots(table_path)]
    assert kinds == ["APPEND", "APPEND", "APPEND", "COMPACT"] * 3


def test_write_only_writers_never_compact(spark, table_path):
    # delta-commits and a low trigger would both compact, were the writers allowed to
    options = {**PK_OPTIONS, "write-only": "true", "full-compaction.delta-commits": "2",
               "num-sorted-run.compaction-trigger": "2"}
    rng = np.random.default_rng(13)
    model = Model()
    for commit in range(1, 8):
        data = batch(rng, commit, 400)
        if commit == 7:
            paimon_ds.write(spark.createDataFrame(data.to_pandas()), table_path, options=options, parallelism=2)
        else:
            core_write(table_path, data, options)
        model.apply(data)
        assert run_shapes(table_path) == {b: [(0, 1)] * commit for b in range(4)}
    assert [s.commit_kind for s in snapshots(table_path)] == ["APPEND"] * 7
    assert read_rows(table_path) == model.expected()
    # the dedicated compaction job still compacts a write-only table
    assert paimon_ds.compact(spark, table_path, full=True).commit_kind == "COMPACT"
    assert run_shapes(table_path) == {b: [(2, 1)] for b in range(4)}  # num-levels = trigger + 1 = 3
    assert read_rows(table_path) == model.expected()


def test_low_triggers_bound_the_runs_of_every_bucket(table_path):
    """trigger 2 / stop-trigger 3, sizes varying 40x: the writer keeps picking until runs <= 3."""
    options = {**PK_OPTIONS, "num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"}
    rng = np.random.default_rng(17)
    model = Model()
    levels_seen: set[int] = set()
    for commit in range(1, 31):
        data = batch(rng, commit, int(rng.integers(50, 2000)))
        core_write(table_path, data, options)
        model.apply(data)
        shapes = run_shapes(table_path)
        assert max(len(s) for s in shapes.values()) <= 3, f"commit {commit}: {shapes}"
        levels_seen |= {level for s in shapes.values() for level, _ in s}
        assert read_rows(table_path) == model.expected(), f"commit {commit}"
    assert levels_seen >= {0, 2}  # num-levels 3: level-0 runs and compacted top-level runs


def stream_batch(path: str, data: pa.Table, options: dict[str, str], tasks: int = 2) -> list:
    """One micro-batch as a stream writes it: ``tasks`` writers share every bucket (no compaction)."""
    table = Table.for_write(path, SCHEMA, options)
    restore = BucketRestore.from_table(table)
    messages = []
    for slot in range(tasks):
        write = table.new_write(restore=restore, task=slot)
        write.write_arrow(data.filter(pc.equal(pc.bit_wise_and(data["id"], tasks - 1), slot)))
        messages += write.prepare_commit()
    return messages


def test_stream_restart_compacts_the_backlog_a_dead_driver_left(table_path, monkeypatch):
    """A driver killed between a batch's data commit and its compaction leaves the runs uncompacted. The next
    process compacts that backlog (as the dead batch's compaction) before its own batch lands, so no snapshot
    but the dead batch's own holds more than stop-trigger runs, and each (commitUser, commitIdentifier) still
    names one snapshot."""
    from paimon_ds.operation import stream_commit
    from paimon_ds.operation.stream_commit import StreamCommit
    options = {**PK_OPTIONS, "num-sorted-run.compaction-trigger": "3"}  # stop-trigger 6
    rng = np.random.default_rng(19)
    model = Model()

    def new_process() -> None:  # what this process remembers dies with it
        monkeypatch.setattr(stream_commit, "_backlog_checked", set(), raising=False)

    def max_runs() -> int:
        return max(len(rs) for rs in bucket_runs(table_path).values())

    batch_id = 0
    for _ in range(3):  # a healthy stream: every batch compacted after its data commit
        data = batch(rng, batch_id, 400)
        StreamCommit(Table.load(table_path) if batch_id else Table.for_write(table_path, SCHEMA, options),
                     "query", background=False).commit(stream_batch(table_path, data, options), batch_id)
        model.apply(data)
        batch_id += 1
        assert max_runs() <= 6
    new_process()
    crashed = batch_id  # the driver dies after this batch's data commit (4 tasks): its compaction never runs
    data = batch(rng, batch_id, 400)
    def died_before_compacting(buckets: set, full: bool, user: str, identifier: int) -> None:
        return None

    Table.load(table_path).new_commit("query", died_before_compacting).commit(
        stream_batch(table_path, data, options, tasks=4), batch_id)
    model.apply(data)
    batch_id += 1
    backlog = max_runs()
    assert backlog + 2 > 6  # the next batch's two level-0 runs would go above the stop trigger
    before = Table.load(table_path).snapshot_manager.latest_id()
    new_process()  # the restarted query
    for _ in range(3):
        data = batch(rng, batch_id, 400)
        StreamCommit(Table.load(table_path), "query", background=False).commit(
            stream_batch(table_path, data, options), batch_id)
        model.apply(data)
        batch_id += 1
    table = Table.load(table_path)
    for s in snapshots(table_path):
        if (s.commit_user, s.commit_identifier) == ("query", crashed):
            continue  # the dead driver's data commit: four runs on whatever its last compaction left
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
        for e in table.new_scan().read_entries(s):
            groups[(e.partition, e.bucket)].append(e.file)
        assert max(len(sorted_runs(fs)) for fs in groups.values()) <= 6, f"snapshot {s.id}"
    after = snapshots(table_path)[before:]
    assert [(s.commit_kind, s.commit_user, s.commit_identifier) for s in after][:3] == [
        ("COMPACT", "query-compact", crashed), ("APPEND", "query", crashed + 1),
        ("COMPACT", "query-compact", crashed + 1)]
    pairs = [(s.commit_user, s.commit_identifier) for s in snapshots(table_path)]
    assert len(pairs) == len(set(pairs))
    assert read_rows(table_path) == model.expected()
