"""Branches (Paimon 1.x `branch/branch-<name>/`) against the other implementations.

pypaimon 2.1 writes and reads branches (create from a tag or empty, write, read by `t$branch_<name>`), so it is
the oracle for branch tables; it does not implement `scan.fallback-branch`, which Java Paimon 0.9 does, so Java
reads the fallback view (pypaimon's two branches, combined by partition, give the same rows). Every read here
goes through Spark and the core.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Table, procedures
from paimon_ds.schema.change import RemoveOption, SetOption, commit_changes

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])

# pypaimon 2.1 reads every given branch of the table at `path` (its catalog's `t$branch_<name>`) into parquet
PP_READ = """
import json, os
import pyarrow.parquet as pq
from pypaimon import CatalogFactory
wh, db = os.path.dirname(os.path.dirname(path)), os.path.basename(os.path.dirname(path))[:-3]
cat = CatalogFactory.create({"warehouse": wh})
name = f"{db}.{os.path.basename(path)}"
for branch, out in OUTS.items():
    t = cat.get_table(name if branch == "main" else f"{name}$branch_{branch}")
    rb = t.new_read_builder()
    pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), out)
print(json.dumps(sorted(cat.list_branches(name))))
"""

# Java Paimon 0.9 reads branches through its catalog's `t$branch_<name>` tables
JAVA_READ = """
import pyarrow.parquet as pq
for branch, out in OUTS.items():
    t = catalog.get_table(ident if branch == "main" else f"{ident}$branch_{branch}")
    rb = t.new_read_builder()
    pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), out)
"""


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def oracle_reads(oracle, path: str, branches: list[str], tmp_path: Path) -> tuple[dict[str, list[tuple]], list]:
    """Each branch's rows as ``oracle`` reads them (and, for pypaimon, the branches it lists)."""
    outs = {b: str(tmp_path / f"{oracle.impl}-{b}-{len(list(tmp_path.iterdir()))}.parquet") for b in branches}
    script = PP_READ if oracle.impl == "pypaimon" else JAVA_READ
    printed = oracle.exec(path, f"OUTS = {outs!r}\n{script}").strip()
    listed = json.loads(printed.splitlines()[-1]) if oracle.impl == "pypaimon" else []
    return {b: rows(pq.read_table(out)) for b, out in outs.items()}, listed


def ours(spark, path: str, branch: str = "main", **options: str) -> list[tuple]:
    """A branch's rows through Spark and through the core, which must agree."""
    spark_rows = sorted(tuple(r) for r in spark.read.format("paimon").option("branch", branch).options(**options)
                        .load(path).select("dt", "id", "v").collect())
    core_rows = rows(Table.load(path, {"branch": branch, **options}).to_arrow())
    assert spark_rows == core_rows
    return core_rows


def data(*triples: tuple) -> pa.Table:
    return pa.table({"dt": [t[0] for t in triples], "id": [t[1] for t in triples], "v": [t[2] for t in triples]},
                    schema=SCHEMA)


