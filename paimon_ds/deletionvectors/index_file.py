"""Deletion-vector index files (`index/index-<uuid>-<n>`, or in the bucket's directory: see index/paths.py;
index type DELETION_VECTORS).

Layout (Paimon 0.9 DeletionVectorsIndexFile / DeletionVectorIndexFileWriter; big-endian ints): one
version byte (1), then per data file one deletion vector:

* 32-bit vectors (BitmapDeletionVector, all Paimon versions): length n (u32 BE), then n bytes: the
  magic 1581511376 (BE) and the 32-bit roaring bitmap; then the CRC32 of those n bytes (BE). The
  index manifest's range of the data file is (offset of the length field, n).
* 64-bit vectors (Bitmap64DeletionVector, `deletion-vectors.bitmap64` in newer Paimon): the same
  frame, but the magic 1681511377 is little-endian, the bitmap is a 64-bit roaring bitmap, and the
  range's length counts the whole frame (n + 8).

A reader tells the two apart by the magic, as Java's DeletionVector.read does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptFileError, PaimonDsError
from ..fs.file_io import FileIO
from ..index.hash_index import IndexFileNamer
from ..index.manifest import DELETION_VECTORS_INDEX, IndexFileMeta, IndexManifestFile
from ..index.paths import index_file_path, new_index_file_path
from . import roaring
from .roaring import RoaringFormatError

if TYPE_CHECKING:
    from ..store.file_store import FileStore

VERSION = 1
MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
_MAGIC_64_AS_BE = struct.unpack(">i", struct.pack("<i", MAGIC_64))[0]


class DeletionVectorError(PaimonDsError, ValueError):
    """A deletion vector file does not match its index manifest entry."""


@dataclass(frozen=True)
class DeletionFile:
    """Where a data file's deletion vector is: Paimon's DeletionFile (index file path, offset, length)."""

    path: str
    offset: int
    length: int


def deletion_files(table: FileStore, partition: bytes, bucket: int,
                   index_files: list[IndexFileMeta]) -> dict[str, DeletionFile]:
    """Data file name -> its deletion file, from the DELETION_VECTORS index files of a bucket."""
    out = {}
    for f in index_files:
        path = index_file_path(table, partition, bucket, f)
        for name, offset, length in f.dv_ranges or ():
            out[name] = DeletionFile(path, offset, length)
    return out


def parse_vector(buf: bytes, offset: int, length: int | None, where: str = "") -> np.ndarray:
    """The deleted positions (sorted int64) of the vector whose frame starts at ``offset`` of ``buf``."""
    if offset + 8 > len(buf):
        raise DeletionVectorError(f"deletion vector at {where}:{offset} lies beyond the file's {len(buf)} bytes")
    size, magic = struct.unpack_from(">ii", buf, offset)
    if magic == MAGIC_32:
        expected = length
    elif magic == _MAGIC_64_AS_BE:
        expected = None if length is None else length - 8
    else:
        raise DeletionVectorError(f"invalid deletion vector magic number {magic} at {where}:{offset}")
    if expected is not None and size != expected:
        raise DeletionVectorError(f"deletion vector size {size} at {where}:{offset} differs from the manifest's "
                                  f"{expected}")
    body = buf[offset + 4:offset + 4 + size]
    if len(body) != size or offset + 8 + size > len(buf):
        raise DeletionVectorError(f"deletion vector at {where}:{offset} is truncated")
    (crc,) = struct.unpack_from(">I", buf, offset + 4 + size)
    if crc != zlib.crc32(body):
        raise DeletionVectorError(f"deletion vector checksum mismatch at {where}:{offset}")
    if magic == MAGIC_32:
        positions, end = roaring.decode32(body, 4)
    else:
        positions, end = roaring.decode64(body, 4)
    if end != size:
        raise DeletionVectorError(f"deletion vector at {where}:{offset} has {size - end} trailing bytes")
    return positions.astype(np.int64)


class CorruptDeletionVectorFile(CorruptFileError, DeletionVectorError):
    """A deletion-vector index file that is empty, truncated or damaged (a CorruptFileError naming it, and a
    DeletionVectorError as before)."""


@contextmanager
def _decoding(path: str, data: bytes) -> Iterator[None]:
    """Decode the deletion-vector index file ``data`` read from ``path``: any problem names the file."""
    if not data:
        raise CorruptDeletionVectorFile(path, "deletion-vector index file", "the file is empty (0 bytes)")
    if data[0] != VERSION:
        raise CorruptDeletionVectorFile(path, "deletion-vector index file",
                                        f"version byte {data[0]}, expected {VERSION} (damaged, or not an index file)")
    try:
        yield
    except (DeletionVectorError, RoaringFormatError) as e:
        raise CorruptDeletionVectorFile(path, "deletion-vector index file", f"{e} ({len(data)} bytes)") from e


def read_vector(io: FileIO, f: DeletionFile) -> np.ndarray:
    """The deleted row positions of one data file (sorted int64)."""
    data = io.read_bytes(f.path)
    with _decoding(f.path, data):
        return parse_vector(data, f.offset, f.length, f.path)


def read_index_file(io: FileIO, path: str, meta: IndexFileMeta) -> dict[str, np.ndarray]:
    """Every vector of the DELETION_VECTORS index file ``meta`` (at ``path``, see index/paths.py): data file
    name -> deleted positions."""
    data = io.read_bytes(path)
    with _decoding(path, data):
        return {name: parse_vector(data, offset, length, path) for name, offset, length in meta.dv_ranges or ()}


def serialize_vector(positions: np.ndarray) -> bytes:
    """One 32-bit vector's frame (length, magic + bitmap, CRC), as Paimon 0.9 writes it."""
    positions = np.asarray(positions, dtype=np.int64)
    if len(positions) and positions.max() > 0x7FFFFFFF:
        raise ValueError("a 32-bit deletion vector holds row positions up to 2147483647 (as in Paimon)")
    body = struct.pack(">i", MAGIC_32) + roaring.encode32(positions)
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def write_index_file(table: FileStore, partition: bytes, bucket: int, vectors: Mapping[str, np.ndarray],
                     namer: IndexFileNamer) -> IndexFileMeta:
    """Write ``vectors`` (data file name -> deleted positions, in the order given) as one new index file of the
    bucket."""
    chunks = [bytes([VERSION])]
    offset = 1
    ranges = []
    for name, positions in vectors.items():
        frame = serialize_vector(positions)
        ranges.append((name, offset, len(frame) - 8))
        chunks.append(frame)
        offset += len(frame)
    name = namer.next()
    path, external = new_index_file_path(table, partition, bucket, name)
    data = b"".join(chunks)
    table.io.write_bytes(path, data)
    return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(ranges), tuple(ranges), external)


def dv_index_files(table: FileStore, snapshot) -> dict[tuple[bytes, int], list[IndexFileMeta]]:
    """(partition, bucket) -> its DELETION_VECTORS index files at ``snapshot``."""
    out: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
    if snapshot is None or not snapshot.index_manifest:
        return out
    for e in IndexManifestFile(table.io, table.root).read(snapshot.index_manifest):
        if e.index_file.index_type == DELETION_VECTORS_INDEX:
            out.setdefault((e.partition, e.bucket), []).append(e.index_file)
    return out
