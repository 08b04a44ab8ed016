"""Serialized primary keys of the cross-partition global index: encoding, assigner channels and KeySet.

A key is the serialized BinaryRow of the whole primary key (``format.binary_row.encode_rows``), so any key
type works. ``key_channels`` / ``row_channels`` are the key-hash shuffle before the assigners
(flink/sink/index/KeyPartRowChannelComputer.java: ``abs(hash(primary key BinaryRow) % n)``). ``KeySet``
holds the distinct keys of a batch grouped by length and sorted bytewise, the form in which
``key_index.KeyIndex`` looks keys up and writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.binary_row import encode_rows
from ..format.bucket import hash_rows
from ..schema.types import DataType, SchemaError, conform_array, to_arrow_type

if TYPE_CHECKING:
    from ..schema.manager import TableSchema


def binary_buffers(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes, n + 1 int64 offsets into them) of a binary array without nulls."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets


def large_binary_array(data: np.ndarray, offsets: np.ndarray) -> pa.LargeBinaryArray:
    """The large_binary array of values ``data[offsets[i]:offsets[i + 1]]``, without copying."""
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(offsets) - 1,
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _channels_of(data: np.ndarray, offsets: np.ndarray, num_channels: int) -> np.ndarray:
    if len(offsets) <= 1:
        return np.zeros(0, dtype=np.int32)
    start, end = int(offsets[0]), int(offsets[-1])
    h = hash_rows(np.ascontiguousarray(data[start:end]), offsets - start).astype(np.int64)
    return np.abs(np.fmod(h, num_channels)).astype(np.int32)


def key_channels(keys: pa.Array | pa.ChunkedArray, num_channels: int) -> np.ndarray:
    """The assigner of each serialized key: ``abs(hash(key BinaryRow) % n)`` (KeyPartRowChannelComputer)."""
    data, offsets = binary_buffers(keys)
    return _channels_of(data, offsets, num_channels)


def input_column(batch: pa.RecordBatch, name: str, arrow_type: pa.DataType) -> pa.Array:
    """Column ``name`` of an input batch as ``arrow_type``; a missing column is a SchemaError."""
    idx = batch.schema.get_field_index(name)
    if idx < 0:
        raise SchemaError(f"the input has no column {name!r} (columns: {', '.join(batch.schema.names)})")
    col = batch.column(idx)
    return conform_array(col, arrow_type)


def encode_keys(batch: pa.RecordBatch, names: list[str], types: list[DataType]) -> pa.LargeBinaryArray:
    """The serialized BinaryRow of ``names`` for every row of the batch, vectorised."""
    cols = [input_column(batch, n, to_arrow_type(t)) for n, t in zip(names, types)]
    data, offsets = encode_rows(cols, types)
    return large_binary_array(data, offsets)


def row_channels(schema: TableSchema, batch: pa.RecordBatch, num_channels: int) -> np.ndarray:
    """The assigner of each input row (the key-hash shuffle before ``GlobalIndexAssigner.process``)."""
    pk = list(schema.primary_keys)
    types = [schema.field(k).type for k in pk]
    cols = [input_column(batch, n, to_arrow_type(t)) for n, t in zip(pk, types)]
    data, offsets = encode_rows(cols, types)
    return _channels_of(data, offsets, num_channels)


class KeySet:
    """Distinct serialized keys, grouped by byte length and sorted bytewise within a group.

    Key ids run through the groups in that order, so a lookup or an insert visits SQLite's B-tree pages
    in order. BinaryRows are a multiple of 8 bytes long: a key is a row of big-endian 64-bit words whose
    numeric order is the byte order SQLite compares BLOBs in, and numpy sorts those (less memory and
    time than a hash table over the keys).
    """

    def __init__(self, groups: list[tuple[int, np.ndarray]]) -> None:
        self.groups = groups  # (length, (m, length) uint8 matrix of distinct, sorted keys)
        self.size = sum(len(m) for _, m in groups)

    def __len__(self) -> int:
        return self.size

    @staticmethod
    def of(data: np.ndarray, offsets: np.ndarray) -> tuple[KeySet, np.ndarray]:
        """The distinct keys of rows ``data[offsets[i]:offsets[i + 1]]``, and each row's key id."""
        lengths = offsets[1:] - offsets[:-1]
        n = len(lengths)
        kid = np.empty(n, dtype=np.int64)
        groups: list[tuple[int, np.ndarray]] = []
        if n == 0:
            return KeySet(groups), kid
        if offsets[0] % 8:  # a slice of someone else's buffer: rebase so keys start on word boundaries
            data = np.ascontiguousarray(data[int(offsets[0]):int(offsets[-1])])
            offsets = offsets - offsets[0]
        first = int(lengths[0])
        same = bool((lengths == first).all())
        base = 0
        for length in ([first] if same else np.unique(lengths).tolist()):
            length = int(length)
            if length % 8 or length == 0:
                raise ValueError(f"a serialized key of {length} bytes is not a BinaryRow")
            if same:
                rows = None
                mat = data[int(offsets[0]):int(offsets[-1])].reshape(-1, length)
            else:
                rows = np.flatnonzero(lengths == length)
                words = data[:int(offsets[-1]) + (-int(offsets[-1])) % 8].view(np.uint64)
                mat = words[(offsets[rows] // 8)[:, None] + np.arange(length // 8)].view(np.uint8).reshape(-1, length)
            words = np.ascontiguousarray(mat).view(">u8")
            varying = [c for c in range(words.shape[1]) if not (words[:, c] == words[0, c]).all()]
            cols = [words[:, c].astype(np.uint64) for c in varying]
            if not cols:
                order = np.arange(len(mat))
            elif len(cols) == 1:
                order = np.argsort(cols[0], kind="stable")
            else:
                order = np.lexsort(cols[::-1])
            differs = np.zeros(len(order), dtype=bool)
            differs[0] = True
            for col in cols:
                c = col[order]
                differs[1:] |= c[1:] != c[:-1]
            gid = np.cumsum(differs) - 1
            ids = np.empty(len(order), dtype=np.int64)
            ids[order] = base + gid
            if rows is None:
                kid[:] = ids
            else:
                kid[rows] = ids
            groups.append((length, np.ascontiguousarray(mat[order[differs]])))
            base += int(differs.sum())
        return KeySet(groups), kid

    @staticmethod
    def of_array(keys: pa.Array | pa.ChunkedArray) -> tuple[KeySet, np.ndarray]:
        return KeySet.of(*binary_buffers(keys))

    def take(self, ids: np.ndarray) -> KeySet:
        """The keys of ascending ids (sorted order kept)."""
        groups = []
        base = 0
        for length, mat in self.groups:
            lo, hi = np.searchsorted(ids, [base, base + len(mat)])
            if hi > lo:
                groups.append((length, mat[ids[lo:hi] - base]))
            base += len(mat)
        return KeySet(groups)

    def to_arrow(self) -> pa.LargeBinaryArray:
        lengths = np.concatenate([np.full(len(m), length, dtype=np.int64) for length, m in self.groups]) \
            if self.groups else np.zeros(0, np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.concatenate([m.reshape(-1) for _, m in self.groups]) if self.groups else np.zeros(0, np.uint8)
        return large_binary_array(data, offsets)
