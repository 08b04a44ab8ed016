"""Parquet data files (paimon_ds.format.parquet_file): timestamps in the forms Paimon stores, INT96 for
TIMESTAMP(7..9) and then plain INT64 for the other precisions, read back by their Paimon types."""

from __future__ import annotations

import datetime as dt
import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ds.format.parquet_file import (
    ParquetFileReader,
    ParquetFileWriter,
    dictionary_columns,
    estimated_domain,
    has_nanos,
)
from paimon_ds.schema.types import parse_type

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


def test_estimated_domain_inverts_the_expected_distinct_count():
    # 8192 uniform draws from 6000 values give 6000 * (1 - e^(-8192/6000)) = 4467.3 distinct ones on average
    domain = estimated_domain(4467, 8192)
    assert domain == pytest.approx(5996.9, abs=0.1)
    assert domain * -math.expm1(-8192 / domain) == pytest.approx(4467, abs=1e-6)
    assert estimated_domain(10, 8192) == pytest.approx(10.0)
    assert estimated_domain(8192, 8192) == math.inf


def test_dictionary_only_for_columns_whose_dictionary_fits_a_page():
    n = 20_000
    ids = np.arange(n, dtype=np.int64) * 7919  # unique: a dictionary would outgrow its page
    data = pa.table({"id": ids, "k": (ids % 1000).astype(np.int32), "seq": np.full(n, 5, dtype=np.int64),
                     "name": pa.array([f"customer-{i % 50_000:06d}" for i in range(n)]),
                     "flag": pa.array([i % 2 == 0 for i in range(n)]),
                     "tags": pa.array([[i % 3] for i in range(n)])})
    assert dictionary_columns(data) is True  # a nested column: the default for every column
    flat = data.drop_columns(["tags"])
    # 1000 ints and one constant: small dictionaries; unique ids and 20,000 distinct names of 15 bytes: too big
    assert dictionary_columns(flat) == ["k", "seq", "flag"]
    buf = io.BytesIO()
    w = ParquetFileWriter(buf, flat.schema, "zstd", 1)
    w.write(flat)
    w.close()
    buf.seek(0)
    meta = pq.ParquetFile(buf).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    assert "RLE_DICTIONARY" in encodings["k"] and "RLE_DICTIONARY" in encodings["seq"]
    assert "RLE_DICTIONARY" not in encodings["id"] and "RLE_DICTIONARY" not in encodings["name"]
    buf.seek(0)
    assert pq.read_table(buf).equals(flat)


def test_a_file_without_rows_is_still_a_parquet_file():
    buf = io.BytesIO()
    ParquetFileWriter(buf, pa.schema([("a", pa.int64())]), "zstd", 1).close()
    buf.seek(0)
    assert pq.read_table(buf).num_rows == 0
