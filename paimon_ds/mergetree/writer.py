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
from ..schema.types import total_order_value
from .changelog import (
    FULL_COMPACTION,
    LOOKUP,
    ChangelogRules,
    NewestRecord,
    aligned_runs,
    key_set,
    lookup_compaction,
    lookup_merge,
    rows_with_keys,
)
from .compact import CompactionOptions, CompactUnit, SortedRun, UniversalCompaction, drop_delete, sorted_runs
from .engine import Deduplicate, FirstRow, MergeEngine
from .expire import RecordExpiry
from .files import KeyValueFileWriter, read_kv_file, row_sequence, run_sequence, with_sequence
from .kv import KeyValueLayout, comparable, sort_indices
from .merge import has_float_keys, in_key_order, merge_sorted_runs

if TYPE_CHECKING:
    from ..io.names import DataFileNamer, FileNamer
    from ..store.file_store import FileStore

SPILL_BATCH_ROWS = 65536
_POS = "_paimon_ds_position"  # a row's position in its file, while looking keys up for deletion vectors
MAX_SPILLS = 64


class MergeTreeWriter:
    def __init__(self, table: FileStore, engine: MergeEngine, directory: str, namer: DataFileNamer, base_seq: int,
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
        self.layout = KeyValueLayout(table.table_schema)
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
        opts = table.options
        self.first_row = isinstance(engine, FirstRow)
        # tables that compact with lookup (Paimon's needLookup): every compaction lifts level 0, merging each key
        # with its newest record above; merges of the others then read only that record (see changelog.py)
        self.lookup = lookup_compaction(opts, self.first_row)
        self.lookup_merge = lookup_merge(opts, self.first_row)
        self.producer = opts.get("changelog-producer")
        # changelog-producer=input: every input record also goes to changelog files, as written
        self.changelog = self.producer == "input"
        self.changelog_files: list[DataFileMeta] = []
        # changelog-producer lookup / full-compaction: the compactions' changelog (committed with COMPACT)
        self.rules = ChangelogRules(self.layout, opts, self.first_row) if self.producer in (LOOKUP, FULL_COMPACTION) \
            else None
        self.compact_changelog_files: list[DataFileMeta] = []
        self.changelog_namer = namer.changelog_namer() if self.changelog or self.rules is not None else None
        self.expiry: RecordExpiry | None = None  # record-level.expire-time, while compacting

    # ---------------------------------------------------------------- input
    def write(self, rows: pa.RecordBatch | pa.Table, kinds: np.ndarray) -> None:
        keep = self.engine.input_filter(kinds)
        if keep is not None:
            rows, kinds = rows.filter(pa.array(keep)), kinds[keep]
        self.engine.check_input(kinds, rows)
        n = rows.num_rows
        if n == 0:
            return
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

    def take_compact_changelog(self) -> list[DataFileMeta]:
        """The changelog files this writer's compactions wrote (lookup / full-compaction producers)."""
        files, self.compact_changelog_files = self.compact_changelog_files, []
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
        self.expiry = RecordExpiry.of(self.table)  # "now" is when the compaction starts reading
        expired = self.expiry.expired_file if self.expiry is not None else None
        opts = CompactionOptions.from_options(self.table.options)
        strategy = UniversalCompaction(opts)
        files = self.restored + self.new_files
        key_types = [f.type for f in self.layout.key_fields]
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        full = self.full_compaction
        for _ in range(4):  # one pick, and more only while the runs stay above the stop trigger
            runs = sorted_runs(files, key_types)
            if full:
                unit = strategy.pick_full(opts.num_levels, runs, rewrite=expired)
            elif self.first_row:
                unit = strategy.pick_first_row(opts.num_levels, runs)
            else:
                unit = strategy.pick(opts.num_levels, runs, bucket=self.directory)
            if unit is None and self.lookup:  # Paimon's ForceUpLevel0Compaction
                unit = strategy.pick_force_level0(opts.num_levels, runs)
            if unit is None:
                break
            full = False
            inputs = unit.files
            outputs = self._compact_unit(unit, runs, opts.num_levels - 1)
            before += inputs
            after += outputs
            gone = {f.file_name for f in inputs}
            files = [f for f in files if f.file_name not in gone] + outputs
            remaining = sorted_runs(files, key_types)
            if len(remaining) <= opts.stop_trigger and not (self.lookup and remaining and remaining[0].level == 0):
                break
        return _net(before, after, self)

    def _compact_unit(self, unit: CompactUnit, runs: list[SortedRun], max_level: int) -> list[DataFileMeta]:
        """Compact one unit (Paimon's MergeTreeCompactRewriter and its changelog subclasses): its output files."""
        inputs = unit.files
        out = unit.output_level
        # with deletion vectors every older version of a rewritten key gets deleted: deletes can go
        dropping = drop_delete(unit, runs) or (self.dv is not None and out != 0)
        if self.lookup and out > 0 and any(r.level == 0 for r in unit.runs):
            return self._lookup_compact(unit, runs, max_level, dropping)
        if self.producer == FULL_COMPACTION and out == max_level:
            return self._full_changelog_compact(unit, max_level, dropping)
        if len(inputs) == 1 and (not dropping or not inputs[0].delete_row_count) and not self._holds_expired(inputs[0]):
            return [replace(inputs[0], level=out)]  # upgrade: same file, new level
        readers = [self._read_run(r.files) for r in unit.runs]
        if self.lookup_merge:  # each key's newest record above level 0 supersedes the older ones
            readers = [merge_sorted_runs(readers, NewestRecord(self.layout), drop_retract=False)]
        outputs = self._write_merged(merge_sorted_runs(readers, self.engine, drop_retract=dropping), out)
        self._rewritten(inputs)
        return outputs

    def _lookup_compact(self, unit: CompactUnit, runs: list[SortedRun], max_level: int,
                        dropping: bool) -> list[DataFileMeta]:
        """Lift level 0 (Paimon's LookupMergeTreeCompactRewriter): each key of the unit's level-0 files is merged
        with its newest record above level 0, from the unit's runs or looked up in the runs above the output
        level (with deletion vectors that record is then marked deleted in its file's vector); the lookup
        producer writes the changelog of those keys."""
        out = unit.output_level
        level0 = [f for r in unit.runs if r.level == 0 for f in r.files]
        changed = [self._read_table(f) for f in level0]  # level 0 is small: the stop trigger bounds it
        in_unit = {f.file_name for f in unit.files}
        above = [r for r in runs if r.level > out and not any(f.file_name in in_unit for f in r.files)]
        base = [self._read_run(r.files) for r in unit.runs if r.level > 0]
        found = self._look_up(key_set(changed, self.layout), above)
        if found.num_rows:
            base.append(iter([found]))
        # first-row keeps a key's first record; the others their newest above level 0 (LookupMergeFunction)
        base_engine = self.engine if self.first_row else NewestRecord(self.layout)
        rewrite = not self._upgrades(unit, max_level)
        outputs = self._merge_with_changelog(base, base_engine, [iter([t]) for t in changed], out, dropping,
                                             rewrite, produce=self.producer == LOOKUP)
        if not rewrite:
            return [replace(level0[0], level=out)]
        self._rewritten(unit.files)
        return outputs

    def _upgrades(self, unit: CompactUnit, max_level: int) -> bool:
        """Whether a unit of one level-0 file only changes the file's level (no rewrite), as Paimon's
        LookupMergeTreeCompactRewriter.upgradeStrategy and MergeTreeCompactTask.upgrade decide."""
        if len(unit.files) != 1 or self._holds_expired(unit.files[0]):
            return False
        deletes = unit.files[0].delete_row_count
        if (deletes is None or deletes > 0) and (self.dv is not None or unit.output_level == max_level):
            return False  # deletes must go (deletion vectors), and never reach the top level
        if unit.output_level == max_level:
            return True
        # deduplicate keeps the newest record, which the level-0 file holds; other engines merge the looked-up one
        return isinstance(self.engine, Deduplicate) and not self.layout.sequence_fields

    def _full_changelog_compact(self, unit: CompactUnit, max_level: int, dropping: bool) -> list[DataFileMeta]:
        """A compaction into the top level of a full-compaction producer's table (Paimon's
        FullChangelogMergeTreeCompactRewriter): the changelog of every key with a record below the top level,
        from its top-level record to the merge of all its records."""
        top = [self._read_run(r.files) for r in unit.runs if r.level == max_level]
        below = [self._read_run(r.files) for r in unit.runs if r.level != max_level]
        single = (len(unit.files) == 1 and unit.files[0].delete_row_count == 0  # upgraded, not rewritten
                  and not self._holds_expired(unit.files[0]))
        outputs = self._merge_with_changelog(top, self.engine, below, max_level, dropping, rewrite=not single,
                                             produce=True)
        if single:
            return [replace(unit.files[0], level=max_level)]
        self._rewritten(unit.files)
        return outputs

    def _merge_with_changelog(self, base: list[Iterator[pa.Table]], base_engine: MergeEngine,
                              changed: list[Iterator[pa.Table]], output_level: int, dropping: bool, rewrite: bool,
                              produce: bool) -> list[DataFileMeta]:
        """Merge the ``changed`` runs (level 0, or what lies below the top level) with ``base`` (the runs holding
        each key's record before, merged with ``base_engine`` to one record per key) into files at
        ``output_level`` (if ``rewrite``), and (``produce``) write the changelog of the keys the changed runs
        hold: each one's record before against its merged record after (Paimon's ChangelogMergeTreeRewriter).
        Streamed: one chunk per run in memory, cut at common keys."""
        before = merge_sorted_runs(base, base_engine, drop_retract=False) if len(base) > 1 else \
            (base[0] if base else iter(()))
        data = self._new_writer(self.namer, output_level, FileSource.COMPACT) if rewrite else None
        # Paimon's createRollingChangelogFileWriter(outputLevel): `changelog-` files at the output level
        log = self._new_writer(self.changelog_namer, output_level, FileSource.APPEND) if produce else None
        keys = self.layout.key_columns
        for old, *news in aligned_runs([before, *changed], self.layout):
            news = [t for t in news if t.num_rows]
            if news:
                merged = self.engine.merge(self.layout.sort(pa.concat_tables([old, *news])), drop_retract=False)
                if log is not None:
                    touched = key_set(news, self.layout)
                    log.add(self.rules.changelog(rows_with_keys(old, touched, keys),
                                                 rows_with_keys(merged, touched, keys)))
            else:
                merged = old
            if data is not None:
                data.add(self.engine.drop_retracts(merged) if dropping else merged)
        if log is not None:
            self.compact_changelog_files += log.close()
        return data.close() if data is not None else []

    def _holds_expired(self, f: DataFileMeta) -> bool:
        """Whether file ``f``'s stats say it holds records `record-level.expire-time` drops: it is rewritten, not
        moved up a level (Paimon 1.x)."""
        return self.expiry is not None and self.expiry.expired_file(f)

    def _new_writer(self, namer: FileNamer, level: int, source: int) -> KeyValueFileWriter:
        writer = KeyValueFileWriter(self.table, self.directory, namer, level=level, file_source=source)
        self._writers.append(writer)
        return writer

    def _write_merged(self, merged: Iterator[pa.Table], output_level: int) -> list[DataFileMeta]:
        return self._new_writer(self.namer, output_level, FileSource.COMPACT).write_all(merged)

    def _rewritten(self, inputs: list[DataFileMeta]) -> None:
        """The inputs were rewritten: their deletion vectors go with them."""
        if self.dv is not None:
            for f in inputs:
                self.dv.remove(f.file_name)

    def _look_up(self, keys: pa.Table, above: list[SortedRun]) -> pa.Table:
        """Each key's newest record in the runs ``above`` the output level (Paimon's LookupLevels.lookup: the
        lowest level holding the key), sorted by key; with deletion vectors each is marked deleted in its file's
        vector, since the compaction's output replaces it."""
        key_columns = self.layout.key_columns
        pending = keys
        found: list[pa.Table] = []
        for run in sorted(above, key=lambda r: r.level):
            if pending.num_rows == 0:
                break
            bounds = pending.take(sort_indices(comparable(pending, key_columns),
                                               [(k, "ascending") for k in key_columns]))
            lo, hi = (self.layout.key_tuple(bounds, i) for i in (0, bounds.num_rows - 1))
            hits = [t for t in (self._lookup(f, pending) for f in run.files if self._may_hold(f, lo, hi))
                    if t.num_rows]
            if hits:
                hit = pa.concat_tables(hits)
                found.append(hit)
                pending = pending.join(hit.select(key_columns), keys=key_columns, join_type="left anti",
                                       use_threads=False)
        if not found:
            return self.layout.arrow_schema().empty_table()
        return self.layout.sort(pa.concat_tables(found))

    def _may_hold(self, f: DataFileMeta, lo: tuple, hi: tuple) -> bool:
        """Whether file ``f``'s key range meets [lo, hi] (any doubt: yes, the file is read)."""
        try:
            types = [x.type for x in self.layout.key_fields]
            f_lo, f_hi = (tuple(total_order_value(v) for v in deserialize_row(k, types))
                          for k in (f.min_key, f.max_key))
            return not (f_hi < lo or f_lo > hi)
        except Exception:  # noqa: BLE001 - keys that do not compare in Python: no pruning
            return True

    def _lookup(self, f: DataFileMeta, keys: pa.Table) -> pa.Table:
        """The live rows of file ``f`` whose keys are in ``keys``; with deletion vectors now marked deleted in its
        vector."""
        parts = list(_read_run(self.table, self.directory, [f]))
        if not parts:
            return self.layout.arrow_schema().empty_table()
        data = pa.concat_tables(parts)
        data = data.append_column(_POS, pa.array(np.arange(data.num_rows, dtype=np.int64)))
        if self.dv is not None:
            data = next(iter(drop_positions([data], self.dv.positions(f.file_name))), data.slice(0, 0))
        if data.num_rows == 0:
            return data.drop_columns([_POS])
        key_columns = self.layout.key_columns
        # join on the keys and positions only (any value column type may be in the rest)
        found = data.select([*key_columns, _POS]).join(keys, keys=key_columns, join_type="left semi",
                                                       use_threads=False)
        positions = np.sort(found.column(_POS).to_numpy())  # the file's order (by key), which joins do not keep
        if self.dv is not None:
            self.dv.delete(f.file_name, positions)
        index = np.searchsorted(data.column(_POS).to_numpy(), positions)
        return data.take(pa.array(index)).drop_columns([_POS])

    def _read_run(self, files: list[DataFileMeta]) -> Iterator[pa.Table]:
        """A run's records, without those its files' deletion vectors delete."""
        for f in files:
            rows = _read_run(self.table, self.directory, [f])
            live = drop_positions(rows, self.dv.positions(f.file_name)) if self.dv is not None else rows
            if self.expiry is not None:
                live = (self.expiry.keep(t) for t in live)
            # other writers' files of float keys may be out of Paimon's key order (merge.in_key_order)
            yield from in_key_order(live, self.engine) if self.float_keys else live

    def _read_table(self, f: DataFileMeta) -> pa.Table:
        parts = [t for t in self._read_run([f]) if t.num_rows]
        return pa.concat_tables(parts) if parts else self.layout.arrow_schema().empty_table()

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


def _read_run(table: FileStore, directory: str, files: list[DataFileMeta], expiry: RecordExpiry | None = None
              ) -> Iterator[pa.Table]:
    """A sorted run's records (a compaction's input: without the expired ones, `record-level.expire-time`)."""
    for f in files:
        chunks = read_kv_file(table, f.external_path or f"{directory}/{f.file_name}", f.schema_id, size=f.file_size)
        yield from (chunks if expiry is None else (expiry.keep(t) for t in chunks))
