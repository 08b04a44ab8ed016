"""Avro data files (paimon_ds.format.avro_file): files another writer made with fastavro's logical types read
as the same Arrow values, columns read in the order asked, and our files read by fastavro as their values."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import pyarrow as pa

from paimon_ds.format.avro_file import AvroFileReader, AvroFileWriter
from paimon_ds.format.avro_types import avro_schema

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dec", pa.decimal128(10, 3)), ("day", pa.date32()),
                    ("ts", pa.timestamp("us")), ("m", pa.map_(pa.string(), pa.int32())),
                    ("k", pa.map_(pa.int32(), pa.string()))])
ROWS = [{"id": 1, "dec": Decimal("-1.250"), "day": dt.date(1969, 7, 20), "ts": dt.datetime(2024, 2, 29, 12, 0, 0, 5),
         "m": [("a", 1), ("b", None)], "k": [(7, "seven")]},
        {"id": 2, "dec": None, "day": None, "ts": None, "m": None, "k": None}]


def test_reads_what_fastavro_wrote_with_logical_types():
    """A file whose writer applied the logical types itself (as Java's does) reads as the same Arrow values."""
    buf = io.BytesIO()
    as_fastavro = [{**r, "m": dict(r["m"]) if r["m"] else None,
                    "k": [{"key": k, "value": v} for k, v in r["k"]] if r["k"] else None} for r in ROWS]
    fastavro.writer(buf, fastavro.parse_schema(avro_schema(SCHEMA)), as_fastavro, codec="deflate")
    buf.seek(0)
    reader = AvroFileReader(buf)
    assert reader.names == SCHEMA.names
    assert pa.Table.from_batches(list(reader.iter_batches(SCHEMA.names, 1))).cast(SCHEMA).to_pylist() == ROWS
    some = pa.Table.from_batches(list(reader.iter_batches(["k", "id"], 10)))
    assert some.column_names == ["k", "id"] and some.column("id").to_pylist() == [1, 2]
    assert sum(b.num_rows for b in reader.iter_batches([], 10)) == 2


def test_fastavro_reads_what_we_write():
    buf = io.BytesIO()
    w = AvroFileWriter(buf, SCHEMA, "zstandard", 3)
    w.write(pa.Table.from_pylist(ROWS, SCHEMA))
    w.close()
    buf.seek(0)
    got = list(fastavro.reader(buf))
    assert got[0]["dec"] == Decimal("-1.250") and got[0]["day"] == dt.date(1969, 7, 20)
    assert got[0]["m"] == {"a": 1, "b": None} and got[0]["k"] == [{"key": 7, "value": "seven"}]
    assert got[1] == {"id": 2, "dec": None, "day": None, "ts": None, "m": None, "k": None}
