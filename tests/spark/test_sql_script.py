"""paimon_ds.sql: a SQL script over a warehouse (DDL, static and dynamic overwrite, CTAS, DELETE / UPDATE /
MERGE), checked exactly, in a fresh session, by both oracles, and against a model."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog
from paimon_ds.catalog import TableAlreadyExists
from paimon_ds.options.registry import OptionError
from paimon_ds.schema.types import SchemaError
from paimon_ds.snapshot.manager import SnapshotNotFound
from paimon_ds.spark.rowlevel import RowLevelError
from paimon_ds.spark.sql import SqlError
from paimon_ds.table import Table, TableNotFound

from ._helpers import files_under


def rows(spark, query: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(query).collect()]


def tables(spark, database: str) -> list[tuple]:
    """SHOW TABLES without the session's temporary views (other tests' views share the session)."""
    return sorted(r for r in rows(spark, f"SHOW TABLES IN {database}") if not r[2])


def arrow_rows(t: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in t.to_pylist())


SCRIPT = [
    "CREATE DATABASE IF NOT EXISTS shop",
    """CREATE TABLE shop.orders (id BIGINT NOT NULL COMMENT 'order id', amount DOUBLE, status STRING,
                                dt STRING NOT NULL)
       PARTITIONED BY (dt) COMMENT 'orders by day'
       TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2', 'snapshot.num-retained.min' = '5')""",
    """CREATE TABLE shop.events (id BIGINT, kind STRING, dt STRING) PARTITIONED BY (dt)
       TBLPROPERTIES ('target-file-size' = '16 mb')""",
]

FRESH_SESSION = '''
import json, sys
import paimon_ds
spark = paimon_ds.session("paimon_ds-sql-fresh", master="local[1]")
paimon_ds.attach(spark, sys.argv[1])
out = {}
out["orders"] = [list(r) for r in spark.sql("SELECT id, amount, status, dt FROM shop.orders "
                                            "WHERE amount >= 20 ORDER BY id").collect()]
out["events"] = [list(r) for r in spark.sql("SELECT * FROM shop.events WHERE dt <> 'd9' ORDER BY id").collect()]
out["big"] = [list(r) for r in spark.sql("SELECT * FROM shop.big ORDER BY id").collect()]
spark.sql("INSERT INTO shop.events VALUES (40, 'fresh', 'd3')")
spark.sql("INSERT OVERWRITE shop.orders WITH ('partitionOverwriteMode' = 'dynamic') "
          "SELECT 7, 70.0, 'new', 'd2'")
paimon_ds.sql(spark, "INSERT OVERWRITE shop.events PARTITION (dt = 'd2') SELECT 41, 'static'")
out["after"] = [list(r) for r in spark.sql("SELECT * FROM shop.events ORDER BY id").collect()]
print(json.dumps(out))
spark.stop()
'''


