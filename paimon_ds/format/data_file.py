"""Data files in the three formats Paimon writes: parquet, ORC and Avro.

One place knows the formats: readers (`open_data_file`: the file's column names, then Arrow batches of the
columns asked for) and writers (`DataFileWriter`: Arrow tables in, one file out). The table's options pick
the format and codec a new file gets (`file.format`, `file.format.per.level`, `file.compression`,
`file.compression.per.level`); a file being read is known by its name's extension, as Paimon does, so
a table whose format changed (or that keeps one format per level) reads every file.

Avro follows Paimon's own mapping of types to Avro (its AvroSchemaConverter), so that Paimon reads what we
write and we read what it writes: nullable columns are unions `["null", T]`; TINYINT/SMALLINT/INT are
`int`; DATE is `int`/date; TIME is `int`/time-millis; TIMESTAMP(p) is `long`/timestamp-millis (p <= 3) or
timestamp-micros (p <= 6) and TIMESTAMP_LTZ the local-timestamp-* of the same; DECIMAL is `bytes`/decimal
(big-endian two's complement of the unscaled value); ROW is a record named after its path
(`org.apache.paimon.avro.generated.record_<field>...`); ARRAY is an array; MAP with a string key is an Avro
map and any other MAP an array of `{key, value}` records marked with logicalType `map`.

Cost of Avro: Avro is row-oriented, so fastavro (C) decodes rows into Python dicts. We hand fastavro the
file under a header whose schema has no logical types (values stay ints, longs and bytes, never datetime or
Decimal objects) and a reader schema of only the wanted columns, gather each column from the dicts with
`map(itemgetter)`, let Arrow convert the plain lists, then apply logical types per column with Arrow casts
and numpy (decimals). Measured: 20,000 rows of 20 columns of every type read in ~1.3 s and written in
~1.1 s (~3 µs a value) against ~0.04 s each for parquet, which decodes columns natively. Writing is the
mirror image: columns are lowered to plain values vectorised, `to_pylist` makes the row dicts (maps with
string keys get a Python pass into dicts), fastavro encodes them.

ORC goes through pyarrow.orc. Its writer gives timestamps before 1970 with a fraction of a second negative
nanoseconds, which Paimon's Java ORC reader rejects, so such values are refused (write parquet or avro).

Manifests: Paimon honours `manifest.format` (orc, parquet) for manifests, manifest lists and index
manifests; their names carry no extension, so `read_records` tells the format by the magic bytes.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..types import any_leaf_type, is_variant
from .avro_codecs import ensure_avro_codecs

ensure_avro_codecs()  # snappy and zstd Avro where fastavro runs without its compiled codecs (Spark Connect)

FORMATS = ("parquet", "orc", "avro")
AVRO_ROOT_RECORD = "org.apache.paimon.avro.generated.record"
# Paimon's compression names as each writer library spells them
_CODECS = {
    "parquet": {"zstandard": "zstd", "null": "none", "uncompressed": "none", "deflate": "gzip", "zlib": "gzip"},
    "orc": {"none": "uncompressed", "null": "uncompressed", "zstandard": "zstd", "gzip": "zlib", "deflate": "zlib"},
    "avro": {"zstd": "zstandard", "none": "null", "uncompressed": "null", "deflate": "deflate",
             "snappy": "snappy", "null": "null", "zstandard": "zstandard", "bzip2": "bzip2", "xz": "xz"},
}


def codec_for(fmt: str, compression: str) -> str:
    """``compression`` (a Paimon name, any case) as pyarrow's parquet or ORC writer, or fastavro, names it."""
    name = compression.lower()
    return _CODECS[fmt].get(name, name)


# ---------------------------------------------------------------------------------------------- options

def format_of(file_name: str) -> str:
    """A data file's format, from its name's extension (`data-<uuid>-0.orc`)."""
    ext = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    return ext if ext in FORMATS else "parquet"


def _per_level(text: str | None) -> dict[int, str]:
    """`0:avro,3:parquet` -> {0: 'avro', 3: 'parquet'} (Paimon's map option syntax)."""
    out: dict[int, str] = {}
    for part in (text or "").split(","):
        if part.strip():
            level, _, value = part.partition(":")
            out[int(level.strip())] = value.strip().lower()
    return out


def level_format(options: Any, level: int) -> str:
    """The format a new file of ``level`` gets: `file.format.per.level`, else `file.format`."""
    fmt = _per_level(options.raw.get("file.format.per.level")).get(level) or options.get("file.format")
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"unsupported data file format {fmt!r} (one of {', '.join(FORMATS)})")
    return fmt


