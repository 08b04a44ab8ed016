"""The cross-partition index bootstrap (paimon_ds/operation/index_bootstrap.py): which keys live (per merge
engine), what IndexBootstrap reads of merged runs, duplicate keys, and the index TTL's effect on the bootstrap."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.index.bucket_assigner import BUCKET_COLUMN
from paimon_ds.index.cross_partition import (
    BOOTSTRAP_SCHEMA,
    PARTITION_COLUMN,
    ROW_KIND_COLUMN,
    parse_duration_seconds,
)
from paimon_ds.index.key_index import DUPLICATE_KEYS
from paimon_ds.index.keys import encode_keys, key_channels
from paimon_ds.mergetree.kv import ROW_KINDS
from paimon_ds.operation.index_bootstrap import GlobalIndexAssigner, IndexBootstrap
from paimon_ds.schema.manager import TableSchema
from tests.index.test_cross_partition import (
    SCHEMA,
    batch,
    create_table,
    emitted,
    index_entries,
    live_buckets,
    random_rows,
    write_assigned,
)

# ------------------------------------------------------------------------------------ bootstrap

def test_key_liveness_rules(tmp_path):
    """Which keys a bootstrap indexes, per merge engine, from several sorted runs of one bucket."""
    from paimon_ds.mergetree.kv import KeyValueLayout
    from paimon_ds.operation.index_bootstrap import KeyLiveness
    from paimon_ds.options.registry import Options
    # per key: the records in sequence order (kinds); the newest last
    records = {1: ["+I"], 2: ["+I", "-D"], 3: ["-D", "+I"], 4: ["+I", "-U"], 5: ["-D"], 6: ["+I", "-D", "-U"]}
    expected = {"deduplicate": {1, 3}, "partial-update": {1, 3, 4}, "aggregation": {1, 2, 3, 4, 5, 6},
                "first-row": {1, 2, 3, 4, 6}, "ignore-delete": {1, 2, 3, 4, 6}}
    for name, alive in expected.items():
        opts = {"merge-engine": "deduplicate", "ignore-delete": "true"} if name == "ignore-delete" else \
            {"merge-engine": name, "partial-update.remove-record-on-delete": "true"}
        ts = TableSchema.from_arrow(SCHEMA, ["pt"], ["pk"], {"bucket": "-1", **opts})
        engine = KeyLiveness(ts, Options(ts.options))
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
