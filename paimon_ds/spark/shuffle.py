"""Shuffles that put each writer's rows in the Spark partition chosen for them.

``repartition(n, col)`` places a row by Spark's hash: ``pmod(murmur3_32(col, seed 42), n)``. Hashing a few
small ids spreads them unevenly: with bucket=4 over 2 tasks, buckets 0, 1 and 3 land in one task, which then
writes three quarters of the rows while the other core idles. So the package's shuffles give each row a slot
(0..n-1, spread evenly where the ids allow) and repartition by a stand-in INT per slot, picked so that
Spark's hash sends the stand-in of slot s to partition s.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..format.bucket import hash_words

SLOT_COLUMN = "_paimon_ds_slot"


def stand_ins(n: int) -> list[int]:
    """For each partition p < n, the smallest non-negative INT whose Spark hash puts it in partition p."""
    found: dict[int, int] = {}
    start, step = 0, 8 * n
    while len(found) < n:
        candidates = np.arange(start, start + step, dtype=np.uint32)
        # Spark hashes an INT as murmur3_32 of its 4 little-endian bytes, seed 42 (its hashInt)
        partitions = hash_words(candidates.reshape(-1, 1)).astype(np.int64) % n
        for value, p in zip(candidates.tolist(), partitions.tolist()):
            found.setdefault(p, value)
        start += step
    return [found[p] for p in range(n)]


def repartition_by_bucket(df: DataFrame, n: int, bucket_sql: str, partition_columns: list[str]) -> DataFrame:
    """``df`` in ``n`` partitions, the rows of a (partition, bucket) in one, a partition's buckets taking turns."""
    return repartition_by_slot(df, n, slot_of_bucket_sql(bucket_sql, partition_columns))


def slot_of_bucket_sql(bucket_sql: str, partition_columns: list[str]) -> str:
    """A writer's slot from its bucket: the bucket itself, so a partition's buckets take turns over the tasks;
    offset by the partition's hash in partitioned tables, so that partitions start on different tasks."""
    if not partition_columns:
        return bucket_sql
    return f"CAST(hash({', '.join(partition_columns)}) AS BIGINT) + {bucket_sql}"


def repartition_by_slot(df: DataFrame, n: int, slot_sql: str) -> DataFrame:
    """``df`` repartitioned into ``n`` partitions, rows of slot s (``slot_sql`` mod n) in partition s."""
    lookup = f"element_at(array({', '.join(map(str, stand_ins(n)))}), CAST(pmod({slot_sql}, {n}) AS INT) + 1)"
    return df.withColumn(SLOT_COLUMN, F.expr(lookup)).repartition(n, SLOT_COLUMN).drop(SLOT_COLUMN)
