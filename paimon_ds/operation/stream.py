"""Streaming scan: a table's history as an ordered sequence of read units, addressed by position.

Paimon's streaming sources read a table as "the full table at a starting snapshot, then each later
snapshot's changes" (StartingScanner + FollowUpScanner). Here every unit is a list of splits in a
fixed order: the full scan of snapshot S, or the delta of snapshot N (the files an APPEND snapshot
added, or the changelog files of a `changelog-producer=input` table). COMPACT snapshots rewrite
files without changing the data and OVERWRITE snapshots are skipped as Paimon does by default
(`streaming-read-overwrite`), so both are empty units.

A position (snapshot, full, index) names the next split to emit: ``index`` splits of the unit
(snapshot, full) are already emitted. Positions are what Spark checkpoints as offsets, so a
restarted query resumes exactly where the last committed micro-batch ended.

With option `consumer-id` the scan is also a Paimon consumer (paimon_ds.store.consumer): a new stream starts at the
consumer's recorded next snapshot (Paimon's AbstractDataTableScan, unless `consumer.ignore-progress`), and
`record_progress` writes the next snapshot of a position whose earlier rows were consumed. The snapshot a
position records, by `consumer.mode`:

- exactly-once (Paimon's default, the aligned reading of Flink's MonitorFunction): the scan plans micro-batches
  of whole units, so a batch's end is always a snapshot boundary (S, delta, 0): every snapshot before S is
  consumed entirely and none of S is, and S is recorded. A new query resuming from it reads nothing twice.
- at-least-once (ContinuousFileSplitEnumerator's ConsumerProgressCalculator: the snapshot readers are still
  in): batches may end inside a snapshot's delta, (S, delta, i > 0); S is recorded, and a new query resuming
  from it reads S's first i splits again.

A position inside the starting full scan records nothing: a consumer can only resume deltas (Paimon's Spark
source skips it too), and the full scan is not one.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..manifest.meta import DataFileMeta, FileKind, ManifestEntry
from ..mergetree.compact import CompactionOptions
from ..options.registry import OptionError
from ..snapshot.manager import Snapshot, SnapshotNotFound
from ..snapshot.retention import Retention
from ..store.consumer import ConsumerManager
from .incremental import is_incremental
from .scan import LevelFilter, Split, TableScan, above_level0, all_levels

if TYPE_CHECKING:
    from ..store.file_store import FileStore

SCAN_MODES = ("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp")
# An unchanged consumer record is rewritten at most this often: Java rewrites it at every checkpoint, which keeps
# a live reader's file younger than `consumer.expiration-time`; an idle Spark query asks for offsets every few ms
CONSUMER_REFRESH_SECONDS = 10.0


@dataclass(frozen=True, order=True)
class StreamPosition:
    snapshot: int
    full: bool = False  # the unit is the full scan of `snapshot` (it sorts before that snapshot's delta)
    index: int = 0

    def sort_key(self) -> tuple[int, int, int]:
        return (self.snapshot, 0 if self.full else 1, self.index)

    def to_offset(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "full": self.full, "index": self.index}

    @staticmethod
    def from_offset(offset: dict[str, Any]) -> StreamPosition:
        try:
            return StreamPosition(int(offset["snapshot"]), bool(offset["full"]), int(offset.get("index", 0)))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"not a paimon_ds stream offset: {offset!r} (was the checkpoint written by "
                             "another source?)") from None


@dataclass
class StreamSplit:
    """A split of one unit, and whether its rows are changes (a delta) rather than table contents."""

    split: Split
    delta: bool
    changelog: bool = False  # files are changelog files (every input record, with its row kind)


class StreamLimit:
    """How much one micro-batch may take, as Paimon's Spark source limits it (PaimonReadLimitGuard): each max that is
    set applies (a composite limit); ``min_rows`` with ``max_delay_ms`` holds a small batch back (see
    StreamScan.latest_position). None everywhere: all available."""

    def __init__(self, max_files: int | None = None, max_rows: int | None = None, max_bytes: int | None = None,
                 min_rows: int | None = None, max_delay_ms: int | None = None) -> None:
        self.max_files, self.max_rows, self.max_bytes = max_files, max_rows, max_bytes
        self.min_rows, self.max_delay_ms = min_rows, max_delay_ms

    @property
    def unlimited(self) -> bool:
        return not self.capped and self.min_rows is None

    @property
    def capped(self) -> bool:
        return self.max_files is not None or self.max_rows is not None or self.max_bytes is not None

    def has_capacity(self, splits: int, rows: int, size: int) -> bool:
        """Whether a batch that took so much may take one more split: every max not yet reached. maxFiles counts
        splits (one bucket's files of one snapshot), as Paimon's guard does (acceptedFiles += 1 per split)."""
        return ((self.max_files is None or splits < self.max_files)
                and (self.max_rows is None or rows < self.max_rows)
                and (self.max_bytes is None or size < self.max_bytes))


class StreamScan:
    def __init__(self, table: FileStore) -> None:
        table.check_readable()
        self.table = table
        self.sm = table.snapshot_manager
        producer = table.options.get("changelog-producer")
        # A table with a changelog producer records its changes in changelog files: read those.
        self.changelog = producer != "none" and bool(table.table_schema.primary_keys)
        # expired snapshots may leave their changelog (changelog/changelog-<id>): a stream reads on through it
        # (Paimon's NextSnapshotFetcher, and its starting scanners' earliest id)
        self.decoupled = Retention.from_options(table.options).changelog_decoupled
        self._units: dict[tuple[int, bool], list[StreamSplit]] = {}
        opts = table.options
        self.consumer_id: str | None = opts.get("consumer-id")
        self.consumers = ConsumerManager.of(table.store) if self.consumer_id is not None else None
        if self.consumers is not None:
            self.consumers.path(self.consumer_id)  # an id paimon_ds cannot store is refused before reading
        # exactly-once consumers take whole snapshots per micro-batch (see the module's docstring)
        self.whole_units = self.consumer_id is not None and opts.get("consumer.mode") == "exactly-once"
        self._recorded: tuple[int, float] | None = None  # (next snapshot, monotonic time) last written

    def check_streamable(self) -> None:
        """Refuse, as Paimon does, streams whose deltas are not the table's changes."""
        if is_incremental(self.table.options):
            raise OptionError("Cannot read incremental in streaming mode (incremental-between is a batch read)")
        # Paimon's starting scanners: a stream cannot start from a watermark or a tag (AbstractDataTableScan)
        if self.table.options.get("scan.snapshot-id") is None:
            if self.table.options.get("scan.watermark") is not None:
                raise OptionError("Cannot scan from watermark in streaming mode (scan.watermark is a batch read)")
            if self.table.options.get("scan.tag-name") is not None:
                raise OptionError("Cannot scan from tag in streaming mode (scan.tag-name is a batch read; "
                                  "start a stream at the tag's snapshot with scan.snapshot-id)")
        engine = self.table.options.get("merge-engine")
        if self.table.table_schema.primary_keys and not self.changelog and engine != "deduplicate":
            held = "rows the engine may ignore" if engine == "first-row" else "partial rows"
            raise OptionError(
                f"streaming reads of a {engine} table need a changelog (changelog-producer input, lookup or "
                f"full-compaction): without one, a commit's files hold {held}, not the changed rows")

    # ---------------------------------------------------------------- start
    def initial_position(self) -> StreamPosition:
        """Where a new query starts: at its consumer's next snapshot, as Paimon's streaming scans (unless
        `consumer.ignore-progress`, or the consumer has no record yet), else from `scan.mode`, `scan.snapshot-id`
        and `scan.timestamp-millis`."""
        opts = self.table.options
        if self.consumers is not None and not opts.get("consumer.ignore-progress"):
            found = self.consumers.consumer(self.consumer_id)
            if found is not None:
                # the deltas from that snapshot on; from the earliest if it expired (ContinuousFromSnapshotStarting-
                # Scanner); a table without snapshots starts at it too, waiting for it
                earliest = self.sm.earliest_id()
                return StreamPosition(max(found.next_snapshot, earliest or 1))
        mode = opts.get("scan.mode")
        if mode not in SCAN_MODES:
            raise OptionError(f"scan.mode {mode!r} is not supported by paimon_ds streaming reads; "
                              f"use one of {', '.join(SCAN_MODES)}")
        snapshot_id = opts.get("scan.snapshot-id")
        timestamp = opts.get("scan.timestamp-millis")
        if mode == "default":
            mode = ("from-snapshot" if snapshot_id is not None else "from-timestamp" if timestamp is not None
                    else "latest-full")
        latest = self.sm.latest_id()
        if mode in ("latest-full", "full"):
            return StreamPosition(latest, full=True) if latest is not None else StreamPosition(1)
        if mode == "latest":
            # Paimon's Spark source (PaimonMicroBatchStream.initOffset): the starting context of Java's
            # ContinuousLatestStartingScanner is (latest id, delta), and the stream restores to that id, so the
            # latest snapshot's own changes come first (Flink's source starts after it; this is a Spark source)
            return StreamPosition(latest if latest is not None else 1)
        if mode in ("from-snapshot", "from-snapshot-full"):
            if snapshot_id is None:
                raise OptionError(f"scan.mode {mode} needs scan.snapshot-id")
            sid = snapshot_id
            earliest = self._earliest_id()
            if mode == "from-snapshot-full":
                self.sm.snapshot(sid)  # must exist: its full contents are read
                return StreamPosition(sid, full=True)
            if earliest is not None and sid < earliest:
                raise SnapshotNotFound(f"scan.snapshot-id {sid} of {self.table.path} has expired "
                                       f"(the earliest snapshot is {earliest})")
            return StreamPosition(max(sid, 1))
        if timestamp is None:
            raise OptionError("scan.mode from-timestamp needs scan.timestamp-millis")
        # the first snapshot committed at or after the timestamp (Paimon: after the last one before it), among
        # the changelogs too when they outlive the snapshots
        ids = self.sm.list_ids()
        changelog_ids = [i for i in self.sm.changelog_ids() if not ids or i < ids[0]] if self.decoupled else []
        for sid in changelog_ids + ids:
            if self.sm.snapshot_or_changelog(sid).time_millis >= timestamp:
                return StreamPosition(sid)
        return StreamPosition((latest or 0) + 1)

    def _earliest_id(self) -> int | None:
        """The earliest id a stream can start at: the earliest changelog's when the changelog outlives the
        snapshots (ContinuousFromSnapshotStartingScanner), else the earliest snapshot's."""
        if self.decoupled:
            earliest_changelog = self.sm.earliest_changelog_id()
            if earliest_changelog is not None:
                return earliest_changelog
        return self.sm.earliest_id()

    # ---------------------------------------------------------------- units
    def unit(self, snapshot_id: int, full: bool) -> list[StreamSplit]:
        """The splits of one unit, in a fixed order (so a position means the same on every call)."""
        key = (snapshot_id, full)
        if key not in self._units:
            self._units[key] = self._plan_unit(snapshot_id, full)
        return self._units[key]

    def _snapshot(self, snapshot_id: int) -> Snapshot:
        try:
            return self.sm.snapshot(snapshot_id)
        except SnapshotNotFound:
            earliest = self.sm.earliest_id()
            if self.decoupled and (earliest is None or snapshot_id < earliest):
                try:  # the snapshot expired, its changelog stays: read on through it
                    return self.sm.changelog(snapshot_id)
                except SnapshotNotFound:
                    pass
            raise SnapshotNotFound(
                f"snapshot {snapshot_id} of {self.table.path} expired before this stream read it (the earliest "
                f"is {earliest}); keep snapshots longer (snapshot.num-retained.min, snapshot.time-retained), or "
                "the changelog (changelog.num-retained.min, changelog.time-retained), or restart the query with a "
                "new checkpoint") from None

    def _plan_unit(self, snapshot_id: int, full: bool) -> list[StreamSplit]:
        snapshot = self._snapshot(snapshot_id)
        if full:
            # a postpone-bucket table's postpone buckets too, unless it has a changelog (Paimon's DataTableStreamScan)
            scan = TableScan(self.table, level_filter=self._first_plan_levels(), postpone=not self.changelog)
            return [StreamSplit(s, delta=False) for s in scan.plan_snapshot(snapshot)]
        scan = TableScan(self.table)
        if self.changelog:
            if not snapshot.changelog_manifest_list:
                return []
            entries = [e for m in scan.manifest_list.read(snapshot.changelog_manifest_list)
                       for e in scan.manifest_file.read(m.file_name)]
            return [StreamSplit(s, delta=True, changelog=True) for s in self._group(scan, entries)]
        if snapshot.commit_kind != "APPEND":
            return []
        entries = [e for m in scan.manifest_list.read(snapshot.delta_manifest_list)
                   for e in scan.manifest_file.read(m.file_name) if e.kind == FileKind.ADD]
        return [StreamSplit(s, delta=True) for s in self._group(scan, entries)]

    def _first_plan_levels(self) -> LevelFilter:
        """The levels of a stream's starting full scan, as Paimon 1.3+ plans it (DataTableStreamScan.tryFirstPlan):
        above level 0 with the lookup changelog producer (compaction emits level 0's rows as changelog later),
        the top level with full-compaction, else every level. Unlike a batch read this shows level 0 of
        deletion-vector tables (first-row tables stream only with a changelog producer). Paimon 0.9 to 1.2 also
        skipped level 0 of deletion-vector and first-row tables here, a loss of rows fixed by apache/paimon#5866."""
        if not self.table.table_schema.primary_keys:
            return all_levels
        producer = self.table.options.get("changelog-producer")
        if producer == "lookup":
            return above_level0
        if producer == "full-compaction":
            top = CompactionOptions.from_options(self.table.options).num_levels - 1
            return lambda level: level == top
        return all_levels

    def _group(self, scan: TableScan, entries: list[ManifestEntry]) -> list[Split]:
        """One split per (partition, bucket), files in sequence order."""
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
        for e in entries:
            groups[(e.partition, e.bucket)].append(e.file)
        splits = []
        for (partition, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            directory = f"{self.table.root}/{scan.bucket_dir(partition, bucket)}"
            files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
            splits.append(Split(partition, bucket, directory, files))
        return splits

    def forget_before(self, pos: StreamPosition) -> None:
        """Drop planned units that end before ``pos`` (Spark committed them): a long stream stays small."""
        done = [k for k in self._units if (k[0], 0 if k[1] else 1) < (pos.snapshot, 0 if pos.full else 1)]
        for k in done:
            del self._units[k]

    # ---------------------------------------------------------------- positions
    def _next_unit(self, pos: StreamPosition) -> StreamPosition:
        return StreamPosition(pos.snapshot + 1)

    def latest_position(self, start: StreamPosition, limit: StreamLimit | None = None,
                        until_snapshot: int | None = None, hold_below_min_rows: bool = False) -> StreamPosition:
        """The end of the next micro-batch: all units up to the latest snapshot (or ``until_snapshot``), as far as
        the limit admits, Paimon's Spark source's rule (PaimonReadLimitGuard, 1.4): a split is admitted while the
        splits, rows and bytes admitted before it are under every max that is set (so the first split always is,
        and the last may pass a max). With ``hold_below_min_rows`` (the caller's maxTriggerDelayMs has not passed
        since its last batch) the batch is held back, ``start`` returned, while fewer than ``limit.min_rows`` rows
        are there, counting the admitted splits and the first one the maxes refuse, as Paimon counts them."""
        latest = self.sm.latest_id()
        if latest is None:
            return start
        if until_snapshot is not None:
            latest = min(latest, until_snapshot)
        if start.snapshot > latest:
            return start
        if limit is None or limit.unlimited or (not limit.capped and not hold_below_min_rows):
            return StreamPosition(latest + 1)
        splits = rows = size = 0
        pos = start
        while pos.snapshot <= latest:
            unit = self.unit(pos.snapshot, pos.full)
            # exactly-once consumers take the rest of a unit or none of it: a batch ends on a snapshot boundary (it
            # may start inside a unit, when an earlier run of the query, without the consumer, ended there)
            steps = [unit[pos.index:]] if self.whole_units else [[s] for s in unit[pos.index:]]
            for step in steps:
                if not step:
                    continue
                admitted = limit.has_capacity(splits, rows, size)
                splits += len(step)
                rows += sum(s.split.row_count for s in step)
                size += sum(f.file_size for s in step for f in s.split.files)
                if not admitted:
                    return start if hold_below_min_rows and self._below_min_rows(limit, rows) else pos
                pos = StreamPosition(pos.snapshot, pos.full, pos.index + len(step))
            pos = self._next_unit(pos)
        return start if hold_below_min_rows and self._below_min_rows(limit, rows) else pos

    @staticmethod
    def _below_min_rows(limit: StreamLimit, rows: int) -> bool:
        return limit.min_rows is not None and rows < limit.min_rows

    # ---------------------------------------------------------------- consumer
    @staticmethod
    def consumed_next_snapshot(pos: StreamPosition) -> int | None:
        """The consumer's next snapshot once everything before ``pos`` is consumed: its snapshot, whose delta is
        read from there (at-least-once if ``pos`` is inside it); None inside the starting full scan."""
        if pos.full:
            return None
        return pos.snapshot

    def record_progress(self, pos: StreamPosition) -> None:
        """Record in the consumer file (option `consumer-id`) that everything before ``pos`` is consumed, as
        Paimon's streaming scans do when a checkpoint completes (notifyCheckpointComplete). A record that did not
        change is rewritten at most every CONSUMER_REFRESH_SECONDS, keeping it fresh for `consumer.expiration-time`
        without a write per poll."""
        if self.consumers is None:
            return
        next_snapshot = self.consumed_next_snapshot(pos)
        if next_snapshot is None:
            return
        now = time.monotonic()
        if (self._recorded is not None and self._recorded[0] == next_snapshot
                and now - self._recorded[1] < CONSUMER_REFRESH_SECONDS):
            return
        self.consumers.reset(self.consumer_id, next_snapshot)
        self._recorded = (next_snapshot, now)

    def splits_between(self, start: StreamPosition, end: StreamPosition) -> list[StreamSplit]:
        """The splits from ``start`` (inclusive) to ``end`` (exclusive)."""
        out: list[StreamSplit] = []
        pos = start
        while pos.sort_key() < end.sort_key():
            splits = self.unit(pos.snapshot, pos.full)
            stop = end.index if (end.snapshot, end.full) == (pos.snapshot, pos.full) else len(splits)
            out.extend(splits[pos.index:stop])
            pos = self._next_unit(pos)
        return out
