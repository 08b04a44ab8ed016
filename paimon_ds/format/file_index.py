"""Data-file indexes as Java Paimon 0.9 lays them out (org.apache.paimon.fileindex): a bloom filter per indexed
column of each data file, that a scan tests equality and IN predicates against to skip the file.

The index of one data file (FileIndexFormat, version 1), big-endian throughout:

    magic (8: 1493475289347502) | version (4: 1) | head length (4: bytes before the body)
    | column count (4) | per column: name (Java writeUTF), index count (4),
      per index: type (writeUTF: "bloom-filter"), start (4: absolute; -1: an empty index), length (4)
    | redundant length (4: 0) | body: the indexes' bytes

A bloom filter ("bloom-filter": BloomFilterFileIndex, BloomFilter64) is the number of hash functions (4,
big-endian) then the bit set (bit i is bit i % 8 of byte i / 8). A value's 64-bit hash is FastHash's: xxHash64
(seed 0) of a string's UTF-8 or of binary bytes, Thomas Wang's 64-bit integer hash of a number (floats by their
IEEE bits, dates as days, times as milliseconds, timestamps as milliseconds up to precision 3, else microseconds).
Bit positions: for i in 1..k, h1 + i * h2 in 32-bit arithmetic (h1, h2: the hash's low and high halves), its
bits flipped when negative, modulo the filter's bit count. Hashing is vectorised over a batch's distinct values.

Where the index lives (DataFileIndexWriter): in the manifest entry (`_EMBEDDED_FILE_INDEX`) when its bytes are at
most `file-index.in-manifest-threshold`, else in `<data file name>.index` beside the data file, named in the
entry's `_EXTRA_FILES`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import DataType, to_arrow_type

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX = -1
BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
INDEX_FILE_SUFFIX = ".index"
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE")
_BYTES = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_HASHABLE = (*_INTEGERS, *_BYTES, "FLOAT", "DOUBLE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ")


def bloom_filter_supports(t: DataType) -> bool:
    """Types FastHash hashes (not BOOLEAN, DECIMAL or nested types: Java refuses them)."""
    return t.root in _HASHABLE


# ---------------------------------------------------------------- hashing (FastHash)
_U = np.uint64
_P1, _P2, _P3, _P4, _P5 = (_U(11400714785074694791), _U(14029467366897019727), _U(1609587929392839161),
                           _U(9650029242287828579), _U(2870177450012600261))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U(r)) | (x >> _U(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _read(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned integers of ``width`` (4 or 8) bytes at byte offsets ``pos`` of ``data`` (padded
    with 8 bytes): one gather of overlapping windows, viewed as integers."""
    windows = np.lib.stride_tricks.as_strided(data, shape=(len(data) - 7, width), strides=(1, 1))
    return np.ascontiguousarray(windows[pos]).view("<u8" if width == 8 else "<u4").ravel().astype(_U)


