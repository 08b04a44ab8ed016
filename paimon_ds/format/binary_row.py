"""Paimon's BinaryRow, encoded column-wise for a whole batch at once.

Layout of one row (all little-endian, as Java's MemorySegment writes it):
  header: ceil((arity + 8) / 64) 8-byte words; byte 0 is the row kind, bit i+8 flags field i null.
  fixed part: one 8-byte slot per field. Numbers sit in the slot; strings/bytes of at most 7 bytes
    sit inline with 0x80|len in the slot's last byte; longer ones, non-compact decimals (precision
    > 18) and non-compact timestamps (precision > 3) go to the variable part and the slot holds
    ``offset << 32 | length`` (for timestamps: ``offset << 32 | nanoOfMillisecond``).
  variable part: each value padded to a multiple of 8 bytes.
Manifests store a row as a 4-byte big-endian arity followed by those bytes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import DataType, SchemaError, canonical_nan_bits, to_arrow_type

_UNIT_PER_MILLI = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
# Decimals reach 38 digits; the default context (28 digits) would round them.
_DECIMAL_CTX = decimal.Context(prec=40)


def header_bytes(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def is_compact_decimal(t: DataType) -> bool:
    return t.precision <= 18


def is_compact_timestamp(t: DataType) -> bool:
    return t.precision <= 3


def _var_kind(t: DataType) -> str | None:
    r = t.root
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return "bytes"
    if r == "DECIMAL" and not is_compact_decimal(t):
        return "decimal"
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and not is_compact_timestamp(t):
        return "timestamp"
    if r in ("ARRAY", "MAP", "MULTISET", "ROW", "VARIANT"):
        raise SchemaError(f"{t.sql()} cannot be part of a partition, key or bucket key")
    return None


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for every (s, l), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths) + np.repeat(starts, lengths)


def _binary_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start offsets, lengths) of a string/binary array (nulls have length 0)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_binary())
    elif not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    arr = pc.if_else(arr.is_null(), pa.scalar(b"", pa.large_binary()), arr)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].copy()
    lengths = offsets[1:] - offsets[:-1]
    return data, starts, lengths


def _fixed_slot(arr: pa.Array, t: DataType) -> np.ndarray:
    """The 8-byte slot of every row for a fixed-width type, as uint64 (nulls give 0)."""
    r = t.root
    if r == "BOOLEAN":
        v = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint64)
        return v
    if r in ("TINYINT", "SMALLINT", "INT", "DATE", "TIME"):
        if r == "DATE":
            arr = arr.cast(pa.int32())
        elif r == "TIME":  # Paimon keeps TIME as milliseconds of the day
            arr = arr.cast(pa.time32("ms"), safe=False).cast(pa.int32())
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        bits = {"TINYINT": 8, "SMALLINT": 16}.get(r, 32)
        return (v & ((1 << bits) - 1)).astype(np.uint64)
    if r == "BIGINT":
        return arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
    # a float's raw bits, as Java's MemorySegment.putDouble writes them, but every NaN the canonical one (a key is
    # one value as Paimon compares them: NaNs of other payloads are the same key, bucket and partition)
    if r == "FLOAT":
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float32)
        return canonical_nan_bits(v).view(np.uint32).astype(np.uint64)
    if r == "DOUBLE":
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        return canonical_nan_bits(v).view(np.uint64)
    if r == "DECIMAL":
        return _decimal_unscaled_words(arr)[:, 0].copy()
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, _ = _timestamp_parts(arr)
        return millis.view(np.uint64)
    raise SchemaError(f"no fixed-width BinaryRow encoding for {t.sql()}")


def _decimal_unscaled_words(arr: pa.Array) -> np.ndarray:
    """(n, 2) uint64: the 128-bit little-endian two's complement unscaled values (nulls 0)."""
    if not pa.types.is_decimal128(arr.type):
        arr = arr.cast(pa.decimal128(38, arr.type.scale))
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    zero = pa.scalar(decimal.Decimal(0), arr.type)
    arr = pc.if_else(arr.is_null(), zero, arr)
    buf = arr.buffers()[1]
    words = np.frombuffer(buf, dtype=np.uint64, count=2 * len(arr), offset=arr.offset * 16)
    return words.reshape(-1, 2)


def _timestamp_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(epoch millis int64, nano-of-millisecond int64), nulls as 0."""
    unit = arr.type.unit
    v = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    per = _UNIT_PER_MILLI[unit]
    if per is None:
        return v * 1000, np.zeros_like(v)
    millis = np.floor_divide(v, per)
    nanos = (v - millis * per) * (1_000_000 // per)
    return millis, nanos


def _decimal_big_endian(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Java's BigInteger.toByteArray for each value: (n, 16) big-endian matrix, and minimal lengths."""
    le = words.view(np.uint8).reshape(-1, 16)
    be = le[:, ::-1]
    negative = be[:, 0] >= 0x80
    filler = np.where(negative, 0xFF, 0x00).astype(np.uint8)[:, None]
    differs = be != filler
    first = np.where(differs.any(axis=1), differs.argmax(axis=1), 16)
    # keep one sign byte when the first significant byte's top bit disagrees with the sign
    idx = np.minimum(first, 15)
    top_set = be[np.arange(len(be)), idx] >= 0x80
    need_sign = (first == 16) | (top_set != negative)
    start = np.where(need_sign, first - 1, first)
    start = np.clip(start, 0, 15)
    return np.ascontiguousarray(be), (16 - start).astype(np.int64)


