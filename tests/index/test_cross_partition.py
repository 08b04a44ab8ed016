"""Cross-partition upsert assigner (paimon_ds/index/cross_partition.py): the crosspartition BucketAssigner and
the global-index assigner with its three existing-key processors, against Paimon's cases and reference models.

Tables are real cross-partition tables on disk (primary key without the partition key, bucket = -1). The
public write path refuses them until the Spark shuffle lands, so the tests create the schema file and write
the assigner's output bucket by bucket through MergeTreeWriter and TableCommit (``write_assigned``). The
helpers here serve the other tests of the cross-partition index too (test_keys, test_key_index,
tests/operation/test_index_bootstrap.py, tests/test_soak_global_index.py).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.binary_row import serialize_row
from paimon_ds.format.partition import partition_path
from paimon_ds.fs.file_io import FileIO
from paimon_ds.index.bucket_assigner import BUCKET_COLUMN
from paimon_ds.index.cross_partition import (
    ROW_KIND_COLUMN,
    BucketAssigner,
)
from paimon_ds.index.keys import encode_keys
from paimon_ds.io.names import DataFileNamer
from paimon_ds.mergetree.kv import ROW_KINDS
from paimon_ds.mergetree.merge import merge_engine
from paimon_ds.mergetree.writer import MergeTreeWriter
from paimon_ds.operation.index_bootstrap import GlobalIndexAssigner
from paimon_ds.operation.messages import CommitMessage
from paimon_ds.operation.write import BucketRestore
from paimon_ds.options.registry import table_options
from paimon_ds.schema.manager import SchemaManager, TableSchema
from paimon_ds.schema.types import SchemaError

SCHEMA = pa.schema([pa.field("pt", pa.int32()), pa.field("pk", pa.int32(), nullable=False),
                    pa.field("col", pa.int32())])
PROCESSORS = {"deduplicate": "delete", "partial-update": "use-old", "aggregation": "use-old", "first-row": "skip-new"}


# ------------------------------------------------------------------------------------ helpers

def create_table(path: str, schema: pa.Schema = SCHEMA, partition: tuple[str, ...] = ("pt",),
                 pk: tuple[str, ...] = ("pk",), **options: str) -> Table:
    opts = {"bucket": "-1", **options}
    ts = TableSchema.from_arrow(schema, list(partition), list(pk), table_options(opts))
    io = FileIO(path)
    SchemaManager(io, io.root).create(ts)
    return Table.load(path)


def write_assigned(table: Table, out: pa.RecordBatch) -> None:
    """Commit an assigner's output: each row into the bucket it names, with its row kind."""
    if out.num_rows == 0:
        return
    schema = table.table_schema
    names = list(schema.partition_keys)
    types = [f.type for f in schema.partition_fields]
    restore = BucketRestore.from_table(table)
    engine = merge_engine(schema, table.options)
    namer = DataFileNamer()
    data = out.drop_columns([BUCKET_COLUMN, ROW_KIND_COLUMN]).select(schema.field_names)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, (row, bucket) in enumerate(zip(data.select(names).to_pylist(), out.column(BUCKET_COLUMN).to_pylist())):
        groups[(tuple(row[n] for n in names), bucket)].append(i)
    kinds = np.array([ROW_KINDS[k] for k in out.column(ROW_KIND_COLUMN).to_pylist()], dtype=np.int8)
    messages = []
    for (values, bucket), idx in groups.items():
        part = serialize_row(list(values), types)
        rel = partition_path(names, list(values), table.options.get("partition.default-name"))
        writer = MergeTreeWriter(table.store, engine, f"{table.root}/{rel}/bucket-{bucket}", namer,
                                 restore.max_sequence.get((part, bucket), -1))
        writer.write(data.take(pa.array(idx)), kinds[idx])
        new, _, _ = writer.prepare_commit()
        messages.append(CommitMessage(part, bucket, -1, new, rel))
    table.new_commit().commit(messages)


def batch(*rows: tuple, schema: pa.Schema = SCHEMA) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)


