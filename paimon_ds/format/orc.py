"""What pyarrow's ORC reader does not say or does not do as Java's: the file's own types and writer time zones,
and the corrections that make pyarrow's values those Java Paimon reads.

pyarrow reads ORC through Apache ORC's C++ library and exposes neither an ORC column's kind (CHAR and STRING
both arrive as Arrow strings) nor the writer time zone each stripe footer records. Both are read here from
the file's tail and stripe footers, which are small protobuf messages (decoded by hand: a few fields only).

- **CHAR**: ORC's CHAR(n) pads its values with spaces to n characters; Java's ORC reader (and so Paimon)
  returns them with the trailing spaces removed, pyarrow with the padding. CHAR columns are right-trimmed.
- **Timestamps of a writer zone that is not UTC** (ORC kind TIMESTAMP, which Paimon's TIMESTAMP(p) is; Java
  Paimon writes it in its JVM's default zone): the file stores seconds since 2015-01-01 in the writer's zone
  and nanoseconds, and the seconds of a value before 1970 with a fraction of at least a millisecond are one
  too many (the writer truncates toward zero). Java's reader takes that second off while the value is still
  in UTC, then moves it to the wall clock; the C++ reader in pyarrow moves it to the wall clock first and then
  tests the wall clock's sign (ORC-2151, fixed in Apache ORC 2.3: `ColumnReader.cc`). So pyarrow's value is a
  second late where the UTC instant is before 1970 and the wall clock is not (zones east of UTC, the hours
  after 1970-01-01T00:00 local), and a second early the other way round (zones west of UTC). Further, before
  a zone's first transition the two take different offsets: the C++ library the zone's oldest standard
  offset, Java's `TimeZone` the local mean time from 1900-01-01T00:00Z on and the zone's current standard
  offset before 1900 (Asia/Shanghai in 1900: +08:00 against +08:05:43). Both are undone here: the C++
  mapping is inverted with the zone's own TZif rules (the file the C++ library reads, under TZDIR or
  /usr/share/zoneinfo) and Java's applied, vectorised over the values that can differ. Whether the
  installed pyarrow has the bug is probed once with a tiny ORC file Java wrote.
- TIMESTAMP WITH LOCAL TIME ZONE is ORC's TIMESTAMP_INSTANT, kept in UTC by both readers: untouched.
"""

from __future__ import annotations

import base64
import functools
import io
import os
import struct
import zlib
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import ArrayType, MapType, MultisetType, RowType, any_leaf_type
from .avro_codecs import snappy_length

KIND_STRUCT, KIND_LIST, KIND_MAP, KIND_UNION = 12, 10, 11, 13
KIND_TIMESTAMP, KIND_CHAR = 9, 17
_NANOS = 1_000_000_000


# ------------------------------------------------------------------------------------------ protobuf

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _message(buf: bytes) -> dict[int, list[Any]]:
    """A protobuf message's fields: number -> values (ints, or bytes for length-delimited ones)."""
    out: dict[int, list[Any]] = {}
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<q", buf, pos)[0], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = struct.unpack_from("<i", buf, pos)[0], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} in an ORC file tail")
        out.setdefault(number, []).append(value)
    return out


def _packed(values: list[Any]) -> list[int]:
    """A repeated varint field, packed (bytes) or not (ints)."""
    out: list[int] = []
    for v in values:
        if isinstance(v, bytes):
            pos = 0
            while pos < len(v):
                x, pos = _varint(v, pos)
                out.append(x)
        else:
            out.append(v)
    return out


# ------------------------------------------------------------------------------------------ the tail

_CODECS = {0: None, 1: "zlib", 2: "snappy", 3: "lzo", 4: "lz4", 5: "zstd"}


def _decompress(data: bytes, codec: str | None, block_size: int) -> bytes:
    """An ORC compressed stream: chunks, each a 3-byte header (length << 1 | original) and its bytes."""
    if codec is None:
        return data
    out = []
    pos = 0
    while pos + 3 <= len(data):
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        pos += 3
        length, original = header >> 1, header & 1
        chunk = data[pos:pos + length]
        pos += length
        if original:
            out.append(chunk)
        elif codec == "zlib":
            out.append(zlib.decompress(chunk, -15))
        elif codec == "zstd":
            out.append(pa.CompressedInputStream(pa.BufferReader(chunk), "zstd").read())
        elif codec == "snappy":
            out.append(pa.decompress(chunk, decompressed_size=snappy_length(chunk), codec="snappy", asbytes=True))
        elif codec == "lz4":
            out.append(_lz4_block(chunk))
        else:
            raise ValueError(f"ORC compression {codec} is not supported")
    return b"".join(out)


