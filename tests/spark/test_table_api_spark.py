"""The Spark-free API against Spark and Java Paimon: tables Spark wrote, read without Spark in every result form
(DuckDB and Polars included) with the same rows as `spark.read.format("paimon")`; and Arrow writes read back by
Spark and by Java Paimon 0.9."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from paimon_ds import Table, col, write_arrow

from ._helpers import load, save

D1, D2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)


def rows(t: pa.Table | list[dict]) -> list[tuple]:
    """Rows as tuples in a fixed order (types aside: Spark, Arrow and Java give the same Python values)."""
    records = t.to_pylist() if isinstance(t, pa.Table) else t
    return sorted((tuple(r.values()) for r in records), key=repr)


def spark_rows(spark, path: str, columns: list[str], where: str | None = None, **options: str) -> list[tuple]:
    df = load(spark, path, **options)
    if where is not None:
        df = df.where(where)
    return rows(df.select(*columns).toArrow())


@pytest.fixture(params=["primary-key", "append"])
def spark_table(request, spark, table_path) -> tuple[str, bool]:
    """A table Spark wrote in two commits: partitioned by day, with a primary key (id, day) and 2 buckets whose
    second commit updates keys, or an append table."""
    pk = request.param == "primary-key"
    first = spark.createDataFrame([(i, f"n{i}", i * 0.5, D1 if i % 2 else D2) for i in range(20)],
                                  "id bigint, name string, score double, day date")
    options = {"partition": "day", **({"primary-key": "id,day", "bucket": "2"} if pk else {})}
    save(first, table_path, **options)
    second = spark.createDataFrame([(i, f"m{i}" if i % 3 else None, -1.0 * i, D1 if i % 2 else D2)
                                    for i in range(10, 30)], "id bigint, name string, score double, day date")
    save(second, table_path, **options)
    return table_path, pk


def test_a_table_spark_wrote_reads_the_same_without_spark(spark, spark_table):
    path, pk = spark_table
    table = Table.load(path)
    every = ["id", "name", "score", "day"]
    expected = spark_rows(spark, path, every)
    assert len(expected) == (30 if pk else 40)
    scan = table.scan()
    assert rows(scan.to_arrow()) == expected
    assert rows(pa.Table.from_batches(list(scan.to_batches()), schema=scan.schema)) == expected
    assert rows(scan.to_pandas().to_dict("records")) == expected
    assert rows(pl.DataFrame(scan).to_dicts()) == expected
    assert rows(pl.from_arrow(scan.to_arrow()).to_dicts()) == expected
    assert sorted(duckdb.connect().execute("SELECT id, name, score, day FROM scan").fetchall(), key=repr) == expected
    assert scan.count() == len(expected)

    # columns and filters (a string and Python operators), against Spark's own filter
    where = "day = DATE '2024-01-01' AND (name IS NULL OR score < 0) AND id NOT IN (11, 13)"
    projected = spark_rows(spark, path, ["name", "id"], where)
    assert projected and len(projected) < len(expected)
    assert rows(table.scan(columns=["name", "id"], filter=where).to_arrow()) == projected
    python = (col("day") == D1) & (col("name").is_null() | (col("score") < 0)) & ~col("id").isin([11, 13])
    assert rows(table.scan(columns=["name", "id"], filter=python).to_arrow()) == projected
    assert sorted(duckdb.sql(f"SELECT name, id FROM scan WHERE {where}").fetchall(), key=repr) == projected
    between = spark_rows(spark, path, ["id", "score"], "score BETWEEN -20 AND 3 AND name != 'n2'")
    assert rows(table.scan(columns=["id", "score"], filter="score BETWEEN -20 AND 3 AND name != 'n2'")
                .to_arrow()) == between

    # limit: that many of Spark's rows
    limited = table.scan(filter="id >= 5", limit=7).to_arrow()
    assert limited.num_rows == 7 and set(rows(limited)) <= set(spark_rows(spark, path, every, "id >= 5"))

    # time travel: the first commit, as Spark reads it
    first = spark_rows(spark, path, every, **{"scan.snapshot-id": "1"})
    assert len(first) == 20
    assert rows(table.scan(snapshot_id=1).to_arrow()) == first
    assert rows(pl.DataFrame(table.scan(snapshot_id=1, filter="id < 4")).to_dicts()) == [
        r for r in first if r[0] < 4]
    assert rows(table.scan(timestamp=table.snapshots()[0].time_millis).to_arrow()) == first


def test_arrow_writes_read_back_by_spark_and_java(spark, table_path, java_oracle):
    data = pa.table({"id": pa.array(range(6), pa.int64()), "name": ["a", "b", None, "d", "e", "f"],
                     "day": [D1, D2] * 3})
    write_arrow(table_path, data, partition_by="day")
    table = Table.load(table_path)
    table.append(pa.table({"id": pa.array([6, 7], pa.int32()), "name": ["g", "h"], "day": [D2, D1]}))
    expected = rows(data.to_pylist() + [{"id": 6, "name": "g", "day": D2}, {"id": 7, "name": "h", "day": D1}])
    assert spark_rows(spark, table_path, ["id", "name", "day"]) == expected
    assert rows(java_oracle.read(table_path).select(["id", "name", "day"])) == expected
    # a primary-key table (dynamic buckets, Paimon's default) upserted through Arrow
    pk_path = table_path + "_pk"
    write_arrow(pk_path, data, primary_key="id")
    write_arrow(pk_path, pa.table({"id": pa.array([1, 9], pa.int64()), "name": ["B", "z"], "day": [D2, D2]}))
    merged = rows([r for r in data.to_pylist() if r["id"] != 1]
                  + [{"id": 1, "name": "B", "day": D2}, {"id": 9, "name": "z", "day": D2}])
    assert spark_rows(spark, pk_path, ["id", "name", "day"]) == merged
    assert rows(java_oracle.read(pk_path).select(["id", "name", "day"])) == merged
    assert rows(Table.load(pk_path).scan().to_arrow()) == merged
