"""Paimon type strings and JSON objects, the Arrow mapping, and Paimon's field-id allocation."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from paimon_ds.schema.types import (
    ArrayType,
    DataField,
    DataType,
    MapType,
    RowType,
    SchemaError,
    fields_from_arrow,
    parse_type,
    to_arrow_schema,
    to_arrow_type,
)

ATOMIC = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE",
    "INT NOT NULL", "BIGINT NOT NULL", "BOOLEAN NOT NULL",
    "DECIMAL(10, 2)", "DECIMAL(38, 18) NOT NULL", "DECIMAL(1, 0)",
    "STRING", "STRING NOT NULL", "BYTES", "BYTES NOT NULL", "VARCHAR(10)", "CHAR(3)", "CHAR(3) NOT NULL",
    "BINARY(4)", "VARBINARY(8)",
    "TIME(0)", "TIME(3)", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "TIMESTAMP(3) NOT NULL",
    "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL",
    "VARIANT",
]


@pytest.mark.parametrize("text", ATOMIC)
def test_atomic_type_string_round_trip(text: str) -> None:
    t = parse_type(text)
    assert t.to_json() == text
    assert t.sql() == text
    assert parse_type(t.to_json()) == t


def test_atomic_type_details() -> None:
    assert parse_type("INT NOT NULL") == DataType("INT", (), False)
    assert parse_type("DECIMAL(10, 2)").precision == 10 and parse_type("DECIMAL(10, 2)").scale == 2
    assert parse_type("STRING") == parse_type("VARCHAR(2147483647)")
    assert parse_type("BYTES") == parse_type("VARBINARY(2147483647)")
    assert parse_type("TIMESTAMP(6) WITH LOCAL TIME ZONE").root == "TIMESTAMP_LTZ"
    # spellings Paimon also accepts normalise to the canonical string
    assert parse_type("INTEGER").to_json() == "INT"
    assert parse_type("decimal(5, 1)").to_json() == "DECIMAL(5, 1)"
    assert parse_type("DECIMAL").to_json() == "DECIMAL(10, 0)"
    assert parse_type("TIMESTAMP").to_json() == "TIMESTAMP(6)"
    assert parse_type("TIMESTAMP_LTZ(3)").to_json() == "TIMESTAMP(3) WITH LOCAL TIME ZONE"


@pytest.mark.parametrize("text", ["INTEGRAL", "DECIMAL(10, 2", "MAP<INT, INT>", ""])
def test_bad_type_strings_are_refused(text: str) -> None:
    with pytest.raises(SchemaError):
        parse_type(text)


NESTED: list[Any] = [
    {"type": "ARRAY", "element": "INT"},
    {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"},
    {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"},
    {"type": "MAP NOT NULL", "key": "INT NOT NULL", "value": {"type": "ARRAY", "element": "DOUBLE"}},
    {"type": "MULTISET", "element": "STRING"},
    {"type": "ROW", "fields": [{"id": 5, "name": "a", "type": "INT"}]},
    {"type": "ROW NOT NULL", "fields": [
        {"id": 3, "name": "a", "type": "INT NOT NULL", "description": "the a"},
        {"id": 4, "name": "b", "type": {"type": "ARRAY", "element": {
            "type": "ROW", "fields": [{"id": 5, "name": "c", "type": "DECIMAL(20, 4)"}]}}},
        {"id": 6, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": {
            "type": "ROW", "fields": [{"id": 7, "name": "d", "type": "TIMESTAMP(3)"}]}}},
    ]},
]


@pytest.mark.parametrize("obj", NESTED, ids=lambda o: json.dumps(o)[:60])
def test_nested_type_json_round_trip(obj: Any) -> None:
    t = parse_type(obj)
    assert t.to_json() == obj
    # and through JSON text, as it sits in a schema file
    assert json.loads(json.dumps(parse_type(json.loads(json.dumps(obj))).to_json())) == obj


def test_nested_type_structure() -> None:
    t = parse_type(NESTED[6])
    assert isinstance(t, RowType) and not t.nullable
    assert [f.id for f in t.fields] == [3, 4, 6]
    assert t.fields[0].description == "the a"
    arr = t.fields[1].type
    assert isinstance(arr, ArrayType) and isinstance(arr.element, RowType)
    assert arr.element.fields[0] == DataField(5, "c", DataType("DECIMAL", (20, 4)))
    m = parse_type(NESTED[2])
    assert isinstance(m, MapType) and m.key == DataType("VARCHAR", (2147483647,), False)
    assert m.value == DataType("BIGINT")


def test_schema_fields_json_round_trip() -> None:
    # the "fields" array of a schema file written by Paimon
    fields = [
        {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
        {"id": 1, "name": "name", "type": "STRING"},
        {"id": 2, "name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
        {"id": 3, "name": "addr", "type": {"type": "ROW", "fields": [
            {"id": 4, "name": "city", "type": "STRING"}, {"id": 5, "name": "zip", "type": "INT"}]}},
        {"id": 6, "name": "dt", "type": "STRING", "description": "partition"},
    ]
    assert [DataField.from_json(f).to_json() for f in fields] == fields


# ------------------------------------------------------------------ Arrow

def _field(name: str, t: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable)


ARROW_ATOMIC: list[tuple[pa.DataType, str]] = [
    (pa.bool_(), "BOOLEAN"), (pa.int8(), "TINYINT"), (pa.int16(), "SMALLINT"), (pa.int32(), "INT"),
    (pa.int64(), "BIGINT"), (pa.float32(), "FLOAT"), (pa.float64(), "DOUBLE"), (pa.date32(), "DATE"),
    (pa.string(), "STRING"), (pa.binary(), "BYTES"),
    (pa.decimal128(10, 2), "DECIMAL(10, 2)"), (pa.decimal128(38, 0), "DECIMAL(38, 0)"),
    (pa.timestamp("s"), "TIMESTAMP(0)"), (pa.timestamp("ms"), "TIMESTAMP(3)"), (pa.timestamp("us"), "TIMESTAMP(6)"),
    (pa.timestamp("ns"), "TIMESTAMP(9)"), (pa.timestamp("us", tz="UTC"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (pa.time32("ms"), "TIME(3)"),
]


@pytest.mark.parametrize("arrow_type,paimon", ARROW_ATOMIC, ids=[p for _, p in ARROW_ATOMIC])
def test_arrow_atomic_mapping(arrow_type: pa.DataType, paimon: str) -> None:
    schema = pa.schema([_field("x", arrow_type), _field("y", arrow_type, nullable=False)])
    fields, highest = fields_from_arrow(schema)
    assert [f.type.to_json() for f in fields] == [paimon, paimon + " NOT NULL"]
    assert [f.id for f in fields] == [0, 1] and highest == 1
    assert to_arrow_schema(fields) == schema
    assert to_arrow_type(parse_type(paimon)) == arrow_type


def test_time_and_multiset_arrow_forms() -> None:
    # Paimon keeps TIME(p) as milliseconds of the day whatever p, and a MULTISET as element -> count
    assert fields_from_arrow(pa.schema([("t", pa.time64("us"))]))[0][0].type.to_json() == "TIME(6)"
    assert {to_arrow_type(parse_type(f"TIME({p})")) for p in range(10)} == {pa.time32("ms")}
    assert to_arrow_type(parse_type({"type": "MULTISET", "element": "STRING"})) == \
        pa.map_(pa.string(), pa.field("value", pa.int32(), nullable=False))


def test_fixed_size_binary_maps_to_binary_n_read_as_binary() -> None:
    # Paimon stores BINARY(n) as a plain parquet BINARY column: it reads back as Arrow binary
    fields, _ = fields_from_arrow(pa.schema([_field("x", pa.binary(4))]))
    assert fields[0].type.to_json() == "BINARY(4)"
    assert to_arrow_schema(fields) == pa.schema([_field("x", pa.binary())])


def _nested_schema() -> pa.Schema:
    inner = pa.struct([_field("z", pa.int32()), _field("w", pa.string(), nullable=False)])
    return pa.schema([
        _field("a", pa.int64(), nullable=False),
        _field("b", pa.struct([_field("x", pa.float64()), _field("y", inner)])),
        _field("c", pa.list_(_field("element", pa.struct([_field("p", pa.date32()), _field("q", pa.bool_())])))),
        _field("d", pa.map_(pa.string(), _field("value", pa.struct([_field("v", pa.decimal128(20, 3))])))),
        _field("e", pa.list_(_field("element", pa.int32(), nullable=False)), nullable=False),
        _field("f", pa.map_(pa.int32(), _field("value", pa.list_(_field("element", pa.string()))))),
        _field("g", pa.timestamp("us", tz="UTC")),
    ])


def test_arrow_nested_round_trip_and_field_ids() -> None:
    schema = _nested_schema()
    fields, highest = fields_from_arrow(schema)
    assert to_arrow_schema(fields) == schema
    # Paimon allocates ids depth-first: a column's id, then the ids of the ROW fields inside it
    # a=0, b=1 (x=2, y=3 (z=4, w=5)), c=6 (p=7, q=8), d=9 (v=10), e=11, f=12, g=13
    assert [f.id for f in fields] == [0, 1, 6, 9, 11, 12, 13]
    b = fields[1].type
    assert isinstance(b, RowType)
    assert [(f.id, f.name) for f in b.fields] == [(2, "x"), (3, "y")]
    y = b.fields[1].type
    assert isinstance(y, RowType) and [(f.id, f.name) for f in y.fields] == [(4, "z"), (5, "w")]
    c = fields[2].type
    assert isinstance(c, ArrayType) and isinstance(c.element, RowType)
    assert [(f.id, f.name) for f in c.element.fields] == [(7, "p"), (8, "q")]
    d = fields[3].type
    assert isinstance(d, MapType) and not d.key.nullable and isinstance(d.value, RowType)
    assert [(f.id, f.name) for f in d.value.fields] == [(10, "v")]
    assert highest == 13
    assert fields[4].type.to_json() == {"type": "ARRAY NOT NULL", "element": "INT NOT NULL"}
    assert fields[5].type.to_json() == {"type": "MAP", "key": "INT NOT NULL",
                                        "value": {"type": "ARRAY", "element": "STRING"}}
    # the JSON the schema file gets, and back
    as_json = [f.to_json() for f in fields]
    assert [DataField.from_json(json.loads(json.dumps(j))) for j in as_json] == fields
    assert as_json[1] == {"id": 1, "name": "b", "type": {"type": "ROW", "fields": [
        {"id": 2, "name": "x", "type": "DOUBLE"},
        {"id": 3, "name": "y", "type": {"type": "ROW", "fields": [
            {"id": 4, "name": "z", "type": "INT"}, {"id": 5, "name": "w", "type": "STRING NOT NULL"}]}}]}}


def test_arrow_flat_schema_highest_field_id() -> None:
    fields, highest = fields_from_arrow(pa.schema([_field(f"c{i}", pa.int32()) for i in range(5)]))
    assert [f.id for f in fields] == [0, 1, 2, 3, 4] and highest == 4


def test_arrow_types_paimon_cannot_store_are_refused() -> None:
    with pytest.raises(SchemaError):
        fields_from_arrow(pa.schema([_field("x", pa.decimal256(50, 2))]))
    with pytest.raises(SchemaError):
        fields_from_arrow(pa.schema([_field("x", pa.null())]))
