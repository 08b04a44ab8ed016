"""The aggregation engine's sketch and bitmap functions: `hll_sketch`, `theta_sketch`, `rbm32`, `rbm64`.

Each folds a key's rows of a VARBINARY column holding a serialized sketch or bitmap into their union,
serialized in the form Java Paimon writes, so that a table either side wrote reads the same, byte for byte,
on the other. As Java's FieldAggregators do (FieldHllSketchAgg, FieldThetaSketchAgg, FieldRoaringBitmap32Agg,
FieldRoaringBitmap64Agg; the same in Paimon 0.9 and 1.x), nulls are skipped, a key whose rows are all null
gets null, and a key with one non-null value keeps those bytes untouched (Java returns the value itself:
nothing is deserialized). Several values fold left, in sequence order, one union at a time, with the result
serialized after each (`agg(accumulator, input)`): the bytes can depend on the grouping, so the fold is
Java's, not one union of all. None of them retracts (Java throws; `fields.<f>.ignore-retract` skips).

* hll_sketch: HllSketchUtil.union: a union whose lgMaxK is the input's lgK, fed the input then the
  accumulator, its result as HLL_4 in the compact form. Apache DataSketches' C++ library (the `datasketches`
  package) computes the bytes of the Java library Paimon bundles (datasketches-java 4.2) but for the HIP
  accumulator in two cases, where it is steered to Java's value (see _fold_hll and _hll_union).
* theta_sketch: ThetaSketch.union: a union of 4096 nominal entries (seed 9001) of the accumulator then the
  input, its ordered compact result. The C++ library's bytes differ from Java's in three header fields only,
  set here as Java writes them (see java_theta_bytes).
* rbm32, rbm64: Java RoaringBitmap's OR and serialization, reproduced in java_roaring.py.

Checked against Java Paimon 0.9 on random folds (tests/interop/test_sketch_aggregates.py, and while
writing this, several hundred folds of mixed lgK, HLL types, modes and theta sizes: byte-identical).
HLL and theta take one Python call into the library per value of a group (groups are usually a few rows);
rbm32 folds all groups at once, vectorised; rbm64 folds per group in Python.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from ..deletionvectors.roaring import RoaringFormatError
from ..errors import PaimonDsError
from . import java_roaring

SKETCH_FUNCTIONS = ("hll_sketch", "theta_sketch", "rbm32", "rbm64")


class SketchError(PaimonDsError, ValueError):
    """A value of a sketch or bitmap column cannot be read, or the library to read it is missing."""


def _datasketches() -> Any:
    try:
        # deferred: a Spark Connect server runs paimon_ds from a zip without compiled packages, and only a
        # table with hll_sketch / theta_sketch columns needs this one
        import datasketches
    except ImportError as e:
        raise SketchError("the aggregate functions hll_sketch and theta_sketch need the `datasketches` package "
                          "(Apache DataSketches, a dependency of paimon_ds): pip install 'datasketches>=5.2'") from e
    return datasketches


_HLL_FLAGS, _HLL_OUT_OF_ORDER, _HLL_MODE, _HLL_MODE_HLL = 5, 0x10, 7, 2


def _in_order(buf: bytes) -> bytes:
    out = bytearray(buf)
    out[_HLL_FLAGS] &= ~_HLL_OUT_OF_ORDER
    return bytes(out)


def _hll_union(ds: Any, acc: bytes, value: bytes, in_order: bool) -> bytes:
    """HllSketchUtil.union(acc, value): a union of the value's lgK fed the value, then the accumulator."""
    if in_order:
        acc, value = _in_order(acc), _in_order(value)
    try:
        incoming = ds.hll_sketch.deserialize(value)
        lg_k = incoming.lg_config_k
        ours = ds.hll_sketch.deserialize(acc)
        if ours.lg_config_k > lg_k and acc[_HLL_MODE] & 3 == _HLL_MODE_HLL:
            # Java's Union.downsample rebuilds the registers' KxQ sums before the value's coupons are merged
            # in (which add to the HIP accumulator by them); C++ merges the coupons first. Downsampled in a
            # union of its own, the KxQ sums are rebuilt first here too (they are exact sums of powers of 2)
            alone = ds.hll_union(lg_k)
            alone.update(ours)
            ours = alone.get_result(ds.tgt_hll_type.HLL_8)
        union = ds.hll_union(lg_k)
        union.update(incoming)
        union.update(ours)
    except (RuntimeError, ValueError, IndexError) as e:
        raise SketchError(f"not a serialized HLL sketch: {e}") from e
    return union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact()


