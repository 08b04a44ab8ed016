"""Primary-key tables written in turns by paimon_ds and by the two Paimon oracles.

A table with primary key (id, dt), partition dt and 4 buckets is upserted on overlapping keys by
different writers, with deletes (`rowkind.field`) of rows another writer wrote. Every reader must
then see exactly one row per live key with the latest writer's values: a row of one key landing in
another bucket than the earlier writer's, or a sequence number not above the earlier writer's,
would show up as a duplicate key or as a stale value.

Oracle limits met here: pypaimon 2.1 cannot read manifests written by Java 0.9 (KeyError
_VALUE_STATS_COLS), so after a Java commit it reads the table only once a paimon_ds commit with
`manifest.merge-min-count=1` has rewritten the manifests; pypaimon 2.1 writes only +I rows here.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

import paimon_ds
from paimon_ds import Table
from paimon_ds.mergetree.compact import sorted_runs

SCHEMA = pa.schema([("id", pa.int32()), ("dt", pa.string()), ("op", pa.string()), ("v", pa.int64()),
                    ("s", pa.string())])
OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "4", "rowkind.field": "op"}
# Rewrites every manifest in this commit, so pypaimon 2.1 can read a table Java has written to.
REWRITE_MANIFESTS = {"manifest.merge-min-count": "1"}

Row = dict[str, Any]


def dt_of(i: int) -> str:
    return f"2024-05-0{i % 3 + 1}"


def upserts(ids: range | list[int], v: int, who: str, op: str = "+I") -> list[Row]:
    return [{"id": i, "dt": dt_of(i), "op": op, "v": v * 1000 + i, "s": f"{who}-{i}"} for i in ids]


def deletes(ids: range | list[int]) -> list[Row]:
    return [{"id": i, "dt": dt_of(i), "op": "-D", "v": None, "s": None} for i in ids]


class Model:
    """Deduplicate: the last row of a key wins, a delete removes it."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, str], Row] = {}

    def apply(self, rows: list[Row]) -> None:
        for r in rows:
            if r["op"] in ("-U", "-D"):
                self.rows.pop((r["id"], r["dt"]), None)
            else:
                self.rows[(r["id"], r["dt"])] = r

    def expected(self) -> list[Row]:
        return sorted(self.rows.values(), key=lambda r: (r["id"], r["dt"]))


def table(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def spark_write(spark, path: str, rows: list[Row], options: dict[str, str]) -> None:
    """df.write with 3 tasks writing the same buckets in one commit (each key once per commit)."""
    df = spark.createDataFrame(table(rows), schema=from_arrow_schema(SCHEMA)).repartition(3)
    df.write.format("paimon").mode("append").options(**options).save(path)


def clustered_write(spark, path: str, rows: list[Row], options: dict[str, str]) -> None:
    df = spark.createDataFrame(table(rows), schema=from_arrow_schema(SCHEMA))
    paimon_ds.write(df, path, options=options, parallelism=4)


def kinds_of(path: str) -> list[str]:
    """The snapshots' commit kinds; and no bucket of any snapshot above the stop trigger (the commits compact)."""
    table = Table.load(path)
    for s in table.snapshots():
        runs: dict = {}
        for e in table.new_scan().read_entries(s):
            runs.setdefault((e.partition, e.bucket), []).append(e.file)
        assert max(len(sorted_runs(fs)) for fs in runs.values()) <= 8, f"snapshot {s.id}"
    return [s.commit_kind for s in table.snapshots()]


def rows_of(t: pa.Table) -> list[Row]:
    return sorted(t.select(SCHEMA.names).to_pylist(), key=lambda r: (r["id"], r["dt"]))


def snapshots(path: str) -> list[dict[str, Any]]:
    snap_dir = Path(path) / "snapshot"
    ids = sorted(int(p.name.split("-")[1]) for p in snap_dir.glob("snapshot-*"))
    return [json.loads((snap_dir / f"snapshot-{i}").read_text()) for i in ids]


def max_sequence_by_bucket(path: str) -> dict[tuple[bytes, int], int]:
    out: dict[tuple[bytes, int], int] = {}
    for e in Table.load(path).new_scan().read_entries():
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, -1), e.file.max_sequence_number)
    return out


def assert_everyone_reads(spark, path: str, expected: list[Row], oracles: dict[str, Any]) -> None:
    """paimon_ds (core and Spark) and each oracle read exactly `expected` (oracles in parallel)."""
    assert len({(r["id"], r["dt"]) for r in expected}) == len(expected) > 100
    assert rows_of(Table.load(path).to_arrow()) == expected, "paimon_ds core"
    assert rows_of(spark.read.format("paimon").load(path).toArrow()) == expected, "paimon_ds Spark"
    with ThreadPoolExecutor(len(oracles)) as pool:
        reads = {name: pool.submit(o.read, path) for name, o in oracles.items()}
        for name, fut in reads.items():
            assert rows_of(fut.result()) == expected, name


# ------------------------------------------------------------------------------------------ tests