def emitted(out: pa.RecordBatch) -> list[tuple]:
    return [tuple(r.values()) for r in out.to_pylist()]


def index_entries(assigner: GlobalIndexAssigner, keys: list[tuple], names: list[str], types: pa.Schema
                  ) -> dict[tuple, tuple[tuple, int]]:
    """key -> (partition values, bucket) for the keys the assigner's index holds."""
    kb = pa.RecordBatch.from_pylist([dict(zip(names, k)) for k in keys], schema=types)
    found, packed = assigner.index.get(encode_keys(kb, names, [assigner.schema.field(n).type for n in names]))
    out = {}
    for key, f, v in zip(keys, found.tolist(), packed.tolist()):
        if f:
            values = assigner.partition_values(v >> 32)
            assert assigner.partition_bytes(v >> 32) == serialize_row(values, [f.type for f in
                                                                               assigner.schema.partition_fields])
            out[key] = (tuple(values), v & 0xFFFFFFFF)
    return out


def stats_by_value(a: GlobalIndexAssigner) -> dict:
    """The assigner's bucket counts keyed by the (single) partition value instead of its partition id."""
    return {a.partition_values(p)[0]: dict(bs) for p, bs in a.buckets.stats.items()}


def table_rows(path: str) -> list[dict]:
    return Table.load(path).to_arrow().to_pylist()


def live_buckets(path: str) -> dict[int, tuple[int, int]]:
    """pk -> (pt, bucket) of every live row, read bucket by bucket."""
    table = Table.load(path)
    read = table.new_read()
    out = {}
    for split in table.new_scan().plan():
        for b in read.read(split):
            for r in b.to_pylist():
                assert r["pk"] not in out, f"key {r['pk']} lives twice"
                out[r["pk"]] = (r["pt"], split.bucket)
    return out


# ------------------------------------------------------------------------------------ reference models

def reference_assign(counts: dict[int, dict[int, int]], part: int, target: int, n: int, i: int) -> int:
    """One BucketAssigner.assignBucket call, literally."""
    stats = counts.setdefault(part, {})
    for b in sorted(stats):
        if b % n == i and stats[b] < target:
            stats[b] += 1
            return b
    b = 0
    while b % n != i or b in stats:
        b += 1
    stats[b] = 1
    return b


class SequentialModel:
    """Paimon's GlobalIndexAssigner.processInput, one row at a time."""

    def __init__(self, processor: str, target: int, n: int = 1, i: int = 0) -> None:
        self.processor, self.target, self.n, self.i = processor, target, n, i
        self.index: dict[int, tuple[int, int]] = {}
        self.counts: dict[int, dict[int, int]] = {}

    def row(self, r: tuple) -> list[tuple]:
        pt, pk, col = r
        if pk in self.index:
            op, ob = self.index[pk]
            if op == pt:
                return [(pt, pk, col, ob, "+I")]
            if self.processor == "use-old":
                return [(op, pk, col, ob, "+I")]
            if self.processor == "skip-new":
                return []
            self.counts[op][ob] -= 1
            b = reference_assign(self.counts, pt, self.target, self.n, self.i)
            self.index[pk] = (pt, b)
            return [(op, pk, col, ob, "-D"), (pt, pk, col, b, "+I")]
        b = reference_assign(self.counts, pt, self.target, self.n, self.i)
        self.index[pk] = (pt, b)
        return [(pt, pk, col, b, "+I")]