def xxhash64(values: pa.Array) -> np.ndarray:
    """xxHash64 (seed 0) of each value of a (non-null) binary or string array, as int64, all rows at once: each
    step of the algorithm runs over every row that still has input for it."""
    arr = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=arr.offset + n + 1)[arr.offset:]
    raw = arr.buffers()[2]
    data = np.concatenate([np.frombuffer(raw, dtype=np.uint8) if raw is not None else np.zeros(0, np.uint8),
                           np.zeros(8, np.uint8)])
    start = offsets[:-1].astype(np.int64)
    length = (offsets[1:] - offsets[:-1]).astype(np.int64)
    with np.errstate(over="ignore"):
        h = np.full(n, _P5, dtype=_U)
        stripes = length // 32
        big = np.nonzero(stripes > 0)[0]
        if len(big):
            v = [np.full(len(big), x, dtype=_U) for x in (_P1 + _P2, _P2, _U(0), _U(0) - _P1)]
            for s in range(int(stripes[big].max())):
                live = stripes[big] > s
                idx = big[live]
                at = start[idx] + 32 * s
                for k in range(4):
                    v[k][live] = _round(v[k][live], _read(data, at + 8 * k, 8))
            acc = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
            for lane in v:
                acc = (acc ^ _round(np.zeros_like(lane), lane)) * _P1 + _P4
            h[big] = acc
        h += length.astype(_U)
        pos = start + stripes * 32
        rest = length - stripes * 32
        while True:
            m = _rows_with(rest, 8)
            if m is None:
                break
            h[m] = _rotl(h[m] ^ _round(np.zeros(len(pos[m]), _U), _read(data, pos[m], 8)), 27) * _P1 + _P4
            pos[m] += 8
            rest[m] -= 8
        m = _rows_with(rest, 4)
        if m is not None:
            h[m] = _rotl(h[m] ^ (_read(data, pos[m], 4) * _P1), 23) * _P2 + _P3
            pos[m] += 4
            rest[m] -= 4
        while True:
            m = _rows_with(rest, 1)
            if m is None:
                break
            h[m] = _rotl(h[m] ^ (data[pos[m]].astype(_U) * _P5), 11) * _P1
            pos[m] += 1
            rest[m] -= 1
        h ^= h >> _U(33)
        h *= _P2
        h ^= h >> _U(29)
        h *= _P3
        h ^= h >> _U(32)
    return h.view(np.int64)


def _rows_with(rest: np.ndarray, n: int) -> slice | np.ndarray | None:
    """The rows with at least ``n`` bytes left: all of them as a slice (no gather: values of one length, the
    common case), else their indices; None if none."""
    has = rest >= n
    if has.all():
        return slice(None)
    m = np.nonzero(has)[0]
    return m if len(m) else None


def long_hash(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (FastHash.getLongHash): Java long arithmetic, `>>` arithmetic."""
    key = key.astype(np.int64)
    with np.errstate(over="ignore"):
        key = (~key) + (key << 21)
        key = key ^ (key >> 24)
        key = (key + (key << 3)) + (key << 8)
        key = key ^ (key >> 14)
        key = (key + (key << 2)) + (key << 4)
        key = key ^ (key >> 28)
        key = key + (key << 31)
    return key


def fast_hash(values: pa.Array, t: DataType) -> np.ndarray:
    """FastHash of each non-null value of ``values`` (a column of Paimon type ``t``), as int64."""
    values = pc.drop_null(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    root = t.root
    if root in _BYTES:
        return xxhash64(values)
    if root == "FLOAT":
        f = values.to_numpy(zero_copy_only=False).astype(np.float32)
        bits = f.view(np.int32).astype(np.int64)
        bits[np.isnan(f)] = 0x7FC00000  # Float.floatToIntBits: one NaN
        return long_hash(bits)
    if root == "DOUBLE":
        f = values.to_numpy(zero_copy_only=False).astype(np.float64)
        bits = f.view(np.int64).copy()
        bits[np.isnan(f)] = 0x7FF8000000000000  # Double.doubleToLongBits: one NaN
        return long_hash(bits)
    if root in _INTEGERS:
        return long_hash(values.cast(pa.int32() if root == "DATE" else pa.int64()).to_numpy(zero_copy_only=False))
    if root == "TIME":
        unit = values.type.unit
        raw = values.cast(pa.int64() if pa.types.is_time64(values.type) else pa.int32()).to_numpy(
            zero_copy_only=False).astype(np.int64)
        return long_hash(raw * 1000 if unit == "s" else raw // (_PER_SECOND[unit] // 1000))  # milliseconds
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = values.type.unit
        raw = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        per_target = 1000 if t.precision <= 3 else 1_000_000  # milliseconds, else microseconds
        per_unit = _PER_SECOND[unit]
        return long_hash(raw * (per_target // per_unit) if per_unit <= per_target else raw // (per_unit // per_target))
    raise TypeError(f"a bloom filter file index does not support {t.sql()}")


_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


# ---------------------------------------------------------------- bloom filter (BloomFilter64)
def _positions(hashes: np.ndarray, num_hashes: int, num_bits: int) -> np.ndarray:
    """Bit positions of each hash, one row per hash function (in [0, num_bits))."""
    h1 = hashes.astype(np.int32)  # the low 32 bits
    h2 = (hashes >> 32).astype(np.int32)
    with np.errstate(over="ignore"):
        combined = h1[None, :] + np.arange(1, num_hashes + 1, dtype=np.int32)[:, None] * h2[None, :]
    np.invert(combined, out=combined, where=combined < 0)  # flipped when negative: now in [0, 2^31)
    return combined % np.int32(num_bits)


class BloomFilter:
    """A BloomFilter64 of ``items`` expected values at false-positive rate ``fpp``, or read from its bytes."""

    def __init__(self, num_hashes: int, bits: np.ndarray) -> None:
        self.num_hashes = num_hashes
        self.bits = bits  # bool, one per bit
        self.num_bits = len(bits)

    @classmethod
    def sized(cls, items: int, fpp: float) -> BloomFilter:
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = nb + (8 - nb % 8)  # as BloomFilter64: a whole number of bytes, and always at least one more bit
        num_hashes = max(1, _java_round(num_bits / items * math.log(2)))
        return cls(num_hashes, np.zeros(num_bits, dtype=bool))

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        num_hashes = struct.unpack_from(">i", data, 0)[0]
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8, offset=4), bitorder="little").astype(bool)
        return cls(num_hashes, bits)

    def add(self, hashes: np.ndarray) -> None:
        if len(hashes):
            self.bits[_positions(hashes, self.num_hashes, self.num_bits).ravel()] = True

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: whether its value may have been added."""
        return self.bits[_positions(hashes, self.num_hashes, self.num_bits)].all(axis=0)

    def to_bytes(self) -> bytes:
        return struct.pack(">i", self.num_hashes) + np.packbits(self.bits, bitorder="little").tobytes()


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)


