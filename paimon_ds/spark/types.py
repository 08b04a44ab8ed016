"""Spark schemas for Paimon tables, through the one Paimon <-> Arrow mapping in paimon_ds.schema.types."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType


def _spark_friendly(t: pa.DataType) -> pa.DataType:
    """Spark holds timestamps in microseconds only (TIMESTAMP(7..9) values are truncated to them, as Paimon's
    Spark connector does), and TIME as its TimeType, whose Arrow form is time64[ns]."""
    if pa.types.is_timestamp(t) and t.unit != "us":
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_struct(t):  # (field metadata kept: it tags a VARIANT's struct as Spark's VariantType)
        return pa.struct([f.with_type(_spark_friendly(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_spark_friendly(t.key_type), pa.field("value", _spark_friendly(t.item_type),
                                                            t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _spark_friendly(t.value_type), t.value_field.nullable))
    return t


def spark_schema(arrow_schema: pa.Schema) -> StructType:
    fields = [pa.field(f.name, _spark_friendly(f.type), f.nullable) for f in arrow_schema]
    return from_arrow_schema(pa.schema(fields))


def arrow_schema_for_spark(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects from read() for ``schema`` (nullability included)."""
    return to_arrow_schema(schema, timezone="UTC")


def input_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the batches a writer receives for a DataFrame of ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")
