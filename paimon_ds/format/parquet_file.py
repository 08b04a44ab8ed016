"""Parquet data files: the reader and the writer, through pyarrow.parquet.

Timestamps as Paimon stores them: TIMESTAMP(7..9) as INT96 (Java Paimon 0.9 reads no other form of them) and
lower precisions as INT64 timestamps. pyarrow can only choose INT96 for every timestamp column of a file, so a
file with TIMESTAMP(7..9) keeps its other timestamps as plain INT64 of millis (precision <= 3) or micros,
which Paimon's readers take by the column's precision, and so does `ParquetFileReader` (given the types).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..schema.types import SchemaError, any_leaf_type, is_variant
from .arrow_columns import cast_leaves, holds_plain_ints, map_leaf_types, paimon_form


class ParquetFileReader:
    """One open parquet file: ``names`` (its top-level columns) and ``iter_batches`` of some of them.
    ``types``: the Paimon type of the file's columns by name, where known; ``name``: the file's, for errors."""

    def __init__(self, fh: IO[bytes], types: Mapping[str, Any] | None = None, name: str = "") -> None:
        self._name = name
        # pre_buffer: a row group's column chunks are fetched in a few coalesced reads (one range request each
        # on an object store), not one read per page
        self._file = pq.ParquetFile(fh, pre_buffer=True)
        self.names = list(self._file.schema_arrow.names)
        self._types = types or {}

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        for c in columns:
            if getattr(self._types.get(c), "root", None) == "VARIANT" and not is_variant(
                    self._file.schema_arrow.field(c).type):
                raise SchemaError(f"VARIANT column {c!r} of data file {self._name} is stored shredded (Paimon's "
                                 "variant.shreddingSchema), which paimon_ds does not read")
        # a timestamp stored as plain INT64 (beside INT96 ones, see ParquetFileWriter) is read by its precision
        plain = [c for c in columns if c in self._types and holds_plain_ints(self._file.schema_arrow.field(c).type,
                                                                              self._types[c])]
        # use_threads: the columns decode in parallel on pyarrow's pool (a read of one large file uses every core)
        for batch in self._file.iter_batches(batch_size=batch_rows, columns=list(columns), use_threads=True):
            if plain:
                batch = pa.RecordBatch.from_arrays(
                    [paimon_form(batch.column(i), self._types[c]) if c in plain else batch.column(i)
                     for i, c in enumerate(batch.schema.names)], names=batch.schema.names)
            yield batch


def has_nanos(t: pa.DataType) -> bool:
    """Whether a (possibly nested) type holds nanosecond timestamps (Paimon's TIMESTAMP(7..9))."""
    return any_leaf_type(t, lambda leaf: pa.types.is_timestamp(leaf) and leaf.unit == "ns")


def _int64_timestamp(t: pa.DataType) -> pa.DataType:
    """A timestamp of a unit coarser than nanoseconds as int64 (a file with INT96 timestamps, see the docstring)."""
    return pa.int64() if pa.types.is_timestamp(t) and t.unit != "ns" else t


def _timestamp_to_int64(col: pa.Array, target: pa.DataType) -> pa.Array:
    """Millis (units s, ms) or micros, as Paimon's readers take an unannotated INT64 timestamp."""
    t = col.type
    return col.cast(pa.timestamp("ms" if t.unit in ("s", "ms") else "us", tz=t.tz)).cast(pa.int64())


# pyarrow's dictionary_pagesize_limit: a column chunk whose dictionary outgrows it falls back to plain encoding
DICTIONARY_PAGE_LIMIT = 1024 * 1024
DICTIONARY_SAMPLE_ROWS = 8192


def dictionary_columns(data: pa.Table) -> bool | list[str]:
    """The columns worth dictionary encoding, judged on ``data`` (a file's first row group).

    Dictionary encoding is parquet's default, and its writers fall back to plain encoding once a column
    chunk's dictionary outgrows the page limit; building the dictionary until then is most of the cost of
    encoding a column of unique keys or sequence numbers. So a column whose sample of rows predicts more
    distinct values than the limit holds is written plain from the start. The file is the same to every
    reader, only cheaper to write. Nested columns keep the default (the choice applies to leaf paths).
    """
    if any(pa.types.is_nested(f.type) for f in data.schema):
        return True
    sample = data.slice(0, DICTIONARY_SAMPLE_ROWS)
    rows = sample.num_rows
    if rows < 64:
        return True
    chosen = []
    for name, col in zip(sample.schema.names, sample.columns):
        t = col.type
        if not (pa.types.is_primitive(t) or pa.types.is_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_string(t) or pa.types.is_large_binary(t) or pa.types.is_decimal(t)) \
                or pa.types.is_null(t):
            chosen.append(name)  # (dictionary-typed and other columns): the default
            continue
        distinct = pc.count_distinct(col, mode="all").as_py()
        value_bytes = max(1.0, col.nbytes / rows)
        if estimated_domain(distinct, rows) * value_bytes <= DICTIONARY_PAGE_LIMIT:
            chosen.append(name)
    return chosen


def estimated_domain(distinct: int, rows: int) -> float:
    """How many distinct values a column has, if ``rows`` uniform draws from it gave ``distinct`` ones:
    D with D * (1 - exp(-rows / D)) = distinct (infinite when every drawn value was new)."""
    if distinct >= rows:
        return math.inf
    lo, hi = float(distinct), float(distinct)
    while hi * -math.expm1(-rows / hi) < distinct:
        hi *= 2
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * -math.expm1(-rows / mid) < distinct else (lo, mid)
    return hi


class ParquetFileWriter:
    """Writes Arrow tables of ``schema`` into one parquet file on ``sink``, one row group a table. ``codec``: as
    pyarrow names it (see data_file.codec_for); ``zstd_level`` applies to zstd; ``use_dictionary``: as pyarrow
    takes it, or None to choose the columns from the first row group (see dictionary_columns)."""

    def __init__(self, sink: IO[bytes], schema: pa.Schema, codec: str, zstd_level: int,
                 use_dictionary: bool | list[str] | None = None) -> None:
        self._sink = sink
        self._codec = codec
        self._zstd_level = zstd_level
        self._use_dictionary = use_dictionary
        self._int96 = has_nanos(pa.struct(list(schema)))
        self._file_schema = pa.schema([f.with_type(map_leaf_types(f.type, _int64_timestamp)) for f in schema]) \
            if self._int96 else schema
        self._writer: pq.ParquetWriter | None = None  # opened by the first row group (its dictionary choice)

    def _open(self, first: pa.Table | None) -> pq.ParquetWriter:
        use_dictionary = self._use_dictionary
        if use_dictionary is None:
            use_dictionary = dictionary_columns(first) if first is not None else True
        return pq.ParquetWriter(
            self._sink, self._file_schema, compression=self._codec,
            compression_level=self._zstd_level if self._codec == "zstd" else None,
            store_decimal_as_integer=True, write_statistics=True, use_dictionary=use_dictionary,
            use_deprecated_int96_timestamps=self._int96,
            # column and offset indexes (min/max per page, as parquet-mr writes them): readers such as Spark's
            # skip the pages a filter rules out, not only row groups
            write_page_index=True)

    def write(self, data: pa.Table) -> None:
        if self._int96:
            data = pa.Table.from_arrays([cast_leaves(c, f.type, _timestamp_to_int64)
                                         for c, f in zip(data.columns, self._file_schema)], schema=self._file_schema)
        if self._writer is None:
            self._writer = self._open(data)
        self._writer.write_table(data, row_group_size=max(1, data.num_rows))

    def close(self) -> None:
        if self._writer is None:
            self._writer = self._open(None)
        self._writer.close()
