"""`make bench`: the merge engines' own throughput (engine.merge over 1M key-sorted rows, ~4 rows per key, as the
writer's buffer and the k-way merge of sorted runs call it), in rows per CPU second, best of a few rounds.

The first three are the paths every primary-key table takes (deduplicate, partial-update without sequence
groups, aggregation with sum and last_non_null_value); the others time the newer paths. Measured 2026-11-26 on
this 2-core VM (CPU time, best of 15; before: the engines of commit 3812637): deduplicate 66-72 M rows/s both;
partial-update 11.4-12.4 before, 13.0-13.8 after; aggregation sum/last_non_null_value 6.6-7.0 before, 8.3-8.5
after; partial-update with two sequence groups and a grouped sum 2.9; listagg 4.6; collect 7.0; collect distinct
2.3. The assertions only guard against a path falling far behind (a tenth of those figures).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.mergetree.merge import merge_engine
from paimon_ds.options.registry import Options
from paimon_ds.schema.manager import TableSchema

pytestmark = pytest.mark.bench

N = 1_000_000
FLOORS = {  # M rows per CPU second
    "deduplicate": 6.0, "partial-update": 1.1, "aggregation sum/last_non_null_value": 0.6,
    "partial-update groups+sum": 0.25, "aggregation listagg": 0.4, "aggregation collect": 0.6,
    "aggregation collect distinct": 0.2,
}
CASES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation sum/last_non_null_value": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                                            "fields.b.aggregate-function": "sum", "fields.c.aggregate-function": "sum"},
    "partial-update groups+sum": {"merge-engine": "partial-update", "fields.g.sequence-group": "a,b",
                                  "fields.c.sequence-group": "s", "fields.a.aggregate-function": "sum"},
    "aggregation listagg": {"merge-engine": "aggregation", "fields.s.aggregate-function": "listagg"},
    "aggregation collect": {"merge-engine": "aggregation", "fields.l.aggregate-function": "collect"},
    "aggregation collect distinct": {"merge-engine": "aggregation", "fields.l.aggregate-function": "collect",
                                     "fields.l.distinct": "true"},
}


def _data() -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({
        "id": rng.integers(0, N // 4, N), "g": pa.array(rng.integers(0, 5, N), mask=rng.random(N) < 0.1),
        "a": pa.array(rng.integers(0, 100, N), mask=rng.random(N) < 0.1),
        "b": pa.array(rng.random(N), mask=rng.random(N) < 0.1),
        "s": pa.array([f"v{i % 1000}" for i in range(N)], mask=rng.random(N) < 0.1),
        "c": rng.integers(0, 100, N), "l": pa.array([[i % 7, i % 3] for i in range(N)], pa.list_(pa.int32()))})


@pytest.mark.parametrize("name", list(CASES))
def test_merge_engine_throughput(name):
    data = _data()
    ts = TableSchema.from_arrow(data.schema, [], ["id"], {"bucket": "1", **CASES[name]})
    eng = merge_engine(ts, Options(ts.options))
    kv = eng.layout.sort(eng.layout.to_kv(data, np.arange(N, dtype=np.int64), np.zeros(N, dtype=np.int8)),
                         in_sequence_order=True)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        eng.merge(kv, False)
        best = min(best, time.process_time() - start)
    rate = N / best / 1e6
    print(f"{name}: {rate:.2f} M rows/s")
    assert rate >= FLOORS[name]
