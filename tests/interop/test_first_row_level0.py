"""Level 0 of first-row (and deletion-vector) tables: invisible to batch reads, as in Paimon.

Paimon's batch scans skip level 0 of a first-row table (CoreOptions.batchScanSkipLevel0): its writers
lift level 0 with lookup compaction, and until they do, the rows there are not shown. Java Paimon 0.9
writes such tables here with its own writer: commits with `write-only=true` leave level-0 files, the
others compact them up; paimon_ds must read every snapshot exactly as Java does, for parquet, ORC and
Avro data files, through the core and Spark. Streams start, as Paimon 1.3+ plans them, from the levels
above 0 with the lookup changelog producer and from every level otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from conftest import sort_table

import paimon_ds
from paimon_ds import Table
from paimon_ds.operation.read import TableRead
from paimon_ds.operation.scan import TableScan
from paimon_ds.operation.stream import StreamScan

from .java_stream import java_stream_plans

# Creates a first-row table (id INT, p STRING partition, v STRING; primary key id, p) and commits each
# (rows, write_only) of COMMITS with Paimon's own batch writer, `write-only` set per commit on a copy of
# the table: without it the writer's lookup compaction lifts level 0 before the commit (ForceUpLevel0).
FIRST_ROW_WRITES = '''
import pyarrow as pa
from pypaimon import Schema
catalog.create_database(ident.split(".")[0], True)
catalog.create_table(ident, Schema(
    pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
               ("v", pa.string())]),
    partition_keys=["p"], primary_keys=["id", "p"], options=OPTIONS), True)
base = catalog.get_table(ident)._j_table
P = jvm.org.apache.paimon
io = P.disk.IOManager.create(TMP)
for rows, write_only in COMMITS:
    t = base.copy({"write-only": "true" if write_only else "false"})
    wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
    w = wb.newWrite().withIOManager(io)
    c = wb.newCommit()
    for i, p, v in rows:
        r = P.data.GenericRow(3)
        r.setField(0, i)
        r.setField(1, P.data.BinaryString.fromString(p))
        r.setField(2, P.data.BinaryString.fromString(v))
        w.write(r)
    c.commit(w.prepareCommit())
    w.close()
    c.close()
'''


def java_writes(java_oracle, path: str, commits: list, options: dict[str, str], tmp: Path) -> None:
    java_oracle.exec(path, FIRST_ROW_WRITES.replace("OPTIONS", repr(options)).replace("COMMITS", repr(commits))
                     .replace("TMP", repr(str(tmp))))


def keyed(lo: int, hi: int, tag: str) -> list[tuple[int, str, str]]:
    return [(i, p, f"{tag}-{p}{i}") for i in range(lo, hi) for p in ("a", "b")]


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["p"], r["v"]) for r in t.to_pylist())


def levels(path: str, snapshot_id: int | None = None) -> list[int]:
    t = Table.load(path)
    snap = t.snapshot_manager.snapshot(snapshot_id) if snapshot_id else t.latest_snapshot()
    return sorted(e.file.level for e in TableScan(t).read_entries(snap))


def first_rows(commits: list, upto: int) -> list[tuple]:
    """The model: each key's first value among the commits whose rows were lifted out of level 0 (a
    compacting commit lifts every earlier commit's level-0 files with its own)."""
    last_lift = max((i for i, (_, write_only) in enumerate(commits[:upto]) if not write_only), default=-1)
    first: dict[tuple, str] = {}
    for written, _ in commits[:last_lift + 1]:
        for i, p, v in written:
            first.setdefault((i, p), v)
    return sorted((i, p, v) for (i, p), v in first.items())


# compacting and write-only commits in turn: snapshots with level 0 on top of level 5, and with none
COMMITS = [(keyed(0, 40, "c1"), False), (keyed(20, 60, "c2"), True), (keyed(50, 80, "c3"), True),
           (keyed(70, 90, "c4"), False), (keyed(85, 100, "c5"), True)]


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_java_first_row_table_with_level0_reads_as_java(java_oracle, spark, tmp_path, file_format):
    path = str(tmp_path / "wh/db.db/fr")
    java_writes(java_oracle, path, COMMITS, {"merge-engine": "first-row", "bucket": "2", "file.format": file_format},
                tmp_path / "io")
    assert 0 in levels(path) and any(lv > 0 for lv in levels(path)), "the scenario needs level 0 above level 5"
    assert all(f.file_name.endswith(f".{file_format}") for s in Table.load(path).new_scan().plan() for f in s.files)
    sm = Table.load(path).snapshot_manager
    level0_seen = 0
    for sid in sm.list_ids():
        ours = Table.load(path, {"scan.snapshot-id": str(sid)}).to_arrow()
        java = java_oracle.read(path, snapshot=sid)
        assert sort_table(ours).equals(sort_table(java.cast(ours.schema))), f"snapshot {sid}"
        level0_seen += 0 in levels(path, sid)
    assert level0_seen >= 4
    # the latest snapshot (level 0 of commit 5 on top): the first value of every key the compactions lifted
    expected = first_rows(COMMITS, len(COMMITS))
    assert len(expected) == 180 and rows(Table.load(path).to_arrow()) == expected
    assert sorted((r.id, r.p, r.v) for r in spark.read.format("paimon").load(path).collect()) == expected
    # a snapshot whose level 0 holds two commits (3 and 4 of Java's: the write-only ones), by time travel
    expected_4 = first_rows(COMMITS, 3)
    assert len(expected_4) == 80
    assert sorted((r.id, r.p, r.v) for r in spark.read.format("paimon").option("scan.snapshot-id", "5")
                  .load(path).collect()) == expected_4
    # the rows as `$audit_log` shows them: every visible row an insert
    audit = spark.read.format("paimon").option("paimon_ds.row-kind-column", "rowkind").load(path).collect()
    assert sorted((r.rowkind, r.id, r.p, r.v) for r in audit) == [("+I", *r) for r in expected]