def _lz4_length(data: bytes, pos: int, length: int) -> tuple[int, int]:
    """An LZ4 sequence's length nibble extended by the bytes after a full nibble (each 255 adds and goes on), and
    the position after them."""
    if length == 15:
        while True:
            b = data[pos]
            pos += 1
            length += b
            if b != 255:
                break
    return length, pos


def _lz4_block(data: bytes) -> bytes:
    """An LZ4 block (no frame, no recorded length, as ORC writes it) decoded: literals and back-references."""
    out = bytearray()
    pos = 0
    while pos < len(data):
        token = data[pos]
        pos += 1
        length, pos = _lz4_length(data, pos, token >> 4)
        out += data[pos:pos + length]
        pos += length
        if pos >= len(data):
            break  # the last sequence has literals only
        offset = data[pos] | data[pos + 1] << 8
        pos += 2
        length, pos = _lz4_length(data, pos, token & 15)
        start = len(out) - offset
        for i in range(length + 4):  # a match may overlap what it copies
            out.append(out[start + i])
    return bytes(out)


@dataclass
class OrcType:
    kind: int
    subtypes: list[int]
    names: list[str]


@dataclass
class OrcTail:
    """An ORC file's column types (a pre-order tree, 0 the root struct) and stripes (offset, index length,
    data length, footer length)."""

    types: list[OrcType]
    stripes: list[tuple[int, int, int, int]]
    codec: str | None
    block_size: int

    def stripe_timezone(self, fh: IO[bytes], index: int) -> str:
        """The writer time zone a stripe's footer records ('' when it records none)."""
        offset, index_length, data_length, footer_length = self.stripes[index]
        fh.seek(offset + index_length + data_length)
        footer = _message(_decompress(fh.read(footer_length), self.codec, self.block_size))
        return footer.get(3, [b""])[0].decode()


def read_tail(fh: IO[bytes]) -> OrcTail:
    fh.seek(0, io.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - 16384))
    tail = fh.read()
    ps_length = tail[-1]
    ps = _message(tail[-1 - ps_length:-1])
    footer_length = ps.get(1, [0])[0]
    codec = _CODECS.get(ps.get(2, [0])[0], "unknown")
    block_size = ps.get(3, [262144])[0]
    if footer_length + ps_length + 1 > len(tail):
        fh.seek(size - footer_length - ps_length - 1)
        tail = fh.read()
    raw = tail[len(tail) - 1 - ps_length - footer_length:len(tail) - 1 - ps_length]
    footer = _message(_decompress(raw, codec, block_size))
    stripes = []
    for s in footer.get(3, []):
        m = _message(s)
        stripes.append((m.get(1, [0])[0], m.get(2, [0])[0], m.get(3, [0])[0], m.get(4, [0])[0]))
    types = []
    for t in footer.get(4, []):
        m = _message(t)
        types.append(OrcType(m.get(1, [0])[0], _packed(m.get(2, [])), [n.decode() for n in m.get(3, [])]))
    return OrcTail(types, stripes, codec, block_size)


def column_kinds(tail: OrcTail, names: list[str]) -> dict[str, int]:
    """The ORC type id of each named top-level column."""
    root = tail.types[0]
    return {n: root.subtypes[i] for i, n in enumerate(root.names) if n in names}


def needs_tail(schema: pa.Schema) -> bool:
    """Whether columns of these Arrow types may need a correction (strings: CHAR; zone-less timestamps)."""
    return any(any_leaf_type(f.type, lambda t: pa.types.is_string(t) or (pa.types.is_timestamp(t) and t.tz is None))
               for f in schema)


def has_kind(tail: OrcTail, type_id: int, kinds: tuple[int, ...]) -> bool:
    t = tail.types[type_id]
    return t.kind in kinds or any(has_kind(tail, s, kinds) for s in t.subtypes)


# ------------------------------------------------------------------------------------------ corrections

