"""MergeTreeWriter: one (partition, bucket) of a primary-key table inside a write task.

Rows get sequence numbers above everything already in the bucket, wait in a write buffer, and are
sorted and merged (the table's merge engine) when the buffer is spilled or flushed. A full buffer
spills to local disk as a sorted run (write-buffer-spillable, Paimon's default), so memory stays
bounded; prepare_commit() k-way merges the spilled runs into one level-0 run in the table. A writer
that owns its bucket (clustered write) then compacts inline with universal compaction.

A writer that owns its bucket writes those per-row numbers. The writer of one task of a write whose
tasks share buckets (``task`` given) uses them only to order its own rows, and gives all rows of each
level-0 run it writes the run's one number (files.run_sequence: later tasks and later runs win).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..deletionvectors.maintainer import DeletionVectorsMaintainer, drop_positions, dv_enabled
from ..format.binary_row import deserialize_row
from ..manifest.meta import DataFileMeta, FileSource
from ..types import total_order_value
from .compact import CompactionOptions, UniversalCompaction, drop_delete, sorted_runs
from .engine import FirstRow, MergeEngine
from .files import KeyValueFileWriter, read_kv_file, row_sequence, run_sequence, with_sequence
from .kv import KeyValueLayout, comparable, sort_indices
from .merge import has_float_keys, in_key_order, merge_sorted_runs

if TYPE_CHECKING:
    from ..io.names import DataFileNamer
    from ..table import Table

SPILL_BATCH_ROWS = 65536
_POS = "_paimon_ds_position"  # a row's position in its file, while looking keys up for deletion vectors
MAX_SPILLS = 64


class MergeTreeWriter:
    def __init__(self, table: Table, engine: MergeEngine, directory: str, namer: DataFileNamer, base_seq: int,
                 task: int | None = None, restored: list[DataFileMeta] | None = None,
                 compact: bool = False, full_compaction: bool = False,
                 deletion_vectors: DeletionVectorsMaintainer | None = None) -> None:
        """``task``: the Spark partition id of a write whose tasks may share this bucket (None: this
        writer is the bucket's only one in the commit). ``deletion_vectors``: deletion-vector tables,
        the bucket's vectors as of ``restored``; without it such a table is not compacted here (the
        committer lifts its level-0 files, see commit.py)."""
        self.table = table
        self.dv = deletion_vectors
        self.dv_table = dv_enabled(table)
        self.engine = engine
        self.layout = KeyValueLayout(table.schema)
        self.float_keys = has_float_keys(self.layout)
        self.directory = directory
        self.namer = namer
        self.base_seq = base_seq
        self.task = task
        self.counter = 0
        self.runs = 0  # level-0 runs written in this commit
        self.restored = list(restored or [])
        self.compact = compact
        self.full_compaction = full_compaction
        self.spillable = table.options.get("write-buffer-spillable")
        self.buffer: list[pa.Table] = []
        self.pending_bytes = 0
        self.spills: list[str] = []
        self._spill_dir: str | None = None
        self.new_files: list[DataFileMeta] = []
        self._writers: list[KeyValueFileWriter] = []
        # changelog-producer=input: every input record also goes to changelog files, as written
        self.changelog = table.options.get("changelog-producer") == "input"
        self.changelog_files: list[DataFileMeta] = []
        self.changelog_namer = namer.changelog_namer() if self.changelog else None

    # ---------------------------------------------------------------- input
    def write(self, rows: pa.RecordBatch | pa.Table, kinds: np.ndarray) -> None:
        self.engine.check_input(kinds)
        n = rows.num_rows
        seq = row_sequence(self.base_seq, self.counter, n)
        self.counter += n
        kv = self.layout.to_kv(rows, seq, kinds)
        self.buffer.append(kv)
        self.pending_bytes += kv.nbytes

    def _sorted_buffer(self) -> pa.Table:
        data = pa.concat_tables(self.buffer) if len(self.buffer) > 1 else self.buffer[0]
        self.buffer, self.pending_bytes = [], 0
        data = self.layout.sort(data, in_sequence_order=True)
        if self.changelog:
            writer = KeyValueFileWriter(self.table, self.directory, self.changelog_namer, level=0)
            self._writers.append(writer)
            # the rows go into the next level-0 run (now, or merged with the spills): its number
            self.changelog_files += writer.write_all(self._numbered(_chunks(data)))
        return self.engine.merge(data, drop_retract=False)

    def take_changelog(self) -> list[DataFileMeta]:
        files, self.changelog_files = self.changelog_files, []
        return files

    def flush_memory(self) -> None:
        """Free the buffer: spill it to local disk as a sorted run, or (not spillable) write an L0 run."""
        if not self.buffer:
            return
        run = self._sorted_buffer()
        if not self.spillable:
            self._write_level0([_chunks(run)])
            return
        if self._spill_dir is None:
            self._spill_dir = tempfile.mkdtemp(prefix="paimon_ds-spill-")
        path = os.path.join(self._spill_dir, f"run-{len(self.spills)}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(
                sink, run.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as out:
            for batch in run.to_batches(max_chunksize=self._spill_rows(run)):
                out.write_batch(batch)
        self.spills.append(path)
        del run
        pa.default_memory_pool().release_unused()
        if len(self.spills) >= MAX_SPILLS:
            self._flush_spills()

    def _spill_rows(self, run: pa.Table) -> int:
        """Rows per spilled batch: the merge holds one batch of every run, so all runs' batches
        together should fit in a small part of the write buffer."""
        row_bytes = max(1, run.nbytes // max(1, run.num_rows))
        budget = self.table.options.get("write-buffer-size") // (2 * MAX_SPILLS)
        return int(max(1024, min(SPILL_BATCH_ROWS, budget // row_bytes)))

    def _flush_spills(self) -> None:
        """Merge every spilled run (and the buffer) into one level-0 run of the table."""
        runs: list[Iterator[pa.Table]] = [_read_spill(p) for p in self.spills]
        if self.buffer:
            runs.append(_chunks(self._sorted_buffer()))
        if runs:
            self._write_level0(runs)
        for p in self.spills:
            os.unlink(p)
        self.spills = []

    def _write_level0(self, runs: list[Iterator[pa.Table]]) -> None:
        writer = KeyValueFileWriter(self.table, self.directory, self.namer, level=0)
        self._writers.append(writer)
        merged = runs[0] if len(runs) == 1 else merge_sorted_runs(runs, self.engine, drop_retract=False)
        self.new_files += writer.write_all(self._numbered(merged))
        self.runs += 1

    def _numbered(self, chunks: Iterator[pa.Table]) -> Iterator[pa.Table]:
        """Chunks of the next level-0 run with their table sequence numbers: as they are (per-row
        numbers), or all the run's one number when tasks share the bucket (one row per key per run)."""
        if self.task is None:
            return chunks
        return with_sequence(chunks, run_sequence(self.base_seq, self.task, self.runs))

    # ---------------------------------------------------------------- output
    def prepare_commit(self) -> tuple[list[DataFileMeta], list[DataFileMeta], list[DataFileMeta]]:
        """Flush everything; compact if this writer owns its bucket. -> (new, compact_before, compact_after)."""
        self._flush_spills()
        self._cleanup_spills()
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        if self.compact and (self.dv is not None or not self.dv_table):
            before, after = self._compact()
        new = self.new_files
        self.new_files = []
        return new, before, after

    def _compact(self) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        opts = CompactionOptions.from_options(self.table.options)
        strategy = UniversalCompaction(opts)
        files = self.restored + self.new_files
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        full = self.full_compaction
        force_up = isinstance(self.engine, FirstRow)
        for _ in range(4):  # one pick, and more only while the runs stay above the stop trigger
            runs = sorted_runs(files, [f.type for f in self.layout.key_fields])
            if full:
                unit = strategy.pick_full(opts.num_levels, runs)
            elif force_up:
                unit = strategy.pick_first_row(opts.num_levels, runs)
            else:
                unit = strategy.pick(opts.num_levels, runs)
            if unit is None and self.dv is not None:
                unit = strategy.pick_force_level0(opts.num_levels, runs)
            if unit is None:
                break
            full = False
            # with deletion vectors every older version of a rewritten key gets deleted: deletes can go
            dropping = drop_delete(unit, runs) or (self.dv is not None and unit.output_level != 0)
            inputs = unit.files
            if len(inputs) == 1 and (not dropping or not inputs[0].delete_row_count) and not (
                    self.dv is not None and inputs[0].level == 0):
                outputs = [replace(inputs[0], level=unit.output_level)]  # upgrade: same file, new level
            elif self.dv is not None:
                outputs = self._rewrite_with_lookup(unit.runs, runs, unit.output_level)
                for f in inputs:
                    self.dv.remove(f.file_name)
            else:
                outputs = self.rewrite(unit.runs, unit.output_level, dropping)
            before += inputs
            after += outputs
            gone = {f.file_name for f in inputs}
            files = [f for f in files if f.file_name not in gone] + outputs
            remaining = sorted_runs(files)
            if len(remaining) <= opts.stop_trigger and not (
                    (force_up or self.dv is not None) and remaining and remaining[0].level == 0):
                break
        return _net(before, after, self)

    def rewrite(self, runs, output_level: int, dropping: bool) -> list[DataFileMeta]:
        readers = [self._read_ordered_run(r.files) for r in runs]
        writer = KeyValueFileWriter(self.table, self.directory, self.namer, level=output_level,
                                    file_source=FileSource.COMPACT)
        self._writers.append(writer)
        return writer.write_all(merge_sorted_runs(readers, self.engine, drop_retract=dropping))

    def _rewrite_with_lookup(self, unit_runs, runs, output_level: int) -> list[DataFileMeta]:
        """Deletion-vector compaction (Paimon's LookupMergeTreeCompactRewriter): merge the unit's runs
        (their deleted rows dropped) together with the older versions of the same keys found in the
        runs the unit leaves alone, and mark those older rows deleted in their files' vectors. Readers
        then read each file with its vector and need not merge levels."""
        keys = self.layout.key_columns
        unit_files = {f.file_name for r in unit_runs for f in r.files}
        seen = [t.select(keys) for r in unit_runs for t in self._read_run_dv(r.files)]
        readers = [self._read_run_dv(r.files) for r in unit_runs]
        if seen:
            unit_keys = pa.concat_tables(seen).group_by(keys, use_threads=False).aggregate([])
            bounds = unit_keys.take(sort_indices(comparable(unit_keys, keys), [(k, "ascending") for k in keys]))
            lo, hi = (self.layout.key_tuple(bounds, i) for i in (0, bounds.num_rows - 1))
            for run in runs:
                if run.level == 0 or any(f.file_name in unit_files for f in run.files):
                    continue
                older = [self._lookup(f, unit_keys) for f in run.files if self._may_hold(f, lo, hi)]
                readers.append(t for t in older if t.num_rows)
        writer = KeyValueFileWriter(self.table, self.directory, self.namer, level=output_level,
                                    file_source=FileSource.COMPACT)
        self._writers.append(writer)
        return writer.write_all(merge_sorted_runs(readers, self.engine, drop_retract=True))

    def _may_hold(self, f: DataFileMeta, lo: tuple, hi: tuple) -> bool:
        """Whether file ``f``'s key range meets [lo, hi] (any doubt: yes, the file is read)."""
        try:
            types = [x.type for x in self.layout.key_fields]
            f_lo, f_hi = (tuple(total_order_value(v) for v in deserialize_row(k, types))
                          for k in (f.min_key, f.max_key))
            return not (f_hi < lo or f_lo > hi)
        except Exception:  # noqa: BLE001 - keys that do not compare in Python: no pruning
            return True

    def _lookup(self, f: DataFileMeta, unit_keys: pa.Table) -> pa.Table:
        """The live rows of file ``f`` whose keys are in ``unit_keys``, now marked deleted in its vector."""
        parts = list(_read_run(self.table, self.directory, [f]))
        if not parts:
            return self.layout.arrow_schema().empty_table()
        data = pa.concat_tables(parts)
        data = data.append_column(_POS, pa.array(np.arange(data.num_rows, dtype=np.int64)))
        data = next(iter(drop_positions([data], self.dv.positions(f.file_name))), data.slice(0, 0))
        if data.num_rows == 0:
            return data.drop_columns([_POS])
        keys = self.layout.key_columns
        # join on the keys and positions only (any value column type may be in the rest)
        found = data.select([*keys, _POS]).join(unit_keys, keys=keys, join_type="left semi", use_threads=False)
        positions = np.sort(found.column(_POS).to_numpy())  # the file's order (by key), which joins do not keep
        self.dv.delete(f.file_name, positions)
        index = np.searchsorted(data.column(_POS).to_numpy(), positions)
        return data.take(pa.array(index)).drop_columns([_POS])

    def _read_run_dv(self, files: list[DataFileMeta]) -> Iterator[pa.Table]:
        for f in files:
            chunks = drop_positions(_read_run(self.table, self.directory, [f]), self.dv.positions(f.file_name))
            yield from in_key_order(chunks, self.engine) if self.float_keys else chunks

    def _read_ordered_run(self, files: list[DataFileMeta]) -> Iterator[pa.Table]:
        """A run's rows; with float keys each file sorted and merged in Paimon's key order (merge.in_key_order)."""
        for f in files:
            chunks = _read_run(self.table, self.directory, [f])
            yield from in_key_order(chunks, self.engine) if self.float_keys else chunks

    def abort(self) -> None:
        if self.dv is not None:
            self.dv.abort()
        for w in self._writers:
            w.abort()
        self._cleanup_spills()

    def _cleanup_spills(self) -> None:
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
            self.spills = []


def _net(before: list[DataFileMeta], after: list[DataFileMeta], writer: MergeTreeWriter
         ) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
    """Files made and compacted away in the same commit vanish from both lists (and from disk)."""
    produced = {(f.file_name, f.level) for f in after}
    consumed = {(f.file_name, f.level) for f in before}
    both = produced & consumed
    new_names = {f.file_name for f in writer.new_files}
    paths = {f.file_name: f.external_path or f"{writer.directory}/{f.file_name}" for f in after}
    for name, _ in both:
        if name not in new_names and not any(f.file_name == name for f in writer.restored):
            writer.table.io.delete_quietly(paths[name])
    return ([f for f in before if (f.file_name, f.level) not in both],
            [f for f in after if (f.file_name, f.level) not in both])


def _chunks(table: pa.Table, rows: int = SPILL_BATCH_ROWS) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def _read_spill(path: str) -> Iterator[pa.Table]:
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def _read_run(table: Table, directory: str, files: list[DataFileMeta]) -> Iterator[pa.Table]:
    for f in files:
        yield from read_kv_file(table, f.external_path or f"{directory}/{f.file_name}", f.schema_id, size=f.file_size)