# pypaimon 2.1 builds a table with two branches: b1 from tag t1 (then written on), b2 empty (then written on)
PP_WRITE_BRANCHES = """
import os
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
wh, db = os.path.dirname(os.path.dirname(path)), os.path.basename(os.path.dirname(path))[:-3]
cat = CatalogFactory.create({"warehouse": wh})
cat.create_database(db, True)
name = f"{db}.{os.path.basename(path)}"
cat.create_table(name, Schema.from_pyarrow_schema(data.schema, partition_keys=["dt"],
                 primary_keys=["dt", "id"] if PK else None, options=OPTIONS), False)
def batch(rows):
    return pa.table({"dt": [r[0] for r in rows], "id": [r[1] for r in rows], "v": [r[2] for r in rows]},
                    schema=data.schema)
t = cat.get_table(name)
commit_arrow(t, batch([("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "m3")]))
t.create_tag("t1")
commit_arrow(t, batch([("a", 2, "m2'" if PK else "m2+"), ("c", 4, "m4")]))
cat.create_branch(name, "b1", "t1")
cat.create_branch(name, "b2")
b1 = cat.get_table(f"{name}$branch_b1")
commit_arrow(b1, batch([("b", 3, "b1-3" if PK else "b1+"), ("d", 5, "b1-5")]))
commit_arrow(b1, batch([("d", 6, "b1-6")]))
b1.create_tag("bt")
commit_arrow(cat.get_table(f"{name}$branch_b2"), batch([("e", 7, "b2-7")]))
"""


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_pypaimon_written_branches_read_exactly(pypaimon_oracle, spark, table_path, tmp_path, kind):
    pk = kind == "primary-key"
    options = {"bucket": "2"} if pk else {}
    pypaimon_oracle.exec(table_path, f"PK = {pk}\nOPTIONS = {options!r}\n{PP_WRITE_BRANCHES}", data())
    theirs, listed = oracle_reads(pypaimon_oracle, table_path, ["main", "b1", "b2"], tmp_path)
    assert listed == ["b1", "b2"] == procedures.list_branches(table_path)
    for branch in ("main", "b1", "b2"):
        assert ours(spark, table_path, branch) == theirs[branch], branch
    # what each branch holds, spelled out: b1 started at tag t1 (snapshot 1), b2 empty
    assert theirs["b1"] == sorted([("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "b1-3" if pk else "m3"),
                                   ("d", 5, "b1-5"), ("d", 6, "b1-6")] + ([] if pk else [("b", 3, "b1+")]))
    assert theirs["b2"] == [("e", 7, "b2-7")]
    # time travel within a branch: its own snapshot ids (b1: 1 copied from main, then 2 and 3) and tags
    assert ours(spark, table_path, "b1", **{"scan.snapshot-id": "2"}) == sorted(
        [("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "b1-3" if pk else "m3"), ("d", 5, "b1-5")]
        + ([] if pk else [("b", 3, "b1+")]))
    assert ours(spark, table_path, "b1", **{"scan.tag-name": "bt"}) == theirs["b1"]
    assert ours(spark, table_path, "main", **{"scan.tag-name": "t1"}) == [("a", 1, "m1"), ("a", 2, "m2"),
                                                                          ("b", 3, "m3")]


def spark_write(spark, path: str, df_rows: pa.Table, branch: str | None = None, mode: str = "append") -> None:
    writer = spark.createDataFrame(df_rows.to_pandas(), "dt string, id bigint, v string").write.format("paimon")
    if branch is not None:
        writer = writer.option("branch", branch)
    writer.mode(mode).save(path)


def core_write(path: str, df_rows: pa.Table, branch: str) -> None:
    table = Table.for_write(path, SCHEMA, {"branch": branch})
    write = table.new_write()
    write.write_arrow(df_rows)
    table.new_commit().commit(write.prepare_commit())


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_branch_round_trip(pypaimon_oracle, java_oracle, spark, table_path, tmp_path, kind):
    """Create, write, read, fast-forward and fallback-read branches with paimon_ds; pypaimon 2.1 reads the
    same rows at every step (and Java Paimon 0.9 the fallback view)."""
    pk = kind == "primary-key"
    options = {"partition": "dt", **({"primary-key": "dt,id", "bucket": "2"} if pk else {})}
    main_rows = data(("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "m3"))
    spark.createDataFrame(main_rows.to_pandas(), "dt string, id bigint, v string").write.format("paimon") \
        .options(**options).mode("append").save(table_path)
    procedures.create_tag(table_path, "t1")
    spark_write(spark, table_path, data(("a", 2, "m2'"), ("c", 4, "m4")))

    def check(expected: dict[str, list[tuple]]) -> None:
        theirs, listed = oracle_reads(pypaimon_oracle, table_path, list(expected), tmp_path)
        assert listed == procedures.list_branches(table_path)
        for branch, want in expected.items():
            assert theirs[branch] == want, branch
            assert ours(spark, table_path, branch) == want, branch

    main = sorted([("a", 1, "m1"), ("a", 2, "m2'"), ("b", 3, "m3"), ("c", 4, "m4")]
                  + ([] if pk else [("a", 2, "m2")]))
    # a branch from a tag starts at the tagged snapshot; an empty branch has the schema and no rows
    assert procedures.create_branch(table_path, "b1", "t1") is True
    assert procedures.create_branch(table_path, "b1", "t1", ignore_if_exists=True) is False
    procedures.create_branch(table_path, "empty")
    check({"main": main, "b1": [("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "m3")], "empty": []})

    # writes to b1 through Spark (append, then a dynamic partition overwrite) and the core
    spark_write(spark, table_path, data(("b", 3, "b1-3"), ("d", 5, "b1-5")), branch="b1")
    spark.createDataFrame(data(("d", 6, "b1-6")).to_pandas(), "dt string, id bigint, v string").write \
        .format("paimon").option("branch", "b1").option("partitionOverwriteMode", "dynamic") \
        .mode("overwrite").save(table_path)
    core_write(table_path, data(("e", 7, "b1-7")), "b1")
    core_write(table_path, data(("f", 8, "e-8")), "empty")
    b1 = sorted([("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "b1-3"), ("d", 6, "b1-6"), ("e", 7, "b1-7")]
                + ([] if pk else [("b", 3, "m3")]))
    check({"main": main, "b1": b1, "empty": [("f", 8, "e-8")]})
    # the branches' snapshots: b1 continues from the tagged snapshot 1, `empty` starts at 1
    assert Table.load(table_path, {"branch": "b1"}).snapshot_manager.list_ids() == [1, 2, 3, 4]
    assert Table.load(table_path, {"branch": "empty"}).snapshot_manager.list_ids() == [1]

    # fallback: main lacks d, e (and f): they come from the fallback branch; a, b, c stay main's
    commit_changes(table_path, SetOption("scan.fallback-branch", "b1"))
    fallback = sorted(main + [r for r in b1 if r[0] not in {"a", "b", "c"}])
    assert ours(spark, table_path) == fallback
    assert rows(java_oracle.read(table_path)) == fallback
    theirs, _ = oracle_reads(pypaimon_oracle, table_path, ["main", "b1"], tmp_path)
    assert theirs["main"] == main  # pypaimon 2.1 has no fallback reads: its two branches give the same view
    assert sorted(theirs["main"] + [r for r in theirs["b1"] if r[0] not in {"a", "b", "c"}]) == fallback
    # a filter on a partition main lacks reads it from b1; the fallback branch itself reads as before
    assert rows(Table.load(table_path).to_arrow(_eq("dt", "d"))) == [("d", 6, "b1-6")]
    assert sorted(tuple(r) for r in spark.read.format("paimon").load(table_path).where("dt = 'e'")
                  .select("dt", "id", "v").collect()) == [("e", 7, "b1-7")]
    assert ours(spark, table_path, "b1") == b1

    # fast-forward: main becomes b1 (snapshots 2.. of main replaced by b1's), fallback still set on main
    commit_changes(table_path, RemoveOption("scan.fallback-branch"))
    procedures.fast_forward(table_path, "b1")
    check({"main": b1, "b1": b1, "empty": [("f", 8, "e-8")]})
    assert rows(java_oracle.read(table_path)) == b1
    assert Table.load(table_path).snapshot_manager.list_ids() == [1, 2, 3, 4]
    spark_write(spark, table_path, data(("g", 9, "m9")))  # main goes on from b1's snapshot 4
    assert Table.load(table_path).latest_snapshot().id == 5
    check({"main": sorted(b1 + [("g", 9, "m9")]), "b1": b1})


def _eq(column: str, value):
    from paimon_ds.predicate.predicates import Leaf
    return Leaf("=", column, (value,))


def test_sql_branch_procedures(spark, tmp_path, pypaimon_oracle):
    """CALL sys.create_branch / delete_branch / rename_branch / fast_forward with Paimon's argument names, on
    `db.t` and `db.t$branch_<name>`; pypaimon lists and reads the result."""
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    paimon_ds.sql(spark, "CREATE DATABASE IF NOT EXISTS brsql")
    paimon_ds.sql(spark, "CREATE TABLE brsql.t (dt STRING NOT NULL, id BIGINT NOT NULL, v STRING) "
                         "PARTITIONED BY (dt)")
    spark.sql("INSERT INTO brsql.t VALUES ('a', 1, 'm1')")
    path = f"{warehouse}/brsql.db/t"
    paimon_ds.sql(spark, "CALL sys.create_tag(table => 'brsql.t', tag => 't1')")
    out = paimon_ds.sql(spark, "CALL sys.create_branch(table => 'brsql.t', branch => 'b1', tag => 't1')")
    assert out.collect()[0].result is True
    paimon_ds.sql(spark, "CALL sys.create_branch('brsql.t', 'b2')")
    paimon_ds.sql(spark, "CALL sys.create_branch(table => 'brsql.t', branch => 'b2', ignoreIfExists => 'true')")
    spark.sql("INSERT INTO brsql.t WITH ('branch' = 'b1') VALUES ('b', 2, 'b1-2')")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM brsql.t WITH ('branch' = 'b1')").collect()) == [
        ("a", 1, "m1"), ("b", 2, "b1-2")]
    # a branch's own tag, and a branch made from it
    paimon_ds.sql(spark, "CALL sys.create_tag(table => 'brsql.t$branch_b1', tag => 'bt')")
    paimon_ds.sql(spark, "CALL sys.create_branch(table => 'brsql.t$branch_b1', branch => 'b3', tag => 'bt')")
    paimon_ds.sql(spark, "CALL sys.rename_branch(table => 'brsql.t', from_branch => 'b3', to_branch => 'b4')")
    paimon_ds.sql(spark, "CALL sys.delete_branch(table => 'brsql.t', branch => 'b2')")
    assert procedures.list_branches(path) == ["b1", "b4"]
    theirs, listed = oracle_reads(pypaimon_oracle, path, ["main", "b1", "b4"], tmp_path)
    assert listed == ["b1", "b4"]
    assert theirs == {"main": [("a", 1, "m1")], "b1": [("a", 1, "m1"), ("b", 2, "b1-2")],
                      "b4": [("a", 1, "m1"), ("b", 2, "b1-2")]}
    paimon_ds.sql(spark, "CALL sys.fast_forward(table => 'brsql.t', branch => 'b1')")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM brsql.t").collect()) == theirs["b1"]
    assert rows(pypaimon_oracle.read(path)) == theirs["b1"]


def test_streams_into_and_out_of_a_branch(spark, table_path, tmp_path, pypaimon_oracle):
    """writeStream.format("paimon").option("branch", ...) commits each micro-batch to the branch (exactly once per
    batch id, under the branch's own snapshots); readStream with the option reads the branch's changes."""
    spark_write(spark, table_path, data(("a", 1, "m1")))
    procedures.create_branch(table_path, "b1")
    source = tmp_path / "in"
    source.mkdir()
    for i, triple in enumerate([("b", 2, "s2"), ("c", 3, "s3")]):
        pq.write_table(data(triple), source / f"part-{i}.parquet")
    stream = spark.readStream.schema("dt string, id bigint, v string").option("maxFilesPerTrigger", 1) \
        .parquet(str(source))
    q = stream.writeStream.format("paimon").option("branch", "b1") \
        .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start(table_path)
    try:
        q.awaitTermination()
    finally:
        q.stop()
    expected = [("b", 2, "s2"), ("c", 3, "s3")]
    assert ours(spark, table_path, "b1") == expected
    assert oracle_reads(pypaimon_oracle, table_path, ["b1"], tmp_path)[0]["b1"] == expected
    assert Table.load(table_path, {"branch": "b1"}).snapshot_manager.list_ids() == [1, 2]
    assert ours(spark, table_path) == [("a", 1, "m1")]

    out = spark.readStream.format("paimon").option("branch", "b1").load(table_path) \
        .writeStream.format("memory").queryName("branch_stream").trigger(availableNow=True).start()
    try:
        out.awaitTermination()
    finally:
        out.stop()
    assert sorted(tuple(r) for r in spark.table("branch_stream").select("dt", "id", "v").collect()) == expected