def correct(arr: pa.Array, tail: OrcTail, type_id: int, zone: str) -> pa.Array:
    """A column as Java reads it: CHAR values right-trimmed, TIMESTAMP values of writer zone ``zone`` moved
    where Java puts them; nested columns through their children."""
    t = tail.types[type_id]
    if t.kind == KIND_CHAR:
        return pc.utf8_rtrim(arr, characters=" ")
    if t.kind == KIND_TIMESTAMP and pa.types.is_timestamp(arr.type):
        return java_timestamps(arr, zone)
    if t.kind == KIND_STRUCT and pa.types.is_struct(arr.type):
        children = [correct(arr.field(i), tail, t.subtypes[i], zone) for i in range(arr.type.num_fields)]
        if all(c is arr.field(i) for i, c in enumerate(children)):
            return arr
        return pa.StructArray.from_arrays(children, fields=list(arr.type),
                                          mask=arr.is_null() if arr.null_count else None)
    if t.kind == KIND_LIST and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        values = correct(arr.values, tail, t.subtypes[0], zone)
        if values is arr.values:
            return arr
        return type(arr).from_arrays(arr.offsets, values, type=arr.type,
                                     mask=arr.is_null() if arr.null_count else None)
    if t.kind == KIND_MAP and pa.types.is_map(arr.type):
        keys, items = correct(arr.keys, tail, t.subtypes[0], zone), correct(arr.items, tail, t.subtypes[1], zone)
        if keys is arr.keys and items is arr.items:
            return arr
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=arr.type,
                                       mask=arr.is_null() if arr.null_count else None)
    return arr


_UTC1900 = -2208988800  # 1900-01-01T00:00:00Z, where the zone tables of Java's TimeZone begin


def has_char(t: Any) -> bool:
    """Whether a Paimon type is or holds a CHAR."""
    if isinstance(t, RowType):
        return any(has_char(f.type) for f in t.fields)
    if isinstance(t, MapType):
        return has_char(t.key) or has_char(t.value)
    if isinstance(t, (ArrayType, MultisetType)):
        return has_char(t.element)
    return t.root == "CHAR"


def trim_chars(arr: pa.Array, t: Any) -> pa.Array:
    """The values of a column of Paimon type ``t`` with every CHAR right-trimmed of spaces, as Java's ORC reader
    gives a CHAR column (it pads what it writes; it trims whether the file's ORC type is CHAR or STRING)."""
    if not has_char(t):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if isinstance(t, RowType):
        return pa.StructArray.from_arrays([trim_chars(arr.field(i), f.type) for i, f in enumerate(t.fields)],
                                          fields=list(arr.type), mask=mask)
    if isinstance(t, (MapType, MultisetType)):
        key, value = (t.key, t.value) if isinstance(t, MapType) else (t.element, None)
        items = trim_chars(arr.items, value) if value is not None else arr.items
        return pa.MapArray.from_arrays(arr.offsets, trim_chars(arr.keys, key), items, type=arr.type, mask=mask)
    if isinstance(t, ArrayType):
        return type(arr).from_arrays(arr.offsets, trim_chars(arr.values, t.element), type=arr.type, mask=mask)
    return pc.utf8_rtrim(arr, characters=" ")


@dataclass(frozen=True)
class _Zone:
    """A zone's offsets as Apache ORC's C++ library takes them from its TZif file (the version-2 section), and
    as Java's ``TimeZone`` (which Java's ORC reader and ``java.sql.Timestamp`` use) has them: the same after
    the zone's first transition; before it, C++ takes the zone's oldest standard offset, Java the local mean
    time from 1900-01-01T00:00Z on and the zone's current standard offset before that."""

    transitions: np.ndarray  # int64 seconds
    offsets: np.ndarray  # int64 offset of the variant each transition starts
    ancient: int  # C++: before the first transition
    lmt: int  # Java: from 1900 to the first transition (TZif's first local time type)
    raw: int  # Java: before 1900 (the zone's current standard offset)

    def offset_cpp(self, t: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.transitions, t, side="right") - 1
        return np.where(idx < 0, self.ancient, self.offsets[np.clip(idx, 0, None)])

    def offset_java(self, t: np.ndarray) -> np.ndarray:
        return np.where(t < _UTC1900, self.raw, np.where(t < self.transitions[0], self.lmt, self.offset_cpp(t)))


def _tzif_path(zone: str) -> str:
    return os.path.join(os.environ.get("TZDIR") or "/usr/share/zoneinfo", zone)


