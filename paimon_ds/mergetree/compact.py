"""Levels of a bucket's LSM tree and Paimon's universal compaction policy.

Sorted runs, newest first: every level-0 file is a run of its own (newest by sequence number
first), then each non-empty level >= 1 is one run. UniversalCompaction picks runs to merge by,
in order: size amplification, size ratio, and the number of runs (MergeTreeCompactManager).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..format.binary_row import deserialize_row
from ..manifest.meta import DataFileMeta
from ..options.registry import Options
from ..schema.types import DataType, total_order_value


@dataclass
class SortedRun:
    level: int
    files: list[DataFileMeta] = field(default_factory=list)

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass
class CompactUnit:
    output_level: int
    runs: list[SortedRun]

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for r in self.runs for f in r.files]


@dataclass(frozen=True)
class CompactionOptions:
    trigger: int = 5
    stop_trigger: int = 8
    num_levels: int = 6
    max_size_amp: int = 200
    size_ratio: int = 1
    full_compaction_delta_commits: int | None = None
    optimization_interval_ms: int | None = None  # compaction.optimization-interval (Paimon 1.x)

    @staticmethod
    def from_options(options: Options) -> CompactionOptions:
        trigger = options.get("num-sorted-run.compaction-trigger")
        stop_trigger = options.get("num-sorted-run.stop-trigger")
        num_levels = options.get("num-levels")
        return CompactionOptions(
            trigger=trigger,
            # Paimon's CoreOptions.numSortedRunStopTrigger: never below the compaction trigger
            stop_trigger=max(trigger, stop_trigger if stop_trigger is not None else trigger + 3),
            num_levels=num_levels if num_levels is not None else trigger + 1,
            max_size_amp=options.get("compaction.max-size-amplification-percent"),
            size_ratio=options.get("compaction.size-ratio"),
            full_compaction_delta_commits=full_compaction_interval(options),
            optimization_interval_ms=options.get("compaction.optimization-interval"),
        )


def full_compaction_interval(options: Options) -> int | None:
    """Every how many commits (snapshots other than COMPACT) writers compact fully, or None: as Paimon's Flink
    sink (FlinkSink, GlobalFullCompactionSinkWrite), `full-compaction.delta-commits` (below 1: 1; negative: unset),
    and 1 for the full-compaction changelog producer when that is unset."""
    every = options.get("full-compaction.delta-commits")
    if every is None or every < 0:
        return 1 if options.get("changelog-producer") == "full-compaction" else None
    return max(every, 1)


def full_compaction_due(every: int | None, commits: int) -> bool:
    """Whether the table's ``commits``-th commit (COMPACT snapshots not counted) compacts fully."""
    return every is not None and commits % every == 0


def level0_order(f: DataFileMeta) -> tuple:
    """Paimon's level-0 order: newest (highest max sequence) first."""
    return (-f.max_sequence_number, -f.min_sequence_number, f.file_name)


def sorted_runs(files: list[DataFileMeta], key_types: Sequence[DataType] | None = None) -> list[SortedRun]:
    """The runs of a bucket's files. A level above 0 is one run whose files hold disjoint key ranges: with
    ``key_types`` (the trimmed primary key's), in key order, as a reader of the run needs them (Paimon's Levels
    order them by the key comparator); without, by their min key's bytes, a stable order that is not the key order
    (for callers that only count or size runs)."""
    runs = [SortedRun(0, [f]) for f in sorted((f for f in files if f.level == 0), key=level0_order)]
    by_level: dict[int, list[DataFileMeta]] = {}
    for f in files:
        if f.level > 0:
            by_level.setdefault(f.level, []).append(f)
    for level in sorted(by_level):
        in_level = by_level[level]
        if key_types is not None and len(in_level) > 1:
            # the decoded min key (a BinaryRow's bytes do not sort as its values: little-endian, signed, offsets)
            in_level = sorted(in_level, key=lambda f: tuple(
                total_order_value(v) for v in deserialize_row(f.min_key, key_types)))
        else:
            in_level = sorted(in_level, key=lambda f: f.min_key)
        runs.append(SortedRun(level, in_level))
    return runs


# bucket directory -> when `compaction.optimization-interval` last compacted it fully in this process (epoch ms)
_optimized_at: dict[str, int] = {}