def _fold_hll(values: list[bytes]) -> bytes:
    """HllSketchUtil.union, one value at a time. Where a sketch is flagged out of order (a union's result),
    the C++ library drops its HIP accumulator on reading and stops accumulating it, where Java keeps and
    accumulates it (AbstractHllArray.hipAndKxQIncrementalUpdate); the estimate ignores it then, but the
    bytes hold it. So such a union is computed a second time with the flags cleared, which accumulates as
    Java does, and the result takes the first one's flag."""
    ds = _datasketches()
    acc = values[0]
    for value in values[1:]:
        result = _hll_union(ds, acc, value, in_order=False)
        if (acc[_HLL_FLAGS] | value[_HLL_FLAGS]) & _HLL_OUT_OF_ORDER:  # (both were read: longer than that)
            in_order = bytearray(_hll_union(ds, acc, value, in_order=True))
            in_order[_HLL_FLAGS] &= ~_HLL_OUT_OF_ORDER
            in_order[_HLL_FLAGS] |= result[_HLL_FLAGS] & _HLL_OUT_OF_ORDER
            result = bytes(in_order)
        acc = result
    return acc


# theta sketch preamble (DataSketches' serialization version 3): byte 0 the preamble longs (low 6 bits),
# 2 the family (2 QuickSelect update sketch, 3 compact), 3 lgNomLongs, 4 lgArrLongs, 5 the flags, 6-7 the
# seed hash; then the retained count (i32 at 8), p (f32 at 12), theta (i64 at 16) as far as the preamble goes
_EMPTY = 0x04
_READ_ONLY, _COMPACT, _ORDERED, _SINGLE_ITEM = 0x02, 0x08, 0x10, 0x20
_FAMILY_UPDATE, _FAMILY_COMPACT = 2, 3
_THETA_MAX = (1 << 63) - 1


def java_theta_bytes(buf: bytes) -> bytes:
    """A compact theta sketch the C++ library serialized, as datasketches-java 4.2 writes the same sketch
    (CompactOperations.loadCompactMemory, EmptyCompactSketch, SingleItemSketch): p as 1.0 where the
    preamble holds it, the single-item flag on a one-entry exact sketch, seed hash 0 on an empty one."""
    out = bytearray(buf)
    if out[0] & 0x3F == 1:
        if out[5] & _EMPTY:
            out[6:8] = b"\0\0"
        else:
            out[5] |= _SINGLE_ITEM
    else:
        out[12:16] = struct.pack("<f", 1.0)
    return bytes(out)


def _compact_theta(ds: Any, buf: bytes) -> Any:
    """A theta sketch from bytes Java's Union.union(Memory) takes: a compact sketch, or an update sketch's
    image (its hash table, compacted here as Java's union reads it: the non-zero hashes below theta)."""
    if len(buf) >= 8 and buf[1] == 3 and buf[2] == _FAMILY_UPDATE:
        pre_longs, lg_arr, flags = buf[0] & 0x3F, buf[4], buf[5]
        if pre_longs != 3 or len(buf) < 24 + (8 << lg_arr):
            raise SketchError("theta update sketch truncated")
        theta = struct.unpack_from("<q", buf, 16)[0]
        table = np.frombuffer(buf, dtype="<i8", count=1 << lg_arr, offset=24)
        hashes = np.sort(table[(table > 0) & (table < theta)])
        empty = bool(flags & _EMPTY) or (len(hashes) == 0 and theta == _THETA_MAX)
        if empty:
            buf = struct.pack("<BBBBBBH", 1, 3, _FAMILY_COMPACT, 0, 0,
                              _READ_ONLY | _COMPACT | _ORDERED | _EMPTY, struct.unpack_from("<H", buf, 6)[0])
        else:
            header = struct.pack("<BBBBBBHif", 3, 3, _FAMILY_COMPACT, 0, 0, _READ_ONLY | _COMPACT | _ORDERED,
                                 struct.unpack_from("<H", buf, 6)[0], len(hashes), 1.0)
            buf = header + struct.pack("<q", theta) + hashes.astype("<i8").tobytes()
    try:
        return ds.compact_theta_sketch.deserialize(buf)
    except (RuntimeError, ValueError) as e:
        raise SketchError(f"not a serialized theta sketch: {e}") from e


