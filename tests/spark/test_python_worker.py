"""The package in Spark's Python workers: PySpark's daemon runs a full gc.collect() after every task of a reused
worker, so the modules the package imports are frozen out of the collector's sight there, and only there."""

from __future__ import annotations

import gc

import pyarrow as pa

import paimon_ds
from paimon_ds.spark.python_worker import in_spark_python_worker


def _worker_heap(batches):
    """In a task: what the cycle collector sees in this worker after `import paimon_ds`."""
    import gc as worker_gc

    import paimon_ds  # noqa: F401  (what a read or write task imports first)
    from paimon_ds.spark.python_worker import in_spark_python_worker as in_worker

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"in_worker": [in_worker()], "frozen": [worker_gc.get_freeze_count()],
                                      "tracked": [len(worker_gc.get_objects())]})


def test_a_spark_worker_freezes_the_imported_modules_and_collects_only_what_tasks_make(spark):
    out = spark.range(1, numPartitions=1).mapInArrow(_worker_heap, "in_worker boolean, frozen long, tracked long")
    [row] = out.collect()
    assert row.in_worker is True
    # pyarrow, pandas and the package: tens of thousands of objects no collection traverses again
    assert row.frozen > 50_000, row
    assert row.tracked < row.frozen / 4, row


def test_the_driver_process_is_left_alone(spark):
    assert paimon_ds.__name__ == "paimon_ds"
    assert in_spark_python_worker() is False
    assert gc.get_freeze_count() == 0
