"""Writing and reading key-value data files (sorted runs) of one bucket."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..casts.column import cast_column
from ..format.binary_row import serialize_arrow_row
from ..format.data_file import open_data_file
from ..format.stats import StatsCollector
from ..io.data_files import DataFileSink, RollingFileWriter, now_local_wall
from ..manifest.meta import DataFileMeta, FileSource
from ..schema.types import canonical_nans, conform_array
from .kv import DELETE, KEY_PREFIX, KIND, SEQ, UPDATE_BEFORE, KeyValueLayout

if TYPE_CHECKING:
    from ..io.names import DataFileNamer
    from ..store.file_store import FileStore


class KeyValueFileWriter(RollingFileWriter):
    """Writes key-sorted kv chunks of one sorted run into files rolled at `target-file-size`.

    Every file gets Paimon's metadata: min/max key, key and value stats, sequence range, level.
    """

    def __init__(self, table: FileStore, directory: str, namer: DataFileNamer, level: int,
                 file_source: int = FileSource.APPEND) -> None:
        layout = KeyValueLayout(table.table_schema)
        kv_schema = layout.arrow_schema()
        opts = table.options
        # a row group waits in memory before it is written: keep it to half the write buffer
        row_group_bytes = min(opts.get("parquet.block.size"), max(1 << 20, opts.get("write-buffer-size") // 2))
        super().__init__(table, directory, namer, kv_schema, row_group_bytes, level)
        self.file_source = file_source
        self.layout = layout
        self.kv_schema = kv_schema
        self.stats_mode = opts.get("metadata.stats-mode")
        self.key_types = [f.type for f in layout.key_fields]
        self.value_types = [f.type for f in table.table_schema.fields]
        self.n_keys = len(self.key_types)

    def start_file(self, data: pa.Table) -> None:
        self._deletes = 0
        self._min_seq: int | None = None
        self._max_seq: int | None = None
        self._first_key = [data.column(i).slice(0, 1) for i in range(self.n_keys)]
        self._last_key: list[pa.Array] = []
        self._key_stats = StatsCollector(self.key_types, "full")
        self._value_stats = StatsCollector(self.value_types, self.stats_mode)

    def observe(self, data: pa.Table) -> None:
        n = data.num_rows
        self._last_key = [data.column(i).slice(n - 1, 1) for i in range(self.n_keys)]
        self._key_stats.update(data.select(list(range(self.n_keys))))
        self._value_stats.update(data.select(list(range(self.n_keys + 2, data.num_columns))))
        seq = data.column(SEQ).to_numpy()
        kinds = data.column(KIND).to_numpy()
        self._deletes += int(((kinds == DELETE) | (kinds == UPDATE_BEFORE)).sum())
        lo, hi = int(seq.min()), int(seq.max())
        self._min_seq = lo if self._min_seq is None else min(self._min_seq, lo)
        self._max_seq = hi if self._max_seq is None else max(self._max_seq, hi)

    def file_meta(self, sink: DataFileSink, size: int) -> DataFileMeta:
        return DataFileMeta(
            file_name=sink.name, file_size=size, row_count=self.rows,
            min_key=serialize_arrow_row(self._first_key, self.key_types),
            max_key=serialize_arrow_row(self._last_key, self.key_types),
            key_stats=self._key_stats.result(),
            value_stats=self._value_stats.result(),
            min_sequence_number=self._min_seq or 0, max_sequence_number=self._max_seq or 0,
            schema_id=self.table.table_schema.id, level=self.level, creation_time=now_local_wall(),
            delete_row_count=self._deletes, file_source=self.file_source, external_path=sink.external_path)


def read_kv_file(table: FileStore, path: str, schema_id: int, batch_rows: int = 65536,
                 size: int | None = None) -> Iterator[pa.Table]:
    """A kv file's rows in the current kv layout (columns matched by field id for evolved schemas)."""
    layout = KeyValueLayout(table.table_schema)
    target = layout.arrow_schema()
    file_schema = table.schema_by_id(schema_id)
    by_id = {f.id: f.name for f in file_schema.fields}
    # value columns whose type was altered since the file was written: read with Paimon's casts
    n_head = len(layout.key_columns) + 2
    file_types = {f.id: f.type for f in file_schema.fields}
    altered = {n_head + i: (file_types[f.id], f.type) for i, f in enumerate(table.table_schema.fields)
               if f.id in file_types and file_types[f.id].copy(True) != f.type.copy(True)}
    names = [n for n in target.names[: len(layout.key_columns) + 2]]
    float_keys = {i for i, f in enumerate(layout.key_fields) if f.type.root in ("FLOAT", "DOUBLE")}
    names += [by_id.get(f.id) or f"\0missing-{f.id}" for f in table.table_schema.fields]
    column_types = {**{f.name: f.type for f in file_schema.fields},
                    **{KEY_PREFIX + f.name: f.type for f in file_schema.fields}}
    with table.io.open_input(path, size) as fh:
        pf = open_data_file(fh, path, column_types)
        present = set(pf.names)
        cols = [n for n in names if n in present]
        for batch in pf.iter_batches(cols, batch_rows):
            arrays = []
            for i, (name, field) in enumerate(zip(names, target)):
                if name in present:
                    col = batch.column(batch.schema.get_field_index(name))
                    if i in altered:
                        arrays.append(cast_column(col, altered[i][0], altered[i][1], field.type))
                    elif i in float_keys:  # a NaN key another writer stored with another payload: the same key
                        arrays.append(canonical_nans(conform_array(col, field.type)))
                    else:
                        arrays.append(conform_array(col, field.type))
                else:
                    arrays.append(pa.nulls(batch.num_rows, field.type))
            yield pa.Table.from_arrays(arrays, schema=target)


