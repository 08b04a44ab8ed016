"""Parquet data files (paimon_ds.format.parquet_file): timestamps in the forms Paimon stores, INT96 for
TIMESTAMP(7..9) and then plain INT64 for the other precisions, read back by their Paimon types."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_ds.format.parquet_file import ParquetFileReader, ParquetFileWriter, has_nanos
from paimon_ds.types import parse_type

SCHEMA = pa.schema([("ts9", pa.timestamp("ns")), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us", tz="UTC")),
                    ("st", pa.struct([("ts", pa.timestamp("us"))]))])
TYPES = {"ts9": parse_type("TIMESTAMP(9)"), "ts3": parse_type("TIMESTAMP(3)"),
         "ts6": parse_type("TIMESTAMP_LTZ(6)"),
         "st": parse_type({"type": "ROW", "fields": [{"id": 4, "name": "ts", "type": "TIMESTAMP(6)"}]})}


def written(schema: pa.Schema, data: pa.Table) -> io.BytesIO:
    buf = io.BytesIO()
    w = ParquetFileWriter(buf, schema, "zstd", 1, True)
    w.write(data)
    w.close()
    buf.seek(0)
    return buf


def test_nanosecond_timestamps_keep_the_others_as_plain_int64():
    moment = dt.datetime(1969, 12, 31, 23, 59, 58, 123456)
    data = pa.table([pa.array([moment, None], pa.timestamp("ns")), pa.array([moment, None], pa.timestamp("ms")),
                     pa.array([moment, None], pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
                     pa.array([{"ts": moment}, None], SCHEMA.field("st").type)], schema=SCHEMA)
    assert has_nanos(pa.struct(list(SCHEMA))) and not has_nanos(SCHEMA.field("st").type)
    buf = written(SCHEMA, data)
    physical = {c.name: c.physical_type for c in pq.ParquetFile(buf).schema}
    assert physical == {"ts9": "INT96", "ts3": "INT64", "ts6": "INT64", "ts": "INT64"}
    assert pq.ParquetFile(buf).schema_arrow.field("ts3").type == pa.int64()  # no timestamp annotation
    buf.seek(0)
    reader = ParquetFileReader(buf, TYPES, "data-x-0.parquet")
    got = pa.Table.from_batches(list(reader.iter_batches(reader.names, 10)))
    assert got.cast(SCHEMA).to_pylist() == data.to_pylist()
    buf.seek(0)
    untyped = ParquetFileReader(buf)  # without the Paimon types, the plain integers stay integers
    assert next(untyped.iter_batches(["ts3"], 10)).column(0).type == pa.int64()


def test_without_nanoseconds_timestamps_are_annotated():
    schema = pa.schema([("ts", pa.timestamp("us"))])
    buf = written(schema, pa.table({"ts": pa.array([dt.datetime(2024, 1, 2)], pa.timestamp("us"))}))
    assert pq.ParquetFile(buf).schema_arrow == schema
