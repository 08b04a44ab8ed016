"""The package in Spark's Python workers: PySpark's daemon runs a full gc.collect() after every task of a reused
worker, so the modules the package imports are frozen out of the collector's sight there, and only there; the
objects Spark sends a worker freeze again what was imported since, as they are unpickled."""

from __future__ import annotations

import gc
import pickle

import pyarrow as pa

import paimon_ds
from paimon_ds.spark.python_worker import in_spark_python_worker
from paimon_ds.spark.session import local_worker_settings
from paimon_ds.spark.source import PaimonDataSource


def _worker_heap(batches):
    """In a task: what the cycle collector sees in this worker after `import paimon_ds`, after adding a module
    of 2,000 objects, and after unpickling a source as Spark hands one to a worker."""
    import gc as worker_gc
    import os
    import sys
    import types

    import paimon_ds  # noqa: F401  (what a read or write task imports first)
    from paimon_ds.spark.python_worker import in_spark_python_worker as in_worker

    for _ in batches:
        pass
    worker_gc.collect()
    after_import = len(worker_gc.get_objects())
    # a module no task imported before, whatever this worker ran already: 2,000 tracked lists of its own
    fresh = types.ModuleType(f"paimon_ds_test_fresh_{os.getpid()}_{len(sys.modules)}")
    exec("rows = [[i] for i in range(2000)]", fresh.__dict__)
    sys.modules[fresh.__name__] = fresh
    after_new_module = len(worker_gc.get_objects())
    source = pickle.loads(pickle.dumps(PaimonDataSource({"path": "/nowhere"})))
    after_unpickle = len(worker_gc.get_objects())
    yield pa.RecordBatch.from_pydict({
        "in_worker": [in_worker()], "frozen": [worker_gc.get_freeze_count()], "after_import": [after_import],
        "after_new_module": [after_new_module], "after_unpickle": [after_unpickle],
        "source_path": [source.options["path"]]})


def test_a_spark_worker_freezes_the_imported_modules_and_collects_only_what_tasks_make(spark):
    out = spark.range(1, numPartitions=1).mapInArrow(
        _worker_heap, "in_worker boolean, frozen long, after_import long, after_new_module long, after_unpickle long, "
                      "source_path string")
    [row] = out.collect()
    assert row.in_worker is True
    # pyarrow, pandas and the package: tens of thousands of objects no collection traverses again
    assert row.frozen > 50_000, row
    # the new module's objects were the collector's to traverse until the source was unpickled, which froze them
    assert row.after_new_module >= row.after_import + 2000, row
    assert row.after_unpickle < row.after_new_module - 2000, row
    assert row.source_path == "/nowhere"


def test_the_driver_process_is_left_alone(spark):
    source = pickle.loads(pickle.dumps(PaimonDataSource({"path": "/nowhere"})))
    assert source.options["path"] == "/nowhere"
    assert paimon_ds.__name__ == "paimon_ds"
    assert in_spark_python_worker() is False
    assert gc.get_freeze_count() == 0


def _worker_origin(batches):
    """In a task: which daemon forked this worker, and whether the package was loaded before the fork."""
    import os
    import sys

    main = sys.modules["__main__"]
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({
        "daemon": [main.__spec__.name], "forked_from_loader": [getattr(main, "LOADED_IN", None) == os.getppid()],
        "loaded": [all(m in sys.modules for m in ("pyarrow", "pandas", "paimon_ds.spark.write",
                                                  "paimon_ds.spark.read"))]})


def test_local_task_workers_fork_from_a_daemon_that_loaded_the_package(spark, tmp_path):
    assert spark.conf.get("spark.python.daemon.module") == "paimon_ds.spark.daemon"
    rows = spark.range(4, numPartitions=2).mapInArrow(
        _worker_origin, "daemon string, forked_from_loader boolean, loaded boolean").collect()
    assert {tuple(r) for r in rows} == {("paimon_ds.spark.daemon", True, True)}
    # and the source's own tasks run in them: a write and a read through the format
    path = str(tmp_path / "t")
    spark.range(100).selectExpr("id", "id * 2 AS v").write.format("paimon").mode("append").save(path)
    assert sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect()) == \
        [(i, 2 * i) for i in range(100)]


def test_only_local_masters_get_the_loading_daemon():
    assert local_worker_settings("local") == {"spark.python.daemon.module": "paimon_ds.spark.daemon"}
    assert local_worker_settings("local[2]") == {"spark.python.daemon.module": "paimon_ds.spark.daemon"}
    assert local_worker_settings("local-cluster[2,1,1024]") == \
        {"spark.python.daemon.module": "paimon_ds.spark.daemon"}
    # executors elsewhere may run a Python without paimon_ds: Spark's own daemon there
    assert local_worker_settings("spark://host:7077") == {}
    assert local_worker_settings("yarn") == {}
    assert local_worker_settings("k8s://https://host:443") == {}