class UniversalCompaction:
    def __init__(self, opts: CompactionOptions) -> None:
        self.opts = opts

    def pick(self, num_levels: int, runs: list[SortedRun], bucket: str | None = None,
             record: bool = True) -> CompactUnit | None:
        """Paimon's UniversalCompaction.pick. ``bucket`` (its directory) keys `compaction.optimization-interval`:
        the first pick of a bucket in this process, and the first after the interval, compacts every run into the
        max level (Paimon keeps that time per writer, which starts unset). ``record``: False for a planner's look
        ahead; the writer that compacts records the time."""
        max_level = num_levels - 1
        interval = self.opts.optimization_interval_ms
        if interval is not None and bucket is not None and runs:
            now = int(time.time() * 1000)
            last = _optimized_at.get(bucket)
            if last is None or now - last > interval:
                if record:
                    _optimized_at[bucket] = now
                return CompactUnit(max_level, list(runs))
        unit = self._pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        unit = self._pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.opts.trigger:
            return self._size_ratio(max_level, runs, len(runs) - self.opts.trigger + 1)
        return None

    def pick_first_row(self, num_levels: int, runs: list[SortedRun]) -> CompactUnit | None:
        """First-row tables: Paimon's readers skip level 0 and do not merge the levels above (its
        lookup compaction keeps each key in one run), so every level-0 file is merged with all runs
        into one: a full compaction whenever level 0 is not empty."""
        if runs and runs[0].level == 0:
            return CompactUnit(num_levels - 1, list(runs))
        return None

    def pick_force_level0(self, num_levels: int, runs: list[SortedRun]) -> CompactUnit | None:
        """Deletion-vector tables (Paimon's ForceUpLevel0Compaction): when the universal pick finds
        nothing, every level-0 run still goes up (with the runs the size ratio adds), since readers
        skip level 0."""
        level0 = sum(1 for r in runs if r.level == 0)
        if level0 == 0:
            return None
        return self._size_ratio(num_levels - 1, runs, level0, force=True)

    def pick_full(self, num_levels: int, runs: list[SortedRun],
                  rewrite: Callable[[DataFileMeta], bool] | None = None) -> CompactUnit | None:
        """Every run into the max level; a bucket already in one max-level run: only its files ``rewrite``
        picks (Paimon 1.x: files holding expired records, `record-level.expire-time`), else nothing."""
        max_level = num_levels - 1
        if not runs:
            return None
        if len(runs) == 1 and runs[0].level == max_level:
            files = [f for f in runs[0].files if rewrite is not None and rewrite(f)]
            return CompactUnit(max_level, [SortedRun(max_level, files)]) if files else None
        return CompactUnit(max_level, list(runs))

    def _pick_for_size_amp(self, max_level: int, runs: list[SortedRun]) -> CompactUnit | None:
        if len(runs) < self.opts.trigger:
            return None
        candidate = sum(r.total_size for r in runs[:-1])
        earliest = runs[-1].total_size
        if candidate * 100 > self.opts.max_size_amp * earliest:
            return CompactUnit(max_level, list(runs))
        return None

    def _pick_for_size_ratio(self, max_level: int, runs: list[SortedRun]) -> CompactUnit | None:
        if len(runs) < self.opts.trigger:
            return None
        return self._size_ratio(max_level, runs, 1)

    def _size_ratio(self, max_level: int, runs: list[SortedRun], count: int, force: bool = False
                    ) -> CompactUnit | None:
        size = sum(r.total_size for r in runs[:count])
        for nxt in runs[count:]:
            if size * (100.0 + self.opts.size_ratio) / 100.0 < nxt.total_size:
                break
            size += nxt.total_size
            count += 1
        if force or count > 1:
            return self._unit(runs, max_level, count)
        return None

    @staticmethod
    def _unit(runs: list[SortedRun], max_level: int, count: int) -> CompactUnit:
        if count == len(runs):
            output = max_level
        else:
            output = max(0, runs[count].level - 1)
        if output == 0:
            # never write level 0: extend the unit to the next run at a level above 0
            for nxt in runs[count:]:
                count += 1
                if nxt.level != 0:
                    output = nxt.level
                    break
        if count == len(runs):
            output = max_level
        return CompactUnit(output, runs[:count])


def drop_delete(unit: CompactUnit, runs: list[SortedRun]) -> bool:
    """Deletes may be dropped only when nothing older lies below the output (Paimon's rule)."""
    highest = max((r.level for r in runs), default=0)
    return unit.output_level != 0 and unit.output_level >= highest
