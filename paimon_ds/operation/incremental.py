"""Batch incremental reads: `incremental-between` (two snapshot ids or two tag names) and
`incremental-between-timestamp`, with `incremental-between-scan-mode`, planned as Paimon 0.9 plans them.

- Snapshot ids `a,b` (IncrementalStartingScanner): the files each snapshot a+1 .. b added, grouped by
  (partition, bucket) and read together as one merged read; `delta` takes the data files of APPEND commits
  (compactions and overwrites left out), `changelog` the changelog files of every commit but overwrites; `auto`
  is changelog when the table has a changelog producer, else delta. The range must lie in
  [earliest - 1, latest] with a <= b.
- Tag names (IncrementalTagStartingScanner): the diff of the two tags' snapshots, per bucket: the files only the
  end holds against those only the start holds (SnapshotReaderImpl.readIncrementalDiff); a primary-key table
  gives each key whose merged value is new or changed (IncrementalDiffSplitRead), an append table the rows of the
  files only the end holds.
- `diff` (Paimon 1.x's IncrementalDiffStartingScanner.betweenSnapshotIds): that diff between two snapshot ids.
- Timestamps `t1,t2` (IncrementalTimeStampStartingScanner): the snapshot ids the two instants fall in.

Batch reads only; primary-key rows come out merged (retractions dropped), as Java's batch read shows them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ..manifest.meta import DataFileMeta, FileKind, ManifestEntry
from ..options.registry import OptionError
from ..snapshot.manager import Snapshot
from ..snapshot.time_travel import startup_mode, timestamp_text_millis
from .scan import Split, TableScan

if TYPE_CHECKING:
    from ..options.registry import Options
    from ..predicate.predicates import Predicate
    from ..store.file_store import FileStore

SCAN_MODE = "incremental-between-scan-mode"
SCAN_MODES = ("auto", "delta", "changelog", "diff")
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")  # what Long.parseLong takes (no blanks)


def is_incremental(options: Options) -> bool:
    return startup_mode(options.raw) == "incremental"


class IncrementalScan(TableScan):
    """A TableScan whose plan() is the incremental read its table's options name (new_scan makes it)."""

    def plan(self) -> list[Split]:
        return plan_incremental(self)


def new_scan(table: FileStore, predicate: Predicate | None = None, parallelism: int | None = None) -> TableScan:
    """The table's batch scan: of a snapshot, or (`incremental-between...` options) of the changes between two."""
    if is_incremental(table.options):
        return IncrementalScan(table, predicate, parallelism=parallelism)
    return TableScan(table, predicate, parallelism=parallelism)


def changed_rows(before: pa.Table, after: pa.Table, keys: list[str], ignored: tuple[str, ...] = ()) -> pa.Table:
    """The rows of ``after`` (one per key) whose key ``before`` lacks or holds with another value
    (IncrementalDiffSplitRead's DiffMerger: a key only before is dropped, equal values are dropped).
    ``ignored``: columns left out of the comparison."""
    if before.num_rows == 0 or after.num_rows == 0:
        return after
    pos_a, pos_b = "__paimon_ds_after", "__paimon_ds_before"
    left = after.select(keys).append_column(pos_a, pa.array(range(after.num_rows), pa.int64()))
    right = before.select(keys).append_column(pos_b, pa.array(range(before.num_rows), pa.int64()))
    joined = left.join(right, keys, join_type="left outer")
    matched = joined.filter(pc.is_valid(joined[pos_b]))
    keep = pc.is_null(joined[pos_b])
    new_only = joined.filter(keep)[pos_a]
    a_rows, b_rows = matched[pos_a], matched[pos_b]
    differs = pa.array([False] * matched.num_rows, pa.bool_())
    for name in after.column_names:
        if name in keys or name in ignored:
            continue
        x, y = after[name].take(a_rows), before[name].take(b_rows)
        try:
            equal = pc.fill_null(pc.equal(x, y), False)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            same = pc.or_(equal, both_null)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            # nested values (no Arrow kernel compares them): compared as Python values, rare (tag diffs)
            same = pa.array([u == v for u, v in zip(x.to_pylist(), y.to_pylist())])
        differs = pc.or_(differs, pc.invert(same))
    changed = pc.filter(a_rows, differs)
    changed = changed.combine_chunks() if isinstance(changed, pa.ChunkedArray) else changed
    taken = pa.concat_arrays([new_only.combine_chunks().cast(pa.int64()), changed.cast(pa.int64())])
    return after.take(pc.take(taken, pc.sort_indices(taken)))


