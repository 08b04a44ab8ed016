"""Small helpers shared by the Spark-level tests."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path
from typing import Any

import mmh3
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from paimon_ds import Table
from paimon_ds.snapshot.manager import SnapshotManager

# paimon_ds marks aborted write jobs here (hidden: Paimon and Hadoop skip names starting with '.')
ABORT_MARKER_DIR = ".paimon_ds-aborted"


def save(df: DataFrame, path: str, mode: str = "append", **options: str) -> None:
    df.write.format("paimon").mode(mode).options(**options).save(path)


def load(spark: SparkSession, path: str, **options: str) -> DataFrame:
    return spark.read.format("paimon").options(**options).load(path)


def read_arrow(spark: SparkSession, path: str, **options: str) -> pa.Table:
    return load(spark, path, **options).toArrow()


def by_key(rows: list[dict[str, Any]], key: str = "id") -> list[dict[str, Any]]:
    """Rows in a deterministic order: by ``key``, ties by the whole row."""
    return sorted(rows, key=lambda r: (r[key] is None, r[key], repr(r)))


def sorted_rows(t: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    return by_key(t.to_pylist(), key)


def snapshot_ids(path: str) -> list[int]:
    table = Table.load(path)
    return SnapshotManager(table.io, table.root).list_ids()


def latest_snapshot(path: str):
    return Table.load(path).latest_snapshot()


def files_under(path: str) -> list[str]:
    """Every file below ``path`` (relative), except paimon_ds's hidden abort marks."""
    root = Path(path)
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not str(p.relative_to(root)).startswith(ABORT_MARKER_DIR))


def data_files_on_disk(path: str) -> list[str]:
    return [f for f in files_under(path) if os.path.basename(f).startswith("data-")]


def live_files(path: str) -> list[tuple[str, str]]:
    """(bucket directory relative to the table, file name) of every file the latest snapshot reads."""
    table = Table.load(path)
    return [(os.path.relpath(s.directory, table.root), f.file_name)
            for s in table.new_scan().plan() for f in s.files]


def java_bucket_of_bigint(value: int, num_buckets: int) -> int:
    """Paimon's bucket of a one-BIGINT bucket key, computed independently of paimon_ds.

    BinaryRow of one non-null BIGINT: an 8-byte header (null bits, all zero) and the value as a
    little-endian long. Paimon hashes it with murmur3 x86_32, seed 42, and takes Java's
    Math.abs(hash % n), whose remainder truncates toward zero.
    """
    h = mmh3.hash(bytes(8) + struct.pack("<q", value), 42)
    return abs(int(math.fmod(h, num_buckets)))


def type_signature(df: DataFrame) -> list[tuple[str, str]]:
    """Column names and types, nullability aside (Spark's file readers type every column nullable)."""
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def comparable(value: Any) -> Any:
    """``value`` with its floats as their repr: NaN equals NaN (Python's == says no) and -0.0 differs from 0.0 (Python's
    == says they are equal), as Paimon's key comparator has them."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    return value


def row_multiset(df: DataFrame) -> list[tuple[Any, ...]]:
    """The rows of ``df`` in a canonical order (by repr, so that any value sorts), floats compared by their repr."""
    return row_multiset_of_arrow(df.toArrow())


def row_multiset_of_arrow(rows: pa.Table) -> list[tuple[Any, ...]]:
    """row_multiset of rows already in Arrow."""
    return sorted((tuple(comparable(v) for v in r.values()) for r in rows.to_pylist()), key=repr)


def plan_text(df: DataFrame) -> str:
    return df._jdf.queryExecution().executedPlan().toString()