def level_compression(options: Any, level: int) -> str:
    """The codec of a new file of ``level``: `file.compression.per.level`, else `file.compression`."""
    return (_per_level(options.raw.get("file.compression.per.level")).get(level)
            or options.get("file.compression")).lower()


def check_format_types(options: Any, fields: Sequence[Any], table: str) -> None:
    """Refuse what Paimon refuses to write (its formats' type converters): Avro data files hold no TIMESTAMP /
    TIMESTAMP_LTZ above precision 6 and no TIME above precision 3, and only parquet holds a VARIANT."""
    formats = {options.get("file.format").lower(), *_per_level(options.raw.get("file.format.per.level")).values()}

    def walk(name: str, t: Any) -> None:
        limit = 6 if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") else 3 if t.root == "TIME" else None
        if "avro" in formats and limit is not None and t.precision > limit:
            raise ValueError(f"column {name!r} of table {table} is {t.sql()}: Paimon's Avro data files hold "
                             f"{t.root} up to precision {limit} only (as Java Paimon refuses); use parquet or orc")
        if t.root == "VARIANT" and formats - {"parquet"}:
            raise ValueError(f"column {name!r} of table {table} is VARIANT, which Paimon writes to parquet files "
                             f"only (not {', '.join(sorted(formats - {'parquet'}))})")
        for child_name, child in _children(t):
            walk(f"{name}.{child_name}", child)
    for f in fields:
        walk(f.name, f.type)


def _children(t: Any) -> list[tuple[str, Any]]:
    if hasattr(t, "fields"):
        return [(f.name, f.type) for f in t.fields]
    if hasattr(t, "key"):
        return [("key", t.key), ("value", t.value)]
    if hasattr(t, "element") and t.element is not None:
        return [("element", t.element)]
    return []


# ---------------------------------------------------------------------------------------------- reading

class DataFileReader:
    """One open data file: ``names`` (its top-level columns) and ``iter_batches`` of some of them."""

    names: list[str]

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


class _ParquetReader(DataFileReader):
    def __init__(self, fh: IO[bytes], types: Mapping[str, Any] | None = None, name: str = "") -> None:
        self._name = name
        self._file = pq.ParquetFile(fh)
        self.names = list(self._file.schema_arrow.names)
        self._types = types or {}

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        for c in columns:
            if getattr(self._types.get(c), "root", None) == "VARIANT" and not is_variant(
                    self._file.schema_arrow.field(c).type):
                raise ValueError(f"VARIANT column {c!r} of data file {self._name} is stored shredded (Paimon's "
                                 "variant.shreddingSchema), which paimon_ds does not read")
        # a timestamp stored as plain INT64 (beside INT96 ones, see DataFileWriter) is read by its precision
        plain = [c for c in columns if c in self._types and _plain_int_columns(self._file.schema_arrow.field(c).type,
                                                                                self._types[c])]
        for batch in self._file.iter_batches(batch_size=batch_rows, columns=list(columns), use_threads=False):
            if plain:
                batch = pa.RecordBatch.from_arrays(
                    [paimon_form(batch.column(i), self._types[c]) if c in plain else batch.column(i)
                     for i, c in enumerate(batch.schema.names)], names=batch.schema.names)
            yield batch


def _plain_int_columns(t: pa.DataType, paimon: Any) -> bool:
    """Whether an Arrow type holds plain integers where the Paimon type has TIMESTAMP or TIME (nested too)."""
    root = getattr(paimon, "root", None)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return pa.types.is_integer(t)
    return any(_plain_int_columns(ct, cp) for ct, cp in _child_pairs(t, paimon))


def _child_pairs(t: pa.DataType, paimon: Any) -> list[tuple[pa.DataType, Any]]:
    if pa.types.is_struct(t) and hasattr(paimon, "fields"):
        return [(t.field(i).type, f.type) for i, f in enumerate(paimon.fields[:t.num_fields])]
    if pa.types.is_map(t) and hasattr(paimon, "key"):
        return [(t.key_type, paimon.key), (t.item_type, paimon.value)]
    if pa.types.is_map(t) and getattr(paimon, "root", None) == "MULTISET":
        return [(t.key_type, paimon.element)]
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and getattr(paimon, "element", None) is not None:
        return [(t.value_type, paimon.element)]
    return []


