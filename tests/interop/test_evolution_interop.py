"""Schema evolution across Paimon implementations: widened and cast column types, renamed, dropped and
added columns, read back for every snapshot.

Each scenario writes a table, evolves it (Paimon 0.9's ALTER TABLE through its Java catalog, or
paimon_ds's `schema.change`), writes again, and reads the latest and the first snapshot with paimon_ds
and with Java Paimon 0.9: the rows must be identical, and equal to the values Paimon's cast rules give
(integers wrapped when narrowed, floats printed as Java does, decimals rounded half-up or null when they
overflow, ...). Time travel reads a snapshot with the schema it was committed under, as Paimon does.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ds import Table
from paimon_ds.predicate import predicates
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.change import AddColumn, DropColumn, RenameColumn, UpdateColumnType, commit_changes
from paimon_ds.schema.types import SchemaError

SCHEMA0 = pa.schema([
    pa.field("id", pa.int32(), nullable=False), ("a", pa.int32()), ("b", pa.int64()), ("f", pa.float32()),
    ("g", pa.float32()), ("h", pa.float64()), ("d", pa.decimal128(5, 2)), ("e", pa.decimal128(6, 3)),
    ("s", pa.string()), ("t", pa.string()), ("dt", pa.date32()), ("ts", pa.timestamp("ms")),
    ("bo", pa.bool_()), ("k", pa.int32()), ("y", pa.float64()), ("old", pa.string()), ("gone", pa.int32()),
])
ROWS0 = [
    {"id": 1, "a": 1, "b": 4294967297, "f": 1.5, "g": 0.1, "h": 1e10, "d": Decimal("123.45"),
     "e": Decimal("12.345"), "s": "42", "t": "1.5e3", "dt": dt.date(2024, 1, 31),
     "ts": dt.datetime(2024, 1, 31, 10, 0, 0, 120000), "bo": True, "k": -5, "y": 3.9e10, "old": "x", "gone": 7},
    {"id": 2, "a": -2, "b": -1, "f": -0.25, "g": 1e-4, "h": 123.456, "d": Decimal("-0.01"),
     "e": Decimal("-99.951"), "s": "-7.9", "t": " 2.5 ", "dt": dt.date(1999, 12, 1),
     "ts": dt.datetime(1999, 12, 1, 0, 0, 0), "bo": False, "k": 0, "y": -2.7, "old": "y", "gone": 8},
    {"id": 3, **{n: None for n in SCHEMA0.names if n != "id"}},
]
# Paimon 0.9 ALTER COLUMN TYPE changes (explicit casts), renames, drops and an added column.
TYPE_CHANGES = [("a", "BIGINT"), ("b", "INT"), ("f", "DOUBLE"), ("g", "STRING"), ("h", "STRING"),
                ("d", "DECIMAL(10, 4)"), ("e", "DECIMAL(4, 1)"), ("s", "INT"), ("t", "DOUBLE"), ("dt", "STRING"),
                ("ts", "STRING"), ("bo", "STRING"), ("k", "VARCHAR(1)"), ("y", "INT")]
SCHEMA1 = pa.schema([
    pa.field("id", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.int32()), ("f", pa.float64()),
    ("g", pa.string()), ("h", pa.string()), ("d", pa.decimal128(10, 4)), ("e", pa.decimal128(4, 1)),
    ("s", pa.int32()), ("t", pa.float64()), ("dt", pa.string()), ("ts", pa.string()), ("bo", pa.string()),
    ("k", pa.string()), ("y", pa.int32()), ("renamed", pa.string()), ("extra", pa.string()),
])
ROWS1 = [  # written after the ALTER; id 1 again: an upsert in the primary-key table
    {"id": 1, "a": 1 << 40, "b": 11, "f": 2.5, "g": "g1", "h": "h1", "d": Decimal("1.2345"), "e": Decimal("1.5"),
     "s": 5, "t": 0.5, "dt": "d", "ts": "t", "bo": "b", "k": "k", "y": 9, "renamed": "new", "extra": "e1"},
    {"id": 4, "a": 4, "b": 44, "f": None, "g": None, "h": None, "d": None, "e": None, "s": None, "t": None,
     "dt": None, "ts": None, "bo": None, "k": None, "y": None, "renamed": None, "extra": "e4"},
]
# What rows written under schema 0 read as under schema 1: Paimon's cast of every value.
CAST0 = {
    1: {"id": 1, "a": 1, "b": 1, "f": 1.5, "g": "0.1", "h": "1.0E10", "d": Decimal("123.4500"), "e": Decimal("12.3"),
        "s": 42, "t": 1500.0, "dt": "2024-01-31", "ts": "2024-01-31 10:00:00.120", "bo": "true", "k": "-",
        "y": 2147483647, "renamed": "x", "extra": None},
    2: {"id": 2, "a": -2, "b": -1, "f": -0.25, "g": "1.0E-4", "h": "123.456", "d": Decimal("-0.0100"),
        "e": Decimal("-100.0"), "s": -7, "t": 2.5, "dt": "1999-12-01", "ts": "1999-12-01 00:00:00.000",
        "bo": "false", "k": "0", "y": -2,
        "renamed": "y", "extra": None},
    3: {"id": 3, **{n: None for n in SCHEMA1.names if n != "id"}},
}

# Paimon type names of SCHEMA0's columns, for Java's catalog.
TYPES0 = ["INT", "INT", "BIGINT", "FLOAT", "FLOAT", "DOUBLE", "DECIMAL(5, 2)", "DECIMAL(6, 3)", "STRING", "STRING",
          "DATE", "TIMESTAMP(3)", "BOOLEAN", "INT", "DOUBLE", "STRING", "INT"]

# Run in the Java oracle: create the table in Paimon 0.9's catalog, write ROWS0, ALTER it, write ROWS1.
JAVA_SCENARIO = """
import pyarrow.parquet as pq

