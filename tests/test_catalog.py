"""The warehouse catalog (Paimon's FileSystemCatalog layout), without Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.catalog import (
    Catalog,
    CatalogError,
    DatabaseAlreadyExists,
    DatabaseNotEmpty,
    DatabaseNotFound,
    TableAlreadyExists,
)
from paimon_ds.options.registry import OptionError
from paimon_ds.table import TableNotFound

ORDERS = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("amount", pa.float64())])


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_databases_and_tables_live_in_the_paimon_layout(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    assert catalog.list_databases() == []
    catalog.create_database("sales")
    catalog.create_database("sales", ignore_if_exists=True)
    assert catalog.list_databases() == ["sales"]
    orders = catalog.create_table("sales.orders", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"],
                                  options={"bucket": "2", "merge-engine": "partial-update"}, comment="orders")
    catalog.create_table("sales.events", pa.schema([("e", pa.int64())]))
    assert catalog.list_tables("sales") == ["events", "orders"]
    assert orders.path == str(tmp_path / "wh" / "sales.db" / "orders")
    schema = json.loads((tmp_path / "wh/sales.db/orders/schema/schema-0").read_text())
    assert schema["partitionKeys"] == ["dt"] and schema["primaryKeys"] == ["dt", "id"]
    assert schema["options"] == {"bucket": "2", "merge-engine": "partial-update"}
    assert schema["comment"] == "orders"
    assert [f["name"] for f in schema["fields"]] == ["dt", "id", "amount"]
    assert not (tmp_path / "wh/sales.db/orders/snapshot").exists()  # created empty, as Paimon does

    table = catalog.get_table("sales.orders")
    write = table.new_write()
    write.write_arrow(pa.table({"dt": ["d1"], "id": [1], "amount": [2.5]}, schema=ORDERS))
    table.new_commit().commit(write.prepare_commit())
    assert catalog.get_table("sales.orders").to_arrow().to_pylist() == [{"dt": "d1", "id": 1, "amount": 2.5}]

    catalog.drop_table("sales.events")
    assert catalog.list_tables("sales") == ["orders"]
    with pytest.raises(DatabaseNotEmpty, match="orders"):
        catalog.drop_database("sales")
    catalog.drop_database("sales", cascade=True)
    assert catalog.list_databases() == [] and not (tmp_path / "wh/sales.db").exists()


@pytest.mark.parametrize("call, error, message", [
    (lambda c: c.create_table("nodb.t", ORDERS), DatabaseNotFound, "database 'nodb' does not exist"),
    (lambda c: c.create_table("db.orders", ORDERS), TableAlreadyExists, "db.orders already exists"),
    (lambda c: c.create_table("db.t", ORDERS, options={"bucket": "zero"}), OptionError, "bucket"),
    (lambda c: c.create_table("db.t", ORDERS, options={"buckets": "2"}), OptionError, "did you mean 'bucket'"),
    (lambda c: c.create_table("db.t", ORDERS, primary_keys=["nope"]), CatalogError, "nope"),
    (lambda c: c.create_table("db.t", ORDERS, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "2"}),
     Exception, "needs dynamic bucket mode"),
    (lambda c: c.create_table("db.t$x", ORDERS), CatalogError, "not valid"),
    (lambda c: c.create_table("a.b.c", ORDERS), CatalogError, "not a table name"),
    (lambda c: c.get_table("db.missing"), TableNotFound, "tables of db: orders"),
    (lambda c: c.drop_table("db.missing"), TableNotFound, "db.missing does not exist"),
    (lambda c: c.create_database("db"), DatabaseAlreadyExists, "already exists"),
    (lambda c: c.drop_database("nodb"), DatabaseNotFound, "nodb"),
])
def test_bad_requests_fail_clearly_and_change_nothing(tmp_path, call, error, message):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.orders", ORDERS, options={"bucket": "-1"})
    before = tree(tmp_path / "wh")
    with pytest.raises(error, match=message):
        call(catalog)
    assert tree(tmp_path / "wh") == before


def test_tables_of_other_writers_are_listed_and_read(tmp_path, java_oracle, pypaimon_oracle):
    """Java Paimon 0.9 creates a table in the warehouse; our catalog lists and reads it; Java reads ours."""
    warehouse = tmp_path / "wh"
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]})
    java_oracle.write(str(warehouse / "db.db" / "from_java"), data, primary_key="id", bucket=1)
    ours = catalog.create_table("db.ours", pa.schema([("id", pa.int32()), ("name", pa.string())]),
                                options={"bucket": "-1"})
    write = ours.new_write()
    write.write_arrow(data)
    ours.new_commit().commit(write.prepare_commit())

    assert catalog.list_tables("db") == ["from_java", "ours"]
    read = catalog.get_table("db.from_java").to_arrow()
    assert sorted(read.to_pylist(), key=lambda r: r["id"]) == data.to_pylist()
    assert list(catalog.get_table("db.from_java").schema().primary_keys) == ["id"]
    for oracle in (java_oracle, pypaimon_oracle):
        got = oracle.read(ours.path)
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == data.to_pylist()
    assert isinstance(catalog.get_table("db.ours"), Table)
