"""`make bench`: paimon_ds append write vs Spark's built-in parquet writer, same DataFrame, same run.

Prints the time ratio (target: paimon_ds <= 1.5x Spark's parquet write). Marked `bench`, so
`make test` skips it.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from paimon_ds import Table

ROWS = int(os.environ.get("BENCH_ROWS", 10_000_000))


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@pytest.mark.bench
def test_append_write_vs_spark_parquet(spark, tmp_path):
    df = spark.sql(f"""
        SELECT id, CAST(id % 1000 AS INT) AS k, concat('name-', id % 100000) AS name,
               CAST(id AS DOUBLE) * 1.5 AS amount, id % 2 = 0 AS flag
        FROM range(0, {ROWS}, 1, 2)""")
    parquet_dir, paimon_dir = str(tmp_path / "parquet"), str(tmp_path / "w" / "db.db" / "paimon")

    def spark_parquet() -> None:
        shutil.rmtree(parquet_dir, ignore_errors=True)
        df.write.mode("overwrite").option("compression", "zstd").parquet(parquet_dir)

    def paimon() -> None:
        df.write.format("paimon").mode("overwrite").save(paimon_dir)

    spark_parquet(), paimon()  # warm-up: JVM JIT, Python workers
    runs = 3
    parquet_times = [_timed(spark_parquet) for _ in range(runs)]
    paimon_times = [_timed(paimon) for _ in range(runs)]
    best_parquet, best_paimon = min(parquet_times), min(paimon_times)
    ratio = best_paimon / best_parquet
    print(f"\n{ROWS:,} rows: spark parquet {best_parquet:.2f}s (runs {[round(t, 2) for t in parquet_times]}), "
          f"paimon_ds {best_paimon:.2f}s (runs {[round(t, 2) for t in paimon_times]}), "
          f"ratio {ratio:.2f}x, paimon_ds {ROWS / best_paimon:,.0f} rows/s")
    assert Table.load(paimon_dir).latest_snapshot().total_record_count == ROWS
    assert ratio <= 1.5, f"paimon_ds append write is {ratio:.2f}x Spark's parquet write (target 1.5x)"
