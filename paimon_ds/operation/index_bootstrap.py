"""The bootstrap of the cross-partition global index: the live keys of a table's latest snapshot.

``IndexBootstrap`` (Paimon's crosspartition/IndexBootstrap.java) reads the primary keys of the live rows of
the latest snapshot with the (partition, bucket) that holds them. Paimon projects a merged read on the key
columns; here only the key, sequence and kind columns of the KV files are read and the merge engine's rule
for "does this key still exist" (``KeyLiveness``) is applied (a key whose newest record is a -D is not
indexed). ``num_readers``/``reader_id`` select buckets as Paimon's ``bucket % numAssigners == assignId``
bucket filter; with ``cross-partition-upsert.index-ttl`` a bucket none of whose files was created within
the TTL is skipped (``IndexBootstrap.filterSplit``).

``GlobalIndexAssigner`` is index/cross_partition.py's assigner with ``bootstrap()``: it reads its keys with
an IndexBootstrap and loads them. The bootstrap lives here, above index/, because it plans a scan of the
table (operation/scan.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..format.binary_row import deserialize_row, encode_rows, serialize_row
from ..format.data_file import open_data_file
from ..index.cross_partition import BOOTSTRAP_SCHEMA, CrossPartitionAssigner, index_ttl_seconds
from ..index.keys import key_channels, large_binary_array
from ..mergetree.aggregation import Aggregation
from ..mergetree.compact import sorted_runs
from ..mergetree.engine import FirstRow, MergeEngine
from ..mergetree.kv import DELETE, KEY_PREFIX, KIND, SEQ, UPDATE_BEFORE, KeyValueLayout, group_starts
from ..mergetree.merge import merge_engine, merge_sorted_runs
from ..mergetree.partial_update import PartialUpdate
from ..schema.types import SchemaError, conform_array, to_arrow_type
from .scan import Split, TableScan, all_levels

if TYPE_CHECKING:
    from ..manifest.meta import DataFileMeta
    from ..schema.manager import TableSchema
    from ..store.file_store import FileStore

BOOTSTRAP_READ_ROWS = 1 << 17


class KeyLiveness(MergeEngine):
    """Whether a key still exists after the merge engine's merge, on key/sequence/kind columns only.

    deduplicate: its newest record is not a retraction; partial-update: its newest record other than
    -U is not a -D (with sequence groups: always, a retraction gives a row; with remove-record-on-sequence-group
    taken as a -D removing it); aggregation: always (the aggregate of retractions is a row), with
    remove-record-on-delete its newest record is not a -D; with ignore-delete and for first-row: any record that
    is not a retraction.
    """

    def __init__(self, schema: TableSchema, options: Any) -> None:
        super().__init__(schema, options)
        engine = merge_engine(schema, options)
        if isinstance(engine, FirstRow) or (engine.ignore_delete and not isinstance(engine, Aggregation)):
            self.mode = "any"
        elif isinstance(engine, PartialUpdate):
            removing = any(g.removes_on_delete for g in engine.groups)
            self.mode = "all" if engine.groups and not removing else "partial"
        elif isinstance(engine, Aggregation):
            self.mode = "not-deleted" if engine.remove_on_delete else "all"
        else:
            self.mode = "last"

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        """The newest record of each key that exists, as an insert (records sorted by key and sequence)."""
        kinds = kv.column(KIND).to_numpy()
        if self.mode == "partial":
            keep = kinds != UPDATE_BEFORE
            if not keep.all():
                kv, kinds = kv.filter(pa.array(keep)), kinds[keep]
        if kv.num_rows == 0:
            return kv
        starts = group_starts(kv, self.key_columns)
        ends = np.append(starts[1:], kv.num_rows) - 1
        retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.mode in ("last", "partial"):
            alive = ~retract[ends]
        elif self.mode == "not-deleted":
            alive = kinds[ends] != DELETE
        elif self.mode == "any":
            alive = np.logical_or.reduceat(~retract, starts)
        else:
            alive = np.ones(len(starts), dtype=bool)
        out = kv.take(pa.array(ends[alive]))
        cols = [pa.array(np.zeros(out.num_rows, dtype=np.int8)) if name == KIND else out.column(i)
                for i, name in enumerate(out.schema.names)]
        return pa.Table.from_arrays(cols, schema=kv.schema)

    def alive_rows(self, kv: pa.Table) -> np.ndarray | None:
        """Rows (one per key) that exist; None: all of them."""
        if self.mode == "all":
            return None
        kinds = kv.column(KIND).to_numpy()
        if self.mode == "not-deleted":
            return kinds != DELETE
        return ~((kinds == UPDATE_BEFORE) | (kinds == DELETE))


def _created_millis(f: DataFileMeta) -> float | None:
    """A file's creation time as epoch millis (Paimon stores local wall time: read it as local time)."""
    t = f.creation_time
    return None if t is None else t.timestamp() * 1000


