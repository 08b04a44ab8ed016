"""Compaction of a row-tracking append table's small files, keeping every row's `_ROW_ID` and `_SEQUENCE_NUMBER`.

As Paimon's append compaction of such a table (its compactors write with `rowTypeWithRowTracking`): the
compacted files hold both as physical columns, their `_WRITE_COLS` name the table's columns and the two,
their `_FILE_SOURCE` is COMPACT (so the commit gives them no new ids) and their min / max sequence numbers
are those of their rows. A compacted file whose rows' ids run without a gap from its first row also gets
that `_FIRST_ROW_ID` (Paimon leaves it null): readers that derive ids from it, as pypaimon 2.1 does, then
read the same ids as Java Paimon, which reads the physical column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.stats import StatsCollector
from ..io.data_files import DataFileSink, RollingFileWriter, now_local_wall
from ..io.names import DataFileNamer
from ..manifest.meta import DataFileMeta, FileSource
from ..schema.types import DataType
from ..store.row_tracking import ROW_ID, SEQUENCE_NUMBER, SYSTEM_COLUMNS, system_fields

if TYPE_CHECKING:
    from ..store.file_store import FileStore


class TrackedFileWriter(RollingFileWriter):
    """Rolls a bucket's rows, with their `_ROW_ID` and `_SEQUENCE_NUMBER`, into files of `target-file-size`."""

    def __init__(self, table: FileStore, directory: str, namer: DataFileNamer) -> None:
        # the physical columns are NOT NULL, as Paimon's SpecialFields declare them
        schema = pa.schema([*table.arrow_schema(), *(f.with_nullable(False) for f in system_fields())])
        super().__init__(table, directory, namer, schema, table.options.get("parquet.block.size"))
        self.stats_mode = table.options.get("metadata.stats-mode")
        self.types = [f.type for f in table.table_schema.fields] + [DataType("BIGINT", nullable=False)] * 2
        self.write_cols = tuple(table.table_schema.field_names) + SYSTEM_COLUMNS

    def add(self, data: pa.Table | pa.RecordBatch) -> None:
        super().add(data.select(self.schema.names))

    def start_file(self, data: pa.Table) -> None:
        self._stats = StatsCollector(self.types, self.stats_mode)
        self._ids: list[np.ndarray] = []
        self._seq_lo: int | None = None
        self._seq_hi: int | None = None

    def observe(self, data: pa.Table) -> None:
        self._stats.update(data)
        self._ids.append(data.column(ROW_ID).to_numpy())
        seq = pc.min_max(data.column(SEQUENCE_NUMBER))
        lo, hi = seq["min"].as_py(), seq["max"].as_py()
        self._seq_lo = lo if self._seq_lo is None else min(self._seq_lo, lo)
        self._seq_hi = hi if self._seq_hi is None else max(self._seq_hi, hi)

    def file_meta(self, sink: DataFileSink, size: int) -> DataFileMeta:
        ids = np.concatenate(self._ids)
        contiguous = bool(len(ids)) and bool(np.array_equal(ids, np.arange(ids[0], ids[0] + len(ids))))
        return DataFileMeta(
            file_name=sink.name, file_size=size, row_count=self.rows, value_stats=self._stats.result(),
            min_sequence_number=self._seq_lo or 0, max_sequence_number=self._seq_hi or 0,
            schema_id=self.table.table_schema.id, level=0, creation_time=now_local_wall(), delete_row_count=0,
            file_source=FileSource.COMPACT, external_path=sink.external_path,
            first_row_id=int(ids[0]) if contiguous else None, write_cols=self.write_cols)


def in_row_id_order(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """Files by first row id, so that the compacted rows keep ascending, ideally gapless, ids."""
    return sorted(files, key=lambda f: (f.first_row_id is None, f.first_row_id or 0, f.min_sequence_number,
                                        f.file_name))
