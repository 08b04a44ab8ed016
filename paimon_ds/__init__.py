"""paimon_ds: Apache Paimon tables from PySpark through the Python Data Source API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .catalog import Catalog
from .options import OptionError
from .table import Table, TableNotFound
from .types import SchemaError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__version__ = "0.1.0"
__all__ = ["register", "session", "attach", "write", "compact", "Catalog", "Table", "TableNotFound", "OptionError",
           "SchemaError", "__version__"]


def register(spark: SparkSession) -> None:
    """Register the `paimon` format on a SparkSession (classic or Spark Connect)."""
    from .spark.source import PaimonDataSource
    spark.dataSource.register(PaimonDataSource)


def attach(spark: SparkSession, warehouse: str, storage_options: dict[str, Any] | None = None):
    """Make every table of a Paimon warehouse (`<warehouse>/<db>.db/<table>`) a named table of the session,
    for plain `spark.sql` (INSERT INTO / OVERWRITE, SELECT, SHOW TABLES, DESCRIBE) and
    `spark.read.table` / `saveAsTable`. Returns the warehouse's Catalog; call again after creating tables."""
    from .spark.catalog import attach as attach_catalog
    return attach_catalog(spark, warehouse, storage_options)


def session(app_name: str = "paimon_ds", master: str | None = None, conf: dict[str, Any] | None = None,
            ) -> SparkSession:
    """A SparkSession configured from conf/spark-defaults.conf, with `paimon` registered."""
    from .spark.session import build_session
    return build_session(app_name, master, conf)


def write(df: Any, path: str, mode: str = "append", options: dict[str, Any] | None = None,
          parallelism: int | None = None) -> None:
    """Write a DataFrame clustered by (partition, bucket), as Paimon's Flink sink shuffles.

    Each bucket then has one writer per commit, which compacts it inline (universal compaction),
    so primary-key tables keep few sorted runs without a separate compaction job.
    """
    from .spark.cluster import write as clustered_write
    clustered_write(df, path, mode, options, parallelism)


def compact(spark: SparkSession, path: str, full: bool = False, options: dict[str, Any] | None = None):
    """Compact a table in Spark tasks (one per bucket); returns the COMPACT snapshot or None.

    Primary-key tables: universal compaction of each bucket's sorted runs (``full``: into one run).
    Append tables: small files rewritten into files of `target-file-size` (``full``: all of them)."""
    from .spark.cluster import compact as run_compact
    return run_compact(spark, path, full, options)
