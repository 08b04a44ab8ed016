"""The numpy roaring codec: round trips, the formats' edge cases, and bytes equal to Java's RoaringBitmap."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.deletionvectors import roaring
from paimon_ds.deletionvectors.index_file import MAGIC_64, DeletionVectorError, parse_vector, serialize_vector

RNG = np.random.default_rng(7)
SETS = {
    "single": np.array([0]),
    "tie": np.array([1, 2, 3]),  # 3 values as array (6 bytes) or one run (6 bytes): Java keeps the array
    "run": np.arange(10, 20),
    "sparse": RNG.choice(1 << 20, 1000, replace=False),
    "dense": RNG.choice(1 << 16, 5000, replace=False),  # > 4096 values in one container: a bitmap
    "evens": np.arange(0, 200_000, 2),  # bitmaps in 4 containers
    "full": np.arange(0, 70_000),  # a full container: one run
    "two-runs": np.concatenate([np.arange(5, 100), np.arange(70_000, 70_003)]),  # runs, < 4 containers
    "mixed": np.concatenate([np.arange(0, 50), RNG.choice(np.arange(65536, 131072), 4500, replace=False),
                             np.array([200_000, 200_002]), np.arange(300_000, 301_000),
                             RNG.choice(np.arange(400_000, 465_536), 9000, replace=False)]),
    "high": np.array([2_147_483_000, 2_147_483_646, 2_147_483_647]),
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_round_trip(name: str) -> None:
    values = SETS[name]
    data = roaring.encode32(values)
    decoded, end = roaring.decode32(data)
    assert end == len(data)
    assert decoded.tolist() == sorted(set(values.tolist()))
    data64 = roaring.encode64(values)
    decoded64, end64 = roaring.decode64(data64)
    assert end64 == len(data64)
    assert decoded64.tolist() == sorted(set(values.tolist()))


def test_empty_and_formats() -> None:
    assert roaring.encode32(np.array([], np.int64)) == struct.pack("<II", 12346, 0)
    assert roaring.decode32(struct.pack("<II", 12346, 0))[0].tolist() == []
    # the run cookie carries the container count; one run [10, 19], no offsets below 4 containers
    assert roaring.encode32(np.arange(10, 20)) == struct.pack("<IB", 12347, 1) + struct.pack("<HHHHH", 0, 9, 1, 10, 9)
    # an array container: cookie, count, (key, card - 1), offset, values
    assert roaring.encode32(np.array([1, 5])) == struct.pack("<IIHHIHH", 12346, 1, 0, 1, 16, 1, 5)
    positions = np.array([3, (1 << 32) + 7, (5 << 32) + 1])
    decoded, _ = roaring.decode64(roaring.encode64(positions))
    assert decoded.tolist() == positions.tolist()
    with pytest.raises(roaring.RoaringFormatError):
        roaring.decode32(struct.pack("<II", 999, 0))
    with pytest.raises(roaring.RoaringFormatError):
        roaring.decode32(roaring.encode32(np.arange(0, 3000, 2))[:-10])


def test_vector_frames() -> None:
    frame = serialize_vector(np.array([1, 4, 9]))
    size, magic = struct.unpack_from(">ii", frame)
    assert (size, magic, len(frame)) == (len(frame) - 8, 1581511376, size + 8)
    assert struct.unpack_from(">I", frame, 4 + size)[0] == zlib.crc32(frame[4:4 + size])
    assert parse_vector(frame, 0, size).tolist() == [1, 4, 9]
    with pytest.raises(DeletionVectorError, match="size"):
        parse_vector(frame, 0, size + 1)
    broken = frame[:-1] + bytes([frame[-1] ^ 1])
    with pytest.raises(DeletionVectorError, match="checksum"):
        parse_vector(broken, 0, size)
    # a 64-bit vector (newer Paimon's Bitmap64DeletionVector): little-endian magic, range counts the frame
    body = struct.pack("<i", MAGIC_64) + roaring.encode64(np.array([2, (1 << 32) + 3]))
    frame64 = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    assert parse_vector(frame64, 0, len(frame64)).tolist() == [2, (1 << 32) + 3]
    with pytest.raises(ValueError, match="2147483647"):
        serialize_vector(np.array([1 << 31]))


def test_bytes_equal_java(java_oracle, tmp_path) -> None:
    from .java_scripts import ROARING_BYTES
    names = sorted(SETS)
    data = pa.table({"set": pa.array([i for i, n in enumerate(names) for _ in SETS[n]], pa.int32()),
                     "pos": pa.array(np.concatenate([SETS[n] for n in names]).astype(np.int32))})
    out = java_oracle.exec(str(tmp_path / "wh/db.db/none"), ROARING_BYTES, data)
    java = dict(line.split() for line in out.splitlines() if line and line[0].isdigit())
    assert len(java) == len(names)
    for i, name in enumerate(names):
        assert roaring.encode32(SETS[name]).hex() == java[str(i)], name
