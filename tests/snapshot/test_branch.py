"""Branches in the core: bad input refused with nothing changed, maintenance that keeps what a branch uses,
and the exact semantics of `scan.fallback-branch` (Paimon 1.x's FallbackReadFileStoreTable).

Reads go through the core and Spark; Java Paimon 0.9 (which has fallback reads) and pypaimon 2.1 (which
reads branches) check the rows where they implement the feature.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Table, procedures
from paimon_ds.catalog import Catalog, CatalogError
from paimon_ds.cli import main as cli
from paimon_ds.operation import maintenance
from paimon_ds.operation.stream import StreamScan
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.change import AddColumn, SetOption, commit_changes
from paimon_ds.schema.types import DataType, SchemaError
from paimon_ds.snapshot.branch import BranchError, BranchNotFound
from paimon_ds.snapshot.manager import SnapshotNotFound

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])

PP_READ_BRANCH = """
import os, pyarrow.parquet as pq
from pypaimon import CatalogFactory
wh, db = os.path.dirname(os.path.dirname(path)), os.path.basename(os.path.dirname(path))[:-3]
t = CatalogFactory.create({"warehouse": wh}).get_table(f"{db}.{os.path.basename(path)}$branch_{BRANCH}")
rb = t.new_read_builder()
pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), OUT)
"""


def write(path: str, triples: list[tuple], branch: str = "main", overwrite: bool = False, **options: str) -> None:
    table = Table.for_write(path, SCHEMA, {"partition": "dt", **options} if branch == "main" else {"branch": branch})
    w = table.new_write()
    w.write_arrow(pa.table({"dt": [t[0] for t in triples], "id": [t[1] for t in triples],
                            "v": [t[2] for t in triples]}, schema=SCHEMA))
    commit = table.new_commit()
    commit.overwrite(w.prepare_commit()) if overwrite else commit.commit(w.prepare_commit())
    time.sleep(0.005)  # distinct commit times: time travel across branches goes by them


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def read(path: str, branch: str = "main", predicate=None, **options: str) -> list[tuple]:
    return rows(Table.load(path, {"branch": branch, **options}).to_arrow(predicate))


def spark_read(spark, path: str, where: str | None = None, **options: str) -> list[tuple]:
    df = spark.read.format("paimon").options(**options).load(path)
    return sorted(tuple(r) for r in (df.where(where) if where else df).select("dt", "id", "v").collect())


def tree(path: str) -> dict[str, str]:
    """Every file under the table, by relative path, with its content's digest."""
    root = Path(path)
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def pp_branch(oracle, path: str, branch: str, tmp_path: Path) -> list[tuple]:
    out = str(tmp_path / f"pp-{branch}-{time.time_ns()}.parquet")
    oracle.exec(path, f"BRANCH = {branch!r}\nOUT = {out!r}\n{PP_READ_BRANCH}")
    return rows(pq.read_table(out))


@pytest.fixture
def branched(table_path) -> str:
    """main: a, b (snapshot 1, tag t1), then c; b1 from t1 plus d; `empty` with no snapshot."""
    write(table_path, [("a", 1, "m1"), ("b", 2, "m2")])
    procedures.create_tag(table_path, "t1")
    write(table_path, [("c", 3, "m3")])
    procedures.create_branch(table_path, "b1", "t1")
    write(table_path, [("d", 4, "b1-4")], branch="b1")
    procedures.create_branch(table_path, "empty")
    return table_path


