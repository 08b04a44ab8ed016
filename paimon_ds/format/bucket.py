"""Paimon's fixed-bucket function, vectorised over a batch.

bucket = abs(hashBytesByWords(BinaryRow(bucket key)) % numBuckets), with Java's signed 32-bit
arithmetic and truncating remainder. hashBytesByWords is murmur3 x86_32 with seed 42 over
4-byte little-endian words; a BinaryRow's length is always a multiple of 8, so there is no tail.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..schema.types import DataType
from .binary_row import encode_rows, fixed_width_rows

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
SEED = 42


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def hash_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Murmur-hash-by-words of every row in ``data[offsets[i]:offsets[i+1]]`` as int32."""
    n = len(offsets) - 1
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    words = data.view(np.uint32)
    word_start = offsets[:-1] // 4
    n_words = lengths // 4
    if n and lengths.min() == lengths.max():  # rows of one length (fixed-width keys): a matrix, no gathers
        return hash_words(words[offsets[0] // 4: offsets[-1] // 4].reshape(n, -1))
    h = np.full(n, SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        max_words = int(n_words.max()) if n else 0
        for j in range(max_words):
            active = n_words > j
            if active.all():
                k = words[word_start + j]
                k = _rotl(k * _C1, 15) * _C2
                h ^= k
                h = _rotl(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
            else:
                idx = np.nonzero(active)[0]
                k = words[word_start[idx] + j]
                k = _rotl(k * _C1, 15) * _C2
                hh = h[idx] ^ k
                h[idx] = _rotl(hh, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= lengths.astype(np.uint32)
    return fmix32(h).view(np.int32)


def hash_words(words: np.ndarray) -> np.ndarray:
    """Murmur-hash-by-words of rows of equal length, one row of ``words`` (uint32) each, as int32."""
    n, width = words.shape
    # while every row's words so far were zero (a BinaryRow's header and null bits, no field null), every
    # row has the same hash state: mix it once, as a scalar
    state: np.uint32 | np.ndarray = np.uint32(SEED)
    with np.errstate(over="ignore"):
        for j in range(width):
            column = words[:, j]
            if isinstance(state, np.ndarray) or column.any():
                state = state ^ (_rotl(column * _C1, 15) * _C2)
            state = _rotl(state, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h = np.full(n, state, dtype=np.uint32) if not isinstance(state, np.ndarray) else state
        h ^= np.uint32(4 * width)
    return fmix32(h).view(np.int32)


def fmix32(h: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finaliser, in place on a uint32 array (which it returns)."""
    with np.errstate(over="ignore"):
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h


def row_hashes(columns: Sequence[pa.Array], types: Sequence[DataType]) -> np.ndarray:
    """Java's ``BinaryRow.hashCode()`` of each row of the columns (int32): the raw hash behind the fixed
    bucket, and the key hash dynamic-bucket tables keep in their hash index (paimon_ds.index)."""
    words = fixed_width_rows(columns, types)
    if words is not None:
        return hash_words(words)
    data, offsets = encode_rows(columns, types)
    return hash_rows(data, offsets)


def bucket_ids(columns: Sequence[pa.Array], types: Sequence[DataType], num_buckets: int) -> np.ndarray:
    """The fixed bucket of every row, as Java's ``Math.abs(hash % numBuckets)``."""
    h = row_hashes(columns, types).astype(np.int64)
    return np.abs(np.fmod(h, num_buckets)).astype(np.int32)
