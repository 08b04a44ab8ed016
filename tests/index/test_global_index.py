"""Cross-partition upsert core (paimon_ds/index/global_index.py): the disk-backed key index, IndexBootstrap,
the crosspartition BucketAssigner and GlobalIndexAssigner with its three existing-key processors.

Tables are real cross-partition tables on disk (primary key without the partition key, bucket = -1). The
public write path refuses them until the Spark shuffle lands, so the tests create the schema file and write
the assigner's output bucket by bucket through MergeTreeWriter and TableCommit (``write_assigned``).
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
from paimon_ds.fs import FileIO
from paimon_ds.index.global_index import (
    BOOTSTRAP_SCHEMA,
    BUCKET_COLUMN,
    DUPLICATE_KEYS,
    PARTITION_COLUMN,
    ROW_KIND_COLUMN,
    BucketAssigner,
    GlobalIndexAssigner,
    IndexBootstrap,
    KeyIndex,
    KeySet,
    encode_keys,
    key_channels,
    parse_duration_seconds,
    row_channels,
)
from paimon_ds.io.names import DataFileNamer
from paimon_ds.mergetree.kv import ROW_KINDS
from paimon_ds.mergetree.merge import merge_engine
from paimon_ds.mergetree.writer import MergeTreeWriter
from paimon_ds.operation.messages import CommitMessage
from paimon_ds.operation.write import BucketRestore
from paimon_ds.options import table_options
from paimon_ds.schema import SchemaManager, TableSchema
from paimon_ds.types import SchemaError

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
    schema = table.schema
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
        writer = MergeTreeWriter(table, engine, f"{table.root}/{rel}/bucket-{bucket}", namer,
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


# ------------------------------------------------------------------------------------ bootstrap

def test_key_liveness_rules(tmp_path):
    """Which keys a bootstrap indexes, per merge engine, from several sorted runs of one bucket."""
    from paimon_ds.index.global_index import _KeyLiveness
    from paimon_ds.mergetree.kv import KeyValueLayout
    from paimon_ds.options import Options
    # per key: the records in sequence order (kinds); the newest last
    records = {1: ["+I"], 2: ["+I", "-D"], 3: ["-D", "+I"], 4: ["+I", "-U"], 5: ["-D"], 6: ["+I", "-D", "-U"]}
    expected = {"deduplicate": {1, 3}, "partial-update": {1, 3, 4}, "aggregation": {1, 2, 3, 4, 5, 6},
                "first-row": {1, 2, 3, 4, 6}, "ignore-delete": {1, 2, 3, 4, 6}}
    for name, alive in expected.items():
        opts = {"merge-engine": "deduplicate", "ignore-delete": "true"} if name == "ignore-delete" else \
            {"merge-engine": name, "partial-update.remove-record-on-delete": "true"}
        ts = TableSchema.from_arrow(SCHEMA, ["pt"], ["pk"], {"bucket": "-1", **opts})
        engine = _KeyLiveness(ts, Options(ts.options))
        layout = KeyValueLayout(ts)
        rows = [(k, seq, ROW_KINDS[kind]) for k, kinds in records.items() for seq, kind in enumerate(kinds)]
        kv = pa.table({"_KEY_pk": pa.array([r[0] for r in rows], pa.int32()),
                       "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
                       "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8())})
        merged = engine.merge(layout.sort(kv), drop_retract=False)
        assert set(merged.column("_KEY_pk").to_pylist()) == alive, name
        assert set(merged.column("_VALUE_KIND").to_pylist()) <= {0}
        single = pa.table({"_KEY_pk": pa.array([1, 2], pa.int32()), "_SEQUENCE_NUMBER": pa.array([0, 0], pa.int64()),
                           "_VALUE_KIND": pa.array([0, 3], pa.int8())})
        mask = engine.alive_rows(single)
        assert (mask is None) == (name == "aggregation") and (mask is None or mask.tolist() == [True, False])


def test_bootstrap_indexes_live_keys_of_merged_runs(tmp_path):
    """Several commits (one level-0 run each) with moves and deletes: the bootstrap indexes exactly the live
    keys at their (partition, bucket), counts keys per bucket, and splits keys between assigners by key hash
    and buckets between readers by bucket id."""
    path = str(tmp_path / "t")
    schema = SCHEMA.append(pa.field("kind", pa.string()))
    table = create_table(path, **{"dynamic-bucket.target-row-num": "5"})
    rng = random.Random(3)
    with GlobalIndexAssigner(table, str(tmp_path / "w"), row_kind_column="kind") as a:
        a.bootstrap()
        for _ in range(6):
            rows = [(*r, "-D" if rng.random() < 0.15 else "+I") for r in random_rows(rng, 60, keys=80, parts=3)]
            write_assigned(table, a.process(batch(*rows, schema=schema)))
    live = live_buckets(path)
    assert 30 < len(live) < 80  # some keys deleted, some never written
    assert max(len(s.files) for s in Table.load(path).new_scan().plan()) > 1  # merged runs are read
    keys = [(k,) for k in range(80)]
    key_schema = pa.schema([SCHEMA.field("pk")])
    union: dict = {}
    for n, i in [(1, 0), (3, 0), (3, 1), (3, 2)]:
        with GlobalIndexAssigner(Table.load(path), str(tmp_path / "w"), n, i) as b:
            loaded = b.bootstrap()
            got = index_entries(b, keys, ["pk"], key_schema)
            assert loaded == len(got)
            mine = {k for k in live
                    if key_channels(encode_keys(batch((0, k, 0)), ["pk"], [b.schema.field("pk").type]), n)[0] == i}
            assert got == {(k,): ((live[k][0],), live[k][1]) for k in mine}
            counts = Counter((pt, bk) for k, (pt, bk) in live.items() if k in mine)
            assert {(b.partition_values(p)[0], bk): c for p, bs in b.buckets.stats.items()
                    for bk, c in bs.items()} == dict(counts)
            if n == 3:
                assert not set(got) & set(union)
                union.update(got)
    assert len(union) == len(live)
    boot = IndexBootstrap(Table.load(path))
    by_reader = [{(r[PARTITION_COLUMN], r[BUCKET_COLUMN]) for b in boot.read(2, j) for r in b.to_pylist()}
                 for j in range(2)]
    assert all(bk % 2 == j for j in range(2) for _, bk in by_reader[j])
    assert sum(b.num_rows for b in boot.read()) == len(live)
    assert boot.snapshot_id == Table.load(path).latest_snapshot().id
    assert next(boot.read()).schema == BOOTSTRAP_SCHEMA


def test_bootstrap_fails_on_duplicate_keys(tmp_path):
    """A key living in two partitions (two jobs wrote the table) fails the bootstrap as in Paimon."""
    path = str(tmp_path / "t")
    table = create_table(path)
    write_assigned(table, pa.RecordBatch.from_pylist(
        [{"pt": 1, "pk": 7, "col": 1, BUCKET_COLUMN: 0, ROW_KIND_COLUMN: "+I"},
         {"pt": 2, "pk": 7, "col": 2, BUCKET_COLUMN: 0, ROW_KIND_COLUMN: "+I"}]))
    with GlobalIndexAssigner(Table.load(path), str(tmp_path / "w")) as a:
        with pytest.raises(RuntimeError, match="contains duplicates"):
            a.bootstrap()
    assert "duplicates" in DUPLICATE_KEYS


@pytest.mark.parametrize("buffer", [1 << 30, 300_000])
def test_bootstrap_load_sorts_externally(tmp_path, buffer):
    """Bootstrap keys arrive in any order and in pieces: loaded at once (all in the buffer) or spilled as
    sorted runs per key length and k-way merged into the index; a key given twice fails, even across runs."""
    table = create_table(str(tmp_path / "t"), pa.schema([pa.field("pt", pa.int32()),
                                                         pa.field("pk", pa.string(), nullable=False)]))
    rng = np.random.default_rng(2)
    ids = rng.permutation(60_000)
    names = [("k" * (i % 3 * 6)) + str(i) for i in ids.tolist()]  # 8, 16 and 24-byte keys, inline or not
    keys = encode_keys(pa.RecordBatch.from_pydict({"pk": names}), ["pk"], [table.schema.field("pk").type])
    parts = pa.array([serialize_row([p], [table.schema.field("pt").type]) for p in range(4)]).take(ids % 4)
    buckets = (ids % 7).astype(np.int32)
    with GlobalIndexAssigner(table, str(tmp_path / "w"), bootstrap_buffer_bytes=buffer) as a:
        for s in range(0, len(ids), 7_000):
            a.bootstrap_keys(pa.RecordBatch.from_arrays(
                [keys.slice(s, 7_000), parts.slice(s, 7_000), pa.array(buckets[s:s + 7_000])],
                schema=BOOTSTRAP_SCHEMA))
        assert (a._runs is not None) == (buffer < 1 << 20)
        a.end_bootstrap()
        assert a._runs is None and not os.path.exists(os.path.join(a.directory, "runs"))
        found, packed = a.index.get(keys)
        assert found.all()
        assert [a.partition_values(v >> 32)[0] for v in packed.tolist()] == (ids % 4).tolist()
        assert (packed & 0xFFFFFFFF).tolist() == buckets.tolist()
        assert a.index.size == len(ids)
        assert stats_by_value(a) == {p: dict(Counter(b for i, b in zip(ids.tolist(), buckets.tolist()) if i % 4 == p))
                                     for p in range(4)}
    with GlobalIndexAssigner(table, str(tmp_path / "w"), bootstrap_buffer_bytes=buffer) as a:
        for s in (0, 30_000, 29_999):  # the key at 29_999 comes twice, in different runs when spilling
            a.bootstrap_keys(pa.RecordBatch.from_arrays(
                [keys.slice(s, 30_000), parts.slice(s, 30_000), pa.array(buckets[s:s + 30_000])],
                schema=BOOTSTRAP_SCHEMA).slice(0, 30_000 if s != 29_999 else 1))
        with pytest.raises(RuntimeError, match="contains duplicates"):
            a.end_bootstrap()


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


def test_channels_are_paimons_key_hash(tmp_path):
    """row_channels (input rows) and key_channels (bootstrap keys) agree: abs(BinaryRow hash % n)."""
    from paimon_ds.format.bucket import bucket_ids
    table = create_table(str(tmp_path / "t"))
    rows = batch(*[(k % 3, k * 7919 - 50_000, k) for k in range(500)])
    for n in (1, 2, 5):
        by_rows = row_channels(table.schema, rows, n)
        by_keys = key_channels(encode_keys(rows, ["pk"], [table.schema.field("pk").type]), n)
        assert by_rows.tolist() == by_keys.tolist()
        assert by_rows.tolist() == bucket_ids([rows.column(1)], [table.schema.field("pk").type], n).tolist()
        assert set(by_rows.tolist()) == set(range(n))


# ------------------------------------------------------------------------------------ TTL

def test_index_ttl(tmp_path):
    """cross-partition-upsert.index-ttl: an entry expires that long after it was written (a new key or a
    move writes it; an update in place does not); the bootstrap skips buckets without a recent file and
    stamps what it loads with the bootstrap time."""
    now = [1_000_000.0]
    path = str(tmp_path / "t")
    table = create_table(path, **{"cross-partition-upsert.index-ttl": "100 s"})
    with GlobalIndexAssigner(table, str(tmp_path / "w"), clock=lambda: now[0]) as a:
        a.bootstrap()
        write_assigned(table, a.process(batch((1, 1, 1), (1, 2, 2))))
        now[0] += 90
        assert emitted(a.process(batch((1, 1, 3)))) == [(1, 1, 3, 0, "+I")]  # in place: no refresh
        assert emitted(a.process(batch((2, 2, 3)))) == [(1, 2, 3, 0, "-D"), (2, 2, 3, 0, "+I")]  # moved at +90
        now[0] += 20  # key 1 written at +0 has expired; key 2 (+90) has not
        assert emitted(a.process(batch((2, 1, 4), (3, 2, 4)))) == \
            [(2, 1, 4, 0, "+I"), (2, 2, 4, 0, "-D"), (3, 2, 4, 0, "+I")]
    files_ms = [f.creation_time.timestamp() * 1000 for s in table.new_scan().plan() for f in s.files]
    created = max(files_ms) / 1000
    for offset, loaded in [(50, 2), (99, 2), (101, 0)]:
        clock = [created + offset]
        with GlobalIndexAssigner(Table.load(path), str(tmp_path / "w"), clock=lambda c=clock: c[0]) as b:
            assert b.bootstrap() == loaded
            if loaded:
                clock[0] += 100  # loaded at the bootstrap time: alive for 100 s from then
                assert emitted(b.process(batch((5, 1, 0))))[0][4] == "-D"
                clock[0] += 1
                assert emitted(b.process(batch((6, 2, 0)))) == [(6, 2, 0, 0, "+I")]
    assert parse_duration_seconds("100 s") == 100 and parse_duration_seconds("2 days") == 172800
    assert parse_duration_seconds("1h") == 3600 and parse_duration_seconds("500") == 0.5
    assert parse_duration_seconds("30 min") == 1800 and parse_duration_seconds("7 d") == 604800
    with pytest.raises(ValueError):
        parse_duration_seconds("ten s")


# ------------------------------------------------------------------------------------ store

def test_key_index_store(tmp_path):
    """Mixed key lengths in one call; replace; bulk load refuses an existing key."""
    os.makedirs(tmp_path / "i")
    idx = KeyIndex(str(tmp_path / "i"), 1 << 20)
    raw = [b"\0" * 8, b"a" * 16, b"b" * 16, b"c" * 24, b"\1" * 8, b"a" * 16]
    keys, kid = KeySet.of_array(pa.array(raw, pa.large_binary()))
    assert len(keys) == 5 and kid[1] == kid[5]
    assert keys.to_arrow().to_pylist() == [b"\0" * 8, b"\1" * 8, b"a" * 16, b"b" * 16, b"c" * 24]  # by length, bytes
    values = np.empty(5, np.int64)
    values[kid] = [1, 2, 3, 4, 5, 2]
    idx.put(keys, values, new_only=True)
    probe = pa.array([b"b" * 16, b"zz" * 8, b"\1" * 8, b"c" * 24, b"\0" * 16, b"b" * 16], pa.binary())
    found, got = idx.get(probe.slice(0))
    assert found.tolist() == [True, False, True, True, False, True] and got[found].tolist() == [3, 5, 4, 3]
    assert idx.get(probe.slice(2, 2))[1].tolist() == [5, 4]  # a slice of a buffer
    again, _ = KeySet.of_array(pa.array([b"b" * 16], pa.large_binary()))
    idx.put(again, np.array([9 << 32 | 7]))
    assert idx.get(pa.array([b"b" * 16], pa.large_binary()))[1].tolist() == [9 << 32 | 7]
    assert keys.take(np.array([1, 3])).to_arrow().to_pylist() == [b"\1" * 8, b"b" * 16]
    import sqlite3
    with pytest.raises(sqlite3.IntegrityError):
        idx.put(KeySet.of_array(pa.array([b"c" * 24], pa.large_binary()))[0], np.array([0]), new_only=True)
    with pytest.raises(ValueError, match="not a BinaryRow"):
        idx.get(pa.array([b"abc"], pa.large_binary()))
    idx.close()


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
    from tests.index.test_global_index import create_table, SCHEMA
    from paimon_ds.index.global_index import GlobalIndexAssigner
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