# ------------------------------------------------------------------ bad input: clear errors, nothing changed
def test_unknown_branch_is_refused_everywhere_and_changes_nothing(branched, spark):
    path = branched
    before = tree(path)
    with pytest.raises(BranchNotFound, match=r"branch 'nope' does not exist .*branches: main, b1, empty"):
        Table.load(path, {"branch": "nope"})
    with pytest.raises(BranchNotFound, match="branch 'nope' does not exist"):
        write(path, [("x", 9, "x")], branch="nope")
    with pytest.raises(Exception, match="branch 'nope' does not exist"):
        spark_read(spark, path, branch="nope")
    df = spark.createDataFrame([("x", 9, "x")], "dt string, id bigint, v string")
    with pytest.raises(Exception, match="branch 'nope' does not exist"):
        df.write.format("paimon").option("branch", "nope").mode("append").save(path)
    for call in (lambda: procedures.fast_forward(path, "nope"), lambda: procedures.delete_branch(path, "nope"),
                 lambda: procedures.rename_branch(path, "nope", "other")):
        with pytest.raises(BranchNotFound, match="branch 'nope' does not exist"):
            call()
    with pytest.raises(BranchNotFound, match=r"tag 'nope' does not exist in branch 'main' .*tags: t1"):
        procedures.create_branch(path, "b2", "nope")
    with pytest.raises(BranchError, match="a branch .* is written in an existing table only"):
        write(str(Path(path).parent / "new"), [("x", 9, "x")], branch="b1")
    with pytest.raises(CatalogError, match="created on its main branch, not on branch 'b1'"):
        Catalog(str(Path(path).parent.parent)).create_table("db.new", SCHEMA, options={"branch": "b1"})
    assert tree(path) == before
    assert not (Path(path).parent / "new").exists()


@pytest.mark.parametrize("name, message", [
    ("main", "'main' is the default branch"), ("", "is blank"), ("   ", "is blank"),
    ("123", "pure numeric"), ("a/b", "must not contain"), ("a\\b", "must not contain"),
    ("b1", "'b1' already exists")])
def test_branch_names_paimon_refuses(branched, name, message):
    before = tree(branched)
    with pytest.raises(BranchError, match=message):
        procedures.create_branch(branched, name)
    with pytest.raises(BranchError, match=message):
        procedures.create_branch(branched, name, "t1")
    if name != "b1":
        procedures.create_branch(branched, "ok")
        with pytest.raises(BranchError, match=message):
            procedures.rename_branch(branched, "ok", name)
        procedures.delete_branch(branched, "ok")
    assert tree(branched) == before


def test_main_cannot_be_deleted_or_fast_forwarded(branched):
    path = branched
    before = tree(path)
    with pytest.raises(BranchError, match="main branch .* cannot be deleted"):
        procedures.delete_branch(path, "main")
    with pytest.raises(BranchError, match="main branch .* cannot be deleted"):
        procedures.delete_branch(path, "b1,main")  # checked first: b1 is not deleted either
    with pytest.raises(BranchError, match="'main' cannot be fast-forwarded"):
        procedures.fast_forward(path, "main")
    with pytest.raises(BranchError, match="fast-forward from the current branch 'b1'"):
        procedures.fast_forward(Table.load(path, {"branch": "b1"}), "b1")
    with pytest.raises(BranchError, match="cannot fast-forward branch 'empty': it has no snapshot"):
        procedures.fast_forward(path, "empty")
    with pytest.raises(BranchError, match="main branch cannot be renamed"):
        procedures.rename_branch(path, "main", "other")
    commit_changes(path, SetOption("scan.fallback-branch", "b1"))
    before = tree(path)
    with pytest.raises(BranchError, match="configured as 'scan.fallback-branch'"):
        procedures.delete_branch(path, "b1")
    assert tree(path) == before


def test_cli_branch_commands(branched, capsys):
    path = branched
    assert cli(["branches", path]) == 0
    assert capsys.readouterr().out.split() == ["main", "b1", "empty"]
    assert cli(["tag", path, "bt", "--branch", "b1"]) == 0
    assert cli(["branch", path, "b2", "--tag", "bt", "--branch", "b1"]) == 0  # from b1's own tag
    assert "from tag 'bt'" in capsys.readouterr().out
    assert read(path, "b2") == read(path, "b1")
    assert cli(["describe", path, "--branch", "b2"]) == 0
    assert "dt=d" in capsys.readouterr().out
    assert cli(["rename-branch", path, "b2", "b3"]) == 0
    assert cli(["delete-branch", path, "b3,empty"]) == 0
    assert cli(["fast-forward", path, "main"]) == 2  # BranchError: bad input
    assert "'main' cannot be fast-forwarded" in capsys.readouterr().err
    assert cli(["fast-forward", path, "b1"]) == 0
    assert read(path) == read(path, "b1") == [("a", 1, "m1"), ("b", 2, "m2"), ("d", 4, "b1-4")]
    assert procedures.list_branches(path) == ["b1"]


