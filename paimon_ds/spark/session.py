"""A correctly configured local SparkSession: interpreter, quiet logs, filter push-down, `paimon` registered."""

from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

from pyspark.sql import SparkSession


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
    builder = SparkSession.builder.appName(app_name).master(master or os.environ.get("SPARK_MASTER", "local[2]"))
    settings = {**spark_defaults(), "spark.pyspark.python": sys.executable,
                "spark.pyspark.driver.python": sys.executable, **{k: str(v) for k, v in (conf or {}).items()}}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from .. import register
    register(spark)
    return spark