@functools.lru_cache(maxsize=64)
def _zone(zone: str) -> _Zone | None:
    """The zone's offsets, or None for a zone without transitions (UTC and other fixed offsets, where both
    readers agree) or without a TZif file (pyarrow could not have read the file then)."""
    try:
        with open(_tzif_path(zone), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:4] != b"TZif":
        return None

    def section(start: int, time_size: int) -> tuple[int, Any]:
        isgmt, isstd, leap, timecnt, typecnt, charcnt = struct.unpack_from(">6I", data, start + 20)
        pos = start + 44
        times = list(struct.unpack_from(f">{timecnt}{'q' if time_size == 8 else 'i'}", data, pos))
        pos += timecnt * time_size
        idx = list(data[pos:pos + timecnt])
        pos += timecnt
        variants = [struct.unpack_from(">iBB", data, pos + i * 6) for i in range(typecnt)]
        pos += typecnt * 6 + charcnt + (time_size + 4) * leap + isstd + isgmt
        return pos, (times, idx, variants)

    end, parsed = section(0, 4)
    if data[4] != 0:  # version 2+: the 64-bit section follows the 32-bit one (what the C++ library reads)
        _, parsed = section(end, 8)
    times, idx, variants = parsed
    if not times or not variants:
        return None
    standard = [variants[i][0] for i in idx if not variants[i][1]]
    return _Zone(np.array(times, np.int64), np.array([variants[i][0] for i in idx], np.int64),
                 standard[0] if standard else variants[0][0], variants[0][0],
                 standard[-1] if standard else variants[idx[-1]][0])


def java_timestamps(arr: pa.Array, zone: str) -> pa.Array:
    """Zone-less timestamps pyarrow read from an ORC TIMESTAMP column written in ``zone``, as Java reads them
    (see the module docstring). Only values whose reading can differ are recomputed: those within two days of
    1970-01-01 and those before the zone's first transition."""
    rules = _zone(zone) if zone else None
    if rules is None or not _pyarrow_orc_converts_first():
        return arr
    unit = arr.type.unit
    per = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": _NANOS}[unit]
    values = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).copy()
    secs = np.floor_divide(values, per)
    frac = values - secs * per
    near_epoch = np.abs(secs) < 2 * 86400
    ancient = secs < max(int(rules.transitions[0]), _UTC1900) + 2 * 86400
    rows = np.nonzero((near_epoch | ancient) & arr.is_valid().to_numpy(zero_copy_only=False))[0]
    if not len(rows):
        return arr
    s, f = secs[rows], frac[rows]
    big = f * (_NANOS // per) > 999_999  # a fraction of at least a millisecond: the case the readers compensate
    wall = s + (big & (s < 0))  # undo the C++ reader's compensation, taken on the wall clock
    utc = wall - rules.offset_cpp(wall)  # invert its zone conversion: wall = utc + offset(utc)
    utc = wall - rules.offset_cpp(utc)
    java_utc = utc - (big & (utc < 0))  # Java's compensation, taken on the UTC instant
    values[rows] = (java_utc + rules.offset_java(java_utc)) * per + f
    return pa.Array.from_buffers(arr.type, len(arr), [arr.buffers()[0], pa.py_buffer(values.tobytes())],
                                 null_count=arr.null_count, offset=0) if arr.offset == 0 else \
        pa.array(values, pa.int64(), mask=arr.is_null().to_numpy(zero_copy_only=False)).cast(arr.type)


# A one-row ORC file Java's ORC writer wrote in zone Asia/Shanghai: TIMESTAMP(9) -1 ns (1969-12-31T23:59:59.
# 999999999). A C++ reader that compensates on the wall clock returns 1970-01-01T00:00:00.999999999.
_PROBE = (
    "T1JDdgCpSRv/eAAB3NZP+AoGCAEQARgGCgYIBRABGAcSAggAEgIIAhoNQXNpYS9TaGFuZ2hhaQoQCgQIAFAACggIAEoAUABYDQgDEDcaCggD"
    "EAAYDSAnKAEiCAgMEgEBGgF0IgIICTABOgQIAFAAOggIAEoAUABYDUAASABYAWIFMS45LjIIPRAAIgIADCgSMAmC9AMDT1JDEw=="
)


@functools.lru_cache(maxsize=1)
def _pyarrow_orc_converts_first() -> bool:
    """Whether the installed pyarrow's ORC reader has the ORC-2151 order (probed once; True if unsure)."""
    try:
        import pyarrow.orc as po  # optional part of pyarrow (see orc_file)
        table = po.ORCFile(io.BytesIO(base64.b64decode(_PROBE))).read()
        return table.column(0).cast(pa.int64())[0].as_py() == _NANOS - 1
    except Exception:  # noqa: BLE001 - no probe (no zone file, ...): assume the library in use has the bug
        return True
