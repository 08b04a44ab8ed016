"""Avro block codecs through pyarrow, for when fastavro cannot find its compiled codec libraries.

fastavro compresses zstandard blocks with `backports.zstd` and snappy blocks with `cramjam`, both compiled.
Where paimon_ds travels as a zip (a Spark Connect session artifact, see paimon_ds.spark.connect) those
cannot be imported, and fastavro runs its pure-Python reader and writer. Paimon writes zstd manifests and
snappy Avro data files, so both codecs are then supplied from pyarrow, which every PySpark-with-Arrow
server has. Installed only where fastavro lacks a codec; the compiled path is left alone.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

import fastavro.read
import fastavro.write
import pyarrow as pa


def _missing(block_codec: Any) -> bool:
    # fastavro's placeholder for a codec whose library is absent is a closure named "missing"
    return block_codec is None or getattr(block_codec, "__name__", "") == "missing"


def snappy_length(data: bytes) -> int:
    """The uncompressed length a raw snappy block starts with (a little-endian base-128 varint)."""
    length = shift = 0
    for i, byte in enumerate(data[:5]):
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length
        shift += 7
        if i == 4:
            break
    raise ValueError("corrupt snappy block: bad length prefix")


def zstd_read_block(decoder: Any) -> BytesIO:
    data = decoder.read_bytes()
    # Java's zstd streams may not record the content size: decompress as a stream
    return BytesIO(pa.CompressedInputStream(pa.BufferReader(data), "zstd").read())


def zstd_write_block(encoder: Any, block: bytes, level: int | None) -> None:
    data = pa.Codec("zstd", compression_level=level).compress(block, asbytes=True)
    encoder.write_long(len(data))
    encoder._fo.write(data)


def snappy_read_block(decoder: Any) -> BytesIO:
    length = decoder.read_long()
    data = decoder.read_fixed(length - 4)
    decoder.read_fixed(4)  # CRC32 of the uncompressed block, which Avro readers need not check
    return BytesIO(pa.decompress(data, decompressed_size=snappy_length(data), codec="snappy", asbytes=True))


def snappy_write_block(encoder: Any, block: bytes, level: int | None) -> None:
    data = pa.compress(block, codec="snappy", asbytes=True)
    encoder.write_long(len(data) + 4)
    encoder._fo.write(data)
    encoder.write_crc32(block)


def ensure_avro_codecs() -> list[str]:
    """Supply zstandard and snappy to fastavro where it lacks them; returns the codecs supplied."""
    if not fastavro.read._read.__name__.endswith("_py"):
        return []  # compiled fastavro: its block functions take its own decoder, not the one these expect
    readers = fastavro.read.BLOCK_READERS
    writers = fastavro.write._write.BLOCK_WRITERS
    supplied = []
    for codec, read_block, write_block in (("zstandard", zstd_read_block, zstd_write_block),
                                           ("snappy", snappy_read_block, snappy_write_block)):
        if _missing(readers.get(codec)) or _missing(writers.get(codec)):
            readers[codec] = read_block
            writers[codec] = write_block
            supplied.append(codec)
    return supplied
