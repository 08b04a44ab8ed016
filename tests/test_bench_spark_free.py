"""`make bench`: the Spark-free API against pyarrow, deltalake and pyiceberg, same rows, same run, as ratios.

10M rows (BENCH_SPARK_FREE_ROWS) of id BIGINT, a short string, a double and a date string, as one Arrow table
in memory. Writes (each into a new table, best of BENCH_ROUNDS interleaved rounds after one warm-up): pyarrow's
`pq.write_table` (its defaults: snappy), paimon_ds `write_arrow` (Paimon's defaults: zstd level 1, page
indexes, stats), `write_deltalake` (its defaults), pyiceberg `append` (SqlCatalog on sqlite), and paimon_ds
with snappy (the codec deltalake writes by default). Reads to one Arrow table: `pq.read_table` of the paimon
table's own data files, `Table.scan().to_arrow()`, deltalake `to_pyarrow_table()`, pyiceberg `scan().to_arrow()`.
Asserted (issue 34): the full read <= 1.15x `pq.read_table`; the append write <= 1.0x `write_deltalake`.
Then a primary-key merge-on-read figure (rows per second), printed.
"""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_ds import Table, write_arrow

ROWS = int(os.environ.get("BENCH_SPARK_FREE_ROWS", 10_000_000))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 3))
READ_TARGET = 1.15
WRITE_TARGET = 1.0


def bench_rows(n: int) -> pa.Table:
    ids = pa.array(np.arange(n, dtype=np.int64))
    days = pa.array(np.datetime64("2024-01-01") + (np.arange(n) % 365).astype("timedelta64[D]"))
    return pa.table({
        "id": ids,
        "name": pc.binary_join_element_wise("n-", pc.cast(pc.bit_wise_and(ids, 1023), pa.string()), ""),
        "amount": pa.array(np.random.default_rng(7).random(n)),
        "day": pc.cast(days, pa.string()),
    })


def _best_interleaved(actions: dict, prepare: dict | None = None) -> dict[str, float]:
    """Each action's best time over ROUNDS interleaved rounds after a warm-up round; ``prepare[name]`` runs
    untimed before each of its rounds (a fresh directory)."""
    prepare = prepare or {}
    best = {name: float("inf") for name in actions}
    for round_ in range(ROUNDS + 1):
        for name, action in actions.items():
            if name in prepare:
                prepare[name]()
            start = time.perf_counter()
            action()
            elapsed = time.perf_counter() - start
            if round_ > 0:
                best[name] = min(best[name], elapsed)
    return best


def _print(title: str, times: dict[str, float], baseline: str) -> None:
    print(f"\n{title} ({ROWS:,} rows, best of {ROUNDS}):")
    for name, t in times.items():
        print(f"  {name:<34} {t:6.3f} s  {t / times[baseline]:5.2f}x {baseline}")


@pytest.mark.bench
def test_spark_free_writes_and_reads_vs_pyarrow_deltalake_pyiceberg(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    sql_catalog = pytest.importorskip("pyiceberg.catalog.sql")
    data = bench_rows(ROWS)
    paths = {name: str(tmp_path / name) for name in ("pq", "paimon", "paimon_snappy", "delta", "iceberg")}
    catalog = sql_catalog.SqlCatalog("bench", uri=f"sqlite:///{tmp_path}/iceberg.db",
                                     warehouse=f"file://{paths['iceberg']}")
    catalog.create_namespace("db")

    def fresh(name: str):
        def clear() -> None:
            if name == "iceberg" and hasattr(fresh, "iceberg"):
                catalog.drop_table("db.t")
            shutil.rmtree(paths[name], ignore_errors=True)
            if name == "iceberg":
                os.makedirs(paths[name], exist_ok=True)
                fresh.iceberg = catalog.create_table("db.t", schema=data.schema)
            else:
                os.makedirs(os.path.dirname(paths[name]), exist_ok=True)
        return clear

    writes = {
        "pyarrow pq.write_table": lambda: pq.write_table(data, paths["pq"]),
        "paimon_ds write_arrow": lambda: write_arrow(paths["paimon"], data),
        "deltalake write_deltalake": lambda: deltalake.write_deltalake(paths["delta"], data),
        "pyiceberg append": lambda: fresh.iceberg.append(data),
        "paimon_ds write_arrow, snappy": lambda: write_arrow(paths["paimon_snappy"], data,
                                                             options={"file.compression": "snappy"}),
    }
    prepare = dict(zip(writes, [fresh(n) for n in ("pq", "paimon", "delta", "iceberg", "paimon_snappy")]))
    write_times = _best_interleaved(writes, prepare)
    _print("append write", write_times, "deltalake write_deltalake")
    delta_codec = pq.ParquetFile(next(os.path.join(paths["delta"], f) for f in os.listdir(paths["delta"])
                                      if f.endswith(".parquet"))).metadata.row_group(0).column(0).compression
    print(f"  (codecs by default: paimon_ds zstd level 1, deltalake {delta_codec}, pyarrow snappy)")

    files = [os.path.join(d, f) for d, _, names in os.walk(paths["paimon"]) for f in names if f.endswith(".parquet")]
    table = Table.load(paths["paimon"])
    delta_table = deltalake.DeltaTable(paths["delta"])
    reads = {
        "pq.read_table (paimon's files)": lambda: pq.read_table(files),
        "paimon_ds scan().to_arrow()": lambda: table.scan().to_arrow(),
        "deltalake to_pyarrow_table()": lambda: delta_table.to_pyarrow_table(),
        "pyiceberg scan().to_arrow()": lambda: fresh.iceberg.scan().to_arrow(),
    }
    assert table.scan().to_arrow().num_rows == ROWS
    read_times = _best_interleaved(reads)
    _print("full read to Arrow", read_times, "pq.read_table (paimon's files)")

    read_ratio = read_times["paimon_ds scan().to_arrow()"] / read_times["pq.read_table (paimon's files)"]
    write_ratio = write_times["paimon_ds write_arrow"] / write_times["deltalake write_deltalake"]
    print(f"\nread / pq.read_table {read_ratio:.2f}x (target {READ_TARGET}x); "
          f"write / write_deltalake {write_ratio:.2f}x (target {WRITE_TARGET}x)")
    assert read_ratio <= READ_TARGET
    assert write_ratio <= WRITE_TARGET


@pytest.mark.bench
def test_primary_key_merge_on_read_rows_per_second(tmp_path):
    """Merge-on-read of a primary-key table (bucket=4): all keys, then every other key again (two sorted runs per
    bucket to merge); input rows per second of wall time and per CPU second (threads included)."""
    n = ROWS // 5
    data = bench_rows(n)
    path = str(tmp_path / "pk")
    options = {"bucket": "4", "write-only": "true"}
    write_arrow(path, data, primary_key="id", options=options)
    write_arrow(path, data.filter(pc.equal(pc.bit_wise_and(data.column("id"), 1), 0)), options=options)
    table = Table.load(path)
    input_rows = n + (n + 1) // 2
    best_wall, best_cpu = float("inf"), float("inf")
    for _ in range(ROUNDS + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        out = table.scan().to_arrow()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    assert out.num_rows == n
    print(f"\nprimary-key merge-on-read, {input_rows:,} input rows in 2 runs x 4 buckets: "
          f"{input_rows / best_wall / 1e6:.2f}M rows/s wall, {input_rows / best_cpu / 1e6:.2f}M rows per CPU second")
