"""Writing data files: one file being written (DataFileSink: its name, location, format and codec per level),
and the rolling writer of append files (files of about `target-file-size`, with their stats and metadata)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa

from ..external_paths import new_data_file_path
from ..format.data_file import DataFileWriter, level_compression, level_format
from ..format.stats import StatsCollector
from ..manifest.meta import DataFileMeta, FileSource
from .names import DataFileNamer

if TYPE_CHECKING:
    from ..table import Table


class DataFileSink:
    """One data file being written: its name, its format's writer and the bytes written so far.

    Shared by the append writer and the key-value (merge tree) writer, which differ only in what
    they put in the file and in the metadata they keep about it. The format (parquet, orc, avro) and
    codec are the table's for ``level`` (`file.format[.per.level]`, `file.compression[.per.level]`).
    """

    def __init__(self, table: Table, directory: str, namer: DataFileNamer, schema: pa.Schema,
                 use_dictionary: bool | list[str] = True, level: int = 0) -> None:
        opts = table.options
        fmt = level_format(opts, level)
        self.name = namer.next(f".{fmt}")
        # under the table, or under an external root (`data-file.external-paths`): then it is `_EXTERNAL_PATH`
        self.path, self.external_path = new_data_file_path(table, directory, self.name)
        self._sink = table.io.open_output(self.path)
        self._writer = DataFileWriter(self._sink, schema, fmt, level_compression(opts, level),
                                      opts.get("file.compression.zstd-level"), use_dictionary)

    def write(self, data: pa.Table) -> None:
        """Write ``data`` as one row group."""
        self._writer.write(data)

    @property
    def size(self) -> int:
        return self._writer.size

    def finish(self) -> int:
        """Close the file; its size in bytes."""
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        return size

    def discard(self) -> None:
        """Close without caring how (the file is deleted next)."""
        try:
            self._writer.close()
            self._sink.close()
        except Exception:  # noqa: BLE001 - best effort
            pass


class RollingFileWriter:
    """Writes one (partition, bucket)'s rows into parquet files of about `target-file-size`."""

    def __init__(self, table: Table, directory: str, namer: DataFileNamer) -> None:
        self.table = table
        self.io = table.io
        self.directory = directory
        self.namer = namer
        opts = table.options
        self.target_size = opts.get("target-file-size")
        self.row_group_bytes = opts.get("parquet.block.size")
        self.stats_mode = opts.get("metadata.stats-mode")
        self.arrow_schema = table.arrow_schema()
        self.types = [f.type for f in table.schema.fields]
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0
        self.done: list[DataFileMeta] = []
        self.written_paths: list[str] = []
        self._file: DataFileSink | None = None
        self._rows = 0
        self._stats: StatsCollector | None = None

    def add(self, batch: pa.RecordBatch) -> None:
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        # Files roll only between row groups, so a row group may not outgrow the target file size.
        if self.pending_bytes >= min(self.row_group_bytes, self.target_size):
            self.flush()

    def flush(self) -> None:
        """Write buffered batches as one row group; roll the file when it reached its target size."""
        if not self.pending:
            return
        data = pa.Table.from_batches(self.pending, schema=self.arrow_schema)
        self.pending, self.pending_bytes = [], 0
        if self._file is None:
            self._file = DataFileSink(self.table, self.directory, self.namer, self.arrow_schema)
            self.written_paths.append(self._file.path)
            self._rows = 0
            self._stats = StatsCollector(self.types, self.stats_mode)
        assert self._stats is not None
        self._file.write(data)
        self._stats.update(data)
        self._rows += data.num_rows
        if self._file.size >= self.target_size:
            self._close_file()

    def _close_file(self) -> None:
        assert self._file is not None and self._stats is not None
        size = self._file.finish()
        self.done.append(DataFileMeta(
            file_name=self._file.name, file_size=size, row_count=self._rows,
            value_stats=self._stats.result(), min_sequence_number=0,
            max_sequence_number=max(0, self._rows - 1), schema_id=self.table.schema.id, level=0,
            creation_time=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None),
            delete_row_count=0, file_source=FileSource.APPEND, external_path=self._file.external_path))
        self._file, self._stats = None, None

    def close(self) -> list[DataFileMeta]:
        self.flush()
        if self._file is not None:
            self._close_file()
        return self.done

    def abort(self) -> None:
        if self._file is not None:
            self._file.discard()
            self._file = None
        for p in self.written_paths:
            self.io.delete_quietly(p)
