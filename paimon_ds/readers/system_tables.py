"""Paimon's system tables (`t$snapshots`, `t$files`, ...) as Arrow tables, computed from a table's metadata.

Columns follow Apache Paimon 0.9's `org.apache.paimon.table.system` classes (`$buckets`, which 0.9 does
not have, follows later releases), with these deliberate, documented differences:

- Timestamps are `timestamp[ms]` without a time zone, shown as Paimon shows them: snapshot, schema and tag
  times in the local time of this process (Paimon: the JVM's), file creation times as stored.
- `$files.file_path` is the file's full path (Paimon >= 1.0; 0.9 showed only the file name).
- Partitions and keys render as Paimon 0.9 renders them, ``[v1, v2]`` (``[]`` for an unpartitioned
  table), and stats as ``{column=value, ...}`` sorted by column name; but dates, times and timestamps
  render as ISO text (0.9 showed their internal numbers), floats as Java's ``Double.toString`` and binary
  values as hex (``0x...``).

System tables read the table's latest snapshot, or the one its time-travel options name
(`Table.load(path, {"scan.snapshot-id": "3"})`), as Paimon does. Metadata only: no data file is read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..format.binary_row import deserialize_row
from ..format.partition import bucket_path, partition_path
from ..manifest.files import ManifestFile, ManifestList
from ..manifest.meta import DataFileMeta, ManifestEntry, ManifestFileMeta, live_entries
from ..schema.manager import TableSchema
from ..schema.types import DataField, DataType
from ..snapshot.manager import Snapshot
from ..store.consumer import ConsumerManager

if TYPE_CHECKING:
    from ..store.file_store import FileStore

_TS = pa.timestamp("ms")


def _f(name: str, t: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable)


# Nullability as Paimon declares it (Spark rejects batches whose nullability differs from the schema).
SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": pa.schema([
        _f("snapshot_id", pa.int64(), False), _f("schema_id", pa.int64(), False),
        _f("commit_user", pa.string(), False), _f("commit_identifier", pa.int64(), False),
        _f("commit_kind", pa.string(), False), _f("commit_time", _TS, False),
        _f("base_manifest_list", pa.string(), False), _f("delta_manifest_list", pa.string(), False),
        _f("changelog_manifest_list", pa.string()), _f("total_record_count", pa.int64()),
        _f("delta_record_count", pa.int64()), _f("changelog_record_count", pa.int64()),
        _f("watermark", pa.int64()),
    ]),
    "schemas": pa.schema([
        _f("schema_id", pa.int64(), False), _f("fields", pa.string(), False),
        _f("partition_keys", pa.string(), False), _f("primary_keys", pa.string(), False),
        _f("options", pa.string(), False), _f("comment", pa.string()), _f("update_time", _TS, False),
    ]),
    "options": pa.schema([_f("key", pa.string(), False), _f("value", pa.string(), False)]),
    "files": pa.schema([
        _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("file_path", pa.string(), False),
        _f("file_format", pa.string(), False), _f("schema_id", pa.int64(), False), _f("level", pa.int32(), False),
        _f("record_count", pa.int64(), False), _f("file_size_in_bytes", pa.int64(), False),
        _f("min_key", pa.string()), _f("max_key", pa.string()),
        _f("null_value_counts", pa.string(), False), _f("min_value_stats", pa.string(), False),
        _f("max_value_stats", pa.string(), False), _f("min_sequence_number", pa.int64()),
        _f("max_sequence_number", pa.int64()), _f("creation_time", _TS),
    ]),
    "manifests": pa.schema([
        _f("file_name", pa.string(), False), _f("file_size", pa.int64(), False),
        _f("num_added_files", pa.int64(), False), _f("num_deleted_files", pa.int64(), False),
        _f("schema_id", pa.int64(), False),
    ]),
    "partitions": pa.schema([
        _f("partition", pa.string()), _f("record_count", pa.int64(), False),
        _f("file_size_in_bytes", pa.int64(), False), _f("file_count", pa.int64(), False),
        _f("last_update_time", _TS),
    ]),
    "buckets": pa.schema([
        _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("record_count", pa.int64(), False),
        _f("file_size_in_bytes", pa.int64(), False), _f("file_count", pa.int64(), False),
        _f("last_update_time", _TS),
    ]),
    "tags": pa.schema([
        _f("tag_name", pa.string(), False), _f("snapshot_id", pa.int64(), False),
        _f("schema_id", pa.int64(), False), _f("commit_time", _TS, False), _f("record_count", pa.int64()),
        _f("create_time", _TS), _f("time_retained", pa.string()),
    ]),
    # Paimon 1.x's columns (0.9 also had created_from_tag / created_from_snapshot)
    "branches": pa.schema([_f("branch_name", pa.string(), False), _f("create_time", _TS, False)]),
    # Paimon 0.9's ConsumersTable: each consumer's next snapshot (rows here sorted by consumer id)
    "consumers": pa.schema([_f("consumer_id", pa.string(), False), _f("next_snapshot_id", pa.int64(), False)]),
}

SYSTEM_TABLES: tuple[str, ...] = tuple(SCHEMAS)
# the system tables that read data files, whose columns are the table's (operation/change_tables.py)
DATA_SYSTEM_TABLES: tuple[str, ...] = ("audit_log", "binlog", "ro")


def normalize_name(name: str) -> str:
    """``"snapshots"``, ``"$snapshots"`` or ``"SNAPSHOTS"`` -> ``"snapshots"``; unknown names -> ValueError."""
    key = name.strip().lstrip("$").lower()
    if key not in SCHEMAS and key not in DATA_SYSTEM_TABLES:
        raise ValueError(f"unknown system table {name!r}; valid ones: "
                         f"{', '.join([*SYSTEM_TABLES, *DATA_SYSTEM_TABLES])}")
    return key


def system_table_schema(name: str) -> pa.Schema:
    """A metadata system table's columns (audit_log, binlog and ro have their table's: operation/change_tables.py)."""
    key = normalize_name(name)
    if key in DATA_SYSTEM_TABLES:
        raise ValueError(f"the columns of system table {key} are its table's (operation/change_tables.py)")
    return SCHEMAS[key]


def system_table(table: FileStore, name: str) -> pa.Table:
    """The system table ``name`` (one of SYSTEM_TABLES, with or without the leading ``$``) of ``table``."""
    key = normalize_name(name)
    if key in DATA_SYSTEM_TABLES:
        raise ValueError(f"system table {key} reads the table's rows: Table.inspect.{key}() or "
                         "operation.change_tables.data_system_table")
    rows = _BUILDERS[key](table)
    return pa.Table.from_pylist(rows, schema=SCHEMAS[key])


# ---------------------------------------------------------------- snapshots, schemas, options, tags
def _local_time(millis: int) -> dt.datetime:
    """Epoch millis as local wall time (Paimon: LocalDateTime.ofInstant(.., ZoneId.systemDefault()))."""
    seconds, ms = divmod(int(millis), 1000)
    return dt.datetime.fromtimestamp(seconds).replace(microsecond=ms * 1000)


def _snapshots(table: FileStore) -> list[dict[str, Any]]:
    sm = table.snapshot_manager
    rows = []
    for s in sm.readable_snapshots():  # a damaged old snapshot is left out with a warning
        rows.append({
            "snapshot_id": s.id, "schema_id": s.schema_id, "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier, "commit_kind": s.commit_kind,
            "commit_time": _local_time(s.time_millis), "base_manifest_list": s.base_manifest_list,
            "delta_manifest_list": s.delta_manifest_list, "changelog_manifest_list": s.changelog_manifest_list,
            "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count, "watermark": s.watermark,
        })
    return rows


def _flat_json(obj: Any) -> str:
    """Paimon's JsonSerdeUtil.toFlatJson: compact JSON, non-ASCII kept."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _schemas(table: FileStore) -> list[dict[str, Any]]:
    manager = table.schema_manager
    rows = []
    for sid in manager.list_ids():
        s = manager.schema(sid)
        rows.append({
            "schema_id": s.id, "fields": _flat_json([f.to_json() for f in s.fields]),
            "partition_keys": _flat_json(list(s.partition_keys)), "primary_keys": _flat_json(list(s.primary_keys)),
            "options": _flat_json(dict(s.options)), "comment": s.comment, "update_time": _local_time(s.time_millis),
        })
    return rows


