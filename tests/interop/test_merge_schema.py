"""Schema evolution on write: `write.merge-schema` (Paimon's Spark connector option).

A write whose data has new columns or wider types first commits the merged schema as the next
`schema-N` file (create-if-absent), then writes the data under it; Java Paimon 0.9 reads the result,
both the latest snapshot and the one before the merge. Without the option a mismatch is an error and
nothing is written.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.schema.merge import merge_write_schema
from paimon_ds.schema.types import SchemaError

MERGE = {"write.merge-schema": "true"}
SCHEMA0 = pa.schema([pa.field("id", pa.int32(), nullable=False), ("n", pa.int32()), ("f", pa.float32()),
                     ("s", pa.string()), ("d", pa.decimal128(5, 2))])
ROWS0 = [{"id": 1, "n": 7, "f": 0.5, "s": "a", "d": Decimal("1.25")},
         {"id": 2, "n": None, "f": None, "s": None, "d": None}]
# n and f wider, new columns `tag` and `p` (in another order than the table's: matched by name)
SCHEMA1 = pa.schema([pa.field("id", pa.int32(), nullable=False), ("tag", pa.string()), ("n", pa.int64()),
                     ("f", pa.float64()), ("s", pa.string()), ("d", pa.decimal128(5, 2)), ("p", pa.date32())])
ROWS1 = [{"id": 2, "tag": "t2", "n": 1 << 40, "f": 1e300, "s": "b", "d": Decimal("2.50"), "p": dt.date(2024, 2, 29)},
         {"id": 3, "tag": None, "n": 3, "f": 3.0, "s": "c", "d": None, "p": None}]


def write(path: str, rows: list[dict], schema: pa.Schema, options: dict[str, str]) -> None:
    t = Table.for_write(path, schema, options)
    w = t.new_write()
    w.write_arrow(pa.Table.from_pylist(rows, schema))
    t.new_commit("u").commit(w.prepare_commit())


def schema_file(path: str, schema_id: int) -> dict:
    return json.loads((Path(path) / "schema" / f"schema-{schema_id}").read_text())


def tree(path: str) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in Path(path).rglob("*"))


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_merge_schema_adds_and_widens_columns(java_oracle, table_path, primary_key):
    options = {"primary-key": "id", "bucket": "1"} if primary_key else {}
    write(table_path, ROWS0, SCHEMA0, options)
    before = tree(table_path)
    with pytest.raises(SchemaError, match=r"column\(s\) \['tag', 'p'\] not in the table"):
        write(table_path, ROWS1, SCHEMA1, options)  # no merge-schema: the data must match
    assert tree(table_path) == before
    write(table_path, ROWS1, SCHEMA1, {**options, **MERGE})
    doc = schema_file(table_path, 1)
    assert [(f["id"], f["name"], f["type"]) for f in doc["fields"]] == [
        (0, "id", "INT NOT NULL"), (1, "n", "BIGINT"), (2, "f", "DOUBLE"), (3, "s", "STRING"),
        (4, "d", "DECIMAL(5, 2)"), (5, "tag", "STRING"), (6, "p", "DATE")]
    assert doc["highestFieldId"] == 6
    assert Table.load(table_path).snapshot_manager.latest().schema_id == 1
    old = [{**r, "n": r["n"], "tag": None, "p": None} for r in ROWS0]
    new = [{"id": r["id"], **{k: r[k] for k in ("n", "f", "s", "d", "tag", "p")}} for r in ROWS1]
    want = sorted(([old[0]] if primary_key else old) + new, key=lambda r: (r["id"], r["tag"] or ""))
    got = Table.load(table_path).to_arrow()
    assert got.schema.names == ["id", "n", "f", "s", "d", "tag", "p"]
    java = java_oracle.read(table_path)
    key = lambda r: (r["id"], r["tag"] or "")  # noqa: E731
    assert sorted(got.to_pylist(), key=key) == sorted(java.to_pylist(), key=key) == want
    # the snapshot before the merge still reads under schema 0
    first = Table.load(table_path, {"scan.snapshot-id": "1"}).to_arrow()
    assert first.to_pylist() == java_oracle.read(table_path, snapshot=1).to_pylist() == ROWS0
    # a second write with the merged schema writes no new schema file
    write(table_path, ROWS1[1:], SCHEMA1, {**options, **MERGE})
    assert Table.load(table_path).schema_manager.list_ids() == [0, 1]


def test_merge_schema_refusals_and_explicit_casts(java_oracle, table_path):
    write(table_path, ROWS0, SCHEMA0, {})
    before = tree(table_path)
    cases = [
        (pa.schema([("id", pa.int32()), ("n", pa.string())]), r"column 'n' is INT in the table but STRING in the "
         r"data \(write.merge-schema.explicit-cast=true allows explicit casts\)"),
        (pa.schema([("id", pa.int32()), ("d", pa.decimal128(7, 3))]), "decimals of different scale"),
        (pa.schema([("id", pa.int32()), ("f", pa.int32())]), "column 'f' is FLOAT in the table but INT"),
        (pa.schema([("id", pa.int32()), ("s", pa.date32())]), "STRING in the table but DATE"),
    ]
    for data, message in cases:
        with pytest.raises(SchemaError, match=message):
            Table.for_write(table_path, data, MERGE)
    assert tree(table_path) == before
    # explicit casts: INT -> STRING and FLOAT -> INT (Java's truncation), files of schema 0 cast on read
    data = pa.schema([pa.field("id", pa.int32(), nullable=False), ("n", pa.string()), ("f", pa.int32()),
                      ("s", pa.string()), ("d", pa.decimal128(5, 2))])
    write(table_path, [{"id": 3, "n": "x", "f": 9, "s": "z", "d": None}], data,
          {**MERGE, "write.merge-schema.explicit-cast": "true"})
    assert [f["type"] for f in schema_file(table_path, 1)["fields"]] == [
        "INT NOT NULL", "STRING", "INT", "STRING", "DECIMAL(5, 2)"]
    want = [{"id": 1, "n": "7", "f": 0, "s": "a", "d": Decimal("1.25")},
            {"id": 2, "n": None, "f": None, "s": None, "d": None},
            {"id": 3, "n": "x", "f": 9, "s": "z", "d": None}]
    assert Table.load(table_path).to_arrow().sort_by("id").to_pylist() == \
        java_oracle.read(table_path).sort_by("id").to_pylist() == want


def test_merge_schema_widens_keys_and_decimals(java_oracle, table_path):
    """Paimon 1.x's merge (SchemaMergingUtils, DataFrameWriteTestBase "Schema evolution"): the primary and bucket
    key `id` widens INT -> BIGINT, DECIMAL(5, 2) -> DECIMAL(7, 2) (same scale: the larger precision, 1.0+), `N`
    is the column `n` (case-insensitive), columns the data lacks are written null; Java Paimon 0.9 reads the
    table (its files under both schemas) as paimon_ds does."""
    options = {"primary-key": "id", "bucket": "2"}
    write(table_path, ROWS0, SCHEMA0, options)
    data = pa.schema([pa.field("id", pa.int64(), nullable=False), ("N", pa.int64()), ("d", pa.decimal128(7, 2))])
    write(table_path, [{"id": 2, "N": 1 << 40, "d": Decimal("12345.67")}, {"id": 5, "N": None, "d": None}], data,
          {**options, **MERGE})
    assert [(f["id"], f["name"], f["type"]) for f in schema_file(table_path, 1)["fields"]] == [
        (0, "id", "BIGINT NOT NULL"), (1, "n", "BIGINT"), (2, "f", "FLOAT"), (3, "s", "STRING"),
        (4, "d", "DECIMAL(7, 2)")]
    want = [{"id": 1, "n": 7, "f": 0.5, "s": "a", "d": Decimal("1.25")},
            {"id": 2, "n": 1 << 40, "f": None, "s": None, "d": Decimal("12345.67")},
            {"id": 5, "n": None, "f": None, "s": None, "d": None}]
    assert Table.load(table_path).to_arrow().sort_by("id").to_pylist() == want
    assert java_oracle.read(table_path).sort_by("id").to_pylist() == want


def test_merge_of_an_unchanged_schema_is_the_same_schema(table_path):
    write(table_path, ROWS0, SCHEMA0, {})
    schema = Table.load(table_path).schema()
    assert merge_write_schema(schema, SCHEMA0) is schema
    assert merge_write_schema(schema, SCHEMA0.remove(1)) is schema  # a missing column stays in the table
    # a new ROW column: as Paimon's SchemaMergingUtils numbers it, its nested fields first, then the column
    merged = merge_write_schema(schema, SCHEMA0.append(pa.field("r", pa.struct([("x", pa.int32())]), False)))
    assert merged.id == 1 and merged.highest_field_id == 6
    assert merged.fields[-1].to_json() == {"id": 6, "name": "r", "type": {
        "type": "ROW", "fields": [{"id": 5, "name": "x", "type": "INT"}]}}  # nullable: old rows have no value


def test_spark_writes_merge_schema(spark, java_oracle, table_path):
    spark.createDataFrame([(1, 10)], "id int, v int").write.format("paimon").mode("append") \
        .option("primary-key", "id").option("bucket", "2").save(table_path)
    df = spark.createDataFrame([(2, 1 << 40, "n")], "id int, v bigint, extra string")
    with pytest.raises(Exception, match="column 'v' is BIGINT in the data but INT in the table"):
        df.write.format("paimon").mode("append").save(table_path)
    df.write.format("paimon").mode("append").option("write.merge-schema", "true").save(table_path)
    assert [(f["name"], f["type"]) for f in schema_file(table_path, 1)["fields"]] == [
        ("id", "INT NOT NULL"), ("v", "BIGINT"), ("extra", "STRING")]
    # the clustered writer merges too: another new column, and an upsert of id 1
    paimon_ds.write(spark.createDataFrame([(1, 5, "e", 1.5)], "id int, v bigint, extra string, w double"),
                    table_path, options=MERGE)
    want = [{"id": 1, "v": 5, "extra": "e", "w": 1.5}, {"id": 2, "v": 1 << 40, "extra": "n", "w": None}]
    spark_rows = [r.asDict() for r in spark.read.format("paimon").load(table_path).orderBy("id").collect()]
    assert spark_rows == java_oracle.read(table_path).sort_by("id").to_pylist() == want
    # time travel through Spark reads snapshot 1 under its own schema
    old = spark.read.format("paimon").option("scan.snapshot-id", "1").load(table_path)
    assert old.columns == ["id", "v"] and [tuple(r) for r in old.collect()] == [(1, 10)]


def test_sql_alter_column(spark, java_oracle, table_path):
    """ALTER TABLE ... ALTER COLUMN through paimon_ds.sql: type casts as Paimon allows, nullability, comment."""
    warehouse = str(Path(table_path).parent.parent)
    write(table_path, ROWS0, SCHEMA0, {})
    paimon_ds.sql(spark, "ALTER TABLE db.t ALTER COLUMN n TYPE string", warehouse=warehouse)
    paimon_ds.sql(spark, "ALTER TABLE db.t ALTER COLUMN f TYPE double", warehouse=warehouse)
    paimon_ds.sql(spark, "ALTER TABLE db.t ALTER COLUMN f COMMENT 'wider'", warehouse=warehouse)
    paimon_ds.sql(spark, "ALTER TABLE db.t ALTER COLUMN id DROP NOT NULL", warehouse=warehouse)
    with pytest.raises(SchemaError, match=r"cannot change column 'd' from DECIMAL\(5, 2\) to DATE"):
        paimon_ds.sql(spark, "ALTER TABLE db.t ALTER COLUMN d TYPE date", warehouse=warehouse)
    doc = schema_file(table_path, 4)
    assert [(f["name"], f["type"], f.get("description")) for f in doc["fields"]] == [
        ("id", "INT", None), ("n", "STRING", None), ("f", "DOUBLE", "wider"), ("s", "STRING", None),
        ("d", "DECIMAL(5, 2)", None)]
    want = [{"id": 1, "n": "7", "f": 0.5, "s": "a", "d": Decimal("1.25")},
            {"id": 2, "n": None, "f": None, "s": None, "d": None}]
    assert Table.load(table_path).to_arrow().sort_by("id").to_pylist() == \
        java_oracle.read(table_path).sort_by("id").to_pylist() == want


def test_type_widening_false_keeps_types(table_path):
    """`write.merge-schema.type-widening` (Paimon master, after 1.4.1): false keeps the table's column types and
    casts the data's values into them (new columns are still added); a value that does not fit is refused."""
    write(table_path, ROWS0, SCHEMA0, {})
    keep = {**MERGE, "write.merge-schema.type-widening": "false"}
    data = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int64()), ("x", pa.string())])
    write(table_path, [{"id": 3, "n": 30, "x": "new"}], data, keep)
    assert [(f["name"], f["type"]) for f in schema_file(table_path, 1)["fields"]] == [
        ("id", "INT NOT NULL"), ("n", "INT"), ("f", "FLOAT"), ("s", "STRING"), ("d", "DECIMAL(5, 2)"), ("x", "STRING")]
    assert Table.load(table_path).to_arrow().sort_by("id").column("n").to_pylist() == [7, None, 30]
    with pytest.raises(SchemaError, match="'n'"):
        write(table_path, [{"id": 4, "n": 1 << 40, "x": None}], data, keep)
