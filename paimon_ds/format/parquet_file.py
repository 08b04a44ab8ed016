"""Parquet data files: the reader and the writer, through pyarrow.parquet.

Timestamps as Paimon stores them: TIMESTAMP(7..9) as INT96 (Java Paimon 0.9 reads no other form of them) and
lower precisions as INT64 timestamps. pyarrow can only choose INT96 for every timestamp column of a file, so a
file with TIMESTAMP(7..9) keeps its other timestamps as plain INT64 of millis (precision <= 3) or micros,
which Paimon's readers take by the column's precision, and so does `ParquetFileReader` (given the types).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..types import any_leaf_type, is_variant
from .arrow_columns import cast_leaves, holds_plain_ints, map_leaf_types, paimon_form


class ParquetFileReader:
    """One open parquet file: ``names`` (its top-level columns) and ``iter_batches`` of some of them.
    ``types``: the Paimon type of the file's columns by name, where known; ``name``: the file's, for errors."""

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
        # a timestamp stored as plain INT64 (beside INT96 ones, see ParquetFileWriter) is read by its precision
        plain = [c for c in columns if c in self._types and holds_plain_ints(self._file.schema_arrow.field(c).type,
                                                                              self._types[c])]
        for batch in self._file.iter_batches(batch_size=batch_rows, columns=list(columns), use_threads=False):
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


class ParquetFileWriter:
    """Writes Arrow tables of ``schema`` into one parquet file on ``sink``, one row group a table. ``codec``: as
    pyarrow names it (see data_file.codec_for); ``zstd_level`` applies to zstd."""

    def __init__(self, sink: IO[bytes], schema: pa.Schema, codec: str, zstd_level: int,
                 use_dictionary: bool | list[str]) -> None:
        self._int96 = has_nanos(pa.struct(list(schema)))
        self._file_schema = pa.schema([f.with_type(map_leaf_types(f.type, _int64_timestamp)) for f in schema]) \
            if self._int96 else schema
        self._writer = pq.ParquetWriter(
            sink, self._file_schema, compression=codec, compression_level=zstd_level if codec == "zstd" else None,
            store_decimal_as_integer=True, write_statistics=True, use_dictionary=use_dictionary,
            use_deprecated_int96_timestamps=self._int96,
            # column and offset indexes (min/max per page, as parquet-mr writes them): readers such as Spark's
            # skip the pages a filter rules out, not only row groups
            write_page_index=True)

    def write(self, data: pa.Table) -> None:
        if self._int96:
            data = pa.Table.from_arrays([cast_leaves(c, f.type, _timestamp_to_int64)
                                         for c, f in zip(data.columns, self._file_schema)], schema=self._file_schema)
        self._writer.write_table(data, row_group_size=max(1, data.num_rows))

    def close(self) -> None:
        self._writer.close()