class BatchModel(SequentialModel):
    """The batch semantics GlobalIndexAssigner.process documents, written per key and per event."""

    def batch(self, rows: list[tuple]) -> list[tuple]:
        by_key: dict[int, list[tuple[int, tuple]]] = defaultdict(list)
        for pos, r in enumerate(rows):
            by_key[r[1]].append((pos, r))
        out: list[tuple[int, int, tuple]] = []  # (position, 0 retract / 1 row, emitted)
        events: list[tuple] = []  # (position, "dec" / "assign", ...)
        pending: dict[int, list[tuple[int, tuple]]] = {}
        for pk, krs in by_key.items():
            old = self.index.get(pk)
            if self.processor == "delete":
                last_pt = krs[-1][1][0]
                k = len(krs)
                while k > 0 and krs[k - 1][1][0] == last_pt:
                    k -= 1
                seg = krs[k:]
                if old is not None and old[0] == last_pt:
                    out += [(p, 1, (*r, old[1], "+I")) for p, r in seg]
                    continue
                if old is not None:
                    p, r = next((p, r) for p, r in krs if r[0] != old[0])
                    out.append((p, 0, (old[0], r[1], r[2], old[1], "-D")))
                    events.append((p, "dec", old))
                events.append((seg[0][0], "assign", pk, last_pt))
                pending[pk] = seg
            else:
                home = old
                if home is None:
                    events.append((krs[0][0], "assign", pk, krs[0][1][0]))
                    pending[pk] = krs
                    continue
                for p, r in krs:
                    if self.processor == "use-old":
                        out.append((p, 1, (home[0], r[1], r[2], home[1], "+I")))
                    elif r[0] == home[0]:
                        out.append((p, 1, (*r, home[1], "+I")))
        for ev in sorted(events, key=lambda e: e[0]):
            if ev[1] == "dec":
                self.counts[ev[2][0]][ev[2][1]] -= 1
                continue
            pk, pt = ev[2], ev[3]
            b = reference_assign(self.counts, pt, self.target, self.n, self.i)
            self.index[pk] = (pt, b)
            for p, r in pending[pk]:
                if self.processor == "delete" or self.processor == "use-old":
                    out.append((p, 1, (pt, r[1], r[2], b, "+I")))
                elif r[0] == pt:
                    out.append((p, 1, (*r, b, "+I")))
        return [e for _, _, e in sorted(out, key=lambda x: (x[0], x[1]))]


def new_assigner(tmp_path, engine: str = "deduplicate", n: int = 1, i: int = 0, target: int = 3,
                 **options: str) -> GlobalIndexAssigner:
    table = create_table(str(tmp_path / f"t-{engine}-{n}-{i}-{random.random()}"), **{
        "merge-engine": engine, "dynamic-bucket.target-row-num": str(target), **options})
    a = GlobalIndexAssigner(table, str(tmp_path / "work"), n, i, cache_bytes=8 << 20)
    a.bootstrap()
    return a


# ------------------------------------------------------------------------------------ Paimon's own cases

def test_bucket_assign_with_two_assigners(tmp_path):
    """GlobalIndexAssignerTest.testBucketAssign: assigner 0 of 2 opens buckets 0, 2, ... of 3 keys each."""
    with new_assigner(tmp_path, n=2, i=0) as a:
        assert [emitted(a.process(batch(r)))[0][3] for r in [(1, 1, 1), (1, 2, 2), (1, 3, 3)]] == [0, 0, 0]
        assert emitted(a.process(batch((1, 4, 4)))) == [(1, 4, 4, 2, "+I")]
        assert emitted(a.process(batch((2, 5, 5)))) == [(2, 5, 5, 0, "+I")]
        assert [r[3] for r in emitted(a.process(batch((1, 4, 4), (1, 2, 2), (1, 3, 3))))] == [2, 0, 0]
        directory = a.directory
        assert os.path.isdir(directory)
    assert not os.path.exists(directory)  # close() removes the index


def test_upsert_deletes_in_old_partition(tmp_path):
    """GlobalIndexAssignerTest.testUpsert: a -D with the new row's values in the old partition and bucket."""
    with new_assigner(tmp_path, n=2, i=0) as a:
        assert emitted(a.process(batch((1, 1, 1)))) == [(1, 1, 1, 0, "+I")]
        assert emitted(a.process(batch((2, 1, 2)))) == [(1, 1, 2, 0, "-D"), (2, 1, 2, 0, "+I")]
        # the move freed a place in partition 1, bucket 0
        assert [r[3] for r in emitted(a.process(batch((1, 2, 2), (1, 3, 3), (1, 4, 4))))] == [0, 0, 0]
        assert emitted(a.process(batch((2, 4, 4)))) == [(1, 4, 4, 0, "-D"), (2, 4, 4, 0, "+I")]
        assert emitted(a.process(batch((1, 5, 5)))) == [(1, 5, 5, 0, "+I")]


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_use_old_partition(tmp_path, engine):
    """GlobalIndexAssignerTest.testUseOldPartition: the row goes to the key's partition and bucket."""
    with new_assigner(tmp_path, engine, n=2, i=0) as a:
        assert emitted(a.process(batch((1, 1, 1)))) == [(1, 1, 1, 0, "+I")]
        assert emitted(a.process(batch((2, 1, 2)))) == [(1, 1, 2, 0, "+I")]
        assert [r[3] for r in emitted(a.process(batch((2, 2, 2), (2, 3, 3), (2, 4, 4))))] == [0, 0, 0]