J = jvm.org.apache.paimon
T = J.types.DataTypes
ID = J.catalog.Identifier.fromString(ident)


def jtype(text):
    if text.startswith("DECIMAL"):
        return T.DECIMAL(*(int(x) for x in text[8:-1].split(",")))
    if text.startswith("VARCHAR"):
        return T.VARCHAR(int(text[8:-1]))
    if text == "TIMESTAMP(3)":
        return T.TIMESTAMP(3)
    return getattr(T, text)()


def write(rows):
    commit_arrow(catalog.get_table(ident), rows, cast=True)


catalog._j_catalog.createDatabase("db", True)
b = J.schema.Schema.newBuilder()
for i, (name, text) in enumerate(zip(data.schema.names, TYPES0)):
    b.column(name, jtype(text).copy(i != 0))
if PRIMARY_KEY:
    keys = jvm.java.util.ArrayList()
    keys.add("id")
    b.primaryKey(keys)
    b.option("bucket", "1")
catalog._j_catalog.createTable(ID, b.build(), False)
write(data)

changes = jvm.java.util.ArrayList()
for name, text in CHANGES:
    changes.add(J.schema.SchemaChange.updateColumnType(name, jtype(text)))
changes.add(J.schema.SchemaChange.renameColumn("old", "renamed"))
changes.add(J.schema.SchemaChange.dropColumn("gone"))
changes.add(J.schema.SchemaChange.addColumn("extra", T.STRING()))
catalog._j_catalog.alterTable(ID, changes, False)
write(pq.read_table(ROWS1_PATH))
"""


def by_id(t: pa.Table) -> list[dict]:
    return t.sort_by("id").to_pylist()


def paimon_ds_rows(path: str, snapshot: int | None = None) -> pa.Table:
    return Table.load(path, {"scan.snapshot-id": str(snapshot)} if snapshot else None).to_arrow()


def expected_latest(primary_key: bool) -> list[dict]:
    rows = {**CAST0}
    if not primary_key:  # an append table keeps both rows of id 1
        return sorted([*CAST0.values(), *ROWS1], key=lambda r: r["id"])
    rows.update({r["id"]: r for r in ROWS1})
    return [rows[i] for i in sorted(rows)]


def check_both(path: str, java_oracle, primary_key: bool) -> None:
    """paimon_ds and Java read both snapshots identically, and as Paimon's casts say."""
    latest = paimon_ds_rows(path)
    assert latest.schema.names == SCHEMA1.names
    java = java_oracle.read(path)
    assert java.schema.names == SCHEMA1.names
    assert sorted(by_id(latest), key=lambda r: (r["id"], r["extra"] or "")) == \
        sorted(by_id(java), key=lambda r: (r["id"], r["extra"] or ""))
    assert sorted(by_id(latest), key=lambda r: (r["id"], r["extra"] or "")) == \
        sorted(expected_latest(primary_key), key=lambda r: (r["id"], r["extra"] or ""))
    # filters on cast columns compare the cast values (stats of the old type are not used to skip files)
    table = Table.load(path)
    pk = int(primary_key)  # the primary-key table has replaced the old row of id 1
    for leaf, n in [(Leaf("=", "g", ("0.1",)), 1 - pk), (Leaf("=", "b", (1,)), 1 - pk), (Leaf(">", "y", (0,)), 2 - pk),
                    (Leaf("=", "e", (Decimal("-100.0"),)), 1), (Leaf("is_null", "extra"), 3 - pk)]:
        want = sorted(r["id"] for r in expected_latest(primary_key) if predicates.test_values(leaf, r))
        assert sorted(table.to_arrow(leaf).column("id").to_pylist()) == want and len(want) == n, leaf
    # snapshot 1 under its own schema: the original columns and values
    first = paimon_ds_rows(path, 1)
    assert first.schema.names == SCHEMA0.names
    assert by_id(first) == by_id(java_oracle.read(path, snapshot=1)) == \
        pa.Table.from_pylist(ROWS0, SCHEMA0).to_pylist()  # float32 values as stored


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_java_evolved_table_reads_as_java_reads(java_oracle, table_path, tmp_path, primary_key):
    rows1 = str(tmp_path / "rows1.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS1, SCHEMA1), rows1)
    java_oracle.exec(table_path, f"CHANGES = {TYPE_CHANGES!r}\nTYPES0 = {TYPES0!r}\nPRIMARY_KEY = {primary_key}\n"
                     f"ROWS1_PATH = {rows1!r}\n" + JAVA_SCENARIO, pa.Table.from_pylist(ROWS0, SCHEMA0))
    assert Table.load(table_path).schema().id == 1
    check_both(table_path, java_oracle, primary_key)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_paimon_ds_evolved_table_reads_as_java_reads(java_oracle, table_path, primary_key):
    options = {"primary-key": "id", "bucket": "1"} if primary_key else {}
    write(table_path, pa.Table.from_pylist(ROWS0, SCHEMA0), options)
    commit_changes(table_path, [*(UpdateColumnType(n, t) for n, t in TYPE_CHANGES), RenameColumn("old", "renamed"),
                                DropColumn("gone"), AddColumn("extra", "STRING")])
    write(table_path, pa.Table.from_pylist(ROWS1, SCHEMA1), options)
    check_both(table_path, java_oracle, primary_key)


def write(path: str, data: pa.Table, options: dict[str, str]) -> None:
    t = Table.for_write(path, data.schema, options)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("u").commit(w.prepare_commit())


def test_refused_casts_write_nothing(table_path):
    # casts Paimon's table does not have: DATE to INT, DOUBLE to BOOLEAN, TIMESTAMP to a VARCHAR(n) (only to
    # STRING itself), TIME to another TIME precision
    write(table_path, pa.Table.from_pylist(ROWS0, SCHEMA0), {})
    for name, typ in [("dt", "INT"), ("h", "BOOLEAN"), ("ts", "VARCHAR(10)"), ("bo", "DATE")]:
        with pytest.raises(SchemaError, match=f"cannot change column '{name}' from"):
            commit_changes(table_path, UpdateColumnType(name, typ))
    assert Table.load(table_path).schema().id == 0
    # a table altered so elsewhere fails its read clearly instead of reading other values
    from paimon_ds.casts.column import cast_column
    from paimon_ds.casts.rules import CastError
    from paimon_ds.schema.types import parse_type
    with pytest.raises(CastError, match="changed from DOUBLE to BOOLEAN: Paimon has no cast"):
        cast_column(pa.array([1.5]), parse_type("DOUBLE"), parse_type("BOOLEAN"))


# Paimon's cast semantics, value by value against Java's CastExecutors: tests/interop/test_casts_interop.py
