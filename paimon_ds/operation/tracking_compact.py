"""Compaction of a row-tracking append table's small files, keeping every row's `_ROW_ID` and `_SEQUENCE_NUMBER`.

As Paimon's append compaction of such a table (its compactors write with `rowTypeWithRowTracking`): the
compacted files hold both as physical columns, their `_WRITE_COLS` name the table's columns and the two,
their `_FILE_SOURCE` is COMPACT (so the commit gives them no new ids) and their min / max sequence numbers
are those of their rows. A compacted file whose rows' ids run without a gap from its first row also gets
that `_FIRST_ROW_ID` (Paimon leaves it null): readers that derive ids from it, as pypaimon 2.1 does, then
read the same ids as Java Paimon, which reads the physical column.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.stats import StatsCollector
from ..io.data_files import DataFileSink
from ..io.names import DataFileNamer
from ..manifest.meta import DataFileMeta, FileSource
from ..row_tracking import ROW_ID, SEQUENCE_NUMBER, SYSTEM_COLUMNS, system_fields
from ..types import DataType

if TYPE_CHECKING:
    from ..table import Table


@dataclass
class _OpenFile:
    sink: DataFileSink
    stats: StatsCollector
    rows: int = 0
    ids: list[np.ndarray] = field(default_factory=list)
    seq_lo: int | None = None
    seq_hi: int | None = None


class TrackedFileWriter:
    """Rolls a bucket's rows, with their `_ROW_ID` and `_SEQUENCE_NUMBER`, into files of `target-file-size`."""

    def __init__(self, table: Table, directory: str, namer: DataFileNamer) -> None:
        self.table = table
        self.directory = directory
        self.namer = namer
        opts = table.options
        self.target_size = opts.get("target-file-size")
        self.row_group_bytes = opts.get("parquet.block.size")
        self.stats_mode = opts.get("metadata.stats-mode")
        # the physical columns are NOT NULL, as Paimon's SpecialFields declare them
        self.schema = pa.schema([*table.arrow_schema(), *(f.with_nullable(False) for f in system_fields())])
        self.types = [f.type for f in table.schema.fields] + [DataType("BIGINT", nullable=False)] * 2
        self.write_cols = tuple(table.schema.field_names) + SYSTEM_COLUMNS
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0
        self.done: list[DataFileMeta] = []
        self.paths: list[str] = []
        self._open: _OpenFile | None = None

    def add(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch.select(self.schema.names))
        self.pending_bytes += batch.nbytes
        if self.pending_bytes >= min(self.row_group_bytes, self.target_size):
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        data = pa.Table.from_batches(self.pending).cast(self.schema)
        self.pending, self.pending_bytes = [], 0
        if self._open is None:
            sink = DataFileSink(self.table, self.directory, self.namer, self.schema)
            self.paths.append(sink.path)
            self._open = _OpenFile(sink, StatsCollector(self.types, self.stats_mode))
        f = self._open
        f.sink.write(data)
        f.stats.update(data)
        f.rows += data.num_rows
        f.ids.append(data.column(ROW_ID).to_numpy())
        seq = pc.min_max(data.column(SEQUENCE_NUMBER))
        lo, hi = seq["min"].as_py(), seq["max"].as_py()
        f.seq_lo = lo if f.seq_lo is None else min(f.seq_lo, lo)
        f.seq_hi = hi if f.seq_hi is None else max(f.seq_hi, hi)
        if f.sink.size >= self.target_size:
            self._close_file()

    def _close_file(self) -> None:
        f = self._open
        assert f is not None
        self._open = None
        size = f.sink.finish()
        ids = np.concatenate(f.ids)
        contiguous = bool(len(ids)) and bool(np.array_equal(ids, np.arange(ids[0], ids[0] + len(ids))))
        self.done.append(DataFileMeta(
            file_name=f.sink.name, file_size=size, row_count=f.rows, value_stats=f.stats.result(),
            min_sequence_number=f.seq_lo or 0, max_sequence_number=f.seq_hi or 0,
            schema_id=self.table.schema.id, level=0,
            creation_time=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), delete_row_count=0,
            file_source=FileSource.COMPACT, external_path=f.sink.external_path,
            first_row_id=int(ids[0]) if contiguous else None, write_cols=self.write_cols))

    def close(self) -> list[DataFileMeta]:
        self._flush()
        if self._open is not None:
            self._close_file()
        return self.done

    def abort(self) -> None:
        if self._open is not None:
            self._open.sink.discard()
            self._open = None
        for p in self.paths:
            self.table.io.delete_quietly(p)


def in_row_id_order(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """Files by first row id, so that the compacted rows keep ascending, ideally gapless, ids."""
    return sorted(files, key=lambda f: (f.first_row_id is None, f.first_row_id or 0, f.min_sequence_number,
                                        f.file_name))
