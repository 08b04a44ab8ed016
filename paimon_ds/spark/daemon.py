"""A PySpark worker daemon with paimon_ds already loaded: `spark.python.daemon.module=paimon_ds.spark.daemon`.

PySpark starts one daemon per executor (and per worker module) and forks a worker from it for each task slot; the
worker lives while tasks keep coming and exits after a minute without one. Spark's own daemon (pyspark.daemon)
imports nothing before it forks, so every new worker imports pyarrow, pandas and this package again: ~1 s of CPU
before the first row of a task, paid again after each idle minute. This daemon imports them once, freezes them out
of the cycle collector (python_worker), and forks workers that start with them loaded.

paimon_ds.session() sets it for local masters (`local`, `local[N]`, `local-cluster`), whose workers run the driver's
interpreter. On a cluster, set it where paimon_ds is installed on every executor: the daemon serves every Python
task of the application, and it cannot start where this module cannot be imported. Spark applies it to task
workers only: the planner workers of Python data sources (schema, reader and writer planning, commit) always fork
from pyspark.daemon.

pyspark.daemon forks only after it has accepted a task connection, from its single Python thread. The imports leave
two native threads behind (numpy's OpenBLAS pool, pyarrow's jemalloc background thread); both libraries register
fork handlers, and the forked worker starts them again when it needs them.
"""

from __future__ import annotations

import os

import pandas  # noqa: F401  (the package does not import it; pyarrow does, at a task's first pa.array of a list)
from pyspark import daemon

import paimon_ds  # noqa: F401  (the package root: the core and its dependencies)
from paimon_ds.spark import read, source, stream, write  # noqa: F401  (what tasks unpickle)
from paimon_ds.spark.python_worker import freeze_imported_objects

# the process that loaded the modules, which every forked worker sees as its parent
LOADED_IN = os.getpid()

if __name__ == "__main__":
    freeze_imported_objects()
    daemon.manager()
