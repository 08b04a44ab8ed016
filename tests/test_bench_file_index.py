"""`make bench`: a point lookup on a non-key column of an append table of 100 data files, without and with a
bloom-filter file index (`file-index.bloom-filter.columns`), through the Spark-free API (Table.scan planning is
the same planner the Spark source uses). The column's values are spread so that every file's min/max spans the
whole range: stats prune nothing, only the index can. Printed: files read and best time of each, and the ratio;
asserted only that the index reads fewer files (the exact counts depend on the filter's false positives)."""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.table import Table, write_arrow

FILES = 100
ROWS_PER_FILE = int(os.environ.get("BENCH_INDEX_ROWS_PER_FILE", 50_000))
RUNS = 5


def _file_rows(k: int, perm: np.ndarray) -> pa.Table:
    ids = np.arange(k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE, dtype=np.int64)
    keys = pa.array([f"user-{v:09d}" for v in perm[ids]])
    return pa.table({"id": ids, "s": keys, "amount": ids.astype(np.float64) * 0.5})


def _best(fn) -> float:
    fn()
    out = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


@pytest.mark.bench
def test_point_lookup_with_bloom_filter(tmp_path):
    perm = np.random.default_rng(7).permutation(FILES * ROWS_PER_FILE)
    layouts = {"no index": {}, "bloom filter": {
        "file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": str(ROWS_PER_FILE),
        "file-index.bloom-filter.s.fpp": "0.01"}}
    paths = {name: str(tmp_path / "wh" / "db.db" / name.replace(" ", "_")) for name in layouts}
    write_seconds = dict.fromkeys(layouts, 0.0)
    for k in range(FILES):
        data = _file_rows(k, perm)
        for name, opts in layouts.items():
            t0 = time.perf_counter()
            write_arrow(paths[name], data, options={"bucket": "-1", **opts})
            write_seconds[name] += time.perf_counter() - t0
    target = FILES * ROWS_PER_FILE // 3
    wanted = f"user-{perm[target]:09d}"
    results = {}
    for name, path in paths.items():
        t = Table.load(path)
        scan = t.scan(filter=f"s = '{wanted}'")
        files = sum(len(s.files) for s in scan.plan())
        got = scan.to_arrow()
        assert got.column("id").to_pylist() == [target]
        results[name] = (files, _best(lambda path=path: Table.load(path).scan(filter=f"s = '{wanted}'").to_arrow()))
    (f0, t0), (f1, t1) = results["no index"], results["bloom filter"]
    print(f"\npoint lookup over {FILES} files x {ROWS_PER_FILE} rows: no index {f0} files read, {t0 * 1000:.0f} ms; "
          f"bloom filter {f1} files read, {t1 * 1000:.0f} ms; {t0 / t1:.1f}x faster; writing the {FILES} commits: "
          f"{write_seconds['no index']:.1f} s without, {write_seconds['bloom filter']:.1f} s with the index")
    assert f0 == FILES and f1 < FILES // 10


@pytest.mark.bench
def test_native_read_point_lookup_with_bloom_filter(spark, tmp_path):
    """paimon_ds.read: `.where(...)` on the DataFrame (Spark's parquet reader is handed all 100 files and prunes by
    parquet stats, which span the whole range) against `where=` (planned with the filter: the bloom filters
    leave out the files without the value). Printed: files handed to Spark's reader and best time of each."""
    import paimon_ds

    perm = np.random.default_rng(7).permutation(FILES * ROWS_PER_FILE)
    path = str(tmp_path / "wh" / "db.db" / "t")
    opts = {"bucket": "-1", "file-index.bloom-filter.columns": "s",
            "file-index.bloom-filter.s.items": str(ROWS_PER_FILE), "file-index.bloom-filter.s.fpp": "0.01"}
    for k in range(FILES):
        write_arrow(path, _file_rows(k, perm), options=opts)
    target = FILES * ROWS_PER_FILE // 3
    condition = f"s = 'user-{perm[target]:09d}'"
    forms = {"read().where()": lambda: paimon_ds.read(spark, path).where(condition),
             "read(where=)": lambda: paimon_ds.read(spark, path, where=condition)}
    results = {}
    for name, frame in forms.items():
        df = frame()
        assert [r["id"] for r in df.collect()] == [target]
        results[name] = (len(df.inputFiles()), _best(lambda frame=frame: frame().collect()))
    (f0, t0), (f1, t1) = results["read().where()"], results["read(where=)"]
    print(f"\npaimon_ds.read point lookup over {FILES} files x {ROWS_PER_FILE} rows: .where() {f0} files handed to "
          f"Spark's reader, {t0 * 1000:.0f} ms; where= {f1} files, {t1 * 1000:.0f} ms; {t0 / t1:.1f}x faster")
    assert f0 == FILES and f1 < FILES // 10