def test_sql_script_ddl_inserts_overwrites_and_ctas(spark, tmp_path, java_oracle, pypaimon_oracle):
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    for statement in SCRIPT:
        assert paimon_ds.sql(spark, statement) is None

    # what CREATE TABLE wrote is a Paimon schema with the keys, options and comments
    orders = Catalog(warehouse).get_table("shop.orders")
    assert orders.schema().primary_keys == ("id", "dt") and orders.partition_keys == ["dt"]
    assert orders.schema().options == {"bucket": "2", "snapshot.num-retained.min": "5"}
    assert orders.schema().comment == "orders by day"
    assert orders.schema().field("id").description == "order id"
    assert tables(spark, "shop") == [("shop", "events", False), ("shop", "orders", False)]

    spark.sql("INSERT INTO shop.orders VALUES (1, 10.0, 'new', 'd1'), (2, 20.0, 'new', 'd1'), (3, 30.0, 'new', 'd2')")
    spark.sql("INSERT INTO shop.orders VALUES (2, 25.0, 'paid', 'd1')")  # upsert
    spark.sql("INSERT INTO shop.events VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2'), (4, 'd', 'd3')")
    # static: replaces partition d1 only, whatever the query's rows
    paimon_ds.sql(spark, "INSERT OVERWRITE shop.events PARTITION (dt = 'd1') SELECT 10, 'x'")
    # INSERT INTO with a static partition value
    paimon_ds.sql(spark, "INSERT INTO shop.events PARTITION (dt = 'd3') (kind, id) SELECT 'e', 11")
    # dynamic, in plain spark.sql: replaces the partitions the query writes (d2)
    spark.sql("INSERT OVERWRITE shop.events WITH ('partitionOverwriteMode' = 'dynamic') SELECT 20, 'y', 'd2'")
    assert rows(spark, "SELECT * FROM shop.events ORDER BY id") == [
        (4, "d", "d3"), (10, "x", "d1"), (11, "e", "d3"), (20, "y", "d2")]
    # a static overwrite whose query is empty still empties its partition (Paimon's semantics)
    paimon_ds.sql(spark, "INSERT OVERWRITE shop.events PARTITION (dt = 'd3') "
                         "SELECT id, kind FROM shop.events WHERE false")
    assert rows(spark, "SELECT id FROM shop.events ORDER BY id") == [(10,), (20,)]
    # the system tables follow: insert, static, insert into a partition, dynamic, empty static
    assert rows(spark, "SELECT commit_kind FROM global_temp.`shop.events$snapshots` ORDER BY snapshot_id") == [
        ("APPEND",), ("OVERWRITE",), ("APPEND",), ("OVERWRITE",), ("OVERWRITE",)]

    paimon_ds.sql(spark, "CREATE TABLE shop.big TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1') "
                         "AS SELECT id, amount FROM shop.orders WHERE amount > 15")
    big = Catalog(warehouse).get_table("shop.big")
    assert big.schema().primary_keys == ("id",) and big.bucket == 1
    assert rows(spark, "SELECT * FROM shop.big ORDER BY id") == [(2, 25.0), (3, 30.0)]
    assert rows(spark, "SELECT id, status FROM shop.orders WHERE dt = 'd1' AND amount > 5 ORDER BY id") == [
        (1, "new"), (2, "paid")]

    # a fresh application re-attaches the warehouse and goes on, through plain SQL and paimon_ds.sql
    out = subprocess.run([sys.executable, "-c", FRESH_SESSION, warehouse], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    fresh = json.loads(out.stdout.strip().splitlines()[-1])
    assert fresh["orders"] == [[2, 25.0, "paid", "d1"], [3, 30.0, "new", "d2"]]
    assert fresh["events"] == [[10, "x", "d1"], [20, "y", "d2"]]
    assert fresh["big"] == [[2, 25.0], [3, 30.0]]
    assert fresh["after"] == [[10, "x", "d1"], [40, "fresh", "d3"], [41, "static", "d2"]]
    expected_orders = [(1, 10.0, "new", "d1"), (2, 25.0, "paid", "d1"), (7, 70.0, "new", "d2")]
    assert rows(spark, "SELECT id, amount, status, dt FROM shop.orders ORDER BY id") == expected_orders

    # both oracles read the same tables
    catalog = Catalog(warehouse)
    expected = {"orders": expected_orders, "events": [(10, "x", "d1"), (40, "fresh", "d3"), (41, "static", "d2")],
                "big": [(2, 25.0), (3, 30.0)]}
    columns = {"orders": ["id", "amount", "status", "dt"], "events": ["id", "kind", "dt"], "big": ["id", "amount"]}
    for name, want in expected.items():
        path = catalog.table_path(f"shop.{name}")
        assert arrow_rows(java_oracle.read(path), columns[name]) == sorted(want), name
        assert arrow_rows(pypaimon_oracle.read(path), columns[name]) == sorted(want), name

    paimon_ds.sql(spark, "DROP TABLE shop.big")
    assert tables(spark, "shop") == [("shop", "events", False), ("shop", "orders", False)]
    assert not catalog.table_exists("shop.big")
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM global_temp.`shop.big$snapshots`").collect()


def _model_rows(model: dict) -> list[tuple]:
    return sorted((k[0], k[1], v[0], v[1]) for k, v in model.items())


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_delete_update_merge_match_a_model(spark, tmp_path, kind):
    """Random DELETE / UPDATE / MERGE statements through paimon_ds.sql; the table equals a dict model after each."""
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    props = "'primary-key' = 'id,dt', 'bucket' = '2'" if kind == "primary-key" else "'target-file-size' = '1 mb'"
    paimon_ds.sql(spark, "CREATE DATABASE s")
    paimon_ds.sql(spark, f"CREATE TABLE s.t (id BIGINT NOT NULL, dt STRING NOT NULL, amount BIGINT, note STRING) "
                         f"PARTITIONED BY (dt) TBLPROPERTIES ({props})")
    rng = random.Random(11)
    model = {(i, f"d{i % 3}"): (i * 10, "init") for i in range(60)}
    values = ", ".join(f"({k[0]}, '{k[1]}', {v[0]}, '{v[1]}')" for k, v in model.items())
    spark.sql(f"INSERT INTO s.t VALUES {values}")
    next_id = 60
    for round_ in range(3):
        lo = rng.randrange(60)
        paimon_ds.sql(spark, f"DELETE FROM s.t WHERE id BETWEEN {lo} AND {lo + 5} AND dt <> 'd1'")
        model = {k: v for k, v in model.items() if not (lo <= k[0] <= lo + 5 and k[1] != "d1")}

        paimon_ds.sql(spark, f"UPDATE s.t SET amount = amount + 1, note = 'u{round_}' WHERE id % 7 = {round_}")
        model = {k: ((v[0] + 1, f"u{round_}") if k[0] % 7 == round_ else v) for k, v in model.items()}

        source = []
        for _ in range(12):
            if rng.random() < 0.6 and model:
                key = rng.choice(sorted(model))
            else:
                key = (next_id, f"d{next_id % 3}")
                next_id += 1
            if any(s[0] == key[0] for s in source):
                continue
            source.append((key[0], key[1], rng.randrange(1000), rng.choice(["del", "set", "set"])))
        spark.createDataFrame(source, "id bigint, dt string, amount bigint, op string").createOrReplaceTempView("src")
        paimon_ds.sql(spark, """
            MERGE INTO s.t AS t USING src AS s ON t.id = s.id AND t.dt = s.dt
            WHEN MATCHED AND s.op = 'del' THEN DELETE
            WHEN MATCHED THEN UPDATE SET amount = s.amount, note = 'm'
            WHEN NOT MATCHED AND s.op <> 'del' THEN INSERT (id, dt, amount, note) VALUES (s.id, s.dt, s.amount, 'new')
        """)
        for sid, sdt, amount, op in source:
            key = (sid, sdt)
            if key in model:
                if op == "del":
                    del model[key]
                else:
                    model[key] = (amount, "m")
            elif op != "del":
                model[key] = (amount, "new")
        assert rows(spark, "SELECT id, dt, amount, note FROM s.t") and \
            sorted(rows(spark, "SELECT id, dt, amount, note FROM s.t")) == _model_rows(model), f"round {round_}"

    table = Catalog(warehouse).get_table("s.t")
    kinds = [table.snapshot_manager.snapshot(i).commit_kind for i in table.snapshot_manager.list_ids()]
    if kind == "append":  # copy-on-write: each statement replaces the files it touched in one OVERWRITE
        assert kinds[0] == "APPEND" and set(kinds[1:]) == {"OVERWRITE"}
    else:  # changes are rows of their kind, merged by key
        assert set(kinds) <= {"APPEND", "COMPACT"}


def _state(path: str) -> tuple:
    table = Table.load(path)
    ids = table.snapshot_manager.list_ids()
    return ids, sorted(map(tuple, (r.values() for r in table.to_arrow().to_pylist()))), files_under(path)


def test_bad_sql_leaves_tables_unchanged(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    for statement in SCRIPT:
        paimon_ds.sql(spark, statement)
    spark.sql("INSERT INTO shop.orders VALUES (1, 10.0, 'new', 'd1'), (2, 20.0, 'new', 'd2')")
    spark.sql("INSERT INTO shop.events VALUES (1, 'a', 'd1')")
    catalog = Catalog(warehouse)
    orders, events = catalog.table_path("shop.orders"), catalog.table_path("shop.events")
    before = {p: _state(p) for p in (orders, events)}
    tables_before = catalog.list_tables("shop")

    cases = [
        ("DELETE FROM shop.nope WHERE id = 1", TableNotFound, "shop.nope"),
        ("UPDATE shop.nope SET x = 1", TableNotFound, "shop.nope"),
        ("CREATE TABLE shop.orders (id BIGINT)", TableAlreadyExists, "already exists"),
        ("CREATE TABLE shop.x (id BIGINT) TBLPROPERTIES ('bucket' = 'many')", OptionError, "bucket"),
        ("CREATE TABLE shop.x (id BIGINT) TBLPROPERTIES ('buckets' = '2')", OptionError, "buckets"),
        ("CREATE TABLE shop.x (id BIGINT) TBLPROPERTIES ('primary-key' = 'nope')", Exception, "nope"),
        ("CREATE TABLE shop.x (id BIGINT) LOCATION '/tmp/elsewhere'", SqlError, "LOCATION"),
        ("CREATE TABLE shop.x (id BIGINT) USING parquet", SqlError, "USING parquet"),
        ("CALL sys.rollback(table => 'shop.orders', version => 99)", SnapshotNotFound, "99"),
        ("CALL sys.rollback(table => 'shop.orders', version => 'no_such_tag')", LookupError, "no_such_tag"),
        ("CALL sys.no_such_procedure(table => 'shop.orders')", SqlError, "unknown procedure"),
        ("CALL sys.expire_snapshots(table => 'shop.orders', retain_min => 0)", ValueError, "retention"),
        ("UPDATE shop.orders SET id = 5 WHERE id = 1", RowLevelError, "primary-key"),
        ("ALTER TABLE shop.orders SET TBLPROPERTIES ('merge-engine' = 'first-row')", Exception, "merge-engine"),
        ("ALTER TABLE shop.orders DROP COLUMN dt", Exception, "dt"),
        ("INSERT OVERWRITE shop.events PARTITION (kind = 'a') SELECT 1, 'd1'", SqlError, "partition keys"),
        ("INSERT OVERWRITE shop.events PARTITION (dt = 'd1') SELECT 1, 'a', 'extra'", SqlError, "expects 2"),
        ("DELETE FROM shop.orders WHERE no_such_column = 1", Exception, "no_such_column"),
        ("ALTER TABLE shop.orders SET TBLPROPERTIES ('snapshot.num-retained.min' = 'many')", OptionError,
         "snapshot.num-retained.min"),
        ("CREATE TABLE nodb.x (id BIGINT)", LookupError, "nodb"),
        ("DROP DATABASE shop", Exception, "use cascade"),
        ("DROP TABLE shop.nope", TableNotFound, "shop.nope"),
    ]
    for statement, error, text in cases:
        with pytest.raises(error) as info:
            paimon_ds.sql(spark, statement)
        assert text.lower() in str(info.value).lower(), (statement, str(info.value)[:300])
        assert {p: _state(p) for p in (orders, events)} == before, statement
        assert catalog.list_tables("shop") == tables_before, statement

    # MERGE whose source matches one target row twice: SQL's cardinality error, nothing written
    spark.createDataFrame([(1, 1.0, "d1"), (1, 2.0, "d1")], "id bigint, amount double, dt string") \
        .createOrReplaceTempView("dup")
    with pytest.raises(RowLevelError, match="more than one source row"):
        paimon_ds.sql(spark, "MERGE INTO shop.orders t USING dup s ON t.id = s.id AND t.dt = s.dt "
                             "WHEN MATCHED THEN UPDATE SET amount = s.amount")
    assert {p: _state(p) for p in (orders, events)} == before


def test_alter_table_through_sql_refreshes_the_session_table(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    paimon_ds.sql(spark, "CREATE DATABASE a")
    paimon_ds.sql(spark, "CREATE TABLE a.t (id BIGINT, v STRING)")
    spark.sql("INSERT INTO a.t VALUES (1, 'x')")
    paimon_ds.sql(spark, "ALTER TABLE a.t ADD COLUMNS (n INT COMMENT 'new')")
    paimon_ds.sql(spark, "ALTER TABLE a.t RENAME COLUMN v TO s")
    paimon_ds.sql(spark, "ALTER TABLE a.t SET TBLPROPERTIES ('snapshot.num-retained.max' = '17')")
    spark.sql("INSERT INTO a.t VALUES (2, 'y', 5)")
    assert rows(spark, "SELECT * FROM a.t ORDER BY id") == [(1, "x", None), (2, "y", 5)]
    assert ("snapshot.num-retained.max", "17") in rows(spark, "SELECT * FROM global_temp.`a.t$options`")
    paimon_ds.sql(spark, "ALTER TABLE a.t UNSET TBLPROPERTIES ('snapshot.num-retained.max')")
    paimon_ds.sql(spark, "ALTER TABLE a.t DROP COLUMN n")
    paimon_ds.sql(spark, "ALTER TABLE a.t RENAME TO a.u")
    assert tables(spark, "a") == [("a", "u", False)]
    assert rows(spark, "SELECT * FROM a.u ORDER BY id") == [(1, "x"), (2, "y")]
    table = Catalog(warehouse).get_table("a.u")
    assert [f.name for f in table.table_schema.fields] == ["id", "s"] and table.table_schema.id == 5
    assert "snapshot.num-retained.max" not in table.table_schema.options


def test_alter_table_nested_fields_and_positions_through_sql(spark, tmp_path):
    """ADD COLUMN s.x ... FIRST / AFTER, RENAME COLUMN s.x TO y, DROP COLUMN s.x (Paimon 1.0's nested schema
    changes; Java Paimon 0.9's Spark catalog refuses them) and FIRST / AFTER on top-level columns; rows written
    before read by field id (tests/schema/test_change.py checks pypaimon 2.1 reads such tables the same)."""
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    paimon_ds.sql(spark, "CREATE DATABASE n")
    paimon_ds.sql(spark, "CREATE TABLE n.t (id BIGINT, s STRUCT<a: INT, b: STRING, c: DOUBLE>)")
    spark.sql("INSERT INTO n.t VALUES (1, named_struct('a', 1, 'b', 'x', 'c', 0.5))")
    paimon_ds.sql(spark, "ALTER TABLE n.t ADD COLUMNS (s.z BIGINT AFTER a, s.f STRING FIRST, top INT FIRST)")
    paimon_ds.sql(spark, "ALTER TABLE n.t ADD COLUMN mid STRING AFTER id")
    paimon_ds.sql(spark, "ALTER TABLE n.t RENAME COLUMN s.b TO bee")
    paimon_ds.sql(spark, "ALTER TABLE n.t DROP COLUMN s.c")
    table = Catalog(warehouse).get_table("n.t")
    assert [f.name for f in table.table_schema.fields] == ["top", "id", "mid", "s"]
    assert [f.name for f in table.table_schema.field("s").type.fields] == ["f", "a", "z", "bee"]
    spark.sql("INSERT INTO n.t VALUES (7, 2, 'm', named_struct('f', 'g', 'a', 2, 'z', 20, 'bee', 'y'))")
    got = rows(spark, "SELECT top, id, mid, s.f, s.a, s.z, s.bee FROM n.t ORDER BY id")
    assert got == [(None, 1, None, None, 1, None, "x"), (7, 2, "m", "g", 2, 20, "y")]
    assert [tuple(r) for r in paimon_ds.sql(spark, "SELECT s FROM n.t WHERE id = 1").collect()] == [
        ((None, 1, None, "x"),)]
    with pytest.raises(SchemaError, match="not a struct"):
        paimon_ds.sql(spark, "ALTER TABLE n.t ADD COLUMN id.q INT")