# ---------------------------------------------------------------- options
def bitmap_columns(options: Any) -> list[str]:
    """Columns with a bitmap index (`file-index.bitmap.columns`)."""
    return list(options.get("file-index.bitmap.columns") or [])


def bloom_filter_columns(options: Any) -> dict[str, tuple[int, float]]:
    """Columns with a bloom filter (`file-index.bloom-filter.columns`) -> (items, fpp)."""
    out = {}
    for col in options.get("file-index.bloom-filter.columns") or []:
        out[col] = (options.get(f"file-index.bloom-filter.{col}.items"),
                    options.get(f"file-index.bloom-filter.{col}.fpp"))
    return out


# ---------------------------------------------------------------- the file format (FileIndexFormat)
def _write_utf(s: str) -> bytes:
    """Java's DataOutput.writeUTF: a 2-byte length, then modified UTF-8 (NUL as C0 80, surrogate pairs apart)."""
    out = bytearray()
    for ch in s:
        c = ord(ch)
        if c == 0:
            out += b"\xc0\x80"
        elif c > 0xFFFF:
            c -= 0x10000
            for unit in (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)):
                out += chr(unit).encode("utf-8", "surrogatepass")
        else:
            out += ch.encode("utf-8", "surrogatepass")
    return struct.pack(">H", len(out)) + bytes(out)


def _read_utf(data: bytes, pos: int) -> tuple[str, int]:
    n = struct.unpack_from(">H", data, pos)[0]
    raw = data[pos + 2: pos + 2 + n].replace(b"\xc0\x80", b"\x00")
    return raw.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass").decode("utf-16"), pos + 2 + n


def write_index_file(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """An index file's bytes: column -> index type -> that index's bytes (None: an empty index)."""
    names = b"".join(_write_utf(c) + b"".join(_write_utf(t) for t in types) for c, types in indexes.items())
    head_length = (8 + 4 + 4 + 4 + 8 * sum(len(t) for t in indexes.values()) + 4 * len(indexes) + 4 + len(names))
    head = bytearray(struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes)))
    body = bytearray()
    for column, types in indexes.items():
        head += _write_utf(column) + struct.pack(">i", len(types))
        for index_type, blob in types.items():
            head += _write_utf(index_type)
            if blob is None:
                head += struct.pack(">ii", EMPTY_INDEX, 0)
            else:
                head += struct.pack(">ii", head_length + len(body), len(blob))
                body += blob
    head += struct.pack(">i", 0)
    assert len(head) == head_length
    return bytes(head + body)