def _fold_theta(values: list[bytes]) -> bytes:
    ds = _datasketches()
    acc = values[0]
    for value in values[1:]:
        union = ds.theta_union()  # Sketches.setOperationBuilder().buildUnion(): lgK 12, seed 9001, p 1
        union.update(_compact_theta(ds, acc))
        union.update(_compact_theta(ds, value))
        acc = java_theta_bytes(union.get_result().serialize())
    return acc


def _per_group(fold: Callable[[list[bytes]], bytes]) -> Callable[[pa.Array, np.ndarray], pa.Array]:
    def fold_groups(values: pa.Array, sizes: np.ndarray) -> pa.Array:
        items = values.to_pylist()
        bounds = np.cumsum(sizes)
        # one Python fold per group of several values: the library works on one sketch at a time
        return pa.array([fold(items[hi - n:hi]) for hi, n in zip(bounds.tolist(), sizes.tolist())], pa.binary())
    return fold_groups


def _fold_rbm32_groups(values: pa.Array, sizes: np.ndarray) -> pa.Array:
    """All groups folded at once, vectorised over them (java_roaring.fold32)."""
    values = values.cast(pa.large_binary())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset:values.offset + len(values) + 1]
    data = values.buffers()[2]
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    try:
        out, out_offsets = java_roaring.fold32(buf, offsets[:-1], offsets[1:], sizes)
    except RoaringFormatError as e:
        raise SketchError(f"not a serialized 32-bit roaring bitmap: {e}") from e
    return pa.Array.from_buffers(pa.large_binary(), len(sizes), [None, pa.py_buffer(out_offsets),
                                                                 pa.py_buffer(out)])


def _fold_rbm64(values: list[bytes]) -> bytes:
    try:
        return java_roaring.fold64(values)
    except RoaringFormatError as e:
        raise SketchError(f"not a serialized 64-bit roaring bitmap: {e}") from e


_FOLDS: dict[str, Callable[[pa.Array, np.ndarray], pa.Array]] = {
    "hll_sketch": _per_group(_fold_hll), "theta_sketch": _per_group(_fold_theta), "rbm32": _fold_rbm32_groups,
    "rbm64": _per_group(_fold_rbm64)}


def union_groups(function: str, values: pa.Array | pa.ChunkedArray, starts: np.ndarray) -> pa.Array:
    """One value per group of ``values`` (a binary column of a key-sorted table; ``starts``: the index of
    each key's first row): the union of its non-null values as ``function`` folds them, null where all
    are null, the value itself where it is the only one."""
    fold = _FOLDS[function]
    out_type = values.type
    if isinstance(values, pa.ChunkedArray):
        if values.nbytes >= 1 << 31:  # more than binary's 32-bit offsets hold in one array
            values = values.cast(pa.large_binary())
        values = values.combine_chunks()
    starts = np.asarray(starts, dtype=np.int64)
    valid_rows = np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))
    group_of_valid = np.searchsorted(starts, valid_rows, side="right") - 1
    per_group = np.bincount(group_of_valid, minlength=len(starts))
    first_valid = np.full(len(starts), -1, dtype=np.int64)
    first_valid[group_of_valid[::-1]] = valid_rows[::-1]  # each group's first non-null row
    several = np.flatnonzero(per_group > 1)
    if not len(several):
        return values.take(pa.array(first_valid, mask=first_valid < 0)).cast(out_type)
    folded = fold(values.take(pa.array(valid_rows[np.isin(group_of_valid, several)])), per_group[several])
    indices = first_valid.copy()
    indices[several] = len(values) + np.arange(len(several))
    merged = pa.concat_arrays([values, folded.cast(values.type)])
    return merged.take(pa.array(indices, mask=indices < 0)).cast(out_type)


# per function, its union over groups as the aggregation engine calls it: (values, starts) -> one value a group
UNIONS: dict[str, Callable[[pa.Array | pa.ChunkedArray, np.ndarray], pa.Array]] = {
    name: functools.partial(union_groups, name) for name in SKETCH_FUNCTIONS}
