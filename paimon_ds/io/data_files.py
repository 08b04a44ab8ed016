"""Writing data files: one file being written (DataFileSink: its name, location, format and codec per level),
rolling writers (files of about `target-file-size`; RollingFileWriter, which the key-value and row-tracking
writers extend) and the append writer (AppendFileWriter: files with their stats and metadata)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from ..format.data_file import DataFileWriter, level_compression, level_format
from ..format.file_index import INDEX_FILE_SUFFIX, FileIndexBuilder, bitmap_columns, bloom_filter_columns
from ..format.stats import StatsCollector
from ..manifest.meta import DataFileMeta, FileSource
from ..store.external_paths import new_data_file_path
from .names import DataFileNamer

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# a write's row group of at least twice this many bytes (in memory) may go into several files encoded in parallel
PARALLEL_FILE_BYTES = 64 << 20
# row groups of at least this many rows have their stats computed beside their encoding, in _OBSERVER's threads
CONCURRENT_OBSERVE_ROWS = 65536
_OBSERVER = ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="paimon-ds-stats")


class DataFileSink:
    """One data file being written: its name, its format's writer and the bytes written so far.

    Shared by the append writer and the key-value (merge tree) writer, which differ only in what
    they put in the file and in the metadata they keep about it. The format (parquet, orc, avro) and
    codec are the table's for ``level`` (`file.format[.per.level]`, `file.compression[.per.level]`).
    """

    def __init__(self, table: FileStore, directory: str, namer: DataFileNamer, schema: pa.Schema,
                 level: int = 0, file_format: str | None = None) -> None:
        """``file_format``: this one instead of the table's for ``level`` (a postpone bucket's Avro)."""
        opts = table.options
        fmt = file_format or level_format(opts, level)
        self.name = namer.next(f".{fmt}")
        # under the table, or under an external root (`data-file.external-paths`): then it is `_EXTERNAL_PATH`
        self.path, self.external_path = new_data_file_path(table, directory, self.name)
        self._sink = table.io.open_output(self.path)
        self._writer = DataFileWriter(self._sink, schema, fmt, level_compression(opts, level),
                                      opts.get("file.compression.zstd-level"))

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
    """Buffers one bucket's rows into row groups and writes them into files rolled at `target-file-size`.

    The append, key-value and row-tracking writers share this: buffering, rolling, and deleting what an aborted
    write left. Each says what its files hold through three hooks: ``start_file`` (a file opens with this row
    group), ``observe`` (a row group was written) and ``file_meta`` (a file is finished: its DataFileMeta).
    """

    def __init__(self, table: FileStore, directory: str, namer: DataFileNamer, schema: pa.Schema, row_group_bytes: int,
                 level: int = 0) -> None:
        self.table = table
        self.io = table.io
        self.directory = directory
        self.namer = namer
        self.schema = schema
        self.level = level
        self.target_size = table.options.get("target-file-size")
        # files roll only between row groups, so a row group may not outgrow the target file size
        self.row_group_bytes = min(row_group_bytes, self.target_size)
        self.done: list[DataFileMeta] = []
        self.written_paths: list[str] = []
        self.sink: DataFileSink | None = None
        self.file_format: str | None = None  # None: the table's format for the level
        self.rows = 0  # rows in the open file
        self._pending: list[pa.Table | pa.RecordBatch] = []
        self.pending_bytes = 0

    def add(self, data: pa.Table | pa.RecordBatch) -> None:
        if data.num_rows == 0:
            return
        self._pending.append(data)
        self.pending_bytes += data.nbytes
        if self.pending_bytes >= self.row_group_bytes:
            self.flush()

    def write_all(self, chunks: Iterable[pa.Table | pa.RecordBatch]) -> list[DataFileMeta]:
        for chunk in chunks:
            self.add(chunk)
        return self.close()

    def flush(self) -> None:
        """Write the buffered rows as one row group; roll the file once it reached its target size."""
        if not self._pending:
            return
        data = pa.concat_tables([pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p
                                 for p in self._pending])
        if not data.schema.equals(self.schema):
            data = data.cast(self.schema)
        self._pending, self.pending_bytes = [], 0
        if self.sink is None and self.split_files(data):
            return
        if self.sink is None:
            self.open_file()
        if self.rows == 0:
            self.start_file(data)
        if data.num_rows >= CONCURRENT_OBSERVE_ROWS:
            # the row group's stats (observe) are computed while it is encoded: both run in pyarrow's C++ with
            # the GIL released, and observe only reads ``data`` (a write of one large file uses two cores)
            observing = _OBSERVER.submit(self.observe, data)
            try:
                self.sink.write(data)
            finally:
                observing.result()  # waits; raises what observe raised
        else:
            self.sink.write(data)
            self.observe(data)
        self.rows += data.num_rows
        if self.sink.size >= self.target_size:
            self._close_file()

    def open_file(self) -> None:
        """Open the next file: its name is taken now (names count up in the order files are opened)."""
        self.sink = DataFileSink(self.table, self.directory, self.namer, self.schema, self.level, self.file_format)
        self.written_paths.append(self.sink.path)
        self.rows = 0

    def _close_file(self) -> None:
        assert self.sink is not None
        size = self.sink.finish()
        self.done.append(self.file_meta(self.sink, size))
        self.sink = None

    def close(self) -> list[DataFileMeta]:
        """Write what is buffered and finish the open file; every file written."""
        self.flush()
        if self.sink is not None:
            self._close_file()
        return self.done

    def abort(self) -> None:
        """Delete every file this writer created."""
        if self.sink is not None:
            self.sink.discard()
            self.sink = None
        for p in self.written_paths:
            self.io.delete_quietly(p)

    def split_files(self, data: pa.Table) -> bool:
        """Write ``data`` as several whole files encoded in parallel instead of one file (True), where the writer
        allows it; else False."""
        return False

    # ------------------------------------------------------------------ what a file holds
    def start_file(self, data: pa.Table) -> None:
        """A new file opens with ``data`` as its first row group."""

    def observe(self, data: pa.Table) -> None:
        """``data`` was written to the open file."""

    def file_meta(self, sink: DataFileSink, size: int) -> DataFileMeta:
        raise NotImplementedError


class AppendFileWriter(RollingFileWriter):
    """An append table's rows: files with value stats, sequence numbers 0..rows-1, level 0."""

    def __init__(self, table: FileStore, directory: str, namer: DataFileNamer, parallel_files: int = 1) -> None:
        """``parallel_files``: a row group of more than twice PARALLEL_FILE_BYTES, arriving with no file open, is
        written as up to that many files, encoded at once in threads (a write; a compaction keeps one file)."""
        super().__init__(table, directory, namer, table.arrow_schema(), table.options.get("parquet.block.size"))
        self.parallel_files = parallel_files
        self.types = [f.type for f in table.table_schema.fields]
        self.stats_mode = table.options.get("metadata.stats-mode")
        self._stats: StatsCollector | None = None
        # `file-index.*`: each file's index, as Java's DataFileIndexWriter (format/file_index.py)
        self.index_columns = bloom_filter_columns(table.options)
        self.bitmap_columns = bitmap_columns(table.options)
        self._index: FileIndexBuilder | None = None

    def split_files(self, data: pa.Table) -> bool:
        # pyarrow encodes one file in one thread: a large write split into files of at least PARALLEL_FILE_BYTES
        # (in memory) encodes on every core. Each file is a whole data file of the bucket, in the rows' order
        # (the commit lists them in order), as a roll at target-file-size would have made.
        parts = min(self.parallel_files, data.nbytes // PARALLEL_FILE_BYTES)
        if parts < 2:
            return False
        step = -(-data.num_rows // parts)
        writers = [AppendFileWriter(self.table, self.directory, self.namer) for _ in range(parts)]
        try:
            for w in writers:  # named in the rows' order: a scan orders a bucket's files by creation time, then name
                w.open_file()
            with ThreadPoolExecutor(parts, thread_name_prefix="paimon-ds-encode") as pool:
                done = list(pool.map(lambda i: writers[i].write_all([data.slice(i * step, step)]), range(parts)))
        except BaseException:
            for w in writers:
                w.abort()
            raise
        created = now_local_wall()  # one creation time: the files' order is their names'
        for w, files in zip(writers, done):
            self.written_paths += w.written_paths  # this writer's abort deletes them too
            self.done += [replace(f, creation_time=created) for f in files]
        return True

    def start_file(self, data: pa.Table) -> None:
        self._stats = StatsCollector(self.types, self.stats_mode)
        if self.index_columns or self.bitmap_columns:
            self._index = FileIndexBuilder(self.index_columns,
                                           {f.name: f.type for f in self.table.table_schema.fields},
                                           self.bitmap_columns)

    def observe(self, data: pa.Table) -> None:
        assert self._stats is not None
        self._stats.update(data)
        if self._index is not None:
            self._index.update(data)

    def file_meta(self, sink: DataFileSink, size: int) -> DataFileMeta:
        assert self._stats is not None
        embedded, extra = self._finish_index(sink)
        return DataFileMeta(
            file_name=sink.name, file_size=size, row_count=self.rows,
            value_stats=self._stats.result(), min_sequence_number=0,
            max_sequence_number=max(0, self.rows - 1), schema_id=self.table.table_schema.id, level=0,
            creation_time=now_local_wall(), delete_row_count=0, file_source=FileSource.APPEND,
            external_path=sink.external_path, extra_files=extra, embedded_index=embedded)

    def _finish_index(self, sink: DataFileSink) -> tuple[bytes | None, tuple[str, ...]]:
        """The file's index: in the manifest entry up to `file-index.in-manifest-threshold` bytes, else in
        `<file>.index` beside the file, named in the entry's extra files."""
        if self._index is None:
            return None, ()
        blob, self._index = self._index.result(), None
        if len(blob) <= self.table.options.get("file-index.in-manifest-threshold"):
            return blob, ()
        path = sink.path + INDEX_FILE_SUFFIX
        self.written_paths.append(path)
        self.io.write_bytes(path, blob)
        return None, (sink.name + INDEX_FILE_SUFFIX,)


def now_local_wall() -> dt.datetime:
    """A file's creation time as Paimon records it: the wall time of the system's zone, in milliseconds, without a
    zone (DataFileMeta: ``Timestamp.fromLocalDateTime(LocalDateTime.now()).toMillisTimestamp()``); readers take it
    back in the system's zone (creationTimeEpochMillis)."""
    now = dt.datetime.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