def test_first_row_skips_new_partition(tmp_path):
    """GlobalIndexAssignerTest.testFirstRow."""
    with new_assigner(tmp_path, "first-row", n=2, i=0) as a:
        assert emitted(a.process(batch((1, 1, 1)))) == [(1, 1, 1, 0, "+I")]
        assert emitted(a.process(batch((2, 1, 2)))) == []
        assert [r[3] for r in emitted(a.process(batch((2, 2, 2), (2, 3, 3), (2, 4, 4))))] == [0, 0, 0]


def test_batch_keeps_last_partition_like_bulk_load(tmp_path):
    """GlobalIndexAssignerTest.testBootstrapRecords: in one batch a key's last partition wins, no -D needed."""
    with new_assigner(tmp_path, n=2, i=0) as a:
        out = a.process(batch((1, 1, 1), (2, 1, 2), (2, 2, 2), (2, 3, 3), (2, 4, 4)))
        assert emitted(out) == [(2, 1, 2, 0, "+I"), (2, 2, 2, 0, "+I"), (2, 3, 3, 0, "+I"), (2, 4, 4, 2, "+I")]


def test_bucket_assigner_matches_single_assignments():
    rng = random.Random(7)
    for n, i in [(1, 0), (2, 1), (3, 0)]:
        fast, counts = BucketAssigner(n, i, 5), {}
        for _ in range(300):
            part = rng.randrange(3)
            if rng.random() < 0.3 and counts.get(part):
                b = rng.choice(sorted(counts[part]))
                fast.decrement(part, b)
                counts[part][b] -= 1
            else:
                k = rng.randrange(1, 12)
                expected = [reference_assign(counts, part, 5, n, i) for _ in range(k)]
                assert fast.assign(part, k).tolist() == expected
        assert fast.stats == counts
    # an unknown bucket decremented appears with count -1 (Paimon's compute(v == null ? 0 : v - 1) on 0)
    b = BucketAssigner(1, 0, 2)
    b.decrement(0, 1)
    assert b.stats == {0: {1: -1}}
    assert b.assign(0, 4).tolist() == [1, 1, 1, 0]  # bucket 1 has room for 3, then 0 opens


# ------------------------------------------------------------------------------------ models

def random_rows(rng: random.Random, n: int, keys: int, parts: int, nulls: bool = False) -> list[tuple]:
    return [(rng.randrange(parts), rng.randrange(keys), None if nulls and rng.random() < 0.3 else rng.randrange(100))
            for _ in range(n)]


@pytest.mark.parametrize("engine,n,i", [("deduplicate", 1, 0), ("deduplicate", 2, 1), ("partial-update", 1, 0),
                                        ("aggregation", 3, 2), ("first-row", 2, 0)])
def test_row_at_a_time_is_paimons_sequential_assigner(tmp_path, engine, n, i):
    rng = random.Random(f"{engine}{n}")
    model = SequentialModel(PROCESSORS[engine], 3, n, i)
    with new_assigner(tmp_path, engine, n, i) as a:
        for r in random_rows(rng, 400, keys=25, parts=4):
            assert emitted(a.process(batch(r))) == model.row(r), r
        assert stats_by_value(a) == model.counts


