"""paimon_ds: Apache Paimon tables from PySpark through the Python Data Source API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .options import OptionError
from .table import Table, TableNotFound
from .types import SchemaError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__version__ = "0.1.0"
__all__ = ["register", "session", "Table", "TableNotFound", "OptionError", "SchemaError", "__version__"]


def register(spark: SparkSession) -> None:
    """Register the `paimon` format on a SparkSession (classic or Spark Connect)."""
    from .spark.source import PaimonDataSource
    spark.dataSource.register(PaimonDataSource)


def session(app_name: str = "paimon_ds", master: str | None = None, conf: dict[str, Any] | None = None,
            ) -> SparkSession:
    """A SparkSession configured from conf/spark-defaults.conf, with `paimon` registered."""
    from .spark.session import build_session
    return build_session(app_name, master, conf)