# ------------------------------------------------------------------ maintenance keeps what branches use
def test_expiry_tag_deletion_and_orphan_removal_keep_files_a_branch_uses(branched, pypaimon_oracle, tmp_path):
    path = branched
    b1 = read(path, "b1")
    assert b1 == [("a", 1, "m1"), ("b", 2, "m2"), ("d", 4, "b1-4")]
    # main moves away from the files of t1 (the snapshot b1 started from), then drops the tag and expires
    write(path, [("e", 5, "m5")], overwrite=True)
    write(path, [("f", 6, "m6")])
    procedures.delete_tag(path, "t1")
    result = maintenance.expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    assert result.expired == [1, 2, 3]
    far = int(time.time() * 1000) + 86_400_000
    maintenance.remove_orphan_files(Table.load(path), 0, far)
    assert read(path) == [("e", 5, "m5"), ("f", 6, "m6")]
    assert read(path, "b1") == pp_branch(pypaimon_oracle, path, "b1", tmp_path) == b1
    # without the branch, what only it used is an orphan (Paimon: delete_branch leaves data to orphan removal)
    files_before = {p for p in tree(path) if p.endswith(".parquet")}
    procedures.delete_branch(path, "b1")
    removed = maintenance.remove_orphan_files(Table.load(path), 0, far)
    assert sorted(p for p in removed if p.endswith(".parquet")) == sorted(
        p for p in files_before if p.startswith(("dt=a/", "dt=b/", "dt=d/")))
    assert read(path) == [("e", 5, "m5"), ("f", 6, "m6")]


def test_rollback_keeps_files_a_branch_uses(table_path, pypaimon_oracle, tmp_path):
    path = table_path
    write(path, [("a", 1, "m1")])
    write(path, [("b", 2, "m2")])
    procedures.create_tag(path, "t2")
    write(path, [("c", 3, "m3")])
    procedures.create_branch(path, "b1", "t2")
    procedures.delete_tag(path, "t2")
    procedures.rollback(path, 1)
    assert read(path) == [("a", 1, "m1")]
    expected = [("a", 1, "m1"), ("b", 2, "m2")]
    assert read(path, "b1") == pp_branch(pypaimon_oracle, path, "b1", tmp_path) == expected
    assert not any(p.startswith("dt=c/") for p in tree(path))  # only main's snapshot 3 used it


def test_maintenance_refuses_when_a_branch_cannot_be_read(branched):
    path = branched
    (Path(path) / "branch" / "branch-broken").mkdir()  # a branch whose creation died before its schema
    write(path, [("e", 5, "m5")], overwrite=True)
    before = tree(path)
    with pytest.raises(BranchError, match="branch 'broken' .* cannot be read .* nothing was deleted"):
        maintenance.expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    with pytest.raises(BranchError, match="branch 'broken'"):
        maintenance.remove_orphan_files(Table.load(path), 0, int(time.time() * 1000) + 86_400_000)
    with pytest.raises(BranchError, match="branch 'broken'"):
        procedures.rollback(path, 1)
    with pytest.raises(BranchError, match="branch 'broken'"):
        procedures.delete_tag(path, "t1")
    assert tree(path) == before
    assert read(path, "b1") == [("a", 1, "m1"), ("b", 2, "m2"), ("d", 4, "b1-4")]


