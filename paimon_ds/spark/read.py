"""Batch reader: partitions() plans splits on the driver; read() turns a split into Arrow batches."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..predicate.predicates import Predicate, and_all
from ..schema.types import SchemaError
from ..store.row_tracking import SYSTEM_COLUMNS, row_tracking_enabled
from ..table import Table
from .filters import to_predicate
from .python_worker import WorkerSide
from .types import arrow_schema_for_spark


class SplitPartition(InputPartition):
    pass


class PaimonReader(WorkerSide, DataSourceReader):
    def __init__(self, table: Table, schema: StructType, row_kind_column: str | None = None,
                 file_column: str | None = None, only_files: set[str] | None = None,
                 position_column: str | None = None, parallelism: int | None = None) -> None:
        """``file_column`` / ``only_files``: for the package's row-level jobs on append tables (which
        file each row is in; read only these files). ``parallelism``: the session's default parallelism,
        which append files are spread over (as Spark's own file sources do)."""
        self.parallelism = parallelism
        self.table = table
        self.row_kind_column = row_kind_column
        self.file_column = file_column
        self.only_files = only_files
        self.position_column = position_column  # each row's position in its file (deletion vectors)
        self.read_schema = arrow_schema_for_spark(schema)
        # row-tracking tables: _ROW_ID and _SEQUENCE_NUMBER may be read (and filtered on) as columns
        self.system_columns = SYSTEM_COLUMNS if row_tracking_enabled(table.options) else ()
        missing = [n for n in self.read_schema.names
                   if n not in table.table_schema.field_names
                   and n not in (row_kind_column, file_column, position_column)
                   and n not in self.system_columns]
        if missing:
            raise SchemaError(f"column(s) {missing} are not in Paimon table {table.path} "
                              f"(columns: {', '.join(table.table_schema.field_names)})")
        self.predicates: list[Predicate] = []

    def pushFilters(self, filters):  # Spark 4.1+
        for f in filters:
            p = to_predicate(f, self.table.table_schema, self.system_columns)
            if p is not None:
                self.predicates.append(p)
            # Stats only prune files; Spark still evaluates every filter on the rows it gets.
            yield f

    @property
    def predicate(self) -> Predicate | None:
        return and_all(self.predicates)

    def partitions(self) -> list[InputPartition]:
        splits = self.table.new_scan(self.predicate, parallelism=self.parallelism).plan()
        if self.only_files is not None:
            for s in splits:
                s.files = [f for f in s.files if f.file_name in self.only_files]
            splits = [s for s in splits if s.files]
        return [SplitPartition(s) for s in splits] or [SplitPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = partition.value
        if split is None:
            return
        read = self.table.new_read(self.read_schema, self.predicate, row_kind_column=self.row_kind_column,
                                   file_column=self.file_column, position_column=self.position_column)
        yield from read.read(split)
