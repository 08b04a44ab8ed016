"""Registering the `paimon` format on a session (paimon_ds.register), and any Python data source on any
session of an application; a correctly configured local SparkSession: interpreter, quiet logs, filter
push-down, `paimon` registered (paimon_ds.session). Registering takes no JVM handle: it works from a Spark
Connect client."""

from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .connect import is_connect, ship_package
from .connect_shim import shipped
from .jvm import jvm_class
from .python_worker import DAEMON_MODULE
from .source import source_for_session


def spark_defaults() -> dict[str, str]:
    """Settings from conf/spark-defaults.conf (shipped inside the package as paimon_ds/conf)."""
    text = resources.files("paimon_ds").joinpath("conf/spark-defaults.conf").read_text()
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out


def build_session(app_name: str, master: str | None, conf: dict[str, Any] | None) -> SparkSession:
    # Workers must run this interpreter (the one with pyarrow and paimon_ds), not python3 from PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or os.environ.get("SPARK_MASTER", "local[2]")
    builder = SparkSession.builder.appName(app_name).master(master)
    # Spark's progress bar (on stderr) where a person watches, not in logs and CI output
    progress = "true" if sys.stderr.isatty() else "false"
    settings = {**spark_defaults(), "spark.pyspark.python": sys.executable,
                "spark.pyspark.driver.python": sys.executable, "spark.ui.showConsoleProgress": progress,
                **local_worker_settings(master), **{k: str(v) for k, v in (conf or {}).items()}}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def local_worker_settings(master: str) -> dict[str, str]:
    """For a local master, whose Python workers run this interpreter (so can import this package): task workers
    forked from paimon_ds.spark.daemon, which has the package loaded. Elsewhere nothing: the executors' Python
    may lack paimon_ds, and the daemon serves every Python task of the application."""
    if master == "local" or master.startswith(("local[", "local-cluster[")):
        return {"spark.python.daemon.module": DAEMON_MODULE}
    return {}


def register(spark: SparkSession) -> None:
    """paimon_ds.register: the `paimon` format on ``spark``, with the session's `spark.hadoop.fs.s3a.*` settings
    bound into the source; on Spark Connect the package shipped to the server first."""
    source = source_for_session(spark)
    if is_connect(spark):
        ship_package(spark)  # for batch tasks
        source = shipped(source)  # for streaming, whose workers Spark does not give the artifact
    # Spark refuses a Python reader with pushFilters() unless this (off by default) is on; a runtime SQL conf
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    register_source(spark, source)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread, so that Spark finds the Python data sources
    registered on it. Classic Spark looks a format name up in the active session only (a JVM thread-local:
    DataSource.lookupDataSource), and the JVM thread of a new Python thread has none until a call sets it: a
    `df.write.format("paimon")` from a thread pool then fails with DATA_SOURCE_NOT_FOUND. createDataFrame is the
    public call that sets it (an empty one runs nothing), made only when the thread's active session is another:
    it costs ~50 ms, the check ~1 ms. Spark Connect resolves names per session: nothing to do."""
    if is_connect(spark) or is_active(spark):
        return
    spark.createDataFrame([], StructType([]))


def is_active(spark: SparkSession) -> bool:
    """Whether ``spark`` (classic) is the calling thread's active session in the JVM."""
    current = jvm_class(spark, "org.apache.spark.sql.SparkSession").getActiveSession()  # per JVM thread
    return bool(current.isDefined() and current.get().equals(spark._jsparkSession))


def register_source(spark: SparkSession, source: type[DataSource]) -> None:
    """Register a Python data source on ``spark``, any session of the application; again replaces it.

    Classic Spark 4.x checks a new name against the *active* session (a JVM thread-local), not against
    ``spark``: registering on `spark.newSession()` a name the active session has is refused
    (DATA_SOURCE_ALREADY_EXISTS), although the registries are per session and ``spark`` lacks it. So on
    that refusal ``spark`` is made the active session, through the one public call that does so
    (createDataFrame; an empty one runs nothing), and registered again. It stays active, as after any
    createDataFrame on it. Spark Connect checks each session on its own: a refusal there is real."""
    try:
        spark.dataSource.register(source)
    except AnalysisException as e:
        if is_connect(spark) or e.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
        activate(spark)
        spark.dataSource.register(source)
