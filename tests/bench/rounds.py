"""Timing writers against each other in one run.

The writers run in interleaved rounds, so that a slow spell of the machine hits every writer alike, after
warm-up rounds: Spark's JVM keeps compiling (JIT) over the first runs of a job, and on this 2-core machine the
Python data source floor's time fell from 9.3 s to 3.9 s over its first five runs. Each writer's best round
is kept."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

WARMUP_ROUNDS = int(os.environ.get("BENCH_WARMUP_ROUNDS", 2))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 5))


def append_rows(spark, rows: int):
    """The append benchmarks' DataFrame (writes and reads): 5 columns, ``rows`` rows in 2 Spark partitions."""
    return spark.sql(f"""
        SELECT id, CAST(id % 1000 AS INT) AS k, concat('name-', id % 100000) AS name,
               CAST(id AS DOUBLE) * 1.5 AS amount, id % 2 = 0 AS flag
        FROM range(0, {rows}, 1, 2)""")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(writers: list[Callable[[], object]], rounds: int = ROUNDS,
                warmup: int = WARMUP_ROUNDS) -> dict[str, list[float]]:
    """{writer's __name__: its time in each measured round}."""
    for _ in range(warmup):
        for fn in writers:
            fn()
    times: dict[str, list[float]] = {fn.__name__: [] for fn in writers}
    for _ in range(rounds):
        for fn in writers:
            times[fn.__name__].append(timed(fn))
    return times
