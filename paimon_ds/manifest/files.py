"""Manifest files and manifest lists in Avro, with Paimon's record layout.

We write the newest field set (the one pypaimon 2.x needs and Java Paimon 0.9 reads by name) and
read any older one: fields added after 0.9 are looked up with defaults.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import reading_file
from ..format.avro_codecs import ensure_avro_codecs
from ..format.binary_row import deserialize_row, serialize_row
from ..format.data_file import codec_for, read_records
from ..fs.file_io import FileIO
from ..io.names import FileNamer
from ..schema.types import DataType, total_order_value
from .meta import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

ensure_avro_codecs()  # zstd manifests where fastavro runs without its compiled codecs (Spark Connect)

_NS = "org.apache.paimon.avro.generated.record"


def _stats(name: str) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
    ]}


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


MANIFEST_ENTRY_SCHEMA = fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_TOTAL_BUCKETS", "type": "int"},
    {"name": "_FILE", "type": {"type": "record", "name": f"{_NS}__FILE", "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats(f"{_NS}__FILE__KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats(f"{_NS}__FILE__VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
    ]}},
]})

MANIFEST_FILE_META_SCHEMA = fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_NUM_ADDED_FILES", "type": "long"},
    {"name": "_NUM_DELETED_FILES", "type": "long"},
    {"name": "_PARTITION_STATS", "type": _stats(f"{_NS}__PARTITION_STATS")},
    {"name": "_SCHEMA_ID", "type": "long"},
    _opt("_MIN_BUCKET", "int"),
    _opt("_MAX_BUCKET", "int"),
    _opt("_MIN_LEVEL", "int"),
    _opt("_MAX_LEVEL", "int"),
    _opt("_MIN_ROW_ID", "long"),
    _opt("_MAX_ROW_ID", "long"),
]})

# Fields that are TINYINT in Paimon's row types (Avro has no byte type and stores them as int)
_TINYINT_FIELDS = {"_KIND", "_FILE_SOURCE"}


def avro_bytes(schema: Any, records: Iterable[dict[str, Any]], compression: str) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec=codec_for("avro", compression))
    return buf.getvalue()


def _arrow_field(name: str, avro_type: Any) -> pa.Field:
    """The Arrow field Paimon's parquet / ORC manifests have where its Avro ones have ``avro_type``."""
    nullable = isinstance(avro_type, list)
    if nullable:
        (avro_type,) = [t for t in avro_type if t != "null"]
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if avro_type.get("logicalType") == "timestamp-millis":
            arrow: pa.DataType = pa.timestamp("ms")
        elif kind == "record":
            arrow = pa.struct([_arrow_field(f["name"], f["type"]) for f in avro_type["fields"]])
        elif kind == "array":
            arrow = pa.list_(_arrow_field("element", avro_type["items"]))
        else:
            return _arrow_field(name, ["null", kind] if nullable else kind)
    else:
        arrow = {"int": pa.int8() if name in _TINYINT_FIELDS else pa.int32(), "long": pa.int64(),
                 "string": pa.string(), "bytes": pa.binary(), "boolean": pa.bool_()}[avro_type]
    return pa.field(name, arrow, nullable)


def manifest_bytes(schema: Any, records: Iterable[dict[str, Any]], compression: str, file_format: str) -> bytes:
    """A manifest, manifest list or index manifest in `manifest.format`: Avro, or parquet / ORC with the
    columns Paimon writes there (its row type: TINYINT kinds, millisecond timestamps, required fields)."""
    if file_format == "avro":
        return avro_bytes(schema, records, compression)
    arrow_schema = pa.schema([_arrow_field(f["name"], f["type"]) for f in schema["fields"]])
    table = pa.Table.from_pylist(list(records), schema=arrow_schema)
    codec = codec_for(file_format, compression)
    sink = pa.BufferOutputStream()
    if file_format == "parquet":
        pq.write_table(table, sink, compression=codec)
    else:
        import pyarrow.orc as po  # loads Arrow's ORC library: only tables whose manifests are ORC
        po.write_table(table, sink, compression=codec)
    return sink.getvalue().to_pybytes()


def read_avro(data: bytes) -> list[dict[str, Any]]:
    if data[:4] != b"Obj\x01":  # `manifest.format` orc or parquet, which Paimon honours
        return read_records(data)
    return list(fastavro.reader(io.BytesIO(data)))