def expected_state(engine: str, state: dict[int, tuple], r: tuple) -> None:
    """The table row of the key after row ``r``, as the merge engine and the processor make it."""
    pt, pk, col = r
    old = state.get(pk)
    if old is None:
        state[pk] = (pt, col)
    elif engine == "deduplicate":
        state[pk] = (pt, col)
    elif engine == "partial-update":
        state[pk] = (old[0], col if col is not None else old[1])
    elif engine == "aggregation":
        state[pk] = (old[0], old[1] if col is None else col if old[1] is None else old[1] + col)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation", "first-row"])
def test_model_keys_move_across_partitions(tmp_path, engine):
    """Random upserts moving keys between partitions, batch by batch, written and committed: the emitted rows
    are exactly the model's; after each commit every key lives once, where the model puts it, with the
    merged value; a bootstrapped assigner then indexes the same (partition, bucket) and counts and goes on."""
    rng = random.Random(engine)
    processor = PROCESSORS[engine]
    path = str(tmp_path / "t")
    extra = {"fields.col.aggregate-function": "sum"} if engine == "aggregation" else {}
    table = create_table(path, **{"merge-engine": engine, "dynamic-bucket.target-row-num": "4", **extra})
    a = GlobalIndexAssigner(table, str(tmp_path / "work"), cache_bytes=4 << 20)
    a.bootstrap()
    model = BatchModel(processor, 4)
    state: dict[int, tuple] = {}
    for commit in range(8):
        outs = []
        for _ in range(rng.randrange(1, 4)):
            rows = random_rows(rng, rng.randrange(1, 40), keys=30, parts=4, nulls=engine != "deduplicate")
            out = a.process(batch(*rows))
            assert emitted(out) == model.batch(rows)
            outs.append(out)
            for r in rows:
                expected_state(engine, state, r)
        write_assigned(table, pa.Table.from_batches(outs).combine_chunks().to_batches()[0])
        got = {r["pk"]: (r["pt"], r["col"]) for r in table_rows(path)}
        assert got == state
        live = live_buckets(path)
        assert live == model.index
        assert index_entries(a, [(k,) for k in range(30)], ["pk"], pa.schema([SCHEMA.field("pk")])) == \
            {(k,): ((pt,), b) for k, (pt, b) in live.items()}
        if commit in (3, 6):
            fresh = GlobalIndexAssigner(Table.load(path), str(tmp_path / "work"), cache_bytes=4 << 20)
            assert fresh.bootstrap() == len(live)
            by_bucket = Counter(live.values())
            assert stats_by_value(fresh) == \
                {pt: {b: c for (p2, b), c in by_bucket.items() if p2 == pt} for pt in {p for p, _ in by_bucket}}
            assert index_entries(fresh, [(k,) for k in range(30)], ["pk"], pa.schema([SCHEMA.field("pk")])) == \
                index_entries(a, [(k,) for k in range(30)], ["pk"], pa.schema([SCHEMA.field("pk")]))
            a.close()
            a = fresh
            model.counts = {p: {b: c for b, c in bs.items() if c} for p, bs in model.counts.items()}
    a.close()


def test_java_paimon_reads_what_the_assigner_routed(tmp_path, java_oracle):
    """Moves across partitions (deduplicate: -D in the old partition) read the same by Java Paimon 0.9."""
    rng = random.Random(11)
    path = str(tmp_path / "wh" / "db.db" / "t")  # the oracle reads WAREHOUSE/DB.db/TABLE
    table = create_table(path, **{"dynamic-bucket.target-row-num": "5"})
    state: dict[int, tuple] = {}
    with GlobalIndexAssigner(table, str(tmp_path / "w")) as a:
        a.bootstrap()
        for _ in range(4):
            rows = random_rows(rng, 40, keys=25, parts=3)
            write_assigned(table, a.process(batch(*rows)))
            for r in rows:
                expected_state("deduplicate", state, r)
    got = java_oracle.read(path).to_pylist()
    assert sorted((r["pk"], r["pt"], r["col"]) for r in got) == sorted((k, pt, c) for k, (pt, c) in state.items())
    assert len(Table.load(path).new_scan().plan()) > 3  # several buckets of several partitions