def read_index_file(data: bytes) -> dict[str, dict[str, bytes | None]]:
    """column -> index type -> its bytes (None: an empty index) of an index file's bytes."""
    magic, version, head_length, columns = struct.unpack_from(">qiii", data, 0)
    if magic != MAGIC:
        raise ValueError("not a Paimon file index (bad magic)")
    if version != VERSION:
        raise ValueError(f"file index version {version} is not supported (only {VERSION})")
    pos = 20
    out: dict[str, dict[str, bytes | None]] = {}
    for _ in range(columns):
        column, pos = _read_utf(data, pos)
        count = struct.unpack_from(">i", data, pos)[0]
        pos += 4
        types = out.setdefault(column, {})
        for _ in range(count):
            index_type, pos = _read_utf(data, pos)
            start, length = struct.unpack_from(">ii", data, pos)
            pos += 8
            types[index_type] = None if start == EMPTY_INDEX else data[start: start + length]
    return out


# ---------------------------------------------------------------- writing
class FileIndexBuilder:
    """The index of one data file being written: ``update`` with each row group, ``result`` once at the end."""

    def __init__(self, columns: Mapping[str, tuple[int, float]], types: Mapping[str, DataType],
                 bitmap_columns: Sequence[str] = ()) -> None:
        """``columns``: column -> (items, fpp) of its bloom filter; ``bitmap_columns``: columns with a bitmap
        index; ``types``: the file's column types."""
        self.types: dict[str, DataType] = {}
        self.filters: dict[str, BloomFilter] = {}
        self.bitmaps: dict[str, list[pa.Array]] = {}
        for column in [*columns, *bitmap_columns]:
            t = types.get(column)
            if t is None:
                raise ValueError(f"file index column {column!r} does not exist in the table")
            self.types[column] = t
        for column, (items, fpp) in columns.items():
            t = self.types[column]
            if not bloom_filter_supports(t):
                raise ValueError(f"a bloom-filter file index does not support column {column!r} of type {t.sql()}")
            self.filters[column] = BloomFilter.sized(items, fpp)
        for column in bitmap_columns:
            t = self.types[column]
            if not bitmap_supports(t):
                raise ValueError(f"a bitmap file index does not support column {column!r} of type {t.sql()}")
            self.bitmaps[column] = []

    def update(self, data: pa.Table) -> None:
        for column, bloom in self.filters.items():
            values = pc.unique(data.column(column))  # hash each distinct value once
            bloom.add(fast_hash(values, self.types[column]))
        for column, parts in self.bitmaps.items():
            parts.extend(data.column(column).chunks)

    def result(self) -> bytes:
        indexes: dict[str, dict[str, bytes | None]] = {}
        for column, bloom in self.filters.items():
            indexes.setdefault(column, {})[BLOOM_FILTER] = bloom.to_bytes()
        for column, parts in self.bitmaps.items():
            t = self.types[column]
            values = pa.concat_arrays(parts) if parts else pa.array([], to_arrow_type(t))
            indexes.setdefault(column, {})[BITMAP] = bitmap_index_bytes(values, t)
        return write_index_file(indexes)


# ---------------------------------------------------------------- reading
def index_may_match(index: Mapping[str, Mapping[str, bytes | None]], predicate: Any,
                    column_of: Callable[[str], tuple[str, DataType] | None]) -> bool:
    """Whether a file whose index is ``index`` may hold a row matching ``predicate`` (False: skip the file), as
    FileIndexPredicate tests it: `=` and `in` against each index of the column; anything else may match.
    ``column_of``: a predicate's column -> (the column's name in the file, its type), or None when the file's
    column is not comparable (absent, or of another type since)."""
    kind = type(predicate).__name__
    if kind == "And":
        return all(index_may_match(index, c, column_of) for c in predicate.children)
    if kind == "Or":
        return any(index_may_match(index, c, column_of) for c in predicate.children)
    if kind != "Leaf" or predicate.op not in ("=", "in"):
        return True
    found = column_of(predicate.field)
    if found is None:
        return True
    name, t = found
    for index_type, blob in index.get(name, {}).items():
        if blob is None:
            return False  # an empty index: the file holds no value of the column
        if index_type == BLOOM_FILTER and not _bloom_may_match(blob, t, predicate.literals):
            return False
        if index_type == BITMAP and not _bitmap_may_match(blob, t, predicate.literals):
            return False
    return True


