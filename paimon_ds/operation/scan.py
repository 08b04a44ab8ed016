"""Scan planning: snapshot -> manifests -> live data files -> splits, pruned by partition and stats."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from struct import error as struct_error
from typing import Any

from ..deletionvectors.index_file import DeletionFile, deletion_files
from ..errors import MissingFileError, PaimonDsError
from ..format.binary_row import deserialize_row
from ..format.file_index import INDEX_FILE_SUFFIX, index_may_match, read_index_file
from ..format.partition import POSTPONE_BUCKET, bucket_path, partition_path
from ..index.manifest import DELETION_VECTORS_INDEX, IndexManifestFile
from ..manifest.files import ManifestFile, ManifestList
from ..manifest.meta import DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats, live_entries
from ..options.registry import OptionError
from ..predicate.predicates import Predicate, and_all, rename_fields, split_and, test_values
from ..schema.manager import TableSchema
from ..snapshot.manager import Snapshot, SnapshotExpired, SnapshotNotFound
from ..store.file_store import FileStore, fallback_column_names
from ..store.row_tracking import ROW_ID, data_evolution_enabled, row_tracking_enabled
from .evolution import file_fields, group_stats, pack_groups, row_id_groups
from .split import Split

# Which LSM levels a scan reads (Paimon's `withLevelFilter`).
LevelFilter = Callable[[int], bool]


def all_levels(level: int) -> bool:
    """Every level: what writers, compaction and index bootstraps read (Paimon: `level -> true`)."""
    return True


def above_level0(level: int) -> bool:
    return level > 0


def batch_skips_level0(table: FileStore) -> bool:
    """Paimon's CoreOptions.batchScanSkipLevel0 for primary-key tables: a batch read does not show level 0
    of a deletion-vector table (unless `deletion-vectors.merge-on-read`, Paimon 2.0) or of a first-row table.
    Their writers fold level 0 up (lookup compaction), which marks replaced rows in deletion vectors or keeps
    a key only in its first run; until then level 0's rows are invisible to batch reads."""
    if not table.table_schema.primary_keys:
        return False
    if table.options.get("deletion-vectors.enabled"):
        return not table.options.get("deletion-vectors.merge-on-read")
    return table.options.get("merge-engine") == "first-row"