def paimon_form(arr: pa.Array, paimon: Any) -> pa.Array:
    """Plain integers where the Paimon type has TIMESTAMP / TIME, as Paimon's readers take them: a timestamp's
    INT64 is millis up to precision 3, else micros; a TIME's INT is millis (ORC files hold TIME so)."""
    root = getattr(paimon, "root", None)
    t = arr.type
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and pa.types.is_integer(t):
        unit = "ms" if paimon.precision <= 3 else "us"
        return arr.cast(pa.int64()).cast(pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None))
    if root == "TIME" and pa.types.is_integer(t):
        return arr.cast(pa.int32()).cast(pa.time32("ms"))
    pairs = _child_pairs(t, paimon)
    if not pairs or not any(_plain_int_columns(ct, cp) for ct, cp in pairs):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [paimon_form(arr.field(i), cp) for i, (_, cp) in enumerate(pairs)]
        children += [arr.field(i) for i in range(len(pairs), t.num_fields)]
        return pa.StructArray.from_arrays(children, names=[f.name for f in t], mask=mask)
    arr = arr.take(pa.array(range(len(arr)), pa.int64())) if arr.offset else arr  # children from element 0
    if pa.types.is_map(t):
        items = paimon_form(arr.items, pairs[1][1]) if len(pairs) > 1 else arr.items
        return pa.MapArray.from_arrays(arr.offsets, paimon_form(arr.keys, pairs[0][1]), items, mask=mask)
    return type(arr).from_arrays(arr.offsets, paimon_form(arr.values, pairs[0][1]), mask=mask)


def _no_columns(n: int) -> pa.RecordBatch:
    """A batch of ``n`` rows and no columns (reads that only count rows)."""
    return pa.RecordBatch.from_struct_array(pa.StructArray.from_arrays([], fields=[], mask=pa.nulls(n, pa.bool_())
                                                                       .is_null()))


class _OrcReader(DataFileReader):
    def __init__(self, fh: IO[bytes], types: Mapping[str, Any] | None = None) -> None:
        import pyarrow.orc as po
        self._fh = fh
        self._file = po.ORCFile(fh)
        self.names = list(self._file.schema.names)
        self._types = types or {}

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        from . import orc
        # CHAR columns and zone-less timestamps may read differently from Java: the file's tail tells
        asked = pa.schema([self._file.schema.field(c) for c in columns])
        tail = orc.read_tail(self._fh) if columns and orc.needs_tail(asked) else None
        type_ids = orc.column_kinds(tail, list(columns)) if tail is not None else {}
        with_ts = [c for c in columns if tail is not None and orc.has_kind(tail, type_ids[c], (orc.KIND_TIMESTAMP,))]
        fixed = [c for c in columns if tail is not None and orc.has_kind(tail, type_ids[c],
                                                                            (orc.KIND_TIMESTAMP, orc.KIND_CHAR))]
        for i in range(self._file.nstripes):  # a stripe is ORC's row group: read one at a time
            if not columns:
                stripe_rows = self._file.read_stripe(i, columns=[self.names[0]]).num_rows if self.names else 0
                yield _no_columns(stripe_rows)
                continue
            try:
                stripe = self._file.read_stripe(i, columns=list(columns)).select(list(columns))  # in the order asked
            except pa.ArrowInvalid as e:
                if "out of range for nanosecond" not in str(e):
                    raise
                raise ValueError(f"an ORC timestamp of columns {list(columns)} is outside 1677-09-21..2262-04-11, "
                                 "which pyarrow's ORC reader cannot read (it reads nanoseconds in 64 bits): "
                                 f"{e}") from None
            if fixed:
                zone = tail.stripe_timezone(self._fh, i) if with_ts else ""
                arrays = [orc.correct(stripe.column(c), tail, type_ids[c], zone) if c in fixed
                          else stripe.column(c) for c in columns]
                stripe = pa.RecordBatch.from_arrays(arrays, schema=stripe.schema)
            times = [c for c in columns if c in self._types and _plain_int_columns(stripe.schema.field(c).type,
                                                                                    self._types[c])]
            if times:  # Paimon's ORC files hold TIME as INT
                stripe = pa.RecordBatch.from_arrays(
                    [paimon_form(stripe.column(c), self._types[c]) if c in times else stripe.column(c)
                     for c in columns], names=list(columns))
            chars = [c for c in columns if c in self._types and orc.has_char(self._types[c])]
            if chars:  # Java's ORC reader trims a CHAR column's values whatever ORC type holds them
                stripe = pa.RecordBatch.from_arrays(
                    [orc.trim_chars(stripe.column(c), self._types[c]) if c in chars else stripe.column(c)
                     for c in columns], names=list(columns))
            for offset in range(0, stripe.num_rows, batch_rows):
                yield stripe.slice(offset, batch_rows)


