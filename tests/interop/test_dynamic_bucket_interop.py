"""Dynamic-bucket tables (bucket=-1) shared with Java Paimon 0.9 and pypaimon 2.1.

Java writes through Paimon's own HashBucketAssigner and `write(row, bucket)` (tests/oracles:
java_dynamic_write), so it continues a table as a Flink job would. After every writer's turn each
key must be stored once, in the bucket it first went to, and every bucket's hash index must hold
exactly the hashes of the keys ever written to it: a hash computed differently by two writers, or
an index one of them could not read, would put an upserted key in a second bucket (a duplicate row)
or leave an index without its keys.

Oracle limits met here: pypaimon 2.1 cannot read manifests Java 0.9 wrote, so it only meets tables
written by paimon_ds and itself; the Java oracle writes +I rows only.
"""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pyarrow as pa

from paimon_ds import Table
from paimon_ds.format.binary_row import deserialize_row
from paimon_ds.index.bucket_assigner import key_hashes, snapshot_index_entries
from paimon_ds.index.hash_index import read_hash_index

SCHEMA = pa.schema([("id", pa.int32()), ("dt", pa.string()), ("op", pa.string()), ("v", pa.int64())])
TARGET = 50
ORACLE_OPTIONS = {"rowkind.field": "op", "dynamic-bucket.target-row-num": str(TARGET)}
OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "-1", **ORACLE_OPTIONS}
DTS = ("2024-05-01", "2024-05-02")

Key = tuple[int, str]


class Model:
    """Deduplicate semantics, plus where keys must live and what the hash index must hold."""

    def __init__(self) -> None:
        self.rows: dict[Key, int] = {}
        self.written: set[Key] = set()  # every key of every row, deletes too: all are indexed
        self.home: dict[Key, int] = {}

    def apply(self, rows: list[dict]) -> None:
        for r in rows:
            key = (r["id"], r["dt"])
            self.written.add(key)
            if r["op"] == "-D":
                self.rows.pop(key, None)
            else:
                self.rows[key] = r["v"]

    def check(self, path: str) -> None:
        """The table as paimon_ds reads it: rows, buckets and hash index all as the model says."""
        table = Table.load(path)
        got: dict[Key, int] = {}
        for split in table.new_scan().plan():
            for batch in table.new_read().read(split):
                for r in batch.to_pylist():
                    key = (r["id"], r["dt"])
                    assert key not in got, f"key {key} is stored twice"
                    got[key] = r["v"]
                    assert self.home.setdefault(key, split.bucket) == split.bucket, \
                        f"key {key} moved from bucket {self.home[key]} to {split.bucket}"
        assert got == self.rows
        indexed: dict[tuple[str, int], set[int]] = defaultdict(set)
        types = [f.type for f in table.table_schema.partition_fields]
        for e in snapshot_index_entries(table.store, table.latest_snapshot()):
            dt = deserialize_row(e.partition, types)[0]
            hashes = read_hash_index(table.store, e.partition, e.bucket, e.index_file)
            assert not indexed[(dt, e.bucket)] and e.index_file.row_count == len(hashes) <= TARGET
            indexed[(dt, e.bucket)] = set(hashes.tolist())
        keys = sorted(self.written)
        hashes = key_hashes(table.store, pa.table({"id": pa.array([k[0] for k in keys], pa.int32()),
                                             "dt": [k[1] for k in keys]}))
        expected: dict[str, set[int]] = defaultdict(set)
        for (_, dt), h in zip(keys, hashes.tolist()):
            expected[dt].add(h)
        for dt in expected:
            assert set().union(*(v for (d, _), v in indexed.items() if d == dt)) == expected[dt]
            assert sum(len(v) for (d, _), v in indexed.items() if d == dt) == len(expected[dt])
        for key, b in self.home.items():
            assert int(hashes[keys.index(key)]) in indexed[(key[1], b)], f"key {key} is not in its bucket's index"

    def expected_table(self) -> list[tuple]:
        return sorted((k[0], k[1], v) for k, v in self.rows.items())


