"""PaimonDataSource: Spark's options -> a core Table; hands out readers and writers."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from ..options import OptionError
from ..table import Table

# Options Spark itself passes to a source with the user's: not table options (streaming ones, and the
# reserved properties of a catalog table: TableCatalog.PROP_*).
SPARK_OPTIONS = {"path", "checkpointlocation", "queryname", "owner", "provider", "location", "comment",
                 "external", "is_managed_location", "collation"}


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
        return {k: v for k, v in self.opts.items() if k not in SPARK_OPTIONS}

    def schema(self) -> StructType:
        from .stream import ROW_KIND_COLUMN_OPTION
        from .types import spark_schema
        schema = self._table().arrow_schema()
        row_kind = self.opts.get(ROW_KIND_COLUMN_OPTION)
        if row_kind:
            if row_kind in schema.names:
                raise OptionError(f"{ROW_KIND_COLUMN_OPTION}={row_kind!r} names a column the table already has")
            schema = schema.insert(0, pa.field(row_kind, pa.string(), nullable=False))
        return spark_schema(schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .read import PaimonReader
        return PaimonReader(self._table(), schema, self.opts.get("paimon_ds.row-kind-column"))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .stream import PaimonStreamReader
        return PaimonStreamReader(self._table(), schema, self.opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .stream import PaimonStreamWriter
        return PaimonStreamWriter(table_path(self.opts), self._job_options(), schema, overwrite,
                                  storage_options(self.opts))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .write import PaimonBatchWriter
        return PaimonBatchWriter(table_path(self.opts), self._job_options(), schema, overwrite,
                                 storage_options(self.opts))
