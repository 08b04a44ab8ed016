"""Column default values (Paimon 1.x's DataField.defaultValue): stored in the schema file as Paimon stores them, read
with Paimon's string cast rules (DefaultValueUtils.convertDefaultValue, StringToMap/Array/RowCastRule of 1.4.1),
written in place of nulls by every writer (TableWriteImpl's DefaultValueRow), kept by schema changes, refused when
Paimon's rules cannot read them. pypaimon 2.1 reads the schema's defaultValue (it does not fill nulls on write:
Java's TableWriteImpl is the reference for the write); Java 0.9, which knows no defaults, reads the table."""

from __future__ import annotations

import datetime as dt
import json
import re

import pyarrow as pa
import pytest

from paimon_ds.casts.defaults import default_array
from paimon_ds.catalog import Catalog
from paimon_ds.schema.change import RenameColumn, UpdateColumnDefaultValue, UpdateColumnType
from paimon_ds.schema.types import DEFAULT_VALUE_METADATA, SchemaError, parse_type


def _map(key: str, value: str):
    return parse_type({"type": "MAP", "key": key, "value": value})


@pytest.mark.parametrize("text, dtype, value", [
    ("1", "INT", 1),
    ("'abc'", "STRING", "abc"),           # one pair of enclosing single quotes dropped
    ("99.99D", "DOUBLE", 99.99),          # Double.parseDouble takes the suffix
    ("2024-02-29", "DATE", dt.date(2024, 2, 29)),
    ("map(99, 99.99D)", _map("INT", "DOUBLE"), [(99, 99.99)]),
    ("MAP()", _map("INT", "DOUBLE"), []),
    ("{}", _map("INT", "DOUBLE"), []),
    ("NULL", _map("INT", "DOUBLE"), None),
    ('map(9999, "hello")', _map("BIGINT", "STRING"), [(9999, "hello")]),   # the map's splitter drops quotes
    ("{1 -> a, 2 -> null}", _map("INT", "STRING"), [(1, "a"), (2, None)]),
    ("{1 -> a, 1 -> b}", _map("INT", "STRING"), [(1, "b")]),               # bracket form: the last wins
    ("[1, null, 3]", {"type": "ARRAY", "element": "INT"}, [1, None, 3]),
    ("ARRAY()", {"type": "ARRAY", "element": "INT"}, []),
    ('array("x", y)', {"type": "ARRAY", "element": "STRING"}, ['"x"', "y"]),  # the array's keeps them
    ("STRUCT(1, [2, 3])", {"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"},
                                                     {"id": 2, "name": "b", "type": {"type": "ARRAY",
                                                                                     "element": "INT"}}]},
     {"a": 1, "b": [2, 3]}),
    ("{}", {"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"}]}, {"a": None}),
])
def test_default_text_read_as_paimon_reads_it(text, dtype, value):
    t = dtype if not isinstance(dtype, (str, dict)) else parse_type(dtype)
    assert default_array(text, t).to_pylist() == [value]


@pytest.mark.parametrize("text, dtype", [
    ("current_timestamp()", "TIMESTAMP(6)"), ("current_date()", "DATE"), ("NULL", "INT"), ("x", "INT"),
    ("map(1)", _map("INT", "INT")), ("map(1, 2, 1, 3)", _map("INT", "INT")), ("(1, 2)", _map("INT", "INT")),
    ("1, 2", {"type": "ARRAY", "element": "INT"}),
    ("STRUCT(1, 2)", {"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"}]}),
])
def test_default_paimon_cannot_read_is_refused(text, dtype):
    t = dtype if not isinstance(dtype, (str, dict)) else parse_type(dtype)
    with pytest.raises(SchemaError, match=f"Unsupported default value `{re.escape(text)}` for type"):
        default_array(text, t)


def _schema(**defaults: str) -> pa.Schema:
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32()), pa.field("s", pa.string()),
              pa.field("m", pa.map_(pa.int32(), pa.float64()))]
    return pa.schema([f.with_metadata({DEFAULT_VALUE_METADATA: defaults[f.name]}) if f.name in defaults else f
                      for f in fields])