def _bloom_may_match(blob: bytes, t: DataType, literals: Sequence[Any]) -> bool:
    if any(v is None for v in literals) or not bloom_filter_supports(t):
        return True
    try:
        values = pa.array(list(literals), type=to_arrow_type(t))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return True  # a literal of another type: not tested here
    return bool(BloomFilter.from_bytes(blob).may_contain(fast_hash(values, t)).any())


# ---------------------------------------------------------------- bitmap (BitmapFileIndex, read only)
# Its head (BitmapFileIndexMeta, version 1), big-endian: version (1 byte), row count (4), distinct non-null
# values (4), has nulls (1), [null bitmap offset (4)], then per value: the value, its bitmap's offset (4); then
# the values' roaring bitmaps. A file holds a value iff the value is in the head: `=` and `IN` need no bitmap.
_BITMAP_VALUES = {"TINYINT": ">b", "BOOLEAN": ">b", "SMALLINT": ">h", "INT": ">i", "DATE": ">i", "TIME": ">i",
                  "BIGINT": ">q", "TIMESTAMP": ">q", "TIMESTAMP_LTZ": ">q", "FLOAT": ">f", "DOUBLE": ">d"}


def bitmap_values(blob: bytes, t: DataType) -> set[Any] | None:
    """The distinct non-null values a bitmap index lists (strings as UTF-8 bytes, timestamps as milliseconds up to
    precision 3, else microseconds); None for a version or type this reader does not know. One step per distinct
    value: bitmap indexes are for columns of few values."""
    if not blob or blob[0] != 1:
        return None
    _, distinct, has_null = struct.unpack_from(">ii?", blob, 1)
    pos = 10 + (4 if has_null else 0)
    out: set[Any] = set()
    if t.root in ("CHAR", "VARCHAR"):
        for _ in range(distinct):
            n = struct.unpack_from(">i", blob, pos)[0]
            out.add(bytes(blob[pos + 4: pos + 4 + n]))
            pos += 8 + n
        return out
    fmt = _BITMAP_VALUES.get(t.root)
    if fmt is None:
        return None
    entries = np.frombuffer(blob, dtype=np.dtype([("v", fmt), ("offset", ">i4")]), count=distinct, offset=pos)
    return set(entries["v"].tolist())


def _bitmap_keys(literals: Sequence[Any], t: DataType) -> list[Any] | None:
    """``literals`` as bitmap_values gives a file's values; None if they do not convert to the column's type."""
    try:
        values = pa.array(list(literals), type=to_arrow_type(t))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    return bitmap_keys(values, t)


