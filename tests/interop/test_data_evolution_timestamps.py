"""A data-evolution table (Paimon 1.x) whose TIMESTAMP(7..9) columns were ALTERed, written by pypaimon 2.1 (the
reference for data evolution; Java 0.9 misreads such tables), read here value for value.

The table: `ts_a` TIMESTAMP(7) widened to TIMESTAMP(9), `ts_b` TIMESTAMP(9) narrowed to TIMESTAMP(6), partial-column
updates before and after the ALTER, and an append under the new schema. The core keeps nanoseconds where the type
keeps them; a read in Spark's microseconds (the read schema Spark asks for) floors them as Paimon's
`Timestamp.toMicros` does: it used to crash (`Casting from timestamp[ns] to timestamp[us] would lose data`).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from paimon_ds import Table

PP_TABLE = """
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.schema.schema_change import SchemaChange
import os

warehouse = os.path.dirname(os.path.dirname(path))
cat = CatalogFactory.create({"warehouse": warehouse})
cat.create_database("db", True)
fields = [DataField(0, "id", AtomicType("BIGINT")), DataField(1, "ts_a", AtomicType("TIMESTAMP(7)")),
          DataField(2, "ts_b", AtomicType("TIMESTAMP(9)")), DataField(3, "b", AtomicType("INT"))]
cat.create_table("db.t", Schema(fields=fields, options={"row-tracking.enabled": "true",
                                                        "data-evolution.enabled": "true"}), False)


def update(cols, data):
    wb = cat.get_table("db.t").new_batch_write_builder()
    messages = wb.new_update().with_update_type(cols).update_by_arrow_with_row_id(data)
    c = wb.new_commit(); c.commit(messages); c.close()


ns = pa.timestamp("ns")
commit_arrow(cat.get_table("db.t"), pa.table({
    "id": pa.array([0, 1, 2], pa.int64()),
    "ts_a": pa.array([1_000_000_100, -1_000_000_500, None], ns),
    "ts_b": pa.array([2_000_000_123, -2_000_000_456, 3_000_000_000], ns),
    "b": pa.array([10, 11, 12], pa.int32())}))
update(["b"], pa.table({"_ROW_ID": pa.array([0], pa.int64()), "b": pa.array([100], pa.int32())}))
update(["ts_a"], pa.table({"_ROW_ID": pa.array([2], pa.int64()), "ts_a": pa.array([5_000_000_700], ns)}))
cat.alter_table("db.t", [SchemaChange.update_column_type("ts_a", AtomicType("TIMESTAMP(9)")),
                         SchemaChange.update_column_type("ts_b", AtomicType("TIMESTAMP(6)"))])
update(["ts_a"], pa.table({"_ROW_ID": pa.array([0], pa.int64()), "ts_a": pa.array([6_000_000_001], ns)}))
commit_arrow(cat.get_table("db.t"), pa.table({
    "id": pa.array([3], pa.int64()), "ts_a": pa.array([7_000_000_009], ns),
    "ts_b": pa.array([8_000_001], pa.timestamp("us")), "b": pa.array([13], pa.int32())}))
"""

EPOCH = dt.datetime(1970, 1, 1)


def _us(micros: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=micros)


def test_altered_nanosecond_columns_read_as_pypaimon_reads_them(pypaimon_oracle, table_path, tmp_path):
    pypaimon_oracle.exec(table_path, PP_TABLE)
    table = Table.load(table_path)
    assert [f.type.sql() for f in table.table_schema.fields] == ["BIGINT", "TIMESTAMP(9)", "TIMESTAMP(6)", "INT"]

    got = table.to_arrow().sort_by("id")
    assert got.schema.field("ts_a").type == pa.timestamp("ns")
    assert got.column("ts_a").cast(pa.int64()).to_pylist() == [6_000_000_001, -1_000_000_500, 5_000_000_700,
                                                              7_000_000_009]
    # TIMESTAMP(9) -> TIMESTAMP(6): Paimon's cast (DateTimeUtils.truncate zeroes the nano-of-millisecond's last
    # digits; the milliseconds are floor-divided), so -2.000000456 s reads -2.000001 s
    assert got.column("ts_b").cast(pa.int64()).to_pylist() == [2_000_000, -2_000_001, 3_000_000, 8_000_001]
    assert got.column("b").to_pylist() == [100, 11, 12, 13]

    # pypaimon agrees on every value but the pre-1970 one it narrows (it truncates toward zero: -2.000000 s)
    expected = pypaimon_oracle.read(table_path).sort_by("id")
    assert expected.column("ts_b").cast(pa.int64()).to_pylist() == [2_000_000, -2_000_000, 3_000_000, 8_000_001]
    assert got.drop_columns(["ts_b"]).to_pylist() == expected.drop_columns(["ts_b"]).to_pylist()

    # the read schema Spark asks for (microseconds): nanoseconds floored, as Paimon's Spark connector reads them
    spark_schema = pa.schema([("id", pa.int64()), ("ts_a", pa.timestamp("us")), ("ts_b", pa.timestamp("us")),
                              ("b", pa.int32())])
    read = table.new_read(spark_schema)
    rows = pa.Table.from_batches([b for s in table.new_scan().plan() for b in read.read(s)], spark_schema)
    assert rows.sort_by("id").to_pylist() == [
        {"id": 0, "ts_a": _us(6_000_000), "ts_b": _us(2_000_000), "b": 100},
        {"id": 1, "ts_a": _us(-1_000_001), "ts_b": _us(-2_000_001), "b": 11},
        {"id": 2, "ts_a": _us(5_000_000), "ts_b": _us(3_000_000), "b": 12},
        {"id": 3, "ts_a": _us(7_000_000), "ts_b": _us(8_000_001), "b": 13},
    ]