def _strip_logical(schema: Any) -> Any:
    """An Avro schema with every logicalType removed: fastavro then hands over plain ints and bytes."""
    if isinstance(schema, dict):
        out = {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
        if "fields" in out:
            out["fields"] = [{**f, "type": _strip_logical(f["type"])} for f in schema["fields"]]
        return out
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    return schema


def _non_null(schema: Any) -> tuple[Any, bool]:
    """(the non-null branch of a `["null", T]` union, nullable)."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise ValueError(f"unsupported Avro union {schema!r}")
        return branches[0], len(branches) != len(schema)
    return schema, False


def _avro_raw_type(schema: Any) -> pa.DataType:
    """The Arrow type holding fastavro's plain values of ``schema`` (logical types not applied yet)."""
    s, _ = _non_null(schema)
    name = s if isinstance(s, str) else s["type"]
    if name in ("int", "long", "float", "double", "boolean", "string", "bytes"):
        return {"int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
                "boolean": pa.bool_(), "string": pa.string(), "bytes": pa.binary()}[name]
    if name == "record":
        return pa.struct([pa.field(f["name"], _avro_raw_type(f["type"])) for f in s["fields"]])
    if name == "array":
        return pa.list_(_avro_raw_type(s["items"]))
    if name == "map":
        return pa.map_(pa.string(), _avro_raw_type(s["values"]))
    if name == "fixed":
        return pa.binary()
    raise ValueError(f"unsupported Avro type {s!r}")


def _decimal_from_bytes(arr: pa.Array, precision: int, scale: int) -> pa.Array:
    """Big-endian two's complement unscaled values (any length up to 16 bytes) -> decimal128, vectorised."""
    arr = arr.cast(pa.binary())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if n and lengths.max() > 16:
        raise ValueError(f"decimal({precision}, {scale}) value wider than 16 bytes")
    out = np.zeros((n, 16), dtype=np.uint8)
    has = lengths > 0
    negative = np.zeros(n, dtype=bool)
    negative[has] = data[offsets[:-1][has]] >= 0x80
    out[negative] = 0xFF  # sign extension
    rows = np.repeat(np.arange(n), lengths)
    pos = np.arange(offsets[0], offsets[-1])
    out[rows, 16 - lengths[rows] + (pos - offsets[rows])] = data[pos]
    little = np.ascontiguousarray(out[:, ::-1])
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.decimal128(precision, scale), n, [validity, pa.py_buffer(little.tobytes())],
                                 null_count=arr.null_count)


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _avro_finish(arr: pa.Array, schema: Any) -> pa.Array:
    """Apply ``schema``'s logical types to the plain values read (recursively into nested types)."""
    s, _ = _non_null(schema)
    if isinstance(s, str):
        return arr
    logical, kind = s.get("logicalType"), s["type"]
    if kind == "record":
        children = [_avro_finish(arr.field(i), f["type"]) for i, f in enumerate(s["fields"])]
        if all(c is arr.field(i) for i, c in enumerate(children)):
            return arr
        return pa.StructArray.from_arrays(children, names=[f["name"] for f in s["fields"]], mask=_mask(arr))
    if kind == "array":
        values = _avro_finish(arr.values, s["items"])
        if logical == "map":  # Paimon's map with a non-string key: an array of {key, value} records
            return pa.MapArray.from_arrays(arr.offsets, values.field(0), values.field(1), mask=_mask(arr))
        return arr if values is arr.values else pa.ListArray.from_arrays(arr.offsets, values, mask=_mask(arr))
    if kind == "map":
        items = _avro_finish(arr.items, s["values"])
        return arr if items is arr.items else pa.MapArray.from_arrays(arr.offsets, arr.keys, items, mask=_mask(arr))
    if logical == "date":
        return arr.cast(pa.date32())
    if logical == "time-millis":
        return arr.cast(pa.time32("ms"))
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        unit = "ms" if logical.endswith("millis") else "us"
        return arr.cast(pa.timestamp(unit, tz="UTC" if logical.startswith("local") else None))
    if logical == "decimal":
        return _decimal_from_bytes(arr, s["precision"], s.get("scale", 0))
    return arr


def _read_long(fh: IO[bytes]) -> int:
    """One zig-zag varint (Avro's int/long encoding)."""
    shift = value = 0
    while True:
        b = fh.read(1)
        if not b:
            raise EOFError("truncated Avro header")
        value |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            return (value >> 1) ^ -(value & 1)


