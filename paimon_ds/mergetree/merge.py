"""The merge engine of a table, and the k-way merge of sorted runs, vectorised over Arrow tables."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from ..options.registry import Options
from ..schema.manager import TableSchema
from ..schema.types import total_order
from .aggregation import Aggregation
from .engine import Deduplicate, FirstRow, MergeEngine
from .kv import KeyValueLayout, comparable, group_starts, sort_indices
from .partial_update import PartialUpdate


def merge_engine(schema: TableSchema, options: Options) -> MergeEngine:
    engines = {"deduplicate": Deduplicate, "partial-update": PartialUpdate, "aggregation": Aggregation,
               "first-row": FirstRow}
    return engines[options.get("merge-engine")](schema, options)


def has_float_keys(layout: KeyValueLayout) -> bool:
    return any(f.type.root in ("FLOAT", "DOUBLE") for f in layout.key_fields)


def in_key_order(file_chunks: Iterator[pa.Table], engine: MergeEngine) -> Iterator[pa.Table]:
    """The chunks of one data file of a table with FLOAT / DOUBLE keys, as the merge needs a run: sorted in Paimon's
    key order (types.total_order), one row per key. Paimon's writers sort so; pypaimon 2.1 sorts NaN keys first and
    keeps two rows of one NaN key (it compares keys with Python's `<` / `==`): such a file is sorted and its rows
    of one key merged with the engine, as Paimon's merge reader merges equal keys of one reader. The file is held
    whole to check it (float keys only)."""
    chunks = [c for c in file_chunks if c.num_rows]
    if not chunks:
        return
    table = pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]
    keys = engine.layout.key_columns
    if len(keys) == 1:  # one column: strictly ascending ranks, in one pass
        ranks = total_order(table.column(keys[0])).to_numpy(zero_copy_only=False)
        in_order = bool((ranks[1:] > ranks[:-1]).all())
    else:
        order = sort_indices(comparable(table, keys), [(k, "ascending") for k in keys]).to_numpy()
        in_order = bool((order == np.arange(table.num_rows)).all()) and \
            len(group_starts(table, keys)) == table.num_rows
    if in_order:
        yield from chunks
    else:
        yield engine.merge(engine.layout.sort(table), drop_retract=False)


# ------------------------------------------------------------------------------- k-way merge

class RunCursor:
    """The current chunk of one sorted run, and where it stands."""

    def __init__(self, chunks: Iterator[pa.Table], layout: KeyValueLayout) -> None:
        self.chunks = chunks
        self.layout = layout
        self.chunk: pa.Table | None = None
        self.advance()

    def advance(self) -> None:
        self.chunk = None
        for chunk in self.chunks:
            if chunk.num_rows:
                self.chunk = chunk
                return

    def last_key(self) -> tuple:
        assert self.chunk is not None
        return self.layout.key_tuple(self.chunk, self.chunk.num_rows - 1)

    def take_upto(self, bound: tuple) -> pa.Table:
        """Remove and return the prefix of the chunk with keys <= bound (binary search)."""
        assert self.chunk is not None
        chunk = self.chunk
        keys = _KeyView(chunk, self.layout)
        cut = bisect.bisect_right(keys, bound)
        head = chunk.slice(0, cut)
        if cut == chunk.num_rows:
            self.advance()
        else:
            self.chunk = chunk.slice(cut)
        return head


class _KeyView:
    """Sequence view of a chunk's key tuples for bisect (only the probed rows are converted)."""

    def __init__(self, chunk: pa.Table, layout: KeyValueLayout) -> None:
        self.chunk = chunk
        self.layout = layout

    def __len__(self) -> int:
        return self.chunk.num_rows

    def __getitem__(self, i: int) -> tuple:
        return self.layout.key_tuple(self.chunk, i)


def merge_sorted_runs(runs: list[Iterator[pa.Table]], engine: MergeEngine, drop_retract: bool) -> Iterator[pa.Table]:
    """K-way merge of key-sorted runs (each with unique keys) into merged, key-sorted chunks.

    Vectorised by watermark: the smallest "last key" among the runs' current chunks bounds what is
    complete; every row up to it, from every run, is sorted and merged in one Arrow operation.
    Memory holds one chunk per run.
    """
    layout = engine.layout
    cursors = [c for c in (RunCursor(r, layout) for r in runs) if c.chunk is not None]
    while cursors:
        if len(cursors) == 1:
            # one run left: its rows need no merging with anything else
            c = cursors[0]
            while c.chunk is not None:
                chunk = c.chunk
                c.advance()
                out = engine.drop_retracts(chunk) if drop_retract else chunk
                if out.num_rows:
                    yield out
            return
        bound = min(c.last_key() for c in cursors)
        pieces = [c.take_upto(bound) for c in cursors]
        if not any(p.num_rows for p in pieces):
            # only a run out of key order (another writer's) bisects to nothing: take the chunk that set the
            # bound whole, so that the merge goes on (its keys then merge as they meet, as in Paimon's reader)
            c = next(c for c in cursors if c.last_key() == bound)
            pieces = [c.chunk]
            c.advance()
        cursors = [c for c in cursors if c.chunk is not None]
        batch = pa.concat_tables([p for p in pieces if p.num_rows])
        out = engine.merge(layout.sort(batch), drop_retract)
        if out.num_rows:
            yield out