def bitmap_keys(values: pa.Array, t: DataType) -> list[Any]:
    """The non-null ``values`` of a column of type ``t`` as a bitmap index stores them: strings as UTF-8 bytes,
    timestamps as milliseconds (precision up to 3) or microseconds, dates as days, times as milliseconds."""
    root = t.root
    if root in ("CHAR", "VARCHAR"):
        return [v.encode("utf-8") for v in values.to_pylist()]
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        per_target = 1000 if t.precision <= 3 else 1_000_000
        per_unit = _PER_SECOND[values.type.unit]
        raw = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        scaled = raw * (per_target // per_unit) if per_unit <= per_target else raw // (per_unit // per_target)
        return scaled.tolist()
    if root == "TIME":
        unit = values.type.unit
        raw = values.cast(pa.int64() if pa.types.is_time64(values.type) else pa.int32()).to_numpy(
            zero_copy_only=False).astype(np.int64)
        return (raw * 1000 if unit == "s" else raw // (_PER_SECOND[unit] // 1000)).tolist()
    if root == "DATE":
        return values.cast(pa.int32()).to_pylist()
    if root == "BOOLEAN":
        return [int(v) for v in values.to_pylist()]
    if root == "FLOAT":
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32).tolist()
    return values.to_pylist()


def _bitmap_may_match(blob: bytes, t: DataType, literals: Sequence[Any]) -> bool:
    if any(v is None for v in literals):
        return True
    keys = _bitmap_keys(literals, t)
    values = bitmap_values(blob, t) if keys is not None else None
    return values is None or any(k in values for k in keys)


def bitmap_supports(t: DataType) -> bool:
    """Types BitmapFileIndexMeta stores (not BINARY, DECIMAL or nested types)."""
    return t.root in _BITMAP_VALUES or t.root in ("CHAR", "VARCHAR")


def _roaring(rows: np.ndarray) -> bytes:
    """A RoaringBitmap's portable serialization of sorted distinct ``rows`` (uint32): the no-run layout (cookie
    12346, container count, per container its key and cardinality - 1, then the containers' offsets; an array
    container is its 16-bit values, a container of more than 4096 values a 65536-bit bitmap), all little-endian.
    Java serializes after runOptimize, which may pick run containers; readers take either."""
    if 0 < len(rows) <= 4096 and rows[0] >> 16 == rows[-1] >> 16:  # one array container: most values' bitmaps
        return (struct.pack("<iiHHi", 12346, 1, int(rows[0] >> 16), len(rows) - 1, 16)
                + (rows & 0xFFFF).astype("<u2").tobytes())
    keys = (rows >> 16).astype(np.uint16)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(rows) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(rows)].astype(np.int64)
    low = (rows & 0xFFFF).astype("<u2")
    bodies = []
    for a, b in zip(starts, ends):  # one step per 65536-row block of the file
        part = low[a:b]
        if b - a <= 4096:
            bodies.append(part.tobytes())
        else:
            bits = np.zeros(65536, dtype=bool)
            bits[part] = True
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    n = len(starts)
    head = struct.pack("<ii", 12346, n)
    head += b"".join(struct.pack("<HH", int(keys[a]), int(b - a - 1)) for a, b in zip(starts, ends))
    offset = len(head) + 4 * n
    for body in bodies:
        head += struct.pack("<i", offset)
        offset += len(body)
    return head + b"".join(bodies)


_INT = struct.Struct(">i")


def bitmap_index_bytes(values: pa.Array, t: DataType) -> bytes:
    """A bitmap index of a file's column ``values`` (BitmapFileIndex version 1): per distinct value the rows
    holding it (a single row as -1 - row in place of an offset, as Java writes it). One step per distinct value:
    bitmap indexes are for columns of few values."""
    n = len(values)
    null_rows = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False)).astype(np.uint32)
    encoded = pc.dictionary_encode(values)
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    keys = bitmap_keys(encoded.dictionary, t)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes[codes >= 0], minlength=len(keys))
    bounds = np.r_[0, np.cumsum(counts)] + (len(codes) - int(counts.sum()))  # nulls (-1) sort first
    body = bytearray()
    null_bytes = _roaring(null_rows) if len(null_rows) > 1 else b""
    body += null_bytes
    fmt = _BITMAP_VALUES.get(t.root)
    head = bytearray(struct.pack(">bii?", 1, n, len(keys), len(null_rows) > 0))
    if len(null_rows):
        head += struct.pack(">i", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0)
    order = order.astype(np.uint32)  # a stable sort: each value's rows in ascending order
    starts, stops = bounds[:-1].tolist(), bounds[1:].tolist()
    value_fmt = struct.Struct(fmt) if fmt is not None else None
    for key, a, b in zip(keys, starts, stops):
        head += struct.pack(">i", len(key)) + key if value_fmt is None else value_fmt.pack(key)
        if b - a == 1:
            head += _INT.pack(-1 - int(order[a]))
        else:
            head += _INT.pack(len(body))
            body += _roaring(order[a:b])
    return bytes(head + body)
