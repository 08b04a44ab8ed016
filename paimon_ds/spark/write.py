"""Batch writer: tasks run TableWrite and return commit messages; the driver runs TableCommit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..operation.messages import CommitMessage
from ..options import OptionError, parse_bool
from ..table import Table
from .types import input_arrow_schema


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: list[CommitMessage]


def dynamic_overwrite(options: dict[str, str]) -> bool:
    """Paimon's Spark semantics: overwrite replaces the whole table unless dynamic mode is asked for."""
    mode = options.get("partitionoverwritemode")
    if mode is not None:
        if mode.lower() not in ("static", "dynamic"):
            raise OptionError(f"partitionOverwriteMode must be static or dynamic, got {mode!r}")
        return mode.lower() == "dynamic"
    value = options.get("dynamic-partition-overwrite")
    return parse_bool(value) if value is not None else False


class PaimonBatchWriter(DataSourceArrowWriter):
    def __init__(self, path: str, options: dict[str, str], schema: StructType, overwrite: bool,
                 storage_options: dict | None) -> None:
        self.overwrite = overwrite
        self.dynamic = dynamic_overwrite(options)
        table_opts = {k: v for k, v in options.items() if k != "partitionoverwritemode"}
        # Resolve (and check) the table on the driver at planning time: bad input fails before any task.
        self.table = Table.for_write(path, input_arrow_schema(schema), table_opts, storage_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        table_write = self.table.new_write()
        try:
            for batch in iterator:
                table_write.write_arrow(batch)
            return PaimonCommitMessage(table_write.prepare_commit())
        except BaseException:
            table_write.abort()  # a failed task leaves no files behind
            raise

    def commit(self, messages: list[PaimonCommitMessage | None]) -> None:
        all_messages = [m for pm in messages if pm is not None for m in pm.messages]
        commit = self.table.new_commit()
        if not self.overwrite:
            commit.commit(all_messages)
        elif self.dynamic and self.table.partition_keys:
            commit.overwrite(all_messages, partitions={m.partition for m in all_messages})
        else:
            commit.overwrite(all_messages)

    def abort(self, messages: list[PaimonCommitMessage | None]) -> None:
        commit = self.table.new_commit()
        commit.abort([m for pm in messages if pm is not None for m in pm.messages])