def _avro_header(fh: IO[bytes]) -> tuple[dict[str, bytes], bytes]:
    """(metadata, sync marker) of an Avro object container file; ``fh`` is left at the first block."""
    if fh.read(4) != b"Obj\x01":
        raise ValueError("not an Avro object container file")
    meta: dict[str, bytes] = {}
    while True:
        count = _read_long(fh)
        if count == 0:
            break
        if count < 0:
            count = -count
            _read_long(fh)  # byte size of the block
        for _ in range(count):
            key = fh.read(_read_long(fh)).decode()
            meta[key] = fh.read(_read_long(fh))
    return meta, fh.read(16)


class _Chain:
    """Reads ``head`` (bytes) then the rest of ``fh``: a file with its header replaced."""

    def __init__(self, head: bytes, fh: IO[bytes]) -> None:
        self._head, self._pos, self._fh = head, 0, fh

    def read(self, n: int = -1) -> bytes:
        if self._pos < len(self._head):
            part = self._head[self._pos:] if n < 0 else self._head[self._pos:self._pos + n]
            self._pos += len(part)
            if n < 0 or len(part) < n:
                part += self._fh.read(-1 if n < 0 else n - len(part))
            return part
        return self._fh.read(n)


class _AvroReader(DataFileReader):
    def __init__(self, fh: IO[bytes]) -> None:
        import json
        self._fh = fh
        meta, self._sync = _avro_header(fh)
        self._blocks_at = fh.tell()
        self._codec = meta.get("avro.codec", b"null").decode()
        self._file_schema = json.loads(meta["avro.schema"])
        self._schema, _ = _non_null(self._file_schema)  # Paimon's top record is a nullable union
        self._fields = {f["name"]: f for f in self._schema["fields"]}
        self.names = list(self._fields)

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        import io

        import fastavro
        fields = [self._fields[c] for c in columns]
        # fastavro applies the writer schema's logical types (datetime, Decimal objects): give it the file
        # under a header whose schema has none, so values stay plain ints, longs and bytes
        plain = _strip_logical(self._file_schema)
        head = io.BytesIO()
        fastavro.writer(head, fastavro.parse_schema(copy.deepcopy(plain)), [], codec=self._codec,
                        sync_marker=self._sync)
        self._fh.seek(self._blocks_at)
        # a reader schema of only the wanted columns: fastavro skips the others without building values
        record, nullable = _non_null(plain)
        reader_schema: Any = {**record, "fields": [f for f in record["fields"] if f["name"] in set(columns)]}
        reader_schema = ["null", reader_schema] if nullable else reader_schema
        records = fastavro.reader(_Chain(head.getvalue(), self._fh), reader_schema=reader_schema)
        raw_types = [_avro_raw_type(f["type"]) for f in fields]
        while True:
            chunk = list(itertools.islice(records, batch_rows))
            if not chunk:
                return
            if not fields:
                yield _no_columns(len(chunk))
                continue
            arrays = [_avro_finish(pa.array(list(map(itemgetter(f["name"]), chunk)), t), f["type"])
                      for f, t in zip(fields, raw_types)]
            yield pa.RecordBatch.from_arrays(arrays, names=list(columns))


def open_data_file(fh: IO[bytes], file_name: str, types: Mapping[str, Any] | None = None) -> DataFileReader:
    """A reader of the open file ``fh``, by the format its name ``file_name`` (or path) says. ``types``: the
    Paimon type of the file's columns by name, where known (ORC reads CHAR values as Java does by them)."""
    fmt = format_of(file_name)
    if fmt == "orc":
        return _OrcReader(fh, types)
    if fmt == "avro":
        return _AvroReader(fh)
    return _ParquetReader(fh, types, file_name)


# ---------------------------------------------------------------------------------------------- writing

def _avro_nullable(schema: Any, nullable: bool) -> Any:
    return ["null", schema] if nullable else schema


def avro_schema(arrow_schema: pa.Schema) -> list[Any]:
    """Paimon's Avro schema of a data file with these columns (Arrow nullability = Paimon's); the row itself
    is nullable, as the row type Paimon converts."""
    return ["null", _avro_type(pa.struct(list(arrow_schema)), AVRO_ROOT_RECORD)]


