"""Where a write task's Python time goes: one Spark write task's work (Spark's 10,000-row Arrow batches into
TableWrite, then prepare_commit) run under cProfile in this process, its time split into the write path's
stages by the cumulative time of the functions that do each (disjoint: none calls another)."""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.operation.write import BucketRestore

SPARK_BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch

# stage -> (file suffix, function name) of the functions doing it
STAGES = {
    "route rows to buckets (hash, group)": [("operation/write.py", "_route")],
    "key-value layout (sequence, kind)": [("mergetree/kv.py", "to_kv")],
    "sort by key": [("mergetree/kv.py", "sort")],
    "merge equal keys": [("mergetree/merge.py", "merge")],
    "file stats (min/max/nulls)": [("format/stats.py", "update"), ("format/stats.py", "result")],
    "parquet encoding and writing": [("format/parquet_file.py", "write"), ("format/parquet_file.py", "close")],
}


def write_task(path: str, rows: pa.Table, options: dict[str, str]) -> Callable[[], None]:
    """One task's write of ``rows`` to a new table at ``path`` (a primary-key table if ``options`` say so)."""
    batches = rows.to_batches(max_chunksize=SPARK_BATCH_ROWS)

    def run() -> None:
        table = Table.for_write(path, rows.schema, options)
        if table.table_schema.primary_keys:
            write = table.new_write(restore=BucketRestore(), task=0, independent=True)
        else:
            write = table.new_write()
        for b in batches:
            write.write_arrow(b)
        write.prepare_commit()
    return run


def stage_shares(fn: Callable[[], None]) -> tuple[float, dict[str, float]]:
    """(seconds under the profiler, {stage: share of that time}); "other" is the rest (Python glue, copies)."""
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.runcall(fn)
    total = time.perf_counter() - start
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (calls, primitive calls, tottime, cumtime, callers)
    shares = {}
    for stage, functions in STAGES.items():
        spent = sum(ct for (file, _, name), (_, _, _, ct, _) in stats.items()
                    for suffix, fname in functions if file.endswith(suffix) and name == fname)
        shares[stage] = spent / total
    shares["other (glue, copies, buffers)"] = max(0.0, 1.0 - sum(shares.values()))
    return total, shares


def format_shares(title: str, total: float, shares: dict[str, float]) -> str:
    lines = [f"{title}: {total:.2f} s under cProfile"]
    lines += [f"    {stage:38s} {share * 100:5.1f}%" for stage, share in shares.items()]
    return "\n".join(lines)
