"""Data files in the three formats Paimon writes, parquet, ORC and Avro: which format and codec a file gets,
and the one entry point to read or write any of them.

The table's options pick the format and codec a new file gets (`file.format`, `file.format.per.level`,
`file.compression`, `file.compression.per.level`: `level_format`, `level_compression`, `codec_for`), and
`check_format_types` refuses the types a format cannot hold. A file being read is known by its name's
extension, as Paimon does, so a table whose format changed (or that keeps one format per level) reads every
file: `open_data_file` gives a `DataFileReader` (the file's column names, then Arrow batches of the columns
asked for) and `DataFileWriter` takes Arrow tables into one file. The formats themselves live in
parquet_file, orc_file and avro_file (with avro_types, Paimon's Avro schema).

Manifests: Paimon honours `manifest.format` (orc, parquet) for manifests, manifest lists and index
manifests; their names carry no extension, so `read_records` tells the format by the magic bytes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any, Protocol

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import CorruptFileError, decoding_problem, is_decoding_error
from .avro_file import AvroFileReader, AvroFileWriter
from .orc_file import OrcFileReader, OrcFileWriter
from .parquet_file import ParquetFileReader, ParquetFileWriter

FORMATS = ("parquet", "orc", "avro")
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


def level_format(options: Any, level: int) -> str:
    """The format a new file of ``level`` gets: `file.format.per.level`, else `file.format`."""
    fmt = (options.get("file.format.per.level") or {}).get(level) or options.get("file.format")
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"unsupported data file format {fmt!r} (one of {', '.join(FORMATS)})")
    return fmt


def level_compression(options: Any, level: int) -> str:
    """The codec of a new file of ``level``: `file.compression.per.level`, else `file.compression`."""
    return ((options.get("file.compression.per.level") or {}).get(level)
            or options.get("file.compression")).lower()


def check_format_types(options: Any, fields: Sequence[Any], table: str) -> None:
    """Refuse what Paimon refuses to write (its formats' type converters): Avro data files hold no TIMESTAMP /
    TIMESTAMP_LTZ above precision 6 and no TIME above precision 3, and only parquet holds a VARIANT."""
    formats = {options.get("file.format").lower(), *(options.get("file.format.per.level") or {}).values()}

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
    """(name, type) of a Paimon type's children: a row's fields, a map's key and value, an array's element."""
    if hasattr(t, "fields"):
        return [(f.name, f.type) for f in t.fields]
    if hasattr(t, "key"):
        return [("key", t.key), ("value", t.value)]
    if hasattr(t, "element") and t.element is not None:
        return [("element", t.element)]
    return []


# ---------------------------------------------------------------------------------------------- reading

class DataFileReader(Protocol):
    """One open data file: ``names`` (its top-level columns) and ``iter_batches`` of some of them."""

    names: list[str]

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Arrow batches of at most ``batch_rows`` rows of ``columns``, in that order."""
        ...


def open_data_file(fh: IO[bytes], file_name: str, types: Mapping[str, Any] | None = None) -> DataFileReader:
    """A reader of the open file ``fh``, by the format its name ``file_name`` (its path) says. ``types``: the
    Paimon type of the file's columns by name, where known (ORC reads CHAR values as Java does by them). A file
    that cannot be decoded (empty, truncated, not of its format), when opened or later, is a CorruptFileError
    naming ``file_name``."""
    fmt = format_of(file_name)
    with _decoding(fh, file_name, fmt):
        if fmt == "orc":
            reader: DataFileReader = OrcFileReader(fh, types)
        elif fmt == "avro":
            reader = AvroFileReader(fh)
        else:
            reader = ParquetFileReader(fh, types, file_name)
    return _CheckedReader(reader, fh, file_name, fmt)


@contextmanager
def _decoding(fh: IO[bytes], path: str, fmt: str) -> Iterator[None]:
    try:
        yield
    except Exception as e:
        if not is_decoding_error(e):
            raise
        raise CorruptFileError(path, f"{fmt} data file", decoding_problem(e, _size_of(fh))) from e


def _size_of(fh: IO[bytes]) -> int | None:
    """The open file's size in bytes, None where it cannot be told (only asked once a read failed)."""
    size = getattr(fh, "size", None)
    if isinstance(size, int):
        return size
    try:
        return fh.seek(0, 2)
    except Exception:  # noqa: BLE001 - only decorates an error message
        return None


class _CheckedReader:
    """A DataFileReader whose batches' decoding errors (a block or page past a damaged spot) name the file."""

    def __init__(self, reader: DataFileReader, fh: IO[bytes], path: str, fmt: str) -> None:
        self._reader, self._fh, self._path, self._fmt = reader, fh, path, fmt
        self.names = reader.names

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        batches = self._reader.iter_batches(columns, batch_rows)
        while True:
            with _decoding(self._fh, self._path, self._fmt):
                batch = next(batches, None)
            if batch is None:
                return
            yield batch


# ---------------------------------------------------------------------------------------------- writing

class DataFileWriter:
    """Writes Arrow tables into one data file of ``fmt`` on the open output ``sink``."""

    def __init__(self, sink: IO[bytes], schema: pa.Schema, fmt: str, compression: str, zstd_level: int = 1) -> None:
        self.format = fmt
        self._sink = sink
        self._written = 0
        compression = compression.lower()
        self._writer: ParquetFileWriter | OrcFileWriter | AvroFileWriter
        if fmt == "parquet":
            # dictionary encoding per column, chosen from the first row group (parquet_file.dictionary_columns)
            self._writer = ParquetFileWriter(sink, schema, codec_for("parquet", compression), zstd_level)
        elif fmt == "orc":
            self._writer = OrcFileWriter(sink, schema, codec_for("orc", compression))
        elif fmt == "avro":
            # Paimon's Avro: zstd, else its `codec` option's default (snappy)
            codec = codec_for("avro", compression) if compression in _CODECS["avro"] else "snappy"
            self._writer = AvroFileWriter(sink, schema, codec, zstd_level)
        else:
            raise ValueError(f"unsupported data file format {fmt!r}")

    def write(self, data: pa.Table) -> None:
        """Write ``data`` (one row group / stripe where the format has them)."""
        self._written += data.nbytes
        self._writer.write(data)

    @property
    def size(self) -> int:
        """Bytes in the file so far (ORC buffers whole stripes: until one is out, an estimate)."""
        told = self._sink.tell()
        return told if self.format != "orc" or told > 0 else self._written // 4

    def close(self) -> None:
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
    fmt = sniff_format(data)
    if fmt == "avro":
        return list(fastavro.reader(io.BytesIO(data)))
    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(data))
    else:
        import pyarrow.orc as po  # optional part of pyarrow (see orc_file)
        table = po.ORCFile(io.BytesIO(data)).read()
    return table.cast(pa.schema([f.with_type(_utc(f.type)) for f in table.schema])).to_pylist()
