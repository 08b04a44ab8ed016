"""ORC data files: the reader and the writer, through pyarrow.orc.

Reading takes the corrections of `format.orc` (CHAR columns trimmed, timestamps of a writer zone that is not
UTC as Java reads them), which need the file's tail, and turns Paimon's TIME (an ORC INT of milliseconds)
back into a time. pyarrow's writer gives timestamps before 1970 with a fraction of a second negative
nanoseconds, which Paimon's Java ORC reader rejects, so such values are refused (write parquet or avro).

pyarrow.orc is imported where an ORC file is opened: it is an optional part of pyarrow (builds without ORC
still read and write parquet and Avro tables).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import numpy as np
import pyarrow as pa

from . import orc
from .arrow_columns import Column, cast_leaves, empty_batch, holds_plain_ints, map_leaf_types, paimon_form


class OrcFileReader:
    """One open ORC file: ``names`` (its top-level columns) and ``iter_batches`` of some of them, a stripe at a
    time. ``types``: the Paimon type of the file's columns by name, where known (CHAR and TIME need them)."""

    def __init__(self, fh: IO[bytes], types: Mapping[str, Any] | None = None) -> None:
        import pyarrow.orc as po  # optional part of pyarrow (see the module docstring)
        self._fh = fh
        self._file = po.ORCFile(fh)
        self.names = list(self._file.schema.names)
        self._types = types or {}

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
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
                yield empty_batch(stripe_rows)
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
            times = [c for c in columns if c in self._types and holds_plain_ints(stripe.schema.field(c).type,
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


def _time_as_int(t: pa.DataType) -> pa.DataType:
    """TIME as Paimon's ORC files hold it: an INT of milliseconds (ORC has no time type)."""
    return pa.int32() if pa.types.is_time(t) else t


def has_pre_epoch_fraction(col: Column) -> bool:
    """Whether a (possibly nested) column holds a timestamp before the epoch with a sub-second part."""
    t = col.type
    if isinstance(col, pa.ChunkedArray):
        return any(has_pre_epoch_fraction(c) for c in col.chunks)
    if pa.types.is_timestamp(t):
        values = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        return bool(((values < 0) & (values % per_second != 0)).any())
    if pa.types.is_struct(t):
        return any(has_pre_epoch_fraction(c) for c in col.flatten())
    if pa.types.is_map(t):
        return has_pre_epoch_fraction(col.keys) or has_pre_epoch_fraction(col.items)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_pre_epoch_fraction(col.values)
    return False


class OrcFileWriter:
    """Writes Arrow tables of ``schema`` into one ORC file on ``sink``. ``codec``: as pyarrow names it (see
    data_file.codec_for)."""

    def __init__(self, sink: IO[bytes], schema: pa.Schema, codec: str) -> None:
        import pyarrow.orc as po  # optional part of pyarrow (see the module docstring)
        self._schema = schema
        self._writer = po.ORCWriter(sink, compression=codec)

    def write(self, data: pa.Table) -> None:
        data = data.cast(self._schema) if data.schema != self._schema else data
        for name, col in zip(data.column_names, data.columns):
            if has_pre_epoch_fraction(col):
                raise ValueError(
                    f"column {name!r} has timestamps before 1970 with a fraction of a second: pyarrow's ORC writer "
                    "encodes those with negative nanoseconds, which Paimon's (Java ORC) reader rejects; write this "
                    "table as parquet or avro")
        if any(c.offset for col in data.columns for c in col.chunks):
            # pyarrow's ORC writer loses the offset of sliced struct columns: write a compact copy
            data = data.take(np.arange(data.num_rows))
        orc_schema = pa.schema([f.with_type(map_leaf_types(f.type, _time_as_int)) for f in data.schema])
        if orc_schema != data.schema:
            data = pa.Table.from_arrays([cast_leaves(c, f.type, lambda a, t: a.cast(t))
                                         for c, f in zip(data.columns, orc_schema)], schema=orc_schema)
        self._writer.write(data)

    def close(self) -> None:
        self._writer.close()
