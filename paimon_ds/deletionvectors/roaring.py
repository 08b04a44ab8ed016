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
does the same so that the bytes equal Java's. read32_many / write32_many read and write many bitmaps at
once with each container's kind (mergetree/java_roaring.py folds the aggregation's rbm32 values with them).

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


# container kinds: how a container's values are laid out. The portable format flags run containers and
# tells an array from a bitmap by the cardinality.
ARRAY, BITMAP, RUN = 0, 1, 2

# Many bitmaps at once: their values as ``ids``, int64 ``bitmap << 32 | position``, ascending, so that a
# container is identified by ``ids >> 16`` (bitmap, high 16 bits), and ``kinds`` (int8) for the containers
# in that order. Reading and writing are vectorised over all bitmaps and containers; only bitmap containers
# (8 KiB each) take a Python step each.


def _u16_at(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    if len(at) and (at.min() < 0 or at.max() + 1 >= len(buf)):
        raise RoaringFormatError("roaring bitmap truncated")
    return buf[at].astype(np.int64) | (buf[at + 1].astype(np.int64) << 8)


def _u32_at(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    return _u16_at(buf, at) | (_u16_at(buf, at + 2) << 16)


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ... counts[0] - 1, 0, 1, ... counts[1] - 1, ...: each item's rank within its segment."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)


def container_stats(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(index of each container's first value, container ids, cardinalities, run counts) of ``ids``."""
    cont = ids >> 16
    new = np.ones(len(ids), dtype=bool)
    new[1:] = cont[1:] != cont[:-1]
    firsts = np.flatnonzero(new)
    run_start = new.copy()
    run_start[1:] |= ids[1:] != ids[:-1] + 1
    runs = np.add.reduceat(run_start.astype(np.int64), firsts) if len(ids) else np.empty(0, np.int64)
    return firsts, cont[firsts], np.diff(np.append(firsts, len(ids))), runs


def optimised_kinds(cards: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Kinds of fresh containers after Java's runOptimize: an array up to 4096 values, else a bitmap, and
    runs where that is strictly smaller."""
    base = np.where(cards <= _ARRAY_MAX, ARRAY, BITMAP).astype(np.int8)
    size = np.where(base == ARRAY, 2 * cards, _BITMAP_BYTES)
    return np.where(2 + 4 * runs < size, RUN, base).astype(np.int8)


def read32_many(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, container kinds, the offset after each bitmap) of the 32-bit bitmaps at ``starts`` of ``buf``
    (uint8)."""
    starts = np.asarray(starts, dtype=np.int64)
    count = len(starts)
    cookie = _u32_at(buf, starts)
    with_runs = cookie & 0xFFFF == _COOKIE_RUNS
    if not (with_runs | (cookie == _COOKIE_NO_RUNS)).all():
        raise RoaringFormatError(f"unknown roaring cookie {cookie[~(with_runs | (cookie == _COOKIE_NO_RUNS))][0]}")
    n = np.where(with_runs, (cookie >> 16) + 1, 0)
    if not with_runs.all():
        n[~with_runs] = _u32_at(buf, starts[~with_runs] + 4)
    if (n > 1 << 16).any():
        raise RoaringFormatError(f"a 32-bit roaring bitmap has at most 65536 containers, not {n.max()}")
    header = starts + np.where(with_runs, 4 + (n + 7) // 8, 8)
    has_offsets = ~with_runs | (n >= _NO_OFFSET_THRESHOLD)
    bitmap = np.repeat(np.arange(count, dtype=np.int64), n)
    j = _ranks(n)
    at = header[bitmap] + 4 * j
    keys, cards = _u16_at(buf, at), _u16_at(buf, at + 2) + 1
    kinds = np.where(cards > _ARRAY_MAX, BITMAP, ARRAY).astype(np.int8)
    runs_of = with_runs[bitmap]
    if runs_of.any():
        flag_bytes = buf[np.where(runs_of, starts[bitmap] + 4 + j // 8, 0)]
        kinds[runs_of & ((flag_bytes >> (j % 8)) & 1 == 1)] = RUN
    # each body's start: from the offsets where written, else (runs and fewer than 4 containers) one after
    # the other
    body = np.zeros(len(j), dtype=np.int64)
    with_off = has_offsets[bitmap]
    body[with_off] = starts[bitmap[with_off]] + _u32_at(buf, header[bitmap[with_off]] + 4 * n[bitmap[with_off]]
                                                        + 4 * j[with_off])
    size = np.zeros(len(j), dtype=np.int64)

    def sizes(sel: np.ndarray) -> None:
        size[sel] = np.where(kinds[sel] == ARRAY, 2 * cards[sel], _BITMAP_BYTES)
        run = sel & (kinds == RUN)
        size[run] = 2 + 4 * _u16_at(buf, body[run])

    sizes(with_off)
    for rank in range(_NO_OFFSET_THRESHOLD - 1):
        sel = ~with_off & (j == rank)
        if not sel.any():
            break
        idx = np.flatnonzero(sel)
        body[idx] = header[bitmap[idx]] + 4 * n[bitmap[idx]] if rank == 0 else body[idx - 1] + size[idx - 1]
        sizes(sel)
    ends = np.where(has_offsets, header + 8 * n, header + 4 * n)
    if len(j):
        np.maximum.at(ends, bitmap, body + size)
    if len(ends) and ends.max() > len(buf):
        raise RoaringFormatError("roaring bitmap truncated")
    # the values, container after container
    cont = np.repeat(np.arange(len(j), dtype=np.int64), cards)
    within = _ranks(cards)
    low = np.empty(len(cont), dtype=np.int64)
    kind_of = kinds[cont]
    arr = kind_of == ARRAY
    low[arr] = _u16_at(buf, body[cont[arr]] + 2 * within[arr])
    run_conts = np.flatnonzero(kinds == RUN)
    if len(run_conts):
        nruns = _u16_at(buf, body[run_conts])
        at = np.repeat(body[run_conts] + 2, nruns) + 4 * _ranks(nruns)
        run_start, run_len = _u16_at(buf, at), _u16_at(buf, at + 2) + 1
        per_cont = np.zeros(len(run_conts), dtype=np.int64)
        np.add.at(per_cont, np.repeat(np.arange(len(run_conts)), nruns), run_len)
        if (per_cont != cards[run_conts]).any():
            raise RoaringFormatError("a run container's runs do not add up to its cardinality")
        ends_ = np.cumsum(run_len)
        low[kind_of == RUN] = np.arange(int(ends_[-1]) if len(ends_) else 0, dtype=np.int64) - np.repeat(
            ends_ - run_len - run_start, run_len)
    for c in np.flatnonzero(kinds == BITMAP):  # 8 KiB each: one unpack per container
        bits = np.flatnonzero(np.unpackbits(buf[body[c]:body[c] + _BITMAP_BYTES], bitorder="little"))
        if len(bits) != cards[c]:
            raise RoaringFormatError(f"a bitmap container holds {len(bits)} values, its header says {cards[c]}")
        low[cont == c] = bits
    ids = (bitmap[cont] << 32) | (keys[cont] << 16) | low
    if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():
        raise RoaringFormatError("roaring bitmap values are not in ascending order")
    return ids, kinds, ends


def _put16(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    out[at] = values & 0xFF
    out[at + 1] = (values >> 8) & 0xFF


def _put32(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    _put16(out, at, values & 0xFFFF)
    _put16(out, at + 2, values >> 16)


def write32_many(ids: np.ndarray, kinds: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(bytes as uint8, each bitmap's start and the end: count + 1 offsets) of ``count`` bitmaps in the
    portable format, the containers of ``ids`` in the given ``kinds``."""
    firsts, conts, cards, runs = container_stats(ids)
    kinds = np.asarray(kinds, dtype=np.int8)
    bitmap, keys = conts >> 16, conts & 0xFFFF
    n = np.bincount(bitmap, minlength=count).astype(np.int64)
    with_runs = np.bincount(bitmap, weights=kinds == RUN, minlength=count) > 0
    cookie_size = np.where(with_runs, 4 + (n + 7) // 8, 8)
    has_offsets = ~with_runs | (n >= _NO_OFFSET_THRESHOLD)
    head = cookie_size + 4 * n + np.where(has_offsets, 4 * n, 0)
    size = np.where(kinds == RUN, 2 + 4 * runs, np.where(kinds == BITMAP, _BITMAP_BYTES, 2 * cards))
    totals = head + np.bincount(bitmap, weights=size, minlength=count).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(totals)]).astype(np.int64)
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    base = offsets[:-1]
    _put32(out, base, np.where(with_runs, _COOKIE_RUNS | ((n - 1) << 16), _COOKIE_NO_RUNS))
    _put32(out, base[~with_runs] + 4, n[~with_runs])
    j = _ranks(n)
    run = kinds == RUN
    np.bitwise_or.at(out, base[bitmap[run]] + 4 + j[run] // 8, (1 << (j[run] % 8)).astype(np.uint8))
    at = base[bitmap] + cookie_size[bitmap] + 4 * j
    _put16(out, at, keys)
    _put16(out, at + 2, cards - 1)
    before = np.cumsum(size) - size  # bodies before this one, over all bitmaps
    first_of_bitmap = np.cumsum(n) - n
    body = base[bitmap] + head[bitmap] + before - before[first_of_bitmap[bitmap]]
    off = has_offsets[bitmap]
    _put32(out, base[bitmap[off]] + cookie_size[bitmap[off]] + 4 * n[bitmap[off]] + 4 * j[off],
           body[off] - base[bitmap[off]])
    cont = np.repeat(np.arange(len(conts), dtype=np.int64), cards)
    low = ids & 0xFFFF
    arr = kinds[cont] == ARRAY
    _put16(out, body[cont[arr]] + 2 * _ranks(cards)[arr], low[arr])
    if run.any():
        _put16(out, body[run], runs[run])
        starts_run = np.ones(len(ids), dtype=bool)
        starts_run[1:] = (ids[1:] != ids[:-1] + 1) | (cont[1:] != cont[:-1])
        in_run = run[cont]
        first_values = np.flatnonzero(starts_run & in_run)
        lengths = np.diff(np.append(first_values, len(ids)))
        # a run ends where the next starts, or at its container's end
        lengths = np.minimum(lengths, (firsts[cont[first_values]] + cards[cont[first_values]]) - first_values)
        at = np.repeat(body[run] + 2, runs[run]) + 4 * _ranks(runs[run])
        _put16(out, at, low[first_values])
        _put16(out, at + 2, lengths - 1)
    for c in np.flatnonzero(kinds == BITMAP):  # 8 KiB each
        bits = np.zeros(1 << 16, dtype=np.uint8)
        bits[low[firsts[c]:firsts[c] + cards[c]]] = 1
        out[body[c]:body[c] + _BITMAP_BYTES] = np.packbits(bits, bitorder="little")
    return out, offsets


def decode32(buf: bytes, pos: int = 0) -> tuple[np.ndarray, int]:
    """(sorted uint32 positions, the offset after the bitmap) of a 32-bit roaring bitmap at ``pos``."""
    ids, _, ends = read32_many(np.frombuffer(buf, dtype=np.uint8), np.array([pos]))
    return (ids & 0xFFFFFFFF).astype(np.uint32), int(ends[0])


def encode32(positions: np.ndarray) -> bytes:
    """The portable serialization of a set of 32-bit positions (any order, duplicates allowed), each
    container in the kind Java's runOptimize gives it."""
    values = np.sort(np.asarray(positions, dtype=np.int64))  # (np.unique hashes, slower on millions)
    values = values[np.append(True, values[1:] != values[:-1])] if len(values) else values
    if len(values) and (values[0] < 0 or values[-1] > 0xFFFFFFFF):
        raise ValueError("a 32-bit roaring bitmap holds positions 0 .. 2^32-1")
    _, _, cards, runs = container_stats(values)
    out, _ = write32_many(values, optimised_kinds(cards, runs), 1)
    return out.tobytes()


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