def _latest_schema(table: FileStore) -> TableSchema:
    return table.schema_manager.latest() or table.table_schema


def _options(table: FileStore) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in _latest_schema(table).options.items()]


def _tag_create_time(value: Any) -> dt.datetime | None:
    """Paimon writes LocalDateTime with Jackson's JavaTimeModule: [y, m, d, h, min, s, nanos] (or ISO text)."""
    if isinstance(value, list) and len(value) >= 3:
        parts = [int(x) for x in value] + [0] * (7 - len(value))
        return dt.datetime(*parts[:6], parts[6] // 1_000_000 * 1000)
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    return None


def _duration_text(value: Any) -> str | None:
    """A java.time.Duration (Jackson writes seconds, e.g. 3600.000000000) as Duration.toString: PT1H."""
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("P"):
        return value
    total = decimal.Decimal(str(value))
    if total == 0:
        return "PT0S"
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "PT" + (f"{sign}{int(hours)}H" if hours else "") + (f"{sign}{int(minutes)}M" if minutes else "")
    if seconds:
        text = format(seconds.normalize(), "f")
        out += f"{sign}{text}S"
    return out


def _tags(table: FileStore) -> list[dict[str, Any]]:
    rows = []
    for name in table.snapshot_manager.tag_names():  # the tags of the table's branch
        tag: Snapshot = table.snapshot_manager.tag(name)
        rows.append({
            "tag_name": name, "snapshot_id": tag.id, "schema_id": tag.schema_id,
            "commit_time": _local_time(tag.time_millis), "record_count": tag.total_record_count,
            "create_time": _tag_create_time(tag.extra.get("tagCreateTime")),
            "time_retained": _duration_text(tag.extra.get("tagTimeRetained")),
        })
    return rows


def _branches(table: FileStore) -> list[dict[str, Any]]:
    """Branches other than main. create_time: when the branch's first schema file was written (Paimon shows its
    directory's modification time, which object stores do not keep)."""
    manager = table.branch_manager()
    rows = []
    for name in manager.branches():
        schemas = manager.schemas(name)
        ids = schemas.list_ids()
        modified = table.io.modified(schemas.path(ids[0])) if ids else dt.datetime.fromtimestamp(0)
        millis = int(modified.timestamp() * 1000)
        rows.append({"branch_name": name, "create_time": _local_time(millis)})
    return rows


# ---------------------------------------------------------------- manifests and data files
def _snapshot(table: FileStore) -> Snapshot | None:
    return table.snapshot_to_read()


def _manifest_metas(table: FileStore, snapshot: Snapshot, changelog: bool) -> list[ManifestFileMeta]:
    ml = ManifestList(table.io, table.root)
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    if changelog and snapshot.changelog_manifest_list:
        lists.append(snapshot.changelog_manifest_list)
    return [m for name in lists for m in ml.read(name)]


def _manifests(table: FileStore) -> list[dict[str, Any]]:
    snapshot = _snapshot(table)
    if snapshot is None:
        return []
    return [{"file_name": m.file_name, "file_size": m.file_size, "num_added_files": m.num_added_files,
             "num_deleted_files": m.num_deleted_files, "schema_id": m.schema_id}
            for m in _manifest_metas(table, snapshot, changelog=True)]


class _Files:
    """The live data files of the snapshot a table reads, with their partitions decoded once."""

    def __init__(self, table: FileStore) -> None:
        self.table = table
        self.schema = _latest_schema(table)
        self.partition_types = [f.type for f in self.schema.partition_fields]
        self.entries: list[ManifestEntry] = []
        snapshot = _snapshot(table)
        if snapshot is not None:
            mf = ManifestFile(table.io, table.root, self.partition_types, self.schema.id)
            metas = _manifest_metas(table, snapshot, changelog=False)
            # manifests are independent files: fetch them concurrently (matters on object stores)
            with ThreadPoolExecutor(max_workers=min(16, max(1, len(metas)))) as pool:
                per_manifest = list(pool.map(lambda m: mf.read(m.file_name), metas))
            self.entries = list(live_entries(e for entries in per_manifest for e in entries).values())
        self._values: dict[bytes, list[Any]] = {}

    def values(self, partition: bytes) -> list[Any]:
        if partition not in self._values:
            self._values[partition] = _decode(partition, self.partition_types)
        return self._values[partition]

    def rendered(self, partition: bytes) -> str:
        return _render_row(self.values(partition), self.partition_types)

    def sort_key(self, partition: bytes) -> tuple:
        # partition values in order, nulls last (bytes order is not value order)
        return tuple((v is None, v if v is not None else 0) for v in self.values(partition))

    def file_path(self, e: ManifestEntry) -> str:
        if e.file.external_path:
            return e.file.external_path
        rel = partition_path(self.schema.partition_keys, self.values(e.partition),
                             self.table.options.get("partition.default-name"),
                             self.partition_types) if self.schema.partition_keys else ""
        return f"{self.table.root}/{bucket_path(rel, e.bucket)}/{e.file.file_name}"


def _creation_time(f: DataFileMeta) -> dt.datetime | None:
    """The stored creation time (Paimon stores local wall time as a timestamp-millis), unchanged."""
    t = f.creation_time
    if t is None:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _files(table: FileStore) -> list[dict[str, Any]]:
    files = _Files(table)
    schemas: dict[int, TableSchema] = {files.schema.id: files.schema}

    def schema_of(schema_id: int) -> TableSchema:
        if schema_id not in schemas:
            schemas[schema_id] = table.schema_manager.schema(schema_id)
        return schemas[schema_id]

    current = list(files.schema.fields)
    order = sorted(range(len(current)), key=lambda i: current[i].name)  # Paimon shows a TreeMap by name
    rows = []
    entries = sorted(files.entries, key=lambda e: (files.sort_key(e.partition), e.bucket, e.file.level,
                                                   e.file.min_sequence_number, e.file.max_sequence_number,
                                                   _creation_time(e.file) or dt.datetime.min, e.file.file_name))
    for e in entries:
        f = e.file
        file_schema = schema_of(f.schema_id)
        key_types = [file_schema.field(k).type for k in file_schema.primary_keys
                     if k not in file_schema.partition_keys]
        nulls, mins, maxs = _value_stats(f, file_schema, current)
        rows.append({
            "partition": files.rendered(e.partition), "bucket": e.bucket, "file_path": files.file_path(e),
            "file_format": f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else "",
            "schema_id": f.schema_id, "level": f.level, "record_count": f.row_count,
            "file_size_in_bytes": f.file_size,
            "min_key": _render_key(f.min_key, key_types), "max_key": _render_key(f.max_key, key_types),
            "null_value_counts": _render_map(current, order, nulls, None),
            "min_value_stats": _render_map(current, order, mins, [c.type for c in current]),
            "max_value_stats": _render_map(current, order, maxs, [c.type for c in current]),
            "min_sequence_number": f.min_sequence_number, "max_sequence_number": f.max_sequence_number,
            "creation_time": _creation_time(f),
        })
    return rows


def _value_stats(f: DataFileMeta, file_schema: TableSchema, current: Sequence[DataField],
                 ) -> tuple[list[Any], list[Any], list[Any]]:
    """Null counts, minimums and maximums of a file, laid out as the current schema's columns.

    Stats are stored by the file's schema (all its columns, or the ones `value_stats_cols` names) and are
    matched to current columns by field id, as Paimon's stats evolution does: a column added after the
    file was written is all null (null count = row count), a column without stats shows null."""
    if f.value_stats_cols is None:
        stat_fields = list(file_schema.fields)
    else:
        by_name = {x.name: x for x in file_schema.fields}
        stat_fields = [by_name[c] for c in f.value_stats_cols if c in by_name]
    types = [x.type for x in stat_fields]
    lo, hi = _decode(f.value_stats.min_values, types), _decode(f.value_stats.max_values, types)
    counts = f.value_stats.null_counts or ()
    position = {x.id: i for i, x in enumerate(stat_fields)}
    in_file = {x.id for x in file_schema.fields}
    nulls, mins, maxs = [], [], []
    for c in current:
        i = position.get(c.id)
        if i is None:
            nulls.append(None if c.id in in_file else f.row_count)
            mins.append(None)
            maxs.append(None)
        else:
            nulls.append(counts[i] if i < len(counts) else None)
            mins.append(lo[i])
            maxs.append(hi[i])
    return nulls, mins, maxs


def _group(table: FileStore, by_bucket: bool) -> list[dict[str, Any]]:
    """Paimon's PartitionEntry / BucketEntry: live files summed per partition (and bucket)."""
    files = _Files(table)
    acc: dict[tuple, list[Any]] = defaultdict(lambda: [0, 0, 0, None])
    for e in files.entries:
        a = acc[(e.partition, e.bucket) if by_bucket else (e.partition,)]
        a[0] += e.file.row_count
        a[1] += e.file.file_size
        a[2] += 1
        t = _creation_time(e.file)
        if t is not None and (a[3] is None or t > a[3]):
            a[3] = t
    rows = []
    for key in sorted(acc, key=lambda k: (files.sort_key(k[0]), *k[1:])):
        records, size, count, last = acc[key]
        row: dict[str, Any] = {"partition": files.rendered(key[0])}
        if by_bucket:
            row["bucket"] = key[1]
        row.update(record_count=records, file_size_in_bytes=size, file_count=count, last_update_time=last)
        rows.append(row)
    return rows


_BUILDERS: dict[str, Callable[[FileStore], list[dict[str, Any]]]] = {
    "snapshots": _snapshots, "schemas": _schemas, "options": _options, "files": _files, "manifests": _manifests,
    "partitions": lambda t: _group(t, by_bucket=False), "buckets": lambda t: _group(t, by_bucket=True),
    "tags": _tags, "branches": _branches,
    "consumers": lambda t: [{"consumer_id": consumer_id, "next_snapshot_id": next_snapshot}
                            for consumer_id, next_snapshot in ConsumerManager.of(t).consumers().items()],
}


# ---------------------------------------------------------------- rendering values as Paimon shows them
_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW")


def _decode(blob: bytes, types: Sequence[DataType]) -> list[Any]:
    """A BinaryRow's values; None where a value cannot be shown (nested types, which carry no stats)."""
    if not types:
        return []
    # nested values sit in an 8-byte slot like a BIGINT: decode that and drop it
    flat = [DataType("BIGINT") if t.root in _NESTED else t for t in types]
    try:
        values = deserialize_row(blob, flat)
    except Exception:  # noqa: BLE001 - unreadable stats are shown as null, never fail the table
        return [None] * len(types)
    return [None if t.root in _NESTED else v for v, t in zip(values, types)]


def _render_key(blob: bytes, types: Sequence[DataType]) -> str | None:
    """A min/max key as Paimon shows it: null for files without keys (append tables)."""
    if len(blob) < 4 or int.from_bytes(blob[:4], "big", signed=True) <= 0 or not types:
        return None
    return _render_row(_decode(blob, types), types)


def _render_row(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """Java's Arrays.toString: ``[a, 1]``."""
    return "[" + ", ".join(render_value(v, t) for v, t in zip(values, types)) + "]"


def _render_map(fields: Sequence[DataField], order: Sequence[int], values: Sequence[Any],
                types: Sequence[DataType] | None) -> str:
    """Java's TreeMap.toString: ``{a=1, b=null}`` by column name."""
    parts = []
    for i in order:
        v = values[i]
        parts.append(f"{fields[i].name}={render_value(v, types[i] if types is not None else None)}")
    return "{" + ", ".join(parts) + "}"


def render_value(v: Any, t: DataType | None) -> str:
    """A value as Paimon's system tables print it (Java's toString: null, true, 1.0E10, ...)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _java_float(v, t is not None and t.root == "FLOAT")
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    return str(v)


def _java_float(v: float, single: bool) -> str:
    """Java's Double.toString / Float.toString: shortest digits, scientific outside [1e-3, 1e7)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    x = np.float32(v) if single else np.float64(v)
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        text = np.format_float_positional(x, unique=True, trim="0")
        return text
    mantissa, exp = np.format_float_scientific(x, unique=True, trim="0").split("e")
    return f"{mantissa}E{int(exp)}"


# ---------------------------------------------------------------- Table.inspect
class InspectTable:
    """A table's metadata as Arrow tables, one method per system table (as pyiceberg's `tbl.inspect`):
    `table.inspect.snapshots()`, `.files()`, ... Each gives the rows of `system_table(table, name)`; metadata only,
    no data file is read. Those that read one snapshot (files, manifests, partitions, buckets) read the table's
    latest, or the one a time-travel load names (`Table.load(path, {"scan.snapshot-id": "3"})`)."""

    def __init__(self, table: FileStore, read_rows: Callable[[str], pa.Table]) -> None:
        self._table = table
        self._read_rows = read_rows  # audit_log / binlog / ro: they read data files, through the operations above

    def snapshots(self) -> pa.Table:
        """Every snapshot not expired, oldest first: snapshot_id, schema_id, commit_user, commit_identifier,
        commit_kind, commit_time, base_manifest_list, delta_manifest_list, changelog_manifest_list,
        total_record_count, delta_record_count, changelog_record_count, watermark."""
        return system_table(self._table, "snapshots")

    def schemas(self) -> pa.Table:
        """Every schema version: schema_id, fields (JSON), partition_keys (JSON), primary_keys (JSON),
        options (JSON), comment, update_time."""
        return system_table(self._table, "schemas")

    def options(self) -> pa.Table:
        """The table's stored options: key, value."""
        return system_table(self._table, "options")

    def files(self) -> pa.Table:
        """The live data files: partition, bucket, file_path, file_format, schema_id, level, record_count,
        file_size_in_bytes, min_key, max_key, null_value_counts, min_value_stats, max_value_stats,
        min_sequence_number, max_sequence_number, creation_time."""
        return system_table(self._table, "files")

    def manifests(self) -> pa.Table:
        """The snapshot's manifest files (base, delta and changelog lists): file_name, file_size, num_added_files,
        num_deleted_files, schema_id."""
        return system_table(self._table, "manifests")

    def partitions(self) -> pa.Table:
        """One row per partition: partition, record_count, file_size_in_bytes, file_count, last_update_time."""
        return system_table(self._table, "partitions")

    def buckets(self) -> pa.Table:
        """One row per (partition, bucket): partition, bucket, record_count, file_size_in_bytes, file_count,
        last_update_time."""
        return system_table(self._table, "buckets")

    def tags(self) -> pa.Table:
        """The tags: tag_name, snapshot_id, schema_id, commit_time, record_count, create_time, time_retained."""
        return system_table(self._table, "tags")

    def branches(self) -> pa.Table:
        """The branches other than main: branch_name, create_time."""
        return system_table(self._table, "branches")

    def consumers(self) -> pa.Table:
        """The consumers (streaming readers' progress): consumer_id, next_snapshot_id."""
        return system_table(self._table, "consumers")

    def audit_log(self) -> pa.Table:
        """Paimon's `$audit_log`: the table's rows with a leading `rowkind` column (+I, -U, +U, -D); a primary
        key whose last record is a deletion shows as its -D row. Reads data files (operation/change_tables.py)."""
        return self._read_rows("audit_log")

    def binlog(self) -> pa.Table:
        """Paimon's `$binlog` (Paimon 1.0's BinlogTable): audit_log's rows with each column as an array of its
        value (one element in a batch read). Reads data files."""
        return self._read_rows("binlog")

    def ro(self) -> pa.Table:
        """Paimon's `$ro` (read-optimized): the rows of a primary-key table's top level only, its fully compacted
        files, which need no merge (all rows of an append table). Reads data files."""
        return self._read_rows("ro")

    def __repr__(self) -> str:
        names = [*SYSTEM_TABLES, *DATA_SYSTEM_TABLES]
        return f"InspectTable({self._table.path!r}: {', '.join(f'{n}()' for n in names)})"