def _avro_type(t: pa.DataType, row_name: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t):
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        return {"type": "long", "logicalType": f"{'local-' if t.tz else ''}timestamp-{unit}"}
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_struct(t):
        return {"type": "record", "name": row_name, "fields": [
            {"name": f.name, "type": _avro_nullable(_avro_type(f.type, f"{row_name}_{f.name}"), f.nullable),
             **({"default": None} if f.nullable else {})} for f in t]}
    if pa.types.is_map(t):
        value = _avro_nullable(_avro_type(t.item_type, f"{row_name}_value" if not _string_key(t) else row_name),
                               t.item_field.nullable)
        if _string_key(t):
            return {"type": "map", "values": value}
        key = _avro_nullable(_avro_type(t.key_type, f"{row_name}_key"), t.key_field.nullable)
        entry = {"type": "record", "name": row_name, "fields": [
            {"name": "key", "type": key}, {"name": "value", "type": value, **(
                {"default": None} if t.item_field.nullable else {})}]}
        return {"type": "array", "items": entry, "logicalType": "map"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _avro_nullable(_avro_type(t.value_type, row_name), t.value_field.nullable)}
    raise ValueError(f"Avro data files cannot hold {t}")


def _string_key(t: pa.MapType) -> bool:
    return pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)


def _decimal_to_bytes(arr: pa.Array) -> pa.Array:
    """decimal128 -> minimal big-endian two's complement bytes of the unscaled value, vectorised."""
    arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale)) if arr.type.bit_width != 128 else arr
    n = len(arr)
    little = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=n * 16, offset=arr.offset * 16).reshape(n, 16)
    big = little[:, ::-1]
    sign = np.where(big[:, 0] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it only repeats the sign and the next byte carries the sign bit
    redundant = (big[:, :15] == sign[:, None]) & ((big[:, 1:] & 0x80) == (sign[:, None] & 0x80))
    lead = np.cumprod(redundant, axis=1).sum(axis=1)
    keep = np.arange(16)[None, :] >= lead[:, None]
    lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), 16 - lead, 0)
    keep &= lengths[:, None] > 0
    data = big[keep].tobytes()
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)],
                                 null_count=arr.null_count)


def _avro_lower(arr: pa.Array) -> pa.Array:
    """Arrow values -> the plain values Paimon's Avro holds (ints, longs, bytes), recursively; maps become
    lists of {key, value} (see `_avro_records`)."""
    t = arr.type
    if pa.types.is_date32(t):
        return arr.cast(pa.int32())
    if pa.types.is_time(t):
        return arr.cast(pa.time32("ms")).cast(pa.int32())
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"
        return arr.cast(pa.timestamp(unit, tz=t.tz)).cast(pa.int64())
    if pa.types.is_decimal(t):
        return _decimal_to_bytes(arr)
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_avro_lower(c) for c in arr.flatten()], names=[f.name for f in t],
                                          mask=_mask(arr))
    if pa.types.is_map(t):
        entries = pa.StructArray.from_arrays([_avro_lower(arr.keys), _avro_lower(arr.items)], names=["key", "value"])
        return pa.ListArray.from_arrays(_offsets(arr), entries, mask=_mask(arr))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.ListArray.from_arrays(_offsets(arr), _avro_lower(arr.values), mask=_mask(arr))
    return arr


def _offsets(arr: pa.Array) -> pa.Array:
    """The offsets of a list/map array, rebased so they index its ``values`` as sliced by Arrow."""
    offsets = arr.offsets
    return offsets if offsets[0].as_py() == 0 else pa.compute.subtract(offsets, offsets[0])


def _has_string_map(schema: Any) -> bool:
    s, _ = _non_null(schema)
    if isinstance(s, str):
        return False
    if s["type"] == "map":
        return True
    if s["type"] == "record":
        return any(_has_string_map(f["type"]) for f in s["fields"])
    if s["type"] == "array":
        return _has_string_map(s["items"])
    return False


def _fix_maps(value: Any, schema: Any) -> Any:
    """Lists of {key, value} -> dicts where ``schema`` has an Avro (string-key) map."""
    if value is None:
        return None
    s, _ = _non_null(schema)
    if isinstance(s, str):
        return value
    if s["type"] == "map":
        return {e["key"]: _fix_maps(e["value"], s["values"]) for e in value}
    if s["type"] == "record":
        return {f["name"]: _fix_maps(value[f["name"]], f["type"]) for f in s["fields"]}
    if s["type"] == "array":
        return [_fix_maps(v, s["items"]) for v in value]
    return value


def _avro_records(data: pa.Table, schema: dict[str, Any]) -> list[dict[str, Any]]:
    lowered = pa.Table.from_arrays([_avro_lower(c.combine_chunks()) for c in data.columns], names=data.column_names)
    records = lowered.to_pylist()
    for f in schema["fields"]:
        if _has_string_map(f["type"]):
            name = f["name"]
            for r in records:
                r[name] = _fix_maps(r[name], f["type"])
    return records