def fixed_width_rows(columns: Sequence[pa.Array], types: Sequence[DataType]) -> np.ndarray | None:
    """The rows' BinaryRow bytes as an (n, words) uint32 matrix of little-endian words, when every field is
    fixed-width (a row is its header and one 8-byte slot a field, all rows of one length); else None.
    What encode_rows gives such rows, without its offsets and variable parts (the hot path of bucketing)."""
    if not types or any(_var_kind(t) is not None for t in types):
        return None
    n = len(columns[0])
    head_words = header_bytes(len(types)) // 8
    rows = np.zeros((n, head_words + len(types)), dtype=np.uint64)
    for i, (col, t) in enumerate(zip(columns, types)):
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        rows[:, head_words + i] = _fixed_slot(col, t)  # a null's slot is 0
        if col.null_count:
            bit = i + 8  # null bits follow the header byte
            rows[col.is_null().to_numpy(zero_copy_only=False), bit // 64] |= np.uint64(1) << np.uint64(bit % 64)
    return rows.view(np.uint32)


def encode_rows(columns: Sequence[pa.Array], types: Sequence[DataType]) -> tuple[np.ndarray, np.ndarray]:
    """Encode rows of the given columns as BinaryRows.

    Returns the concatenated row bytes (uint8, every row a multiple of 8 bytes long) and the
    row start offsets (int64, length n + 1).
    """
    arity = len(types)
    n = len(columns[0]) if columns else 0
    columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    head = header_bytes(arity)
    fixed = head + 8 * arity
    kinds = [_var_kind(t) for t in types]
    nulls = [c.is_null().to_numpy(zero_copy_only=False) if c.null_count else np.zeros(n, bool) for c in columns]

    # variable-part size of each field per row
    var_sizes: list[np.ndarray | None] = []
    parts: list[Any] = []
    for col, kind in zip(columns, kinds):
        if kind == "bytes":
            data, starts, lengths = _binary_parts(col)
            long_ = lengths > 7
            var_sizes.append(np.where(long_, (lengths + 7) // 8 * 8, 0))
            parts.append((data, starts, lengths))
        elif kind == "decimal":
            var_sizes.append(np.full(n, 16, dtype=np.int64))
            parts.append(_decimal_big_endian(_decimal_unscaled_words(col)))
        elif kind == "timestamp":
            var_sizes.append(np.full(n, 8, dtype=np.int64))
            parts.append(_timestamp_parts(col))
        else:
            var_sizes.append(None)
            parts.append(None)

    row_len = np.full(n, fixed, dtype=np.int64)
    for vs in var_sizes:
        if vs is not None:
            row_len += vs
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    words = out.view(np.uint64)
    row_word = offsets[:-1] // 8

    # null bits (bit i + 8 of the header)
    for i, isnull in enumerate(nulls):
        if isnull.any():
            bit = i + 8
            words[row_word[isnull] + bit // 64] |= np.uint64(1) << np.uint64(bit % 64)

    cursor = np.full(n, fixed, dtype=np.int64)  # next free byte of each row's variable part
    for i, (col, t, kind, isnull, part) in enumerate(zip(columns, types, kinds, nulls, parts)):
        slot = row_word + head // 8 + i
        if kind is None:
            words[slot] = np.where(isnull, np.uint64(0), _fixed_slot(col, t))
        elif kind == "bytes":
            data, starts, lengths = part
            long_ = (lengths > 7) & ~isnull
            short = (lengths <= 7) & ~isnull
            # inline: bytes in the slot, 0x80 | len in its last byte
            if short.any():
                rows = np.nonzero(short)[0]
                src = _ranges(starts[rows], lengths[rows])
                dst = _ranges(offsets[rows] + head + 8 * i, lengths[rows])
                out[dst] = data[src]
                out[offsets[rows] + head + 8 * i + 7] = (0x80 | lengths[rows]).astype(np.uint8)
            if long_.any():
                rows = np.nonzero(long_)[0]
                src = _ranges(starts[rows], lengths[rows])
                dst = _ranges(offsets[rows] + cursor[rows], lengths[rows])
                out[dst] = data[src]
                words[slot[rows]] = (cursor[rows].astype(np.uint64) << np.uint64(32)) | lengths[rows].astype(np.uint64)
            cursor += var_sizes[i]
        elif kind == "decimal":
            be, lens = part
            lens = np.where(isnull, 0, lens)
            rows = np.arange(n)
            src = _ranges(rows * 16 + (16 - lens), lens)
            dst = _ranges(offsets[:-1] + cursor, lens)
            out[dst] = be.reshape(-1)[src]
            # a null keeps its reserved space and offset, with size 0 (Java's null setter)
            words[slot] = (cursor.astype(np.uint64) << np.uint64(32)) | lens.astype(np.uint64)
            cursor += 16
        else:  # non-compact timestamp
            millis, nanos = part
            var_word = (offsets[:-1] + cursor) // 8
            words[var_word] = np.where(isnull, 0, millis).view(np.uint64)
            words[slot] = (cursor.astype(np.uint64) << np.uint64(32)) | np.where(isnull, 0, nanos).astype(np.uint64)
            cursor += 8
    return out, offsets


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """One row as manifests store it: 4-byte big-endian arity, then the BinaryRow bytes."""
    cols = [pa.array([v], type=to_arrow_type(t)) for v, t in zip(values, types)]
    if not types:
        return struct.pack(">i", 0) + bytes(8)
    data, _ = encode_rows(cols, types)
    return struct.pack(">i", len(types)) + data.tobytes()


def serialize_arrow_row(columns: Sequence[pa.Array], types: Sequence[DataType]) -> bytes:
    """Like serialize_row for length-1 Arrow arrays (already in the Arrow form of ``types``)."""
    if not types:
        return struct.pack(">i", 0) + bytes(8)
    data, _ = encode_rows(columns, types)
    return struct.pack(">i", len(types)) + data.tobytes()


EMPTY_ROW = serialize_row([], [])


def deserialize_row(blob: bytes, types: Sequence[DataType]) -> list[Any]:
    """Decode a serialized row into Python values (None for nulls); exactly, so that serialize_row gives the
    same bytes back: a timestamp with digits below the microsecond is a ``pandas.Timestamp`` (nanoseconds),
    any other a ``datetime``."""
    (arity,) = struct.unpack_from(">i", blob, 0)
    base = 4
    head = header_bytes(arity)
    out: list[Any] = []
    for i, t in enumerate(types[:arity]):
        bit = i + 8
        if blob[base + bit // 8] & (1 << (bit % 8)):
            out.append(None)
            continue
        pos = base + head + 8 * i
        out.append(_decode_field(blob, base, pos, t))
    out.extend(None for _ in types[arity:])
    return out


def _decode_field(blob: bytes, base: int, pos: int, t: DataType) -> Any:
    r = t.root
    if r == "BOOLEAN":
        return blob[pos] != 0
    if r == "TINYINT":
        return struct.unpack_from("<b", blob, pos)[0]
    if r == "SMALLINT":
        return struct.unpack_from("<h", blob, pos)[0]
    if r == "INT":
        return struct.unpack_from("<i", blob, pos)[0]
    if r == "DATE":
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack_from("<i", blob, pos)[0])
    if r == "TIME":
        ms = struct.unpack_from("<i", blob, pos)[0]
        return (dt.datetime.min + dt.timedelta(milliseconds=ms)).time()
    if r == "BIGINT":
        return struct.unpack_from("<q", blob, pos)[0]
    if r == "FLOAT":
        return struct.unpack_from("<f", blob, pos)[0]
    if r == "DOUBLE":
        return struct.unpack_from("<d", blob, pos)[0]
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        mark = blob[pos + 7]
        if mark & 0x80:
            raw = blob[pos:pos + (mark & 0x7F)]
        else:
            offset, length = struct.unpack_from("<I", blob, pos + 4)[0], struct.unpack_from("<I", blob, pos)[0]
            raw = blob[base + offset:base + offset + length]
        return raw.decode("utf-8") if r in ("CHAR", "VARCHAR") else bytes(raw)
    if r == "DECIMAL":
        if is_compact_decimal(t):
            unscaled = struct.unpack_from("<q", blob, pos)[0]
        else:
            length, offset = struct.unpack_from("<I", blob, pos)[0], struct.unpack_from("<I", blob, pos + 4)[0]
            unscaled = int.from_bytes(blob[base + offset:base + offset + length], "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-t.scale, _DECIMAL_CTX)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if is_compact_timestamp(t):
            millis, nanos = struct.unpack_from("<q", blob, pos)[0], 0
        else:
            nanos, offset = struct.unpack_from("<I", blob, pos)[0], struct.unpack_from("<I", blob, pos + 4)[0]
            millis = struct.unpack_from("<q", blob, base + offset)[0]
        tz = dt.timezone.utc if r == "TIMESTAMP_LTZ" else None
        if nanos % 1000:  # digits below the microsecond (precision 7..9) need a nanosecond timestamp
            import pandas as pd  # optional (pyspark's): only nanosecond timestamps need its Timestamp
            return pd.Timestamp(millis * 1_000_000 + nanos, unit="ns", tz=tz)
        value = _EPOCH + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
        return value.replace(tzinfo=tz) if tz is not None else value
    raise SchemaError(f"cannot decode {t.sql()} from a BinaryRow")