class IndexBootstrap:
    """The (key, partition, bucket) of every live row of the table's latest snapshot (IndexBootstrap.java)."""

    def __init__(self, table: FileStore, clock: Callable[[], float] = time.time) -> None:
        self.table = table
        schema = table.table_schema
        self.schema = schema
        self.pk = list(schema.primary_keys)
        self.pk_types = [schema.field(k).type for k in self.pk]
        self.partition_types = [f.type for f in schema.partition_fields]
        self.layout = KeyValueLayout(schema)
        self.liveness = KeyLiveness(schema, table.options)
        self.ttl_seconds = index_ttl_seconds(table.store)
        self.clock = clock
        self.snapshot_id: int | None = None
        kv_schema = self.layout.arrow_schema()
        names = self.layout.key_columns + [SEQ, KIND] + self.layout.sequence_fields
        self.read_schema = pa.schema([kv_schema.field(n) for n in names])

    def splits(self, num_readers: int = 1, reader_id: int = 0) -> list[Split]:
        """The buckets this reader reads: latest snapshot (whatever time travel the table's options ask),
        ``bucket % num_readers == reader_id``, and with an index TTL only buckets with a recent file."""
        snapshot = self.table.latest_snapshot() if self.table.is_created else None
        self.snapshot_id = snapshot.id if snapshot is not None else None
        if snapshot is None:
            return []
        # every level, level 0 too (Paimon's IndexBootstrap: `withLevelFilter(level -> true)`): a key a batch read
        # does not show yet (first-row and deletion-vector tables) still lives in its bucket
        scan = TableScan(self.table, level_filter=all_levels)
        splits = [s for s in scan.plan_snapshot(snapshot) if s.bucket % num_readers == reader_id]
        if self.ttl_seconds is not None:
            now, ttl = self.clock() * 1000, self.ttl_seconds * 1000
            splits = [s for s in splits
                      if any((c := _created_millis(f)) is None or now <= c + ttl for f in s.files)]
        return splits

    def read(self, num_readers: int = 1, reader_id: int = 0) -> Iterator[pa.RecordBatch]:
        """Batches of BOOTSTRAP_SCHEMA: serialized key, serialized partition, bucket."""
        for split in self.splits(num_readers, reader_id):
            yield from self.read_split(split)

    def read_split(self, split: Split) -> Iterator[pa.RecordBatch]:
        values = deserialize_row(split.partition, self.partition_types)
        partition = serialize_row(values, self.partition_types)  # normalised: equal to what rows encode to
        by_name = dict(zip(self.schema.partition_keys, values))
        key_types = [f.type for f in self.layout.key_fields]
        runs = [self._read_run(split, r.files) for r in sorted_runs(split.files, key_types)]
        if not runs:
            return
        chunks = runs[0] if len(runs) == 1 else merge_sorted_runs(runs, self.liveness, drop_retract=False)
        for kv in chunks:
            alive = self.liveness.alive_rows(kv)
            if alive is not None and not alive.all():
                kv = kv.filter(pa.array(alive))
            n = kv.num_rows
            if n == 0:
                continue
            zeros = pa.array(np.zeros(n, dtype=np.int32))
            cols = []
            for name, t in zip(self.pk, self.pk_types):
                if name in by_name:  # a partition field of the key: the bucket's partition value
                    cols.append(pa.array([by_name[name]], to_arrow_type(t)).take(zeros))
                else:
                    cols.append(kv.column(KEY_PREFIX + name).combine_chunks())
            data, offsets = encode_rows(cols, self.pk_types)
            yield pa.RecordBatch.from_arrays(
                [large_binary_array(data, offsets), pa.array([partition], pa.binary()).take(zeros),
                 pa.array(np.full(n, split.bucket, dtype=np.int32))], schema=BOOTSTRAP_SCHEMA)

    def _read_run(self, split: Split, files: list[DataFileMeta]) -> Iterator[pa.Table]:
        for f in files:
            yield from self._read_keys(split.file_path(f), f.schema_id, f.file_size)

    def _read_keys(self, path: str, schema_id: int, size: int | None = None) -> Iterator[pa.Table]:
        """A KV file's key, sequence and kind columns (and sequence.field columns), matched by field id."""
        file_schema = self.table.schema_by_id(schema_id)
        by_id = {f.id: f.name for f in file_schema.fields}
        sources: list[str | None] = [KEY_PREFIX + by_id[f.id] if f.id in by_id else None
                                     for f in self.layout.key_fields]
        sources += [SEQ, KIND]
        sources += [by_id.get(self.schema.field(n).id) for n in self.layout.sequence_fields]
        column_types = {**{f.name: f.type for f in file_schema.fields},
                        **{KEY_PREFIX + f.name: f.type for f in file_schema.fields}}
        with self.table.io.open_input(path, size) as fh:
            pf = open_data_file(fh, path, column_types)
            present = set(pf.names)
            missing = [t.name for s, t in zip(sources, self.read_schema) if s is None or s not in present]
            if any(n.startswith(KEY_PREFIX) or n in (SEQ, KIND) for n in missing):
                raise SchemaError(f"data file {path} has no column(s) {missing} of the key-value layout")
            columns = [s for s in sources if s is not None and s in present]
            for batch in pf.iter_batches(columns, BOOTSTRAP_READ_ROWS):
                arrays = []
                for source, field in zip(sources, self.read_schema):
                    if source is not None and source in present:
                        col = batch.column(batch.schema.get_field_index(source))
                        arrays.append(conform_array(col, field.type))
                    else:
                        arrays.append(pa.nulls(batch.num_rows, field.type))
                yield pa.Table.from_arrays(arrays, schema=self.read_schema)


class GlobalIndexAssigner(CrossPartitionAssigner):
    """A CrossPartitionAssigner that bootstraps itself from the table (crosspartition/GlobalIndexAssigner.java).

    Use: ``bootstrap()`` (or ``bootstrap_keys`` for batches another task read and shuffled here, then
    ``end_bootstrap()``), then ``process`` each batch of rows of this assigner's keys, then ``close()``.
    """

    def __init__(self, table: FileStore, *args: Any, **kwargs: Any) -> None:
        super().__init__(table.store, *args, **kwargs)
        self.facade = table  # the bootstrap scans the table; the assigner itself works on the store

    def bootstrap(self) -> int:
        """Load this assigner's keys of the table's latest snapshot; returns how many were loaded."""
        boot = IndexBootstrap(self.facade, self.clock)
        for batch in boot.read():
            if self.num_assigners > 1:
                mine = key_channels(batch.column(0), self.num_assigners) == self.assign_id
                batch = batch.filter(pa.array(mine))
            self.bootstrap_keys(batch)
        self.bootstrap_snapshot_id = boot.snapshot_id
        self.end_bootstrap()
        return self.bootstrapped_keys