def read_manifest_records(file_io: FileIO, path: str, what: str) -> list[dict[str, Any]]:
    """The records of the manifest, manifest list or index manifest at ``path`` (a ``what``); one that cannot be
    decoded (empty, truncated, not Avro / parquet / ORC) is a CorruptFileError naming it."""
    data = file_io.read_bytes(path)
    with reading_file(path, what, len(data)):
        return read_avro(data)


def partition_stats(partitions: Iterable[bytes], types: Sequence[DataType]) -> SimpleStats:
    """Min, max and null count of each partition field over the given partition rows, ordered as Paimon's stats
    collector orders them (compareTo: a NaN partition is the max of a DOUBLE field, -0.0 below 0.0)."""
    n = len(types)
    mins: list[Any] = [None] * n
    maxs: list[Any] = [None] * n
    nulls = [0] * n
    for blob in set(partitions):
        for i, v in enumerate(deserialize_row(blob, types)):
            if v is None:
                nulls[i] += 1
                continue
            rank = total_order_value(v)
            if mins[i] is None or rank < total_order_value(mins[i]):
                mins[i] = v
            if maxs[i] is None or rank > total_order_value(maxs[i]):
                maxs[i] = v
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


class ManifestFile:
    """Writes and reads `manifest/manifest-<uuid>-<n>` files of ManifestEntry records."""

    def __init__(self, io: FileIO, table_path: str, partition_types: Sequence[DataType], schema_id: int,
                 compression: str = "zstd", target_size: int = 8 << 20, file_format: str = "avro") -> None:
        self.io = io
        self.file_format = file_format
        self.dir = f"{table_path}/manifest"
        self.partition_types = list(partition_types)
        self.schema_id = schema_id
        self.compression = compression
        self.target_size = target_size
        self._names = FileNamer(kind="manifest", suffix="")

    def write(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifest files (rolling by target size)."""
        metas: list[ManifestFileMeta] = []
        # Entries are a few hundred bytes each; roll on an estimate, then measure the real size.
        per_file = max(1, self.target_size // 400)
        for start in range(0, len(entries), per_file):
            chunk = entries[start:start + per_file]
            name = self._names.next()
            data = manifest_bytes(MANIFEST_ENTRY_SCHEMA, (e.to_avro() for e in chunk), self.compression,
                                  self.file_format)
            self.io.write_bytes(f"{self.dir}/{name}", data)
            metas.append(ManifestFileMeta(
                name, len(data),
                sum(1 for e in chunk if e.kind == FileKind.ADD),
                sum(1 for e in chunk if e.kind == FileKind.DELETE),
                partition_stats((e.partition for e in chunk), self.partition_types),
                self.schema_id,
                min(e.bucket for e in chunk), max(e.bucket for e in chunk),
                min(e.file.level for e in chunk), max(e.file.level for e in chunk)))
        return metas

    def read(self, name: str) -> list[ManifestEntry]:
        return [ManifestEntry.from_avro(r) for r in read_manifest_records(self.io, f"{self.dir}/{name}", "manifest")]


class AvroListFile:
    """`manifest/<kind>-<uuid>-<n>`: one file of records (``record`` has to_avro / from_avro), in Avro unless
    `manifest.format` says parquet or orc."""

    kind: str
    schema: dict
    record: Any

    def __init__(self, io: FileIO, table_path: str, compression: str = "zstd", file_format: str = "avro") -> None:
        self.io = io
        self.dir = f"{table_path}/manifest"
        self.compression = compression
        self.file_format = file_format
        self._names = FileNamer(kind=self.kind, suffix="")

    def write(self, records: Sequence[Any]) -> str:
        name = self._names.next()
        data = manifest_bytes(self.schema_for(records), (r.to_avro() for r in records), self.compression,
                              self.file_format)
        self.io.write_bytes(f"{self.dir}/{name}", data)
        return name

    def schema_for(self, records: Sequence[Any]) -> dict:
        """The record layout a file of ``records`` is written with."""
        return self.schema

    def read(self, name: str) -> list:
        return [self.record.from_avro(r) for r in read_manifest_records(self.io, f"{self.dir}/{name}", self.kind)]


class ManifestList(AvroListFile):
    """Writes and reads `manifest/manifest-list-<uuid>-<n>` files of ManifestFileMeta records."""

    kind = "manifest-list"
    schema = MANIFEST_FILE_META_SCHEMA
    record = ManifestFileMeta
