"""Helpers of the ported Paimon Spark SQL suites."""

from __future__ import annotations

import paimon_ds

# the four kinds of table Paimon's suites run each MERGE case on (PaimonPrimaryKeyBucketedTableTest ...)
TABLE_KINDS = {
    "pk-bucketed": lambda keys: {"primary-key": ",".join(keys), "bucket": "3"},
    "pk-dynamic-bucket": lambda keys: {"primary-key": ",".join(keys), "bucket": "-1"},
    "append-bucketed": lambda keys: {"bucket-key": ",".join(keys), "bucket": "3"},
    "append-unaware": lambda keys: {"bucket": "-1"},
}


def sql(spark, statement: str):
    return paimon_ds.sql(spark, statement)


def create_table(spark, name: str, columns: str, kind: str, keys: list[str], partitioned: list[str] = (),
                 extra: dict[str, str] | None = None) -> None:
    """Paimon's PaimonTableTest.createTable: the table kind decides primary or bucket keys and the bucket."""
    props = {**TABLE_KINDS[kind](keys), **(extra or {})}
    parts = f"PARTITIONED BY ({', '.join(partitioned)})" if partitioned else ""
    tbl = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
    sql(spark, f"CREATE TABLE {name} ({columns}) {parts} TBLPROPERTIES ({tbl})")


def rows(spark, statement: str) -> list[tuple]:
    """A query's rows as tuples (structs as tuples)."""
    def plain(v):
        if hasattr(v, "asDict"):
            return tuple(plain(x) for x in v)
        return v
    return [tuple(plain(v) for v in r) for r in sql(spark, statement).collect()]


def source_view(spark, data: list[tuple], columns: str = "a INT, b INT, c STRING", name: str = "source") -> None:
    """Paimon's `Seq(...).toDF(...).createOrReplaceTempView("source")`."""
    spark.createDataFrame(data, columns).createOrReplaceTempView(name)