def _has_nanos(t: pa.DataType) -> bool:
    """Whether a (possibly nested) type holds nanosecond timestamps (Paimon's TIMESTAMP(7..9))."""
    return any_leaf_type(t, lambda leaf: pa.types.is_timestamp(leaf) and leaf.unit == "ns")


def _leaf_types(t: pa.DataType, leaf: Any) -> pa.DataType:
    """``t`` with each leaf type replaced by ``leaf(type)``, nested types kept."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_leaf_types(f.type, leaf)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_leaf_types(t.key_type, leaf)),
                       t.item_field.with_type(_leaf_types(t.item_type, leaf)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_leaf_types(t.value_type, leaf)))
    return leaf(t)


def _leaf_cast(col: pa.ChunkedArray | pa.Array, target: pa.DataType, cast: Any) -> pa.ChunkedArray | pa.Array:
    """``col`` in ``target`` (from ``_leaf_types``): leaves whose type changes go through ``cast(array, type)``."""
    if col.type == target:
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_leaf_cast(c, target, cast) for c in col.chunks], target)
    t = col.type
    mask = col.is_null() if col.null_count else None
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_leaf_cast(col.field(i), target.field(i).type, cast)
                                           for i in range(t.num_fields)], fields=list(target), mask=mask)
    if pa.types.is_map(t) or pa.types.is_list(t):
        col = col.take(pa.array(range(len(col)), pa.int64())) if col.offset else col  # children from element 0
        if pa.types.is_map(t):
            return pa.MapArray.from_arrays(col.offsets, _leaf_cast(col.keys, target.key_type, cast),
                                           _leaf_cast(col.items, target.item_type, cast), type=target, mask=mask)
        return pa.ListArray.from_arrays(col.offsets, _leaf_cast(col.values, target.value_type, cast), type=target,
                                        mask=mask)
    return cast(col, target)


def _int64_timestamp(t: pa.DataType) -> pa.DataType:
    """A timestamp of a unit coarser than nanoseconds as int64 (see DataFileWriter: INT96 files)."""
    return pa.int64() if pa.types.is_timestamp(t) and t.unit != "ns" else t


def _timestamp_to_int64(col: pa.Array, target: pa.DataType) -> pa.Array:
    """Millis (units s, ms) or micros, as Paimon's readers take an unannotated INT64 timestamp."""
    t = col.type
    return col.cast(pa.timestamp("ms" if t.unit in ("s", "ms") else "us", tz=t.tz)).cast(pa.int64())


def _time_as_int(t: pa.DataType) -> pa.DataType:
    """TIME as Paimon's ORC files hold it: an INT of milliseconds (ORC has no time type)."""
    return pa.int32() if pa.types.is_time(t) else t