def test_paimon_ds_table_upserted_by_java_then_paimon_ds(spark, table_path, java_oracle, pypaimon_oracle):
    model = Model()
    first = upserts(range(0, 200), 1, "ds")
    spark_write(spark, table_path, first, OPTIONS)
    model.apply(first)
    seq_before_java = max_sequence_by_bucket(table_path)

    # Java: overlapping upserts, new keys, and deletes of keys paimon_ds wrote
    java_rows = upserts(range(100, 300), 2, "java") + deletes(range(0, 20))
    java_oracle.write(table_path, table(java_rows))
    model.apply(java_rows)
    seq_after_java = max_sequence_by_bucket(table_path)
    assert all(seq_after_java[k] > seq_before_java[k] for k in seq_before_java), "Java's rows are newer"

    # paimon_ds again: over Java's rows and its own, deleting keys Java wrote
    third = (upserts(range(250, 350), 3, "ds2") + upserts(range(20, 30), 3, "ds2", op="+U")
             + deletes(range(150, 160)) + deletes(range(500, 505)))
    spark_write(spark, table_path, third, REWRITE_MANIFESTS)
    model.apply(third)

    # three data commits; the committer compacted after the one that put the bucket at the trigger (3 tasks a commit)
    assert [k for k in kinds_of(table_path) if k != "COMPACT"] == ["APPEND"] * 3
    expected = model.expected()
    assert len(expected) == 350 - 20 - 10
    assert_everyone_reads(spark, table_path, expected,
                          {"Java Paimon 0.9": java_oracle, "pypaimon 2.1": pypaimon_oracle})
    assert pypaimon_oracle.check_buckets(table_path) == {"rows": len(expected), "wrong_bucket": 0}


def test_java_table_upserted_by_paimon_ds(spark, table_path, java_oracle, pypaimon_oracle):
    model = Model()
    first = upserts(range(0, 200), 1, "java")
    java_oracle.write(table_path, table(first), primary_key="id,dt", partition="dt", bucket=4,
                      options={"rowkind.field": "op"})
    model.apply(first)
    second = upserts(range(150, 250), 2, "java2") + deletes(range(0, 10))
    java_oracle.write(table_path, table(second))
    model.apply(second)
    assert rows_of(Table.load(table_path).to_arrow()) == model.expected(), "paimon_ds reads Java's upserts"

    # paimon_ds through Spark: 3 tasks, upserting Java's keys and deleting some of them
    third = upserts(range(100, 180), 3, "ds") + deletes(range(190, 200)) + upserts(range(250, 300), 3, "ds")
    spark_write(spark, table_path, third, {})
    model.apply(third)
    assert rows_of(Table.load(table_path).to_arrow()) == model.expected()

    # then clustered, compacting inline (trigger 2): paimon_ds merges Java's files with its own
    fourth = upserts(range(0, 300, 7), 4, "ds-clustered") + deletes(range(1, 300, 50))
    clustered_write(spark, table_path, fourth, {"num-sorted-run.compaction-trigger": "2", **REWRITE_MANIFESTS})
    model.apply(fourth)
    kinds = kinds_of(table_path)
    # the committer compacted after the 3-task write, the clustered writer after its own when it picked
    assert [k for k in kinds if k != "COMPACT"] == ["APPEND"] * 4 and "COMPACT" in kinds

    assert_everyone_reads(spark, table_path, model.expected(),
                          {"Java Paimon 0.9": java_oracle, "pypaimon 2.1": pypaimon_oracle})


def test_pypaimon_upserts_a_paimon_ds_table(spark, table_path, java_oracle, pypaimon_oracle):
    model = Model()
    first = upserts(range(0, 200), 1, "ds")
    spark_write(spark, table_path, first, OPTIONS)
    model.apply(first)
    second = upserts(range(100, 300), 2, "pypaimon")
    pypaimon_oracle.write(table_path, table(second))
    model.apply(second)
    third = upserts(range(50, 120), 3, "ds2", op="+U") + deletes(range(250, 260))
    spark_write(spark, table_path, third, {})
    model.apply(third)
    assert [k for k in kinds_of(table_path) if k != "COMPACT"] == ["APPEND"] * 3
    assert_everyone_reads(spark, table_path, model.expected(),
                          {"Java Paimon 0.9": java_oracle, "pypaimon 2.1": pypaimon_oracle})


def test_first_row_table_written_by_paimon_ds_is_read_by_paimon(table_path, java_oracle, pypaimon_oracle):
    """Paimon's batch scans skip level 0 of first-row tables, so no level-0 file may outlive a commit:
    the committer lifts the buckets it just wrote (Paimon's ForceUpLevel0Compaction)."""
    opts = {**OPTIONS, "merge-engine": "first-row"}
    data = upserts(range(0, 150), 1, "first") + upserts(range(0, 150, 2), 2, "second")
    t = Table.for_write(table_path, SCHEMA, opts)
    tw = t.new_write()
    tw.write_arrow(table(data))
    last = t.new_commit().commit(tw.prepare_commit())
    assert last.commit_kind == "COMPACT"
    entries = Table.load(table_path).new_scan().read_entries()
    assert entries and all(e.file.level > 0 for e in entries)
    expected = sorted(upserts(range(0, 150), 1, "first"), key=lambda r: (r["id"], r["dt"]))
    assert rows_of(Table.load(table_path).to_arrow()) == expected
    with ThreadPoolExecutor(2) as pool:
        reads = {"Java Paimon 0.9": pool.submit(java_oracle.read, table_path),
                 "pypaimon 2.1": pool.submit(pypaimon_oracle.read, table_path)}
        for name, fut in reads.items():
            assert rows_of(fut.result()) == expected, name
