"""Paimon's bucket computed by Spark SQL (spark/bucket_expr.py) equals the Python bucket function, which the
interop tests tie to Java Paimon, on every supported key type, with nulls, negatives, inline and long strings."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.bucket import bucket_ids, row_hashes
from paimon_ds.schema.types import parse_type, to_arrow_field
from paimon_ds.spark.bucket_expr import binary_row_hex_sql, bucket_sql, quoted, with_bucket_column
from paimon_ds.spark.types import spark_schema

# with Spark's code generation and interpreted (tests/conftest.py: INTERPRETED)
pytestmark = pytest.mark.usefixtures("with_codegen")

CASES = {
    "BIGINT": "CAST(id * 7919 - 40000 AS BIGINT)",
    "INT": "CAST(id * 104729 - 200000 AS INT)",
    "SMALLINT": "CAST(id % 60000 - 30000 AS SMALLINT)",
    "TINYINT": "CAST(id % 250 - 125 AS TINYINT)",
    "BOOLEAN": "id % 3 = 0",
    "DATE": "date_add(DATE'1965-03-01', CAST(id * 37 AS INT))",
    "DECIMAL(10, 2)": "CAST((id - 500) * 13.37 AS DECIMAL(10, 2))",
    "DECIMAL(18, 0)": "CAST(id * 99991 AS DECIMAL(18, 0))",
    "STRING": "substr(concat('k\u00e9y-', CAST(id * 31 AS STRING), repeat('x', CAST(id % 13 AS INT))), 1, "
              "CAST(id % 20 AS INT))",
    "BYTES": "CAST(repeat('ab', CAST(id % 11 AS INT)) AS BINARY)",
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": "timestamp_micros(id * 86400123457 - 4000000000000000)",
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": "timestamp_millis(id * 86400123 - 4000000000000)",
    "TIMESTAMP(6)": "CAST(timestamp_micros(id * 86400123457 - 4000000000000000) AS TIMESTAMP_NTZ)",
    "TIMESTAMP(3)": "CAST(timestamp_millis(id * 86400123 - 4000000000000) AS TIMESTAMP_NTZ)",
    # sub-millisecond values in a TIMESTAMP(3) key: floored to the millisecond on both sides
    "TIMESTAMP(2) WITH LOCAL TIME ZONE": "timestamp_micros(id * 86400123457 - 4000000000000000)",
}


def _python_and_sql(spark, type_names: list[str], num_buckets: int):
    types = [parse_type(t) for t in type_names]
    names = [f"c{i}" for i in range(len(types))]
    target = spark_schema(pa.schema([to_arrow_field(n, t) for n, t in zip(names, types)]))
    # every fifth row has a null in one of the columns
    cols = [f"CASE WHEN id % 5 = {i % 5} AND id % 2 = 1 THEN NULL "
            f"ELSE CAST({CASES[t]} AS {f.dataType.simpleString()}) END AS {n}"
            for i, (t, n, f) in enumerate(zip(type_names, names, target.fields))]
    df = spark.sql(f"SELECT {', '.join(cols)} FROM range(0, 2000)")
    hex_sql = binary_row_hex_sql([quoted(n) for n in names], types)
    assert hex_sql is not None
    out = df.selectExpr("*", f"hash(unhex({hex_sql})) AS h",
                        f"abs(hash(unhex({hex_sql})) % {num_buckets}) AS b").toArrow()
    columns = [out.column(n).combine_chunks() for n in names]
    return out, columns, types


@pytest.mark.parametrize("type_name", list(CASES))
def test_single_key_hash_matches_python(spark, type_name):
    out, columns, types = _python_and_sql(spark, [type_name], 7)
    assert out.column("h").to_pylist() == row_hashes(columns, types).tolist()
    assert out.column("b").to_pylist() == bucket_ids(columns, types, 7).tolist()


def test_composite_key_with_two_long_strings_matches_python(spark):
    # variable-part offsets add up across fields: long strings and a non-compact timestamp in one key
    names = ["STRING", "BIGINT", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "STRING", "DATE", "DECIMAL(10, 2)"]
    out, columns, types = _python_and_sql(spark, names, 13)
    assert out.column("h").to_pylist() == row_hashes(columns, types).tolist()
    assert out.column("b").to_pylist() == bucket_ids(columns, types, 13).tolist()


def test_unsupported_key_types_have_no_expression():
    assert binary_row_hex_sql(["`x`"], [parse_type("DOUBLE")]) is None
    assert binary_row_hex_sql(["`x`"], [parse_type("DECIMAL(38, 4)")]) is None
    assert binary_row_hex_sql(["`x`"] * 56, [parse_type("INT")] * 56) is None


def test_bucket_sql_uses_the_tables_bucket_keys(spark, tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                        ("v", pa.float64())])
    table = Table.for_write(str(tmp_path / "t"), schema, {"primary-key": "dt,id", "partition": "dt", "bucket": "5"})
    expr = bucket_sql(table.table_schema, 5)
    df = spark.sql("SELECT id * 3 AS id, CAST(id % 3 AS STRING) AS dt, 0.5D AS v FROM range(500)")
    out = df.selectExpr("id", f"{expr} AS b").toArrow()
    ids = out.column("id").combine_chunks()
    assert out.column("b").to_pylist() == bucket_ids([ids], [table.table_schema.field("id").type], 5).tolist()


FIXED_WIDTH = ["BIGINT", "INT", "SMALLINT", "TINYINT", "BOOLEAN", "DATE", "DECIMAL(10, 2)", "DECIMAL(18, 0)",
               "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3)", "TIMESTAMP(2) WITH LOCAL TIME ZONE"]


@pytest.mark.parametrize("type_names", [[t] for t in FIXED_WIDTH] + [FIXED_WIDTH, ["INT", "BIGINT", "DATE"]],
                         ids=lambda names: "+".join(names))
def test_fixed_width_keys_hash_by_arithmetic_as_python(spark, tmp_path, type_names):
    # the arithmetic murmur3 (no bytes built) gives Python's bucket, nulls and negatives included
    out, columns, types = _python_and_sql(spark, type_names, 7)
    names = [f"c{i}" for i in range(len(types))]
    schema = pa.schema([to_arrow_field(n, t) for n, t in zip(names, types)])
    table = Table.for_write(str(tmp_path / "t"), schema, {"bucket": "7", "bucket-key": ",".join(names)})
    df = spark.createDataFrame(out.select(names))
    bucketed = with_bucket_column(df, table.table_schema, 7, "b")
    assert bucketed is not None and bucketed.columns == [*names, "b"]
    got = bucketed.toArrow()
    assert got.column("b").to_pylist() == bucket_ids([got.column(n).combine_chunks() for n in names], types,
                                                      7).tolist()
    assert got.column("b").to_pylist() == out.column("b").to_pylist()  # the same as the BinaryRow bytes give