# ------------------------------------------------------------------ scan.fallback-branch semantics
def test_fallback_partition_comes_whole_from_one_branch(table_path, java_oracle, spark):
    """A partition main has (by the partition filter alone) is read from main, even when a data filter leaves
    none of its rows; only partitions main lacks come from the fallback branch (Paimon 1.x)."""
    path = table_path
    write(path, [("a", 1, "x")])
    procedures.create_branch(path, "fb")
    write(path, [("a", 2, "y"), ("b", 3, "y"), ("b", 4, "z")], branch="fb")
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    everything = [("a", 1, "x"), ("b", 3, "y"), ("b", 4, "z")]
    assert read(path) == spark_read(spark, path) == rows(java_oracle.read(path)) == everything
    y = Leaf("=", "v", ("y",))
    assert read(path, predicate=y) == spark_read(spark, path, "v = 'y'") == [("b", 3, "y")]
    assert read(path, predicate=Leaf("=", "dt", ("b",))) == spark_read(spark, path, "dt = 'b'") == everything[1:]
    # a dynamic option turns it off (the package's DELETE / UPDATE / MERGE read so)
    assert read(path, **{"scan.fallback-branch": ""}) == [("a", 1, "x")]


def test_fallback_time_travel_goes_by_commit_time(table_path, java_oracle):
    path = table_path
    write(path, [("a", 1, "m1")])                       # main 1
    procedures.create_branch(path, "fb")
    write(path, [("b", 2, "fb2")], branch="fb")         # fb 1
    write(path, [("a", 3, "m3")])                       # main 2
    write(path, [("c", 4, "fb4")], branch="fb")         # fb 2
    write(path, [("b", 5, "m5")])                       # main 3: main has b now
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    expected = {1: [("a", 1, "m1")],  # fb had nothing yet (Paimon would read fb's snapshot 1 here)
                2: [("a", 1, "m1"), ("a", 3, "m3"), ("b", 2, "fb2")],
                3: [("a", 1, "m1"), ("a", 3, "m3"), ("b", 5, "m5"), ("c", 4, "fb4")]}
    for sid, want in expected.items():
        assert read(path, **{"scan.snapshot-id": str(sid)}) == want, sid
    for sid in (2, 3):
        assert rows(java_oracle.read(path, snapshot=sid)) == expected[sid]
    ts = str(Table.load(path).snapshot_manager.snapshot(2).time_millis)
    assert read(path, **{"scan.timestamp-millis": ts}) == expected[2]
    procedures.create_tag(path, "t3")
    with pytest.raises(SnapshotNotFound, match="tag 't3' does not exist in branch 'fb'"):
        read(path, **{"scan.tag-name": "t3"})


def test_fallback_schema_mismatch_and_missing_branch_are_clear_errors(table_path, spark):
    path = table_path
    write(path, [("a", 1, "m1")])
    procedures.create_branch(path, "fb")
    commit_changes(path, AddColumn("extra", DataType("INT")), branch="fb")
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    with pytest.raises(SchemaError, match=r"branches 'main' and 'fb' .* same row type.*fb: dt STRING NOT NULL, "
                                          r"id BIGINT NOT NULL, v STRING, extra INT"):
        read(path)
    with pytest.raises(Exception, match="do not have the same row type"):
        spark_read(spark, path)
    assert read(path, "fb") == []  # the branch itself reads fine
    commit_changes(path, SetOption("scan.fallback-branch", "gone"))
    with pytest.raises(BranchNotFound, match=r"scan.fallback-branch='gone' .* branch 'gone' does not exist"):
        read(path)


def test_fallback_with_other_column_names(table_path, spark):
    """The fallback branch may name its columns differently (Paimon checks types only): a column renamed on one
    branch keeps its field id, by which Paimon 1.x reads it (Java Paimon 0.9 matched names and read nulls)."""
    from paimon_ds.schema.change import RenameColumn
    path = table_path
    write(path, [("a", 1, "m1")])
    procedures.create_branch(path, "fb")
    commit_changes(path, RenameColumn("v", "value"), branch="fb")
    renamed = SCHEMA.set(2, pa.field("value", pa.string()))
    table = Table.for_write(path, renamed, {"branch": "fb"})
    w = table.new_write()
    w.write_arrow(pa.table({"dt": ["b"], "id": [2], "value": ["fb2"]}, schema=renamed))
    table.new_commit().commit(w.prepare_commit())
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    assert read(path) == spark_read(spark, path) == [("a", 1, "m1"), ("b", 2, "fb2")]
    assert read(path, predicate=Leaf("=", "v", ("fb2",))) == [("b", 2, "fb2")]


