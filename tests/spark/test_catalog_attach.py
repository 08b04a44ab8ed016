"""attach(): plain `spark.sql` on the tables of a Paimon warehouse, whoever created them."""

from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog
from paimon_ds.schema.change import AddColumn

ORDERS = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("amount", pa.float64())])


def rows(spark, query: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(query).collect()]


def test_sql_on_attached_tables(spark, tmp_path, java_oracle):
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("shop")
    catalog.create_table("shop.orders", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"],
                         options={"bucket": "2"})
    catalog.create_table("shop.events", pa.schema([("e", pa.int64()), ("kind", pa.string())]))
    paimon_ds.attach(spark, warehouse)

    assert sorted(r for r in rows(spark, "SHOW TABLES IN shop") if not r[2]) == [
        ("shop", "events", False), ("shop", "orders", False)]
    assert rows(spark, "DESCRIBE shop.orders") == [("dt", "string", None), ("id", "bigint", None),
                                                   ("amount", "double", None)]
    spark.sql("INSERT INTO shop.orders VALUES ('d1', 1, 1.0), ('d1', 2, 2.0), ('d2', 1, 3.0)")
    spark.sql("INSERT INTO shop.orders VALUES ('d1', 1, 10.0)")  # an upsert of (d1, 1)
    assert rows(spark, "SELECT * FROM shop.orders WHERE dt = 'd1' ORDER BY id") == [("d1", 1, 10.0), ("d1", 2, 2.0)]
    assert rows(spark, "SELECT count(*), sum(amount) FROM shop.orders") == [(3, 15.0)]

    spark.sql("INSERT INTO shop.events SELECT id, 'k' || (id % 2) FROM range(5)")
    spark.createDataFrame([(9, "late")], "e BIGINT, kind STRING").write.format("paimon").mode("append") \
        .saveAsTable("shop.events")
    assert sorted(tuple(r) for r in spark.read.table("shop.events").collect()) == \
        [(0, "k0"), (1, "k1"), (2, "k0"), (3, "k1"), (4, "k0"), (9, "late")]
    spark.sql("INSERT OVERWRITE shop.events SELECT 100, 'only'")
    assert rows(spark, "SELECT * FROM shop.events") == [(100, "only")]

    # Java Paimon reads what SQL wrote
    java = java_oracle.read(catalog.table_path("shop.orders"))
    assert sorted((r["dt"], r["id"], r["amount"]) for r in java.to_pylist()) == \
        [("d1", 1, 10.0), ("d1", 2, 2.0), ("d2", 1, 3.0)]

    # a table Java Paimon creates later appears on the next attach; attach is repeatable
    java_oracle.write(catalog.table_path("shop.from_java"), pa.table({"id": pa.array([7], pa.int32()), "s": ["j"]}),
                      primary_key="id", bucket=1)
    paimon_ds.attach(spark, warehouse)
    assert rows(spark, "SELECT * FROM shop.from_java") == [(7, "j")]
    spark.sql("INSERT INTO shop.from_java VALUES (8, 'p')")
    java = java_oracle.read(catalog.table_path("shop.from_java"))
    assert sorted((r["id"], r["s"]) for r in java.to_pylist()) == [(7, "j"), (8, "p")]


FRESH_SESSION = '''
import json, sys
import paimon_ds
spark = paimon_ds.session("paimon_ds-reattach", master="local[1]")
paimon_ds.attach(spark, sys.argv[1])
spark.sql("INSERT INTO shop.orders VALUES ('d3', 5, 5.0)")
print(json.dumps([list(r) for r in spark.sql("SELECT * FROM shop.orders ORDER BY dt, id").collect()]))
spark.stop()
'''