def test_input_row_kinds_and_rowkind_field(tmp_path):
    """Input kinds pass through; a -D input keeps its key indexed (as Paimon); bootstrap drops deleted keys;
    a retraction sets the table's rowkind.field column to -D."""
    schema = pa.schema([pa.field("pt", pa.int32()), pa.field("pk", pa.int32(), nullable=False),
                        pa.field("col", pa.int32()), pa.field("op", pa.string())])
    path = str(tmp_path / "t")
    table = create_table(path, schema, **{"rowkind.field": "op"})
    with GlobalIndexAssigner(table, str(tmp_path / "w"), row_kind_column="kind", cache_bytes=4 << 20) as a:
        a.bootstrap()
        in_schema = schema.append(pa.field("kind", pa.string()))
        out = a.process(batch((1, 1, 10, "+I", "+I"), (1, 2, 20, "+I", "+I"), (1, 3, 30, "+I", "+I"),
                              schema=in_schema))
        write_assigned(table, out)
        out = a.process(batch((1, 1, 10, "-D", "-D"), (2, 2, 21, "+U", "+U"), schema=in_schema))
        assert emitted(out) == [(1, 1, 10, "-D", 0, "-D"), (1, 2, 21, "-D", 0, "-D"), (2, 2, 21, "+U", 0, "+U")]
        write_assigned(table, out)
        assert sorted((r["pt"], r["pk"], r["col"]) for r in table_rows(path)) == [(1, 3, 30), (2, 2, 21)]
        # key 1 was deleted but stays indexed in partition 1: moving it retracts there (harmless)
        assert emitted(a.process(batch((3, 1, 11, "+I", "+I"), schema=in_schema))) == \
            [(1, 1, 11, "-D", 0, "-D"), (3, 1, 11, "+I", 0, "+I")]
    with GlobalIndexAssigner(Table.load(path), str(tmp_path / "w"), row_kind_column="kind") as b:
        assert b.bootstrap() == 2  # the deleted key is not indexed
        assert emitted(b.process(batch((3, 1, 11, "+I", "+I"), schema=in_schema))) == [(3, 1, 11, "+I", 0, "+I")]


def test_key_with_partition_field_and_variable_length_keys(tmp_path):
    """Primary key (id, region) with partitions (dt, region): the key's region comes from the partition at
    bootstrap; string ids of many lengths (inline and out-of-line BinaryRow strings) in one batch."""
    schema = pa.schema([pa.field("dt", pa.string()), pa.field("region", pa.string(), nullable=False),
                        pa.field("id", pa.string(), nullable=False), pa.field("v", pa.int64())])
    path = str(tmp_path / "t")
    table = create_table(path, schema, ("dt", "region"), ("id", "region"))
    ids = ["", "a", "1234567", "12345678", "x" * 40, "y" * 300, "é" * 9]
    with GlobalIndexAssigner(table, str(tmp_path / "w")) as a:
        a.bootstrap()
        out = a.process(batch(*[("d1", r, i, n) for n, i in enumerate(ids) for r in ("east", "west")], schema=schema))
        assert [r[4] for r in emitted(out)] == [0] * 14
        write_assigned(table, out)
        # the same id in another region is another key; in another day, the same key moves
        out = a.process(batch(("d2", "east", "x" * 40, 100), ("d1", "west", "x" * 40, 101), schema=schema))
        assert emitted(out) == [("d1", "east", "x" * 40, 100, 0, "-D"), ("d2", "east", "x" * 40, 100, 0, "+I"),
                                ("d1", "west", "x" * 40, 101, 0, "+I")]
        write_assigned(table, out)
    rows = sorted((r["dt"], r["region"], r["id"], r["v"]) for r in table_rows(path))
    assert len(rows) == 14 and ("d2", "east", "x" * 40, 100) in rows and ("d1", "east", "x" * 40, 4) not in rows
    with GlobalIndexAssigner(Table.load(path), str(tmp_path / "w")) as b:
        assert b.bootstrap() == 14
        keys = [(i, r) for i in ids for r in ("east", "west")]
        got = index_entries(b, keys, ["id", "region"], pa.schema([schema.field("id"), schema.field("region")]))
        assert got == {(i, r): (("d2" if (i, r) == ("x" * 40, "east") else "d1", r), 0) for i, r in keys}
        assert emitted(b.process(batch(("d3", "east", "x" * 40, 5), schema=schema))) == \
            [("d2", "east", "x" * 40, 5, 0, "-D"), ("d3", "east", "x" * 40, 5, 0, "+I")]


