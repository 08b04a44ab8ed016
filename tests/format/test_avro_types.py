"""Paimon's Avro schema and value conversions (paimon_ds.format.avro_types): record names by path, the two map
shapes, and decimals as minimal big-endian two's complement bytes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from paimon_ds.format.avro_types import (
    AVRO_ROOT_RECORD,
    avro_schema,
    non_null,
    plain_arrow_type,
    plain_values,
    strip_logical_types,
    with_logical_types,
)

R = AVRO_ROOT_RECORD


def test_schema_follows_paimons_converter():
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("ts", pa.timestamp("ms", tz="UTC")),
                        ("st", pa.struct([("d", pa.date32())])), ("m", pa.map_(pa.string(), pa.int64())),
                        ("k", pa.map_(pa.int32(), pa.struct([("x", pa.decimal128(5, 2))])))])
    assert avro_schema(schema) == ["null", {"type": "record", "name": R, "fields": [
        {"name": "id", "type": "int"},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}], "default": None},
        {"name": "st", "type": ["null", {"type": "record", "name": f"{R}_st", "fields": [
            {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None}]}],
         "default": None},
        {"name": "m", "type": ["null", {"type": "map", "values": ["null", "long"]}], "default": None},
        {"name": "k", "type": ["null", {"type": "array", "logicalType": "map", "items": {
            "type": "record", "name": f"{R}_k", "fields": [
                {"name": "key", "type": "int"},
                {"name": "value", "type": ["null", {"type": "record", "name": f"{R}_k_value", "fields": [
                    {"name": "x", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 5,
                                                    "scale": 2}], "default": None}]}], "default": None}]}}],
         "default": None}]}]


def test_plain_types_are_the_schema_without_logical_types():
    schema = avro_schema(pa.schema([("d", pa.date32()), ("l", pa.list_(pa.decimal128(5, 2)))]))
    record, nullable = non_null(strip_logical_types(schema))
    assert nullable and "logicalType" not in str(record)
    assert plain_arrow_type(schema) == pa.struct([("d", pa.int32()), ("l", pa.list_(pa.binary()))])


def minimal_bytes(unscaled: int) -> bytes:
    """The shortest big-endian two's complement of ``unscaled`` (a sign bit to spare: 128 takes two bytes)."""
    magnitude_bits = (~unscaled if unscaled < 0 else unscaled).bit_length()
    return unscaled.to_bytes(magnitude_bits // 8 + 1, "big", signed=True)


def test_decimals_are_minimal_twos_complement_bytes():
    values = [Decimal(0), Decimal(-1), Decimal(127), Decimal(128), Decimal(-128), Decimal(-129), None,
              Decimal("9" * 38), Decimal("-" + "9" * 38)]
    arr = pa.array(values, pa.decimal128(38, 0))
    expected = [None if v is None else minimal_bytes(int(v)) for v in values]
    assert plain_values(arr).to_pylist() == expected
    schema = {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0}
    assert with_logical_types(plain_values(arr.slice(2)), schema).to_pylist() == values[2:]


def test_values_round_trip_through_their_plain_form():
    t = pa.struct([("ts", pa.timestamp("us")), ("t", pa.time32("ms")), ("m", pa.map_(pa.int32(), pa.date32()))])
    arr = pa.array([{"ts": dt.datetime(1960, 5, 6, 7, 8, 9, 10), "t": dt.time(1, 2), "m": [(1, dt.date(2000, 1, 2))]},
                    None, {"ts": None, "t": None, "m": None}], t)
    schema = avro_schema(pa.schema(list(t)))[1]
    plain = plain_values(arr.slice(1))
    assert plain.type == pa.struct([("ts", pa.int64()), ("t", pa.int32()),
                                    ("m", pa.list_(pa.struct([("key", pa.int32()), ("value", pa.int32())])))])
    assert with_logical_types(plain, schema).to_pylist() == arr.slice(1).to_pylist()