def changed_rows_keep_delete(before: pa.Table, after: pa.Table, keys: list[str], kind: str) -> pa.Table:
    """DiffMerger with keepDelete (an audit_log read between tags; Paimon 1.x's IncrementalDiffSplitRead): both
    sides merged with their deletions kept, in row kind column ``kind``. A key only ``after`` holds gives its row
    (its own kind, -D too); one both hold gives the after row where the value or add-ness (+I/+U against -U/-D)
    differs; one only ``before`` holds as an add gives that row as -D."""
    adds = pa.array(["+I", "+U"], pa.string())
    flag = "__paimon_ds_is_add"

    def flagged(t: pa.Table) -> pa.Table:
        return t.append_column(flag, pc.is_in(t[kind], value_set=adds))

    changed = changed_rows(flagged(before), flagged(after), keys, ignored=(kind,)).drop_columns([flag])
    added_before = before.filter(pc.is_in(before[kind], value_set=adds))
    if added_before.num_rows == 0:
        return changed
    gone = added_before.join(after.select(keys), keys, join_type="left anti").select(before.column_names)
    gone = gone.set_column(gone.schema.get_field_index(kind), before.schema.field(kind),
                           pa.array(["-D"] * gone.num_rows, pa.string()))
    return pa.concat_tables([changed, gone.cast(changed.schema)])


def plan_incremental(scan: TableScan) -> list[Split]:
    """The splits of an incremental read of ``scan``'s table (its options say which range)."""
    table = scan.table
    opts = table.options
    if opts.get("deletion-vectors.enabled") and table.table_schema.primary_keys:
        raise OptionError(f"incremental-between on {table.path}, a primary-key table with deletion vectors, is not "
                          "supported by paimon_ds (Paimon 0.9's batch scan leaves out the level-0 files such a read "
                          "is made of)")
    by_ids = opts.get("incremental-between")
    text = by_ids if by_ids is not None else opts.get("incremental-between-timestamp")
    parts = str(text).split(",")
    if len(parts) != 2 or not all(parts):
        raise OptionError("The incremental-between or incremental-between-timestamp must specific start(exclusive) "
                          "and end snapshot or timestamp, for example, 'incremental-between'='5,10' means changes "
                          f"between snapshot 5 and snapshot 10. But is: {text}")
    mode = str(opts.get(SCAN_MODE)).lower()
    if mode == "auto":
        mode = "delta" if opts.get("changelog-producer") == "none" else "changelog"
    sm = table.snapshot_manager
    if by_ids is not None:
        if all(_JAVA_LONG.fullmatch(p) for p in parts):
            start, end = int(parts[0]), int(parts[1])
            if mode == "diff":
                return _diff_between_ids(scan, start, end)
            return _between_ids(scan, start, end, mode)
        start_tag, end_tag = sm.tag(parts[0]), sm.tag(parts[1])
        if end_tag.id <= start_tag.id:
            raise OptionError(f"Tag end {parts[1]} with snapshot id {end_tag.id} should be larger than tag start "
                              f"{parts[0]} with snapshot id {start_tag.id}")
        return _diff(scan, start_tag, end_tag)
    if all(_JAVA_LONG.fullmatch(p) for p in parts):
        return _between_times(scan, int(parts[0]), int(parts[1]), mode)
    # Paimon 1.x (AbstractDataTableScan): else two timestamps `yyyy-MM-dd HH:mm:ss[.SSS]` in the local zone
    try:
        start, end = (timestamp_text_millis(p) for p in parts)
    except OptionError:
        raise OptionError("incremental-between-timestamp takes two epoch millis or two timestamps "
                          f"(yyyy-MM-dd HH:mm:ss[.SSS]) 't1,t2', got {text!r}") from None
    return _between_times(scan, start, end, mode)


