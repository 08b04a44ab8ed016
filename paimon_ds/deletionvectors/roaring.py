"""Roaring bitmaps in the portable serialization format, as numpy arrays of positions.

The format (RoaringFormatSpec, little-endian throughout), as Java's RoaringBitmap writes it:

* a cookie: ``12346`` then the container count as u32 (no run containers), or ``12347 | (n - 1) << 16``
  followed by a bitset of ``ceil(n / 8)`` bytes flagging the run containers;
* per container its high 16 bits and ``cardinality - 1`` (two u16);
* per container the u32 byte offset of its body, omitted when run containers exist and n < 4;
* the bodies: a run container is a u16 run count then (start, length - 1) u16 pairs; a container of
  more than 4096 values is a 65536-bit bitmap (1024 u64); otherwise the sorted u16 values.

Java optimises runs before serializing (Paimon's RoaringBitmap32.serialize calls runOptimize): a
container is written as runs when that is strictly smaller than its array or bitmap form. The encoder
does the same so that the bytes equal Java's.

The 64-bit format (Paimon's OptimizedRoaringBitmap64, newer Paimon): a u64 bitmap count, then per
bitmap its u32 key (the high 32 bits of the positions) and a 32-bit roaring bitmap as above.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import PaimonDsError

_COOKIE_NO_RUNS = 12346
_COOKIE_RUNS = 12347
_NO_OFFSET_THRESHOLD = 4  # with run containers, offsets are written only from this many containers on
_ARRAY_MAX = 4096  # containers up to this cardinality are sorted arrays
_BITMAP_BYTES = 8192


class RoaringFormatError(PaimonDsError, ValueError):
    """The bytes are not a roaring bitmap in the portable format."""


def _u16(buf: bytes, pos: int, count: int) -> np.ndarray:
    if pos + 2 * count > len(buf):
        raise RoaringFormatError("roaring bitmap truncated")
    return np.frombuffer(buf, dtype="<u2", count=count, offset=pos)


def decode32(buf: bytes, pos: int = 0) -> tuple[np.ndarray, int]:
    """(sorted uint32 positions, the offset after the bitmap) of a 32-bit roaring bitmap at ``pos``."""
    if pos + 4 > len(buf):
        raise RoaringFormatError("roaring bitmap truncated")
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == _COOKIE_RUNS:
        n = (cookie >> 16) + 1
        flags = np.frombuffer(buf, dtype=np.uint8, count=(n + 7) // 8, offset=pos + 4)
        is_run = np.unpackbits(flags, bitorder="little")[:n].astype(bool)
        pos += 4 + len(flags)
        has_offsets = n >= _NO_OFFSET_THRESHOLD
    elif cookie == _COOKIE_NO_RUNS:
        (n,) = struct.unpack_from("<I", buf, pos + 4)
        is_run = np.zeros(n, dtype=bool)
        pos += 8
        has_offsets = True
    else:
        raise RoaringFormatError(f"unknown roaring cookie {cookie}")
    header = _u16(buf, pos, 2 * n).astype(np.uint32)
    keys, cards = header[0::2], header[1::2] + 1
    pos += 4 * n + (4 * n if has_offsets else 0)  # bodies follow each other: offsets are not needed
    parts = []
    for i in range(n):
        if is_run[i]:
            (runs,) = struct.unpack_from("<H", buf, pos)
            pairs = _u16(buf, pos + 2, 2 * runs).astype(np.int64)
            pos += 2 + 4 * runs
            starts, lengths = pairs[0::2], pairs[1::2] + 1
            # every run start..start+length-1, vectorised: offsets within a run added to its start
            ends = np.cumsum(lengths)
            low = np.arange(ends[-1] if runs else 0, dtype=np.int64) - np.repeat(ends - lengths - starts, lengths)
        elif cards[i] > _ARRAY_MAX:
            if pos + _BITMAP_BYTES > len(buf):
                raise RoaringFormatError("roaring bitmap truncated")
            bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8, count=_BITMAP_BYTES, offset=pos),
                                 bitorder="little")
            low = np.flatnonzero(bits)
            pos += _BITMAP_BYTES
        else:
            low = _u16(buf, pos, int(cards[i]))
            pos += 2 * int(cards[i])
        if len(low) != cards[i]:
            raise RoaringFormatError(f"container {i} holds {len(low)} values, its header says {cards[i]}")
        parts.append((keys[i] << 16) | np.asarray(low, dtype=np.uint32))
    values = np.concatenate(parts).astype(np.uint32) if parts else np.empty(0, np.uint32)
    return values, pos


def encode32(positions: np.ndarray) -> bytes:
    """The portable serialization of a set of 32-bit positions (any order, duplicates allowed)."""
    values = np.unique(np.asarray(positions, dtype=np.int64))
    if len(values) and (values[0] < 0 or values[-1] > 0xFFFFFFFF):
        raise ValueError("a 32-bit roaring bitmap holds positions 0 .. 2^32-1")
    values = values.astype(np.uint32)
    high = values >> 16
    bounds = np.flatnonzero(np.diff(high)) + 1
    starts = np.concatenate([[0], bounds]) if len(values) else np.empty(0, np.int64)
    ends = np.concatenate([bounds, [len(values)]]) if len(values) else np.empty(0, np.int64)
    headers, bodies, run_flags = [], [], []
    for s, e in zip(starts, ends):
        low = (values[s:e] & 0xFFFF).astype(np.uint16)
        card = len(low)
        run_starts = np.concatenate([[0], np.flatnonzero(np.diff(low.astype(np.int32)) != 1) + 1])
        runs = len(run_starts)
        current_size = 2 * card if card <= _ARRAY_MAX else _BITMAP_BYTES
        if 2 + 4 * runs < current_size:  # Java's runOptimize: runs only when strictly smaller
            run_ends = np.concatenate([run_starts[1:], [card]])
            pairs = np.empty(2 * runs, dtype="<u2")
            pairs[0::2] = low[run_starts]
            pairs[1::2] = run_ends - run_starts - 1
            bodies.append(struct.pack("<H", runs) + pairs.tobytes())
            run_flags.append(True)
        elif card <= _ARRAY_MAX:
            bodies.append(low.astype("<u2").tobytes())
            run_flags.append(False)
        else:
            bits = np.zeros(1 << 16, dtype=np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
            run_flags.append(False)
        headers += [int(high[s]), card - 1]
    n = len(bodies)
    header = np.asarray(headers, dtype="<u2").tobytes()
    if any(run_flags):
        flags = np.packbits(np.asarray(run_flags, dtype=np.uint8), bitorder="little").tobytes()
        out = [struct.pack("<I", _COOKIE_RUNS | ((n - 1) << 16)), flags, header]
        with_offsets = n >= _NO_OFFSET_THRESHOLD
        start = 4 + len(flags) + 4 * n + (4 * n if with_offsets else 0)
    else:
        out = [struct.pack("<II", _COOKIE_NO_RUNS, n), header]
        with_offsets = True
        start = 8 + 8 * n
    if with_offsets and n:
        offsets = np.cumsum([0] + [len(b) for b in bodies[:-1]], dtype=np.int64) + start
        out.append(offsets.astype("<u4").tobytes())
    out += bodies
    return b"".join(out)


def decode64(buf: bytes, pos: int = 0) -> tuple[np.ndarray, int]:
    """(sorted int64 positions, the offset after the bitmap) of a 64-bit roaring bitmap at ``pos``."""
    if pos + 8 > len(buf):
        raise RoaringFormatError("roaring bitmap truncated")
    (count,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    parts = []
    for _ in range(count):
        (key,) = struct.unpack_from("<I", buf, pos)
        low, pos = decode32(buf, pos + 4)
        parts.append((np.int64(key) << 32) | low.astype(np.int64))
    values = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return values, pos


def encode64(positions: np.ndarray) -> bytes:
    """The 64-bit portable serialization (one 32-bit bitmap per high key 0 .. max, as Paimon writes it)."""
    values = np.unique(np.asarray(positions, dtype=np.int64))
    if len(values) and values[0] < 0:
        raise ValueError("positions are non-negative")
    keys = values >> 32
    count = int(keys[-1]) + 1 if len(values) else 0
    out = [struct.pack("<Q", count)]
    for key in range(count):
        out += [struct.pack("<I", key), encode32(values[keys == key] & 0xFFFFFFFF)]
    return b"".join(out)
