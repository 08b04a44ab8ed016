"""PaimonDataSource: Spark's options -> a core Table; hands out readers and writers."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from ..options import OptionError
from ..table import Table


def table_path(options: dict[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise OptionError("the paimon format needs a table path: .save(path) / .load(path) or option('path', ...)")
    return path


def storage_options(options: dict[str, str]) -> dict[str, str] | None:
    return None


class PaimonDataSource(DataSource):
    """`spark.read.format("paimon")` / `df.write.format("paimon")` on a Paimon table path."""

    @classmethod
    def name(cls) -> str:
        return "paimon"

    def __init__(self, options) -> None:
        super().__init__(options)
        # Spark lower-cases option keys; Paimon's own keys are lower-case already.
        self.opts = {str(k).lower(): str(v) for k, v in options.items()}

    def _table(self) -> Table:
        return Table.load(table_path(self.opts), self._job_options(), storage_options(self.opts))

    def _job_options(self) -> dict[str, str]:
        return {k: v for k, v in self.opts.items() if k != "path"}

    def schema(self) -> StructType:
        from .types import spark_schema
        return spark_schema(self._table().arrow_schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        from .read import PaimonReader
        return PaimonReader(self._table(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .write import PaimonBatchWriter
        return PaimonBatchWriter(table_path(self.opts), self._job_options(), schema, overwrite,
                                 storage_options(self.opts))