def _between_ids(scan: TableScan, start: int, end: int, mode: str) -> list[Split]:
    sm = scan.table.snapshot_manager
    earliest, latest = sm.earliest_id(), sm.latest_id()
    if earliest is None or latest is None:
        return []
    if start > end:
        raise OptionError(f"Starting snapshotId {start} must less than ending snapshotId {end}.")
    if start < earliest - 1 or end > latest:
        raise OptionError(f"The specified scan snapshotId range [{start}, {end}] is out of available snapshotId "
                          f"range [{earliest}, {latest}].")
    entries: list[ManifestEntry] = []
    for sid in range(start + 1, end + 1):
        entries += _added(scan, sm.snapshot(sid), mode)
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for e in entries:
        if scan.level_filter(e.file.level) and scan.entry_may_match(e):
            groups[(e.partition, e.bucket)].append(e.file)
    if not scan.table.table_schema.primary_keys:  # nothing to merge: a split per file, for parallel readers
        return [_split(scan, partition, bucket, [f], end) for (partition, bucket), files in sorted(groups.items())
                for f in files]
    return [_split(scan, partition, bucket, files, end) for (partition, bucket), files in sorted(groups.items())]


def _added(scan: TableScan, snapshot: Snapshot, mode: str) -> list[ManifestEntry]:
    """The files one snapshot added that an incremental read of ``mode`` takes (IncrementalStartingScanner's
    readDeltaSplits / readChangeLogSplits)."""
    if mode == "delta":
        if snapshot.commit_kind != "APPEND":
            return []  # compactions and overwrites are left out
        manifest_list = snapshot.delta_manifest_list
    else:
        if snapshot.commit_kind == "OVERWRITE":
            return []
        manifest_list = snapshot.changelog_manifest_list
    if not manifest_list:
        return []
    return [e for m in scan.manifest_list.read(manifest_list) for e in scan.manifest_file.read(m.file_name)
            if e.kind == FileKind.ADD]


def _between_times(scan: TableScan, start_ms: int, end_ms: int, mode: str) -> list[Split]:
    """IncrementalTimeStampStartingScanner: the ids of the snapshots the instants fall in (the start exclusive)."""
    sm = scan.table.snapshot_manager
    ids = sm.list_ids()
    if not ids:
        return []
    earliest, latest = sm.snapshot(ids[0]), sm.snapshot(ids[-1])
    if start_ms > latest.time_millis or end_ms < earliest.time_millis:
        return []
    start = earliest.id - 1 if earliest.time_millis > start_ms else _at_or_before(sm, ids, start_ms)
    end = _at_or_before(sm, ids, end_ms)
    return _between_ids(scan, start, end, mode)


def _at_or_before(sm, ids: list[int], millis: int) -> int:
    """The id of the latest snapshot committed at or before ``millis`` (SnapshotManager.earlierOrEqualTimeMills,
    the earliest when all are later)."""
    found = ids[0]
    for sid in ids:
        if sm.snapshot(sid).time_millis <= millis:
            found = sid
        else:
            break
    return found


def _diff_between_ids(scan: TableScan, start: int, end: int) -> list[Split]:
    if end < start:
        raise OptionError(f"Ending snapshotId should >= starting snapshotId {end}.")
    sm = scan.table.snapshot_manager
    if sm.earliest_id() is None or start == end:
        return []
    return _diff(scan, sm.snapshot(start), sm.snapshot(end))


def _diff(scan: TableScan, before: Snapshot, after: Snapshot) -> list[Split]:
    """Per bucket, the files only ``after`` holds (the split's files) and those only ``before`` holds (its
    before_files), as SnapshotReaderImpl.readIncrementalDiff pairs them."""
    def grouped(snapshot: Snapshot) -> dict[tuple[bytes, int], dict[str, DataFileMeta]]:
        out: dict[tuple[bytes, int], dict[str, DataFileMeta]] = defaultdict(dict)
        for e in scan.read_entries(snapshot):
            if scan.level_filter(e.file.level):
                out[(e.partition, e.bucket)][e.file.file_name] = e.file
        return out

    old, new = grouped(before), grouped(after)
    splits = []
    for key in sorted(set(old) | set(new)):
        old_files, new_files = old.get(key, {}), new.get(key, {})
        only_new = [f for name, f in new_files.items() if name not in old_files]
        only_old = [f for name, f in old_files.items() if name not in new_files]
        split = _split(scan, key[0], key[1], only_new, after.id)
        split.before_files = only_old
        splits.append(split)
    return splits


def _split(scan: TableScan, partition: bytes, bucket: int, files: list[DataFileMeta], snapshot_id: int) -> Split:
    directory = f"{scan.table.root}/{scan.bucket_dir(partition, bucket)}"
    files = sorted(files, key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
    return Split(partition, bucket, directory, files, snapshot_id)