def test_fallback_of_a_primary_key_table(tmp_path, java_oracle, spark):
    path = str(tmp_path / "wh" / "db.db" / "pk")
    opts = {"primary-key": "dt,id", "bucket": "2"}
    write(path, [("a", 1, "m1"), ("a", 2, "m2")], **opts)
    procedures.create_branch(path, "fb")
    write(path, [("a", 1, "fb1"), ("b", 3, "fb3")], branch="fb")
    write(path, [("b", 3, "fb3'"), ("c", 4, "fb4")], branch="fb")
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    expected = [("a", 1, "m1"), ("a", 2, "m2"), ("b", 3, "fb3'"), ("c", 4, "fb4")]
    assert read(path) == spark_read(spark, path) == rows(java_oracle.read(path)) == expected
    # DELETE acts on the table's own rows: the fallback's are not pulled into main
    paimon_ds.delete(spark, path, "id IN (1, 3)")
    assert read(path, **{"scan.fallback-branch": ""}) == [("a", 2, "m2")]
    assert read(path) == [("a", 2, "m2"), ("b", 3, "fb3'"), ("c", 4, "fb4")]
    assert read(path, "fb") == [("a", 1, "fb1"), ("b", 3, "fb3'"), ("c", 4, "fb4")]


def test_streaming_reads_see_the_table_branch_only(table_path):
    path = table_path
    write(path, [("a", 1, "m1")])
    procedures.create_branch(path, "fb")
    write(path, [("b", 2, "fb2")], branch="fb")
    commit_changes(path, SetOption("scan.fallback-branch", "fb"))
    write(path, [("a", 3, "m3")])
    table = Table.load(path)
    scan = StreamScan(table)
    start = scan.initial_position()
    read_ = table.new_read()
    got = rows(pa.Table.from_batches([b for s in scan.splits_between(start, scan.latest_position(start))
                                      for b in read_.read(s.split)], schema=read_.output_schema))
    assert got == [("a", 1, "m1"), ("a", 3, "m3")]
    assert read(path) == [("a", 1, "m1"), ("a", 3, "m3"), ("b", 2, "fb2")]


# ------------------------------------------------------------------ more of a branch's life
JAVA_READ_BRANCH = """
import pyarrow.parquet as pq
t = catalog.get_table(f"{ident}$branch_{BRANCH}")
rb = t.new_read_builder()
pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), OUT)
"""


def java_branch(oracle, path: str, branch: str, tmp_path: Path) -> list[tuple]:
    out = str(tmp_path / f"java-{branch}-{time.time_ns()}.parquet")
    oracle.exec(path, f"BRANCH = {branch!r}\nOUT = {out!r}\n{JAVA_READ_BRANCH}")
    return rows(pq.read_table(out))


def test_dynamic_bucket_branch_written_through_spark(tmp_path, spark, java_oracle, pypaimon_oracle):
    """A dynamic-bucket primary-key table (bucket=-1): the branch keeps its own hash index (index files are
    shared, the index manifest is the branch snapshot's), so a key updated on the branch stays in its bucket."""
    path = str(tmp_path / "wh" / "db.db" / "dyn")
    columns = "dt string, id bigint, v string"
    spark.createDataFrame([("a", i, f"m{i}") for i in range(20)], columns).write.format("paimon") \
        .option("primary-key", "dt,id").option("partition", "dt").mode("append").save(path)
    procedures.create_tag(path, "t1")
    procedures.create_branch(path, "b1", "t1")
    spark.createDataFrame([("a", i, f"b{i}") for i in range(10, 30)], columns).write.format("paimon") \
        .option("branch", "b1").mode("append").save(path)
    expected = sorted([("a", i, f"m{i}") for i in range(10)] + [("a", i, f"b{i}") for i in range(10, 30)])
    assert read(path, "b1") == spark_read(spark, path, branch="b1") == expected
    assert java_branch(java_oracle, path, "b1", tmp_path) == pp_branch(pypaimon_oracle, path, "b1", tmp_path) \
        == expected
    assert read(path) == sorted(("a", i, f"m{i}") for i in range(20))