def _pre_epoch_fraction(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a (possibly nested) column holds a timestamp before the epoch with a sub-second part."""
    t = col.type
    if isinstance(col, pa.ChunkedArray):
        return any(_pre_epoch_fraction(c) for c in col.chunks)
    if pa.types.is_timestamp(t):
        values = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        return bool(((values < 0) & (values % per_second != 0)).any())
    if pa.types.is_struct(t):
        return any(_pre_epoch_fraction(c) for c in col.flatten())
    if pa.types.is_map(t):
        return _pre_epoch_fraction(col.keys) or _pre_epoch_fraction(col.items)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _pre_epoch_fraction(col.values)
    return False


class DataFileWriter:
    """Writes Arrow tables into one data file of ``fmt`` on the open output ``sink``."""

    def __init__(self, sink: IO[bytes], schema: pa.Schema, fmt: str, compression: str, zstd_level: int = 1,
                 use_dictionary: bool | list[str] = True) -> None:
        self.format = fmt
        self._sink = sink
        self._schema = schema
        self._written = 0
        compression = compression.lower()
        if fmt == "parquet":
            compression = codec_for("parquet", compression)
            # Paimon stores TIMESTAMP(7..9) as INT96 (Java Paimon 0.9 reads no other form of them) and lower
            # precisions as INT64. pyarrow can only choose INT96 for every timestamp column of a file, so a file with
            # TIMESTAMP(7..9) keeps its other timestamps as plain INT64 of millis (precision <= 3) or micros, which
            # Paimon's readers take by the column's precision (Java 0.9 reads INT96 for no other precision)
            self._int96 = _has_nanos(pa.struct(list(schema)))
            file_schema = pa.schema([f.with_type(_leaf_types(f.type, _int64_timestamp)) for f in schema]) \
                if self._int96 else schema
            self._file_schema = file_schema
            self._writer: Any = pq.ParquetWriter(
                sink, file_schema, compression=compression,
                compression_level=zstd_level if compression == "zstd" else None,
                store_decimal_as_integer=True, write_statistics=True, use_dictionary=use_dictionary,
                use_deprecated_int96_timestamps=self._int96)
        elif fmt == "orc":
            import pyarrow.orc as po
            self._writer = po.ORCWriter(sink, compression=codec_for("orc", compression))
        elif fmt == "avro":
            import fastavro
            from fastavro.write import Writer
            self._record = avro_schema(schema)[1]
            self._avro = fastavro.parse_schema(copy.deepcopy(avro_schema(schema)))
            # Paimon's Avro: zstd, else its `codec` option's default (snappy)
            codec = codec_for("avro", compression) if compression in _CODECS["avro"] else "snappy"
            self._writer = Writer(sink, self._avro, codec=codec,
                                  compression_level=zstd_level if codec == "zstandard" else None)
        else:
            raise ValueError(f"unsupported data file format {fmt!r}")

    def write(self, data: pa.Table) -> None:
        """Write ``data`` (one row group / stripe where the format has them)."""
        self._written += data.nbytes
        if self.format == "parquet":
            if self._int96:
                data = pa.Table.from_arrays([_leaf_cast(c, f.type, _timestamp_to_int64)
                                             for c, f in zip(data.columns, self._file_schema)],
                                            schema=self._file_schema)
            self._writer.write_table(data, row_group_size=max(1, data.num_rows))
        elif self.format == "orc":
            data = data.cast(self._schema) if data.schema != self._schema else data
            for name, col in zip(data.column_names, data.columns):
                if _pre_epoch_fraction(col):
                    raise ValueError(
                        f"column {name!r} has timestamps before 1970 with a fraction of a second: pyarrow's ORC writer "
                        "encodes those with negative nanoseconds, which Paimon's (Java ORC) reader rejects; write this "
                        "table as parquet or avro")
            if any(c.offset for col in data.columns for c in col.chunks):
                # pyarrow's ORC writer loses the offset of sliced struct columns: write a compact copy
                data = data.take(np.arange(data.num_rows))
            orc_schema = pa.schema([f.with_type(_leaf_types(f.type, _time_as_int)) for f in data.schema])
            if orc_schema != data.schema:
                data = pa.Table.from_arrays([_leaf_cast(c, f.type, lambda a, t: a.cast(t))
                                             for c, f in zip(data.columns, orc_schema)], schema=orc_schema)
            self._writer.write(data)
        else:
            for record in _avro_records(data, self._record):
                # (name, value): fastavro's notation picking the record branch of the nullable top-level union
                self._writer.write((AVRO_ROOT_RECORD, record))

    @property
    def size(self) -> int:
        """Bytes in the file so far (ORC buffers whole stripes: until one is out, an estimate)."""
        told = self._sink.tell()
        return told if self.format != "orc" or told > 0 else self._written // 4

    def close(self) -> None:
        if self.format == "avro":
            self._writer.flush()
        else:
            self._writer.close()


# ---------------------------------------------------------------------------------------------- manifests

def sniff_format(data: bytes) -> str:
    """The format of a file by its magic bytes (manifests have no extension: `manifest.format`)."""
    if data[:4] == b"Obj\x01":
        return "avro"
    if data[:4] == b"PAR1":
        return "parquet"
    if data[:3] == b"ORC":
        return "orc"
    raise ValueError("not an Avro, parquet or ORC file")


def _utc(t: pa.DataType) -> pa.DataType:
    """``t`` with every zone-less timestamp labelled UTC (as fastavro returns Avro's timestamp-millis)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz=t.tz or "UTC")
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_utc(t.item_type)))
    return t


def read_records(data: bytes) -> list[dict[str, Any]]:
    """The rows of a whole (small) file of any of the three formats as dicts, the way fastavro gives Avro
    rows (nested rows as dicts, arrays as lists, timestamps as UTC datetimes): Paimon 0.9 writes manifests,
    manifest lists and index manifests in `manifest.format`, and the readers of those take dicts."""
    import io

    fmt = sniff_format(data)
    if fmt == "avro":
        import fastavro
        return list(fastavro.reader(io.BytesIO(data)))
    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(data))
    else:
        import pyarrow.orc as po
        table = po.ORCFile(io.BytesIO(data)).read()
    return table.cast(pa.schema([f.with_type(_utc(f.type)) for f in table.schema])).to_pylist()
