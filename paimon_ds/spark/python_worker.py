"""What this package does when it is loaded into one of Spark's Python worker processes. No pyspark here.

PySpark's worker daemon forks a process per task slot and, with `spark.python.worker.reuse` (the default), runs
a full `gc.collect()` after every task it hands that process. A collection traverses every object the process
holds: after `import paimon_ds` that is ~94k objects (pyarrow, pandas, the package), 70 ms of CPU per task and
per planning call, most of a small query's Python time. The modules are never garbage, so the import freezes
them (`gc.freeze`): the collector skips them and sees only what the tasks create. A worker lives for many tasks
and imports more as it goes (the Spark layer's modules, the modules of users' functions): the objects Spark sends
it (sources, readers, writers: WorkerSide) freeze again, as they are unpickled, when modules were added since.
"""

from __future__ import annotations

import gc
import sys

# paimon_ds.spark.daemon, the daemon that loads the package before it forks (spark.python.daemon.module)
DAEMON_MODULE = "paimon_ds.spark.daemon"


def in_spark_python_worker() -> bool:
    """True in a PySpark worker daemon or a process it forked (or started as a simple worker): its main module
    is `pyspark.daemon`, paimon_ds's DAEMON_MODULE, `pyspark.worker` or one of `pyspark.sql.worker.*`."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", "") or ""
    return name in ("pyspark.daemon", DAEMON_MODULE, "pyspark.worker") or name.startswith("pyspark.sql.worker.")


_modules_frozen = 0  # len(sys.modules) at the last freeze


def freeze_imported_objects() -> bool:
    """In a Spark Python worker, if modules were imported since the last freeze, move every object alive now out of
    the cycle collector's generations; True if it did. Called when modules may have just been imported, before
    a task's own objects exist (or when there are only a few of them)."""
    global _modules_frozen
    if len(sys.modules) == _modules_frozen or not in_spark_python_worker():
        return False
    gc.freeze()
    _modules_frozen = len(sys.modules)
    return True


class WorkerSide:
    """Base of the objects Spark pickles to its Python workers (data sources, readers, writers): unpickling one
    freezes what the worker imported to unpickle it (freeze_imported_objects)."""

    def __setstate__(self, state: dict) -> None:
        freeze_imported_objects()
        self.__dict__.update(state)