def rows_of(ids, dt_of, v: int, op: str = "+I") -> list[dict]:
    return [{"id": i, "dt": dt_of(i), "op": op, "v": v * 10_000 + i} for i in ids]


def by_parity(i: int) -> str:
    return DTS[i % 2]


def table_of(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def ours(path: str, rows: list[dict], model: Model) -> None:
    table = Table.for_write(path, SCHEMA, OPTIONS)
    w = table.new_write()
    w.write_arrow(table_of(rows))
    table.new_commit().commit(w.prepare_commit())
    model.apply(rows)
    model.check(path)


def theirs(oracle, path: str, rows: list[dict], model: Model) -> None:
    oracle.write(path, table_of(rows), partition="dt", bucket=-1, primary_key="id,dt", options=ORACLE_OPTIONS)
    model.apply(rows)
    model.check(path)


def oracle_rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["dt"], r["v"]) for r in t.to_pylist() if r["op"] != "-D")


def test_model_upserts_read_by_java_and_pypaimon(table_path, java_oracle, pypaimon_oracle):
    """Random upserts and deletes over 6 commits with a small target (buckets grow); every commit is
    checked in paimon_ds, the last one read by both oracles."""
    rnd = random.Random(9)
    model = Model()
    for commit in range(6):
        rows = []
        for _ in range(rnd.randint(80, 160)):
            key = (rnd.randrange(260), rnd.choice(DTS))
            op = "-D" if rnd.random() < 0.15 else "+I"
            rows.append({"id": key[0], "dt": key[1], "op": op, "v": None if op == "-D" else commit * 1000 + len(rows)})
        ours(table_path, rows, model)
    assert max(model.home.values()) >= 2  # buckets grew
    assert oracle_rows(java_oracle.read(table_path)) == model.expected_table()
    assert oracle_rows(pypaimon_oracle.read(table_path)) == model.expected_table()


def test_java_continues_a_paimon_ds_table_and_back(table_path, java_oracle):
    model = Model()
    ours(table_path, rows_of(range(0, 140), by_parity, 1), model)
    ours(table_path, rows_of(range(100, 200), by_parity, 2), model)
    # Java: half its keys exist (they must stay in their buckets), half are new (Java opens buckets)
    theirs(java_oracle, table_path, rows_of(range(150, 300), by_parity, 3), model)
    assert len({b for (_, dt), b in model.home.items() if dt == DTS[0]}) == 3
    # and paimon_ds continues after Java, with a delete of a row Java wrote
    ours(table_path, rows_of(range(280, 360), by_parity, 4) + rows_of([290], by_parity, 0, "-D"), model)
    assert oracle_rows(java_oracle.read(table_path)) == model.expected_table()


def test_paimon_ds_continues_a_java_table(table_path, java_oracle):
    model = Model()
    theirs(java_oracle, table_path, rows_of(range(0, 150), by_parity, 1), model)  # Java creates the table
    assert Table.load(table_path).bucket == -1
    ours(table_path, rows_of(range(100, 260), by_parity, 2) + rows_of([3, 4], by_parity, 0, "-D"), model)
    theirs(java_oracle, table_path, rows_of(range(3, 6), by_parity, 5), model)  # deleted keys come back home
    assert oracle_rows(java_oracle.read(table_path)) == model.expected_table()


def test_pypaimon_and_paimon_ds_continue_each_other(table_path, pypaimon_oracle):
    """pypaimon 2.1 has its own dynamic-bucket writer (hash index included): it creates the table,
    paimon_ds continues it, pypaimon continues that."""
    model = Model()
    theirs(pypaimon_oracle, table_path, rows_of(range(0, 120), by_parity, 1), model)
    ours(table_path, rows_of(range(80, 220), by_parity, 2), model)
    theirs(pypaimon_oracle, table_path, rows_of(range(200, 260), by_parity, 3), model)
    assert oracle_rows(pypaimon_oracle.read(table_path)) == model.expected_table()
    assert np.unique(list(model.home.values())).tolist() == [0, 1, 2]