def test_refuses_tables_that_are_not_cross_partition(tmp_path):
    with pytest.raises(SchemaError, match="not a cross-partition"):
        GlobalIndexAssigner(create_table(str(tmp_path / "a"), pk=("pk", "pt")), str(tmp_path / "w"))
    with pytest.raises(SchemaError, match="bucket = -1"):
        GlobalIndexAssigner(create_table(str(tmp_path / "b"), bucket="4"), str(tmp_path / "w"))


# ------------------------------------------------------------------------------------ memory

MEMORY_SCRIPT = textwrap.dedent("""
    import os, resource, sys, time
    import numpy as np, pyarrow as pa
    sys.path.insert(0, sys.argv[1])
    from tests.index.test_cross_partition import create_table, SCHEMA
    from paimon_ds.operation.index_bootstrap import GlobalIndexAssigner
    n, cache = int(sys.argv[3]), int(sys.argv[4])
    table = create_table(sys.argv[2] + "/t", **{"dynamic-bucket.target-row-num": "100000"})
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    def rows(k, shift=0):
        return pa.RecordBatch.from_arrays([pa.array(k % 10 + shift), pa.array(k), pa.array(k)], schema=SCHEMA)
    a = GlobalIndexAssigner(table, sys.argv[2] + "/w", cache_bytes=cache)
    a.bootstrap()
    a.process(rows(np.arange(-1000, 0, dtype=np.int32)))  # warm-up: Arrow kernels, allocator arenas
    base = peak()
    t0 = time.time()
    ids = np.random.default_rng(1).permutation(n).astype(np.int32)
    step = 100_000
    for s in range(0, n, step):  # every key new: n index inserts in random key order
        assert a.process(rows(ids[s:s + step])).num_rows == step
        if s + step == n // 2:
            half = peak()
    t_insert = time.time() - t0
    full = peak()
    db = os.path.getsize(a.index.path)
    t1 = time.time()
    moved = sum(a.process(rows(ids[s:s + step], 10)).num_rows for s in range(0, 200_000, step))
    assert moved == 400_000  # a -D and the row in its new partition for each key
    assert sum(c for bs in a.buckets.stats.values() for c in bs.values()) == n + 1000
    a.close()
    print(base, half, full, peak(), db, t_insert, time.time() - t1)
""")


def test_index_memory_is_bounded_past_its_cache(tmp_path):
    """2M keys in random order (a 60+ MB index file) through a 16 MiB page cache: resident memory stays flat
    while the index grows; what it holds is the cache and one batch's work."""
    n, cache = 2_000_000, 16 << 20
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, root, str(tmp_path), str(n), str(cache)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    base, half, full, peak, db = (int(x) for x in res.stdout.split()[:5])
    t_insert, t_move = (float(x) for x in res.stdout.split()[5:])
    print(f"\n{n} keys: index file {db >> 20} MiB, inserted in {t_insert:.1f}s, 200k moves in {t_move:.1f}s; "
          f"peak RSS {base >> 20} MiB after warm-up, {half >> 20} MiB at {n // 2} keys, {full >> 20} MiB at {n}, "
          f"{peak >> 20} MiB after the moves")
    assert db > 50 << 20
    assert not list((tmp_path / "w").iterdir())  # close() removed the index
    assert full - half < 8 << 20  # the second million keys (~28 MiB more index) cost no resident memory
    # the page cache and one batch's arrays (100k rows in; the moves emit 200k rows per batch)
    assert full - base < cache + (64 << 20) and peak - base < cache + (96 << 20)