def _write(table, **columns) -> None:
    w = table.new_write()
    w.write_arrow(pa.table(columns, schema=table.arrow_schema()))
    table.new_commit().commit(w.prepare_commit())


@pytest.mark.parametrize("primary_key", [[], ["id"]])
def test_writers_write_the_default_in_place_of_null(tmp_path, primary_key, pypaimon_oracle, java_oracle):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", _schema(n="7", s="'none'", m="map(99, 99.99D)"), primary_keys=primary_key,
                             options={"bucket": "1"} if primary_key else {})
    with open(f"{t.path}/schema/schema-0") as f:
        stored = json.load(f)
    assert [f.get("defaultValue") for f in stored["fields"]] == [None, "7", "'none'", "map(99, 99.99D)"]
    _write(t, id=[1, 2, 3], n=[None, 5, None], s=[None, "x", None], m=[None, [(1, 1.5)], []])
    expected = [{"id": 1, "n": 7, "s": "none", "m": [(99, 99.99)]},
                {"id": 2, "n": 5, "s": "x", "m": [(1, 1.5)]},
                {"id": 3, "n": 7, "s": "none", "m": []}]   # an empty map is no null
    assert catalog.get_table("db.t").to_arrow().sort_by("id").to_pylist() == expected
    # the schema pypaimon 2.1 reads holds the defaults; both oracles read the rows written
    script = ("import json\nprint(json.dumps([f.default_value for f in table.table_schema.fields]))\n")
    assert json.loads(pypaimon_oracle.exec(t.path, script).strip().splitlines()[-1]) == [
        None, "7", "'none'", "map(99, 99.99D)"]
    for oracle in (pypaimon_oracle, java_oracle):
        got = oracle.read(t.path).sort_by("id").to_pylist()
        assert [(r["id"], r["n"], r["s"]) for r in got] == [(1, 7, "none"), (2, 5, "x"), (3, 7, "none")]


def test_not_null_column_is_checked_before_the_default(tmp_path):
    """Java's TableWriteImpl checks nullability first: a null in a NOT NULL column is refused even with a default."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False).with_metadata({DEFAULT_VALUE_METADATA: "0"})])
    t = catalog.create_table("db.t", schema)
    with pytest.raises(SchemaError, match="NOT NULL"):
        _write(t, id=pa.array([None], pa.int64()))


def test_alter_sets_and_drops_defaults_and_schema_changes_keep_them(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", _schema(n="7"))
    t = catalog.alter_table("db.t", [RenameColumn("n", "k"), UpdateColumnType("k", "BIGINT"),
                                     UpdateColumnDefaultValue("s", "dflt")])
    assert [(f.name, f.default_value) for f in t.table_schema.fields] == [
        ("id", None), ("k", "7"), ("s", "dflt"), ("m", None)]
    assert t.table_schema.as_arrow().field("k").metadata == {DEFAULT_VALUE_METADATA: b"7"}
    _write(t, id=[1], k=[None], s=[None], m=[None])
    t = catalog.alter_table("db.t", [UpdateColumnDefaultValue("k", None)])
    _write(t, id=[2], k=[None], s=[None], m=[None])
    assert [(r["id"], r["k"], r["s"]) for r in t.to_arrow().sort_by("id").to_pylist()] == [
        (1, 7, "dflt"), (2, None, "dflt")]
    with pytest.raises(SchemaError, match="Unsupported default value `x1` for type BIGINT"):
        catalog.alter_table("db.t", [UpdateColumnDefaultValue("k", "x1")])
    assert catalog.get_table("db.t").table_schema.id == t.table_schema.id  # nothing changed


def test_a_table_with_a_default_paimon_cannot_read_is_refused_at_create(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(SchemaError, match="column 'n': Unsupported default value `now` for type INT"):
        catalog.create_table("db.t", _schema(n="now"))
    assert not catalog.table_exists("db.t")
