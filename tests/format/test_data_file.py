"""The data file entry points (paimon_ds.format.data_file): every type through the writer and reader of each
format, codecs as Paimon names them, and the format and codec a file of each level gets. Tables of each format
read and written by the reference implementations are in test_data_file_interop.py."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest
from interop.test_oracles import ALL_TYPES, rows

from paimon_ds.format.data_file import DataFileWriter, format_of, level_compression, level_format, open_data_file
from paimon_ds.manifest.files import MANIFEST_FILE_META_SCHEMA, manifest_bytes, read_avro
from paimon_ds.options.registry import Options


def orc_safe(t: pa.Table) -> pa.Table:
    """Timestamps before 1970 cut to whole seconds: pyarrow's ORC writer cannot write their fractions so that
    Java reads them (paimon_ds refuses, see test_orc_file.test_orc_refuses_pre_epoch_fractions)."""
    for i, f in enumerate(t.schema):
        if pa.types.is_timestamp(f.type):
            v = t.column(i).cast(pa.int64())
            cut = pc.if_else(pc.less(v, 0), pc.multiply(pc.divide(v, 10**6), 10**6), v)  # divide truncates
            t = t.set_column(i, f, cut.cast(f.type))
    return t


def rows_for(fmt: str, ids: range) -> pa.Table:
    return orc_safe(rows(ids)) if fmt == "orc" else rows(ids)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_file_round_trip_every_type(fmt):
    """Every type, nulls, nested values and sliced input survive our writer and reader of each format."""
    data = rows_for(fmt, range(300))
    buf = io.BytesIO()
    w = DataFileWriter(buf, data.schema, fmt, "zstd")
    w.write(data.slice(0, 170))
    w.write(data.slice(170))  # sliced nested columns (pyarrow's ORC writer needs them compacted)
    w.close()
    buf.seek(0)
    r = open_data_file(buf, f"data-x-0.{fmt}")
    assert r.names == ALL_TYPES.names
    got = pa.Table.from_batches(list(r.iter_batches(r.names, 64))).cast(data.schema)
    assert got.to_pylist() == data.to_pylist()
    some = pa.Table.from_batches(list(r.iter_batches(["dec30", "id"], 1000)))
    assert some.column_names == ["dec30", "id"]
    assert some.cast(pa.schema([ALL_TYPES.field("dec30"), ALL_TYPES.field("id")])).to_pylist() == \
        data.select(["dec30", "id"]).to_pylist()
    assert sum(b.num_rows for b in r.iter_batches([], 100)) == 300


def test_codecs_are_paimons():
    """`file.compression` as Paimon applies it: ORC takes the codec; Avro is `zstandard` for zstd and else
    its `codec` option's default, snappy (which Java 0.9's oracle cannot write: its shaded Avro lacks
    snappy-java, "Unrecognized codec: snappy", so snappy Avro is checked on our own files)."""
    data = rows_for("orc", range(10))
    for fmt, codec, expected in (("orc", "zstd", "ZSTD"), ("orc", "lz4", "LZ4"), ("orc", "GZIP", "ZLIB"),
                                 ("orc", "none", "UNCOMPRESSED"), ("avro", "zstd", "zstandard"),
                                 ("avro", "lz4", "snappy"), ("avro", "snappy", "snappy"), ("avro", "none", "null"),
                                 ("parquet", "zstandard", "ZSTD"), ("parquet", "deflate", "GZIP"),
                                 ("parquet", "uncompressed", "UNCOMPRESSED")):
        buf = io.BytesIO()
        w = DataFileWriter(buf, data.schema, fmt, codec)
        w.write(data)
        w.close()
        buf.seek(0)
        assert file_codec(buf, fmt) == expected, (fmt, codec)
        buf.seek(0)
        r = open_data_file(buf, f"data-x-0.{fmt}")
        assert pa.Table.from_batches(list(r.iter_batches(r.names, 100))).cast(data.schema).to_pylist() == \
            data.to_pylist()


def file_codec(buf: io.BytesIO, fmt: str) -> str:
    codec = {"orc": lambda: po.ORCFile(buf).compression, "avro": lambda: fastavro.reader(buf).codec,
             "parquet": lambda: pq.ParquetFile(buf).metadata.row_group(0).column(0).compression}[fmt]()
    buf.seek(0)
    return codec


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_manifests_take_every_compression_name_paimon_has(fmt):
    """`manifest.compression` with Paimon's names (any case) in each `manifest.format`: written in the codec
    the name means there, and read back."""
    record = {"_VERSION": 2, "_FILE_NAME": "manifest-x-0", "_FILE_SIZE": 10, "_NUM_ADDED_FILES": 1,
              "_NUM_DELETED_FILES": 0, "_SCHEMA_ID": 0,
              "_PARTITION_STATS": {"_MIN_VALUES": b"", "_MAX_VALUES": b"", "_NULL_COUNTS": None}}
    expected = {"parquet": {"zstd": "ZSTD", "gzip": "GZIP", "deflate": "GZIP", "snappy": "SNAPPY",
                            "none": "UNCOMPRESSED"},
                "orc": {"zstd": "ZSTD", "gzip": "ZLIB", "deflate": "ZLIB", "snappy": "SNAPPY", "none": "UNCOMPRESSED"},
                "avro": {"zstd": "zstandard", "deflate": "deflate", "snappy": "snappy", "none": "null"}}[fmt]
    for name, codec in expected.items():
        data = manifest_bytes(MANIFEST_FILE_META_SCHEMA, [record], name.upper(), fmt)
        assert file_codec(io.BytesIO(data), fmt) == codec, name
        got = read_avro(data)
        assert {k: got[0][k] for k in record} == record, name


def test_format_by_name_and_level():
    assert [format_of(n) for n in ("data-a-0.orc", "data-a-1.avro", "data-a-2.parquet", "x")] == \
        ["orc", "avro", "parquet", "parquet"]
    opts = Options({"file.format": "orc", "file.format.per.level": "0:avro, 5:parquet"})
    assert [level_format(opts, lv) for lv in range(6)] == ["avro", "orc", "orc", "orc", "orc", "parquet"]
    assert level_format(Options({}), 0) == "parquet"
    opts = Options({"file.compression.per.level": "0:lz4"})
    assert [level_compression(opts, lv) for lv in (0, 1)] == ["lz4", "zstd"]
