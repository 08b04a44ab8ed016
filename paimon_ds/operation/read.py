"""Reading splits: parquet files -> Arrow batches in the table's current schema.

Columns are matched to a file's own schema by field id, so renamed columns read correctly and
columns added after the file was written read as nulls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from ..predicate import Predicate
from .scan import Split, _load_schema

if TYPE_CHECKING:
    from ..table import Table

BATCH_ROWS = 65536


class TableRead:
    def __init__(self, table: Table, read_schema: pa.Schema | None = None,
                 predicate: Predicate | None = None) -> None:
        self.table = table
        full = table.arrow_schema()
        if read_schema is None:
            read_schema = full
        self.output_schema = read_schema
        self.predicate = predicate
        self.fields = [table.schema.field(name) for name in read_schema.names]

    def read(self, split: Split) -> Iterator[pa.RecordBatch]:
        if self.table.schema.primary_keys:
            yield from self._read_merged(split)
            return
        for f in split.files:
            yield from self._read_file(split.file_path(f), f.schema_id)

    def _read_merged(self, split: Split) -> Iterator[pa.RecordBatch]:
        """Merge-on-read of a primary-key bucket: k-way merge of its sorted runs with the merge engine."""
        from ..mergetree.compact import sorted_runs
        from ..mergetree.files import read_kv_file
        from ..mergetree.merge import merge_engine, merge_sorted_runs

        engine = merge_engine(self.table.schema, self.table.options)
        runs = sorted_runs(split.files)

        def run_reader(files) -> Iterator[pa.Table]:
            for f in files:
                yield from read_kv_file(self.table, split.file_path(f), f.schema_id, BATCH_ROWS)

        readers = [run_reader(r.files) for r in runs]
        if len(readers) == 1:  # a single run has unique keys: no merging, only deletes to drop
            merged = (engine.drop_retracts(t) for t in readers[0])
        else:
            merged = merge_sorted_runs(readers, engine, drop_retract=True)
        n_meta = len(engine.layout.key_columns) + 2
        names = self.output_schema.names
        expression = self.predicate.expression() if self.predicate is not None else None
        for kv in merged:
            rows = kv.select(list(range(n_meta, kv.num_columns)))
            if expression is not None:
                rows = rows.filter(expression)
            if rows.num_rows == 0:
                continue
            rows = rows.select(names)
            for batch in rows.to_batches():
                yield batch if batch.schema == self.output_schema else self._cast(batch)

    def _cast(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, self.output_schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)

    def _read_file(self, path: str, schema_id: int) -> Iterator[pa.RecordBatch]:
        file_schema = self.table.schema if schema_id == self.table.schema.id else \
            _load_schema(self.table.schema_manager, schema_id)
        file_names = {f.id: f.name for f in file_schema.fields}
        wanted = [(f, file_names.get(f.id)) for f in self.fields]
        with self.table.io.open_input(path) as fh:
            pf = pq.ParquetFile(fh)
            present = set(pf.schema_arrow.names)
            columns = [name for _, name in wanted if name is not None and name in present]
            predicate_ok = self.predicate is not None and all(
                n in present and file_names.get(self.table.schema.field(n).id) == n
                for n in self.predicate.fields())
            extra = [n for n in (self.predicate.fields() if predicate_ok else ()) if n not in columns]
            for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns + extra, use_threads=False):
                if predicate_ok:
                    batch = pa.Table.from_batches([batch]).filter(self.predicate.expression())
                    if batch.num_rows == 0:
                        continue
                    batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else batch
                yield self._conform(batch, wanted)

    def _conform(self, batch: pa.RecordBatch, wanted) -> pa.RecordBatch:
        arrays = []
        names = batch.schema.names
        for (_, file_name), target in zip(wanted, self.output_schema):
            if file_name is not None and file_name in names:
                col = batch.column(names.index(file_name))
                arrays.append(col if col.type == target.type else col.cast(target.type))
            else:
                arrays.append(pa.nulls(batch.num_rows, target.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)