# Sequence numbers of a write in which several Spark tasks may share a bucket in one commit
# (df.write.format("paimon"), not clustered). A task's MergeTreeWriter merges its rows per key before
# they reach the table (in its buffer, and across spilled runs), so every level-0 sorted run it writes
# holds at most one row per key. Each such run therefore takes one number for all its rows:
#
#     base + 1 + task * RUNS_PER_TASK + run
#
# (base: the bucket's highest number when the write started; task: the Spark partition id; run: 0, 1, ...
# counts the runs this writer wrote in this commit). A later partition's rows beat an earlier one's and,
# within a task, a later run (later rows) beats an earlier run. Writers that own their bucket keep
# Paimon's per-row numbers base + 1 + n instead.
#
# Over a table's life: a commit moves a bucket's numbers up by at most (highest task + 1) * RUNS_PER_TASK.
# With MAX_WRITE_TASKS = 2**16 that is 2**32 per commit, so 2**31 (2.1e9) commits of that worst size fit
# below Java's Long.MAX_VALUE (2**63 - 1): 68 years at one commit a second. A typical write of 200
# partitions moves them by at most 200 * 2**16 = 13,107,200: 2**63 / (200 * 2**16) = 7.0e11 commits,
# 22,000 years at one a second. (The per-row interleaving used before moved them by rows * 2**16.)
RUNS_PER_TASK = 1 << 16
MAX_WRITE_TASKS = 1 << 16


def row_sequence(base: int, start: int, count: int) -> np.ndarray:
    """Per-row numbers base + 1 + start .. base + start + count, as Paimon's single writer gives them."""
    return base + 1 + start + np.arange(count, dtype=np.int64)


def run_sequence(base: int, task: int, run: int) -> int:
    """The one number of every row of level-0 run ``run`` of task ``task`` (see RUNS_PER_TASK)."""
    if not 0 <= task < MAX_WRITE_TASKS:
        raise ValueError(f"task {task} is outside [0, {MAX_WRITE_TASKS}): at most {MAX_WRITE_TASKS} tasks may "
                         "write a primary-key table in one commit")
    if not 0 <= run < RUNS_PER_TASK:
        raise RuntimeError(f"a write task (Spark partition {task}) wrote {RUNS_PER_TASK} level-0 sorted runs to one "
                           "bucket in one commit, the most its sequence numbers allow; give it fewer rows per "
                           "task (more Spark partitions), a larger 'write-buffer-size', or keep "
                           "'write-buffer-spillable' true")
    return base + 1 + task * RUNS_PER_TASK + run


def with_sequence(chunks: Iterable[pa.Table], seq: int) -> Iterator[pa.Table]:
    """The chunks with every row's sequence number set to ``seq``."""
    for chunk in chunks:
        i = chunk.schema.get_field_index(SEQ)
        yield chunk.set_column(i, chunk.schema.field(i), pa.array(np.full(chunk.num_rows, seq, dtype=np.int64)))