def test_a_fresh_session_reattaches_the_warehouse(spark, tmp_path):
    """Named tables live in the warehouse, not in the session: a new application attaches and goes on."""
    import json
    import subprocess
    import sys
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("shop")
    catalog.create_table("shop.orders", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"],
                         options={"bucket": "1"})
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO shop.orders VALUES ('d1', 1, 1.0)")
    out = subprocess.run([sys.executable, "-c", FRESH_SESSION, warehouse], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [["d1", 1, 1.0], ["d3", 5, 5.0]]
    assert rows(spark, "SELECT * FROM shop.orders ORDER BY dt") == [("d1", 1, 1.0), ("d3", 5, 5.0)]


def test_attach_refuses_to_replace_a_session_table_it_did_not_create(spark, tmp_path):
    import pytest

    from paimon_ds.catalog import CatalogError
    spark.sql("CREATE DATABASE IF NOT EXISTS mine")
    spark.sql("CREATE TABLE IF NOT EXISTS mine.kept (x INT) USING parquet")
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("mine")
    catalog.create_table("mine.kept", pa.schema([("x", pa.int32())]))
    with pytest.raises(CatalogError, match="did not attach"):
        paimon_ds.attach(spark, str(tmp_path / "wh"))
    assert [r for r in rows(spark, "SHOW TABLES IN mine") if not r[2]] == [("mine", "kept", False)]
    spark.sql("DROP TABLE mine.kept")
    spark.sql("DROP DATABASE mine")


def test_attach_mirrors_one_warehouse(spark, tmp_path):
    """Tables attached from a warehouse leave the session when another is attached, or when dropped elsewhere."""
    first, second = Catalog(str(tmp_path / "one")), Catalog(str(tmp_path / "two"))
    for catalog, table in ((first, "only_one"), (first, "both"), (second, "both")):
        catalog.create_database("mirror", ignore_if_exists=True)
        catalog.create_table(f"mirror.{table}", pa.schema([("x", pa.int64())]))
    paimon_ds.attach(spark, str(tmp_path / "one"))
    assert [r for r in rows(spark, "SHOW TABLES IN mirror") if not r[2]] == [
        ("mirror", "both", False), ("mirror", "only_one", False)]
    paimon_ds.attach(spark, str(tmp_path / "two"))
    assert [r for r in rows(spark, "SHOW TABLES IN mirror") if not r[2]] == [("mirror", "both", False)]
    spark.sql("INSERT INTO mirror.both VALUES (2)")
    assert second.get_table("mirror.both").to_arrow().to_pylist() == [{"x": 2}]
    second.drop_table("mirror.both")  # dropped by another engine: gone from the session at the next attach
    paimon_ds.attach(spark, str(tmp_path / "two"))
    assert [r for r in rows(spark, "SHOW TABLES IN mirror") if not r[2]] == []


def test_plain_spark_ddl_on_an_attached_table_is_refused_at_the_next_read_and_write(spark, tmp_path):
    """Spark runs no data source code for DDL: a plain spark.sql ALTER TABLE changes only the session's
    catalog entry, and a change made by another engine only the Paimon table. Neither may make a read drop or
    invent a column: the next read or write names the difference and the remedy, and attach() heals it."""
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("ddl")
    catalog.create_table("ddl.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO ddl.t VALUES (1, 'a')")
    table = paimon_ds.Table.load(catalog.table_path("ddl.t"))
    before = (table.latest_snapshot().id, table.table_schema.id)

    spark.sql("ALTER TABLE ddl.t ADD COLUMNS (z INT)")  # Spark's entry only
    for statement in ("SELECT * FROM ddl.t", "INSERT INTO ddl.t VALUES (2, 'b', 5)"):
        with pytest.raises(Exception) as refused:
            spark.sql(statement).collect()
        message = str(refused.value)
        assert "Spark's session table ddl.t no longer matches Paimon table" in message, statement
        assert "Spark has ['z int'] that Paimon does not, Paimon has nothing that Spark does not" in message
        assert "paimon_ds.sql(spark, ...)" in message and "paimon_ds.attach(spark, warehouse)" in message
    table = paimon_ds.Table.load(catalog.table_path("ddl.t"))
    assert (table.latest_snapshot().id, table.table_schema.id) == before  # nothing written
    paimon_ds.attach(spark, warehouse)  # the entry is Paimon's again
    assert rows(spark, "SELECT * FROM ddl.t") == [(1, "a")]

    # another engine adds a column (the catalog API without Spark stands for Java here): the stale entry
    # would hide it on reads and leave it null on writes
    catalog.alter_table("ddl.t", [AddColumn("w", pa.float64())])
    with pytest.raises(Exception, match=r"Spark has nothing that Paimon does not, Paimon has \['w double'\]"):
        spark.sql("SELECT * FROM ddl.t").collect()
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO ddl.t VALUES (3, 'c', 1.5)")
    assert rows(spark, "SELECT * FROM ddl.t ORDER BY id") == [(1, "a", None), (3, "c", 1.5)]


def test_a_table_spark_creates_using_paimon_names_the_way_to_create_one(spark, tmp_path):
    """CREATE TABLE ... USING paimon through plain spark.sql makes only a Spark catalog entry: Spark gives a Python
    data source no LOCATION or TBLPROPERTIES, so there is no Paimon table behind it."""
    spark.sql("CREATE TABLE IF NOT EXISTS spark_made_paimon (id BIGINT) USING paimon TBLPROPERTIES ('bucket' = '2')")
    try:
        with pytest.raises(Exception, match=r"plain spark.sql CREATE TABLE \.\.\. USING paimon has none.*"
                                            r"paimon_ds.sql\(spark, 'CREATE TABLE \.\.\.'\)"):
            spark.sql("INSERT INTO spark_made_paimon VALUES (1)").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS spark_made_paimon")


def test_ddl_through_paimon_ds_sql_makes_only_the_changed_table_again(spark, tmp_path, monkeypatch):
    """CREATE / ALTER / RENAME through paimon_ds.sql re-attach the table they changed, not the warehouse: a DDL
    statement costs the same beside one table as beside a thousand."""
    from paimon_ds.spark import catalog as attach_module
    warehouse = Catalog(str(tmp_path / "wh"))
    warehouse.create_database("many")
    for i in range(6):
        warehouse.create_table(f"many.t{i}", pa.schema([("x", pa.int64())]))
    paimon_ds.attach(spark, str(tmp_path / "wh"))
    registered: list[str] = []
    real = attach_module.register_source

    def counted(session, source):
        registered.append(source.name())
        return real(session, source)
    monkeypatch.setattr(attach_module, "register_source", counted)

    paimon_ds.sql(spark, "CREATE TABLE many.fresh (x BIGINT, y STRING)")
    assert len(registered) == 1 and "fresh" in registered[0]  # not t0 ... t5
    spark.sql("INSERT INTO many.fresh VALUES (1, 'a')")
    assert rows(spark, "SELECT * FROM many.fresh") == [(1, "a")]
    assert rows(spark, "SELECT count(*) FROM global_temp.`many.fresh$snapshots`") == [(1,)]

    registered.clear()
    paimon_ds.sql(spark, "ALTER TABLE many.fresh ADD COLUMN z INT")
    assert len(registered) == 1 and "fresh" in registered[0]
    assert rows(spark, "SELECT * FROM many.fresh") == [(1, "a", None)]
    assert [f.name for f in spark.table("global_temp.`many.fresh$ro`").schema.fields] == ["x", "y", "z"]

    registered.clear()
    paimon_ds.sql(spark, "ALTER TABLE many.fresh RENAME TO many.renamed")
    assert len(registered) == 1 and "renamed" in registered[0]
    assert rows(spark, "SELECT * FROM many.renamed") == [(1, "a", None)]
    assert not spark.catalog.tableExists("many.fresh")
    # the other tables were left as they were, and still work
    spark.sql("INSERT INTO many.t3 VALUES (7)")
    assert rows(spark, "SELECT * FROM many.t3") == [(7,)]


def test_a_tables_system_source_asks_which_system_table(spark, tmp_path):
    """One registered source serves all of a table's system views; read without a `system` option, it says so."""
    from paimon_ds.spark.session import register_source
    from paimon_ds.spark.system import system_source
    warehouse = Catalog(str(tmp_path / "wh"))
    warehouse.create_database("sys")
    table = warehouse.create_table("sys.t", pa.schema([("x", pa.int64())]))
    source = system_source(table.path, "")
    register_source(spark, source)
    with pytest.raises(Exception, match=r"name one with option\('system', 'snapshots'\)"):
        spark.read.format(source.name()).load().collect()
    assert spark.read.format(source.name()).option("system", "$Schemas").load().count() == 1
