"""The postpone bucket (Paimon 1.x, `bucket` = -2): rows kept as they came, until a compaction buckets them.

A write to a partition's postpone bucket (`<partition>/bucket-postpone/`) is Paimon's PostponeBucketWriter: the
rows go to files in the order they arrive, neither sorted nor merged; every row's sequence number is -1
(KeyValue.UNKNOWN_SEQUENCE: the compaction numbers the rows again, in the order it reads them). The files are Avro
with no value stats (PostponeBucketFileStoreWrite sets `file.format` avro and `metadata.stats-mode` none, keeping
the table's own format where Avro cannot hold a column), level 0, named `data--u-<commit user>-s-<write id>-w-
<uuid>-<n>` so that the files of one writer are read together, in creation order (PostponeUtils.groupPostponeFiles).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.data_file import check_format_types
from ..io.data_files import DataFileSink
from ..manifest.meta import DataFileMeta, SimpleStats
from ..options.registry import Options
from .engine import MergeEngine
from .files import KeyValueFileWriter

if TYPE_CHECKING:
    from ..io.names import FileNamer
    from ..store.file_store import FileStore

UNKNOWN_SEQUENCE = -1  # Paimon's KeyValue.UNKNOWN_SEQUENCE: a postpone bucket's rows carry no number
NO_VALUE_STATS = SimpleStats()  # `metadata.stats-mode` none, stored dense (Paimon 1.x): no column at all


def postpone_file_format(table: FileStore) -> str | None:
    """Avro where it holds every column (None: the table's own format, as Paimon falls back)."""
    try:
        check_format_types(Options({"file.format": "avro"}), table.table_schema.fields, table.path)
    except ValueError:
        return None
    return "avro"


class _PostponeFileWriter(KeyValueFileWriter):
    """Key-value files of a postpone bucket: in arrival order, Avro, without value stats (Paimon 1.x's dense
    stats of `metadata.stats-mode` none: no column, `_VALUE_STATS_COLS` empty)."""

    def __init__(self, table: FileStore, directory: str, namer: FileNamer, file_format: str | None) -> None:
        super().__init__(table, directory, namer, level=0)  # type: ignore[arg-type]
        self.file_format = file_format
        if file_format is not None:
            self.stats_mode = "none"

    def file_meta(self, sink: DataFileSink, size: int) -> DataFileMeta:
        meta = super().file_meta(sink, size)
        if self.file_format is None:
            return meta
        return replace(meta, value_stats=NO_VALUE_STATS, value_stats_cols=())


class PostponeBucketWriter:
    """One partition's postpone bucket in one write: the MergeTreeWriter interface (write, pending_bytes,
    flush_memory, prepare_commit, take_changelog, abort) without sorting, merging or compaction."""

    def __init__(self, table: FileStore, engine: MergeEngine, directory: str, namer: FileNamer) -> None:
        self.table = table
        self.engine = engine
        self.layout = engine.layout
        self.directory = directory
        self.namer = namer
        self.file_format = postpone_file_format(table)
        self.writer: _PostponeFileWriter | None = None
        self.new_files: list[DataFileMeta] = []
        self._done: list[_PostponeFileWriter] = []

    def write(self, rows: pa.RecordBatch | pa.Table, kinds: np.ndarray) -> None:
        self.engine.check_input(kinds)  # Paimon's PostponeBucketWriter.validateRetract
        kv = self.layout.to_kv(rows, np.full(rows.num_rows, UNKNOWN_SEQUENCE, dtype=np.int64), kinds)
        if self.writer is None:
            self.writer = _PostponeFileWriter(self.table, self.directory, self.namer, self.file_format)
        self.writer.add(kv)

    @property
    def pending_bytes(self) -> int:
        return self.writer.pending_bytes if self.writer is not None else 0

    def flush_memory(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def prepare_commit(self) -> tuple[list[DataFileMeta], list[DataFileMeta], list[DataFileMeta]]:
        if self.writer is not None:
            self.new_files += self.writer.close()
            self._done.append(self.writer)
            self.writer = None
        new, self.new_files = self.new_files, []
        return new, [], []

    def take_changelog(self) -> list[DataFileMeta]:
        return []

    def take_compact_changelog(self) -> list[DataFileMeta]:
        return []  # a postpone bucket is never compacted by its writer (and has no changelog producer)

    def abort(self) -> None:
        for w in [*self._done, *([self.writer] if self.writer is not None else [])]:
            w.abort()
        self.writer = None