def test_merge_schema_and_expiry_on_a_branch(branched, pypaimon_oracle, tmp_path):
    path = branched
    wider = SCHEMA.append(pa.field("extra", pa.int32()))
    table = Table.for_write(path, wider, {"branch": "b1", "write.merge-schema": "true"})
    w = table.new_write()
    w.write_arrow(pa.table({"dt": ["e"], "id": [5], "v": ["b1-5"], "extra": [7]}, schema=wider))
    table.new_commit().commit(w.prepare_commit())
    assert Table.load(path, {"branch": "b1"}).schema().field_names == ["dt", "id", "v", "extra"]
    assert Table.load(path).schema().field_names == ["dt", "id", "v"]  # main's schema is its own
    out = str(tmp_path / "pp.parquet")
    pypaimon_oracle.exec(path, f"BRANCH = 'b1'\nOUT = {out!r}\n{PP_READ_BRANCH}")
    theirs = pq.read_table(out)
    assert sorted(theirs.to_pylist(), key=lambda r: r["id"]) == sorted(
        Table.load(path, {"branch": "b1"}).to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"dt": "a", "id": 1, "v": "m1", "extra": None}, {"dt": "b", "id": 2, "v": "m2", "extra": None},
        {"dt": "d", "id": 4, "v": "b1-4", "extra": None}, {"dt": "e", "id": 5, "v": "b1-5", "extra": 7}]
    # expiring the branch's snapshots keeps main's files, and main's expiry keeps the branch's
    main_rows = read(path)
    b1 = Table.load(path, {"branch": "b1"})
    assert maintenance.expire_snapshots(b1, retain_min=1, retain_max=1).expired == [1, 2]
    write(path, [("c", 3, "m3'")], overwrite=True)
    assert maintenance.expire_snapshots(Table.load(path), retain_min=1, retain_max=1).expired == [1, 2]
    assert rows(Table.load(path, {"branch": "b1"}).to_arrow().select(["dt", "id", "v"])) == [
        ("a", 1, "m1"), ("b", 2, "m2"), ("d", 4, "b1-4"), ("e", 5, "b1-5")]
    assert main_rows == [("a", 1, "m1"), ("b", 2, "m2"), ("c", 3, "m3")]
    assert read(path) == [("c", 3, "m3'")]


def test_branch_system_tables_and_streaming_reads(branched):
    from paimon_ds.readers.system_tables import system_table
    path = branched
    procedures.create_tag(Table.load(path, {"branch": "b1"}), "bt")
    got = system_table(Table.load(path).store, "branches").to_pylist()
    assert [r["branch_name"] for r in got] == ["b1", "empty"]
    assert all(abs(r["create_time"].timestamp() - time.time()) < 600 for r in got)
    assert [r["tag_name"] for r in system_table(Table.load(path).store, "tags").to_pylist()] == ["t1"]
    assert [r["tag_name"] for r in system_table(Table.load(path, {"branch": "b1"}).store, "tags").to_pylist()] == [
        "bt", "t1"]
    assert [r["snapshot_id"] for r in system_table(Table.load(path, {"branch": "b1"}).store, "snapshots")
            .to_pylist()] == [1, 2]
    # a stream of the branch: its full state at its first snapshot, then its own commits
    write(path, [("e", 5, "b1-5")], branch="b1")
    table = Table.load(path, {"branch": "b1", "scan.mode": "from-snapshot-full", "scan.snapshot-id": "1"})
    scan = StreamScan(table)
    start = scan.initial_position()
    read_ = table.new_read()
    got_rows = rows(pa.Table.from_batches([b for s in scan.splits_between(start, scan.latest_position(start))
                                           for b in read_.read(s.split)], schema=read_.output_schema))
    assert got_rows == read(path, "b1") == [("a", 1, "m1"), ("b", 2, "m2"), ("d", 4, "b1-4"), ("e", 5, "b1-5")]