def test_pypaimon_first_row_table_at_level0_is_empty_to_readers(pypaimon_oracle, spark, table_path):
    """pypaimon 2.1 writes first-row tables without compacting: everything stays in level 0, which its
    reader (and Paimon's) does not show."""
    data = pa.table({"id": pa.array(range(6), pa.int32()), "p": ["a", "b"] * 3, "v": [f"v{i}" for i in range(6)]})
    for _ in range(2):
        pypaimon_oracle.write(table_path, data, primary_key="id,p", partition="p",
                              options={"merge-engine": "first-row", "bucket": "2"})
    assert set(levels(table_path)) == {0}
    assert pypaimon_oracle.read(table_path).num_rows == 0
    assert Table.load(table_path).to_arrow().num_rows == 0
    assert spark.read.format("paimon").load(table_path).count() == 0


def test_paimon_ds_continues_a_java_first_row_table_holding_level0(java_oracle, spark, tmp_path):
    """A paimon_ds write into a bucket with Java's level-0 files lifts them with its own (its committer owns
    level 0 of first-row tables): the Java rows, written first, win; Java then reads what paimon_ds reads."""
    path = str(tmp_path / "wh/db.db/fr")
    commits = COMMITS[:3]
    java_writes(java_oracle, path, commits, {"merge-engine": "first-row", "bucket": "2"}, tmp_path / "io")
    assert 0 in levels(path)
    ours_rows = keyed(55, 110, "ds")
    df = spark.createDataFrame([{"id": i, "p": p, "v": v} for i, p, v in ours_rows], "id int, p string, v string")
    df.write.format("paimon").mode("append").save(path)
    assert 0 not in levels(path)
    first: dict[tuple, str] = {}
    for written, _ in [*commits, (ours_rows, False)]:
        for i, p, v in written:
            first.setdefault((i, p), v)
    expected = sorted((i, p, v) for (i, p), v in first.items())
    assert rows(Table.load(path).to_arrow()) == expected
    assert sorted((r.id, r.p, r.v) for r in spark.read.format("paimon").load(path).collect()) == expected
    assert rows(java_oracle.read(path)) == expected


def paimon_ds_stream(spark, tmp_path: Path, path: str, options: dict[str, str]) -> tuple[list[tuple], list[tuple]]:
    """(core, Spark) streaming reads of ``path`` up to its latest snapshot: (full scan?, kind, id, p, v) rows."""
    table = Table.load(path, options)
    scan = StreamScan(table)
    scan.check_streamable()
    start = scan.initial_position()
    read = TableRead(table, row_kind_column="rowkind")
    core = []
    for s in scan.splits_between(start, scan.latest_position(start)):
        for b in read.read(s.split, delta=s.delta, changelog=s.changelog):
            core += [(not s.delta, r["rowkind"], r["id"], r["p"], r["v"]) for r in b.to_pylist()]
    out = tmp_path / f"stream-{len(list(tmp_path.iterdir()))}"
    df = spark.readStream.format("paimon").options(**options).option("paimon_ds.row-kind-column", "rowkind").load(path)
    q = (df.writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(out) + "-ck").trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    got = spark.read.parquet(str(out)).collect() if out.exists() else []
    return sorted(core), sorted((r.rowkind, r.id, r.p, r.v) for r in got)


@pytest.mark.parametrize("start", [None, 3])
def test_first_row_stream_with_lookup_changelog_reads_as_java(java_oracle, spark, tmp_path, start):
    """First-row tables stream only with a changelog (as Paimon refuses otherwise). With `lookup`, Paimon's
    stream starts from the levels above 0 (their rows reach the changelog when compaction lifts them) and
    then reads each snapshot's changelog."""
    path = str(tmp_path / "wh/db.db/fr")
    commits = [(keyed(0, 4, "c1"), False), (keyed(2, 6, "c2"), True), (keyed(5, 8, "c3"), False),
               (keyed(7, 10, "c4"), True)]
    java_writes(java_oracle, path, commits, {"merge-engine": "first-row", "bucket": "1",
                                             "changelog-producer": "lookup"}, tmp_path / "io")
    assert 0 in levels(path) and 0 in levels(path, 3)
    options = {} if start is None else {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(start)}
    java = java_stream_plans(java_oracle, path, options)
    core, spark_rows = paimon_ds_stream(spark, tmp_path, path, options)
    assert core == sorted((plan == 0, kind, i, p, v) for plan, kind, i, p, v in java)
    assert spark_rows == sorted((kind, i, p, v) for _, kind, i, p, v in java)
    if start is None:  # from the latest: only the lifted rows, level 0 (commit 4's new keys) not yet
        assert sorted(r[2:] for r in core) == first_rows(commits, 4)
    else:  # snapshot 3 is commit 2 on level 0: the full scan shows commit 1, then commit 3's lift emits the rest
        assert sorted(r[2:] for r in core if r[0]) == first_rows(commits, 1)
        lifted_later = set(first_rows(commits, 3)) - set(first_rows(commits, 1))
        assert sorted(r[2:] for r in core if not r[0]) == sorted(lifted_later)


def test_first_row_stream_without_changelog_is_refused(java_oracle, spark, tmp_path):
    path = str(tmp_path / "wh/db.db/fr")
    java_writes(java_oracle, path, COMMITS[:2], {"merge-engine": "first-row", "bucket": "1"}, tmp_path / "io")
    with pytest.raises(paimon_ds.options.registry.OptionError, match="first-row table need a changelog"):
        StreamScan(Table.load(path)).check_streamable()