class TableScan:
    def __init__(self, table: FileStore, predicate: Predicate | None = None,
                 level_filter: LevelFilter | None = None, parallelism: int | None = None,
                 postpone: bool = False) -> None:
        """``level_filter``: the levels plan() reads (None: what Paimon's batch scan reads, see
        batch_skips_level0); read_entries() always gives every level. ``parallelism``: the readers that will
        share the splits (an engine's default parallelism), so append files spread over at least that many
        splits where they can, as Spark sizes its own file splits. ``postpone``: plan() also gives the postpone
        buckets of a bucket=-2 table (streams read them, batch reads do not: Paimon's onlyReadRealBuckets)."""
        self.parallelism = parallelism
        self.table = table
        self.postpone = postpone
        if table.bucket == POSTPONE_BUCKET and table.options.get("postpone.merge-on-read"):
            raise OptionError(f"postpone.merge-on-read=true (batch reads of {table.path} merging the rows of its "
                              "postpone buckets, Paimon 2.0) is not supported by this version of paimon_ds; without "
                              "it, as in Paimon, batch reads show the rows once a compaction moved them into buckets")
        self.schema = table.table_schema
        self.predicate = predicate
        self.deletion_vectors = table.options.get("deletion-vectors.enabled")
        if level_filter is None:
            level_filter = above_level0 if batch_skips_level0(table) else all_levels
        self.level_filter = level_filter
        part_keys = set(self.schema.partition_keys)
        leaves = split_and(predicate)
        self.partition_predicate = and_all([p for p in leaves if p.fields() <= part_keys])
        data_leaves = [p for p in leaves if not p.fields() <= part_keys]
        if self.schema.primary_keys:
            # A file of a primary-key table may hold the newest version of a row whose older version
            # matches: only predicates on key columns (the same in every version) may skip files.
            data_leaves = [p for p in data_leaves if p.fields() <= set(self.schema.primary_keys)]
        self.data_predicate = and_all(data_leaves)
        # data evolution: a file's stats say nothing of its rows' newer columns in other files: whole row-id
        # groups are pruned in plan_snapshot instead (operation/evolution.py)
        self.data_evolution = row_tracking_enabled(table.options) and data_evolution_enabled(table.options)
        self.partition_types = [f.type for f in self.schema.partition_fields]
        self.manifest_file = ManifestFile(table.io, table.root, self.partition_types, self.schema.id)
        self.manifest_list = ManifestList(table.io, table.root)
        self.snapshot: Snapshot | None = None

    # ---------------------------------------------------------------- entries
    def read_entries(self, snapshot: Snapshot | None = None) -> list[ManifestEntry]:
        """The live data files of a snapshot (latest or time-travel target), after pruning."""
        snapshot = snapshot or self.table.snapshot_to_read()
        self.snapshot = snapshot
        if snapshot is None:
            return []
        try:
            metas = (self.manifest_list.read(snapshot.base_manifest_list)
                     + self.manifest_list.read(snapshot.delta_manifest_list))
            metas = [m for m in metas if self._manifest_may_match(m)]
            # Manifests are independent files: fetch them concurrently (matters on object stores).
            with ThreadPoolExecutor(max_workers=min(16, max(1, len(metas)))) as pool:
                per_manifest = list(pool.map(lambda m: self.manifest_file.read(m.file_name), metas))
        except FileNotFoundError as e:
            if isinstance(e, PaimonDsError):
                raise
            raise missing_file(self.table, snapshot.id, None, e) from e
        live = live_entries(e for entries in per_manifest for e in entries)
        kept = [e for e in live.values() if self._entry_may_match(e)]
        return self._skip_by_file_index(kept)

    def _skip_by_file_index(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """The entries whose file index (embedded, or `<file>.index` beside the file, format/file_index.py) does not
        rule out the data predicate: Java's AppendOnlyFileStoreScan.testFileIndex and FileIndexSkipper. Append
        tables only: Java 0.9 indexes no primary-key file (KeyValueDataFileWriter.result() gives a null embedded
        index, "TODO: enable file filter for primary key table", line 177; Paimon 1.0 writes them and reads
        them in KeyValueFileStoreScan.filterByValueFilter). Side files are fetched concurrently."""
        if (self.data_predicate is None or self.schema.primary_keys or self.data_evolution
                or not self.table.options.get("file-index.read.enabled")):
            return entries
        indexed = [e for e in entries if e.file.embedded_index is not None
                   or any(x.endswith(INDEX_FILE_SUFFIX) for x in e.file.extra_files)]
        if not indexed:
            return entries
        with ThreadPoolExecutor(max_workers=min(16, len(indexed))) as pool:
            skipped = {id(e) for e, may in zip(indexed, pool.map(self._index_may_match, indexed)) if not may}
        return [e for e in entries if id(e) not in skipped]

    def _index_may_match(self, e: ManifestEntry) -> bool:
        f = e.file
        blob = f.embedded_index
        if blob is None:
            name = next(x for x in f.extra_files if x.endswith(INDEX_FILE_SUFFIX))
            directory = (f.external_path.rsplit("/", 1)[0] if f.external_path
                         else f"{self.table.root}/{self.bucket_dir(e.partition, e.bucket)}")
            try:
                blob = self.table.io.read_bytes(f"{directory}/{name}")
            except FileNotFoundError:
                return True  # no index to test: read the file
        file_fields = {x.id: x for x in self._schema(f.schema_id).fields}

        def column_of(name: str):  # a current column -> its name and type in the file (same type only)
            current = self.schema.field(name) if name in self.schema.field_names else None
            old = file_fields.get(current.id) if current is not None else None
            if old is None or old.type.copy(True) != current.type.copy(True):
                return None
            return old.name, old.type
        try:
            index = read_index_file(blob)
        except (ValueError, IndexError, struct_error):
            return True  # an index this reader does not know: the file is read
        return index_may_match(index, self.data_predicate, column_of)

    def _manifest_may_match(self, meta: ManifestFileMeta) -> bool:
        if self.partition_predicate is None:
            return True
        return self.partition_predicate.may_match(
            _stats_lookup(meta.partition_stats, self.schema.partition_keys, self.partition_types,
                          row_count=meta.num_added_files + meta.num_deleted_files))

    def entry_may_match(self, e: ManifestEntry) -> bool:
        """Whether a file may hold rows the scan's predicate keeps (partition values, then file stats)."""
        return self._entry_may_match(e)

    def _entry_may_match(self, e: ManifestEntry) -> bool:
        if self.partition_predicate is not None:
            values = dict(zip(self.schema.partition_keys, self.partition_values(e.partition)))
            if not test_values(self.partition_predicate, values):
                return False
        if self.data_predicate is not None and not self.data_evolution:
            return self.data_predicate.may_match(self.file_stats(e.file))
        return True

    def partition_values(self, partition: bytes) -> list[Any]:
        """A partition's values, one per partition key, decoded from its binary row."""
        return _decode_partition(partition, tuple(self.partition_types))

    def partition_dir(self, partition: bytes) -> str:
        """The partition's directory relative to the table (`dt=2024-01-01/...`; "" if unpartitioned)."""
        keys = self.schema.partition_keys
        if not keys:
            return ""
        return partition_path(keys, self.partition_values(partition), self.table.options.get("partition.default-name"),
                              self.partition_types)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The bucket's directory relative to the table."""
        rel = self.partition_dir(partition)
        return bucket_path(rel, bucket)

    def file_stats(self, f: DataFileMeta) -> Callable[[str], tuple[Any, Any, int | None, int]]:
        """A data file's statistics by current column name: (min, max, null count or None, row count)."""
        file_schema = self._schema(f.schema_id)
        if f.value_stats_cols is None:
            stat_fields = file_fields(file_schema, f)  # a partial file's stats cover its _WRITE_COLS
        else:
            by_name = {x.name: x for x in file_schema.fields}
            stat_fields = [by_name[c] for c in f.value_stats_cols if c in by_name]
        # Predicates name current columns; stats are laid out by the file's schema: match by field id.
        current_id = {x.name: x.id for x in self.schema.fields}
        position = {x.id: i for i, x in enumerate(stat_fields)}
        types = [x.type for x in stat_fields]
        decoded: dict[str, Any] = {}

        def lookup(name: str) -> tuple[Any, Any, int | None, int]:
            if name == ROW_ID and f.first_row_id is not None:
                return f.first_row_id, f.first_row_id + f.row_count - 1, 0, f.row_count
            i = position.get(current_id.get(name, -1))
            if i is None:
                return None, None, None, f.row_count
            if not decoded:
                decoded["min"] = _safe_decode(f.value_stats.min_values, types)
                decoded["max"] = _safe_decode(f.value_stats.max_values, types)
            lo, hi = decoded["min"][i], decoded["max"][i]
            nulls = f.value_stats.null_counts[i] if f.value_stats.null_counts and i < len(
                f.value_stats.null_counts) else None
            if nulls is not None and nulls < 0:
                nulls = None  # Java Paimon stores parquet's "unknown" (-1), e.g. when values exceed 4 KiB
            if self.schema.field(name).type != stat_fields[i].type:
                lo = hi = nulls = None  # evolved type: stats are in the old type (a cast may even give nulls)
            return lo, hi, nulls, f.row_count
        return lookup

    def _schema(self, schema_id: int) -> TableSchema:
        if schema_id == self.schema.id:
            return self.schema
        return self.table.schema_by_id(schema_id)

    # ---------------------------------------------------------------- splits
    def plan(self) -> list[Split]:
        """A batch read's splits: plan_snapshot(None), and with `scan.fallback-branch` the partitions the
        table's branch lacks from that branch (plan_snapshot alone reads one branch, as streams and jobs do)."""
        splits = self.plan_snapshot(None)
        if self.table.fallback_store() is not None:
            splits += self._fallback_splits()
        return splits

    def _fallback_splits(self) -> list[Split]:
        """The fallback branch's splits of the partitions the scanned branch lacks (FileStore.fallback_store)."""
        table = self.table
        other = table.fallback_store()
        if other is None:
            return []
        try:
            if other.snapshot_to_read() is None:
                return []
        except SnapshotNotFound:
            if "scan.timestamp-millis" not in other.dynamic_options:
                raise
            return []  # the fallback branch had no snapshot yet at that time
        # the partitions this branch has, by the partition filter only (Paimon's partition listing scan)
        own = {e.partition for e in TableScan(table, self.partition_predicate).read_entries(self.snapshot)}
        names = fallback_column_names(table, other)
        splits = [s for s in TableScan(other, rename_fields(self.predicate, names)).plan_snapshot(None)
                  if s.partition not in own]
        for s in splits:
            s.branch = other.branch
        return splits

    def plan_snapshot(self, snapshot: Snapshot | None) -> list[Split]:
        """Splits of ``snapshot`` (None: the latest, or the one time-travel options name)."""
        entries = self.read_entries(snapshot)
        opts = self.table.options
        target = opts.get("source.split.target-size")
        open_cost = opts.get("source.split.open-file-cost")
        if self.parallelism and not self.schema.primary_keys:
            # Spark's FilePartition.maxSplitBytes: no larger than a fair share of the bytes per reader
            total = sum(max(e.file.file_size, open_cost) for e in entries)
            target = min(target, max(open_cost, total // self.parallelism))
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
        for e in entries:
            if e.bucket == POSTPONE_BUCKET and not self.postpone:
                continue  # rows no batch read shows until a compaction buckets them (operation/postpone.py)
            groups[(e.partition, e.bucket)].append(e.file)
        splits: list[Split] = []
        sid = self.snapshot.id if self.snapshot else None
        dv_files = self._deletion_files() if self.deletion_vectors else None
        for (partition, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            directory = f"{self.table.root}/{self.bucket_dir(partition, bucket)}"
            files.sort(key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
            if self.level_filter is not all_levels:
                files = [f for f in files if self.level_filter(f.level)]
                if not files:
                    continue
            if self.data_evolution:
                groups = row_id_groups(files)
                if self.data_predicate is not None:
                    groups = [g for g in groups if self.data_predicate.may_match(
                        group_stats(g, self.schema, self._schema, self.file_stats))]
                for pack in pack_groups(groups, target, open_cost):
                    splits.append(self._with_dvs(Split(partition, bucket, directory, pack, sid), dv_files))
                continue
            if self.schema.primary_keys:
                # every sorted run of a bucket must be merged together: one split per bucket
                splits.append(self._with_dvs(Split(partition, bucket, directory, files, sid), dv_files))
                continue
            current: list[DataFileMeta] = []
            weight = 0
            for f in files:
                w = max(f.file_size, open_cost)
                if current and weight + w > target:
                    splits.append(self._with_dvs(Split(partition, bucket, directory, current, sid), dv_files))
                    current, weight = [], 0
                current.append(f)
                weight += w
            if current:
                splits.append(self._with_dvs(Split(partition, bucket, directory, current, sid), dv_files))
        return splits

    def _deletion_files(self) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        """(partition, bucket) -> data file name -> deletion file, from the snapshot's index manifest."""
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
        if self.snapshot is None or not self.snapshot.index_manifest:
            return out
        for e in IndexManifestFile(self.table.io, self.table.root).read(self.snapshot.index_manifest):
            if e.index_file.index_type == DELETION_VECTORS_INDEX:
                out.setdefault((e.partition, e.bucket), {}).update(
                    deletion_files(self.table.store, e.partition, e.bucket, [e.index_file]))
        return out

    @staticmethod
    def _with_dvs(split: Split, dv_files: dict[tuple[bytes, int], dict[str, DeletionFile]] | None) -> Split:
        if dv_files is not None:
            bucket_dvs = dv_files.get((split.partition, split.bucket), {})
            split.deletion_files = {f.file_name: bucket_dvs[f.file_name] for f in split.files
                                    if f.file_name in bucket_dvs}
        return split


@lru_cache(maxsize=4096)
def _decode_partition(partition: bytes, types: tuple) -> list[Any]:
    return deserialize_row(partition, list(types))


def _safe_decode(blob: bytes, types: list) -> list[Any]:
    try:
        return deserialize_row(blob, types)
    except Exception:  # noqa: BLE001 - unreadable stats only disable pruning
        return [None] * len(types)


def _stats_lookup(stats: SimpleStats, names: list[str], types: list, row_count: int):
    mins = _safe_decode(stats.min_values, types)
    maxs = _safe_decode(stats.max_values, types)

    def lookup(name: str) -> tuple[Any, Any, int | None, int]:
        i = names.index(name)
        nulls = stats.null_counts[i] if stats.null_counts and i < len(stats.null_counts) else None
        # partition null counts count manifest entries, not rows: usable only as "some are null"
        return mins[i], maxs[i], (None if nulls else 0), row_count
    return lookup


def missing_file(table: FileStore, sid: int | None, branch: str | None, error: FileNotFoundError) -> PaimonDsError:
    """The error for a file of snapshot ``sid`` (of ``branch``: None, the table's own) that is gone: the snapshot
    expired under the read, and the file with it (SnapshotExpired), or it is still there and the table lost a file
    (MissingFileError)."""
    name = error.filename or str(error)
    if sid is not None:
        fallback = table.fallback_store() if branch not in (None, table.branch) else None
        sm = (fallback or table).snapshot_manager
        try:  # gone, or left below EARLIEST by an interrupted expiry (SnapshotManager.remnants)
            gone = not sm.exists(sid) or sid in sm.remnants()
        except OSError:
            gone = False
        if gone:
            return SnapshotExpired(
                f"snapshot {sid} of {table.path} expired while it was being read: its file {name} was deleted by "
                "snapshot expiry (read again for the latest snapshot; keep snapshots longer with "
                "snapshot.time-retained / snapshot.num-retained.min, or a consumer-id, for reads that take longer)")
    where = f"snapshot {sid}" if sid is not None else "the snapshot read"
    return MissingFileError(f"file {name} of {where} of {table.path} is missing: the table lost a file it still "
                            "uses (deleted by hand, or by a tool that ignored this snapshot)")
