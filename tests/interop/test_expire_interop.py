"""Expiry after every commit against Java Paimon 0.9: twin tables, the same commits, the same files left.

Java's BatchWriteBuilder commit (TableCommitImpl) runs ExpireSnapshotsImpl, and with a decoupled changelog
ExpireChangelogImpl, after each commit; paimon_ds runs its expiry after each commit through Table.new_commit.
Each scenario writes the same commits to two tables, one through Java's writer, one through paimon_ds, and
compares what is left: the snapshot ids, the EARLIEST hint, the changelog ids and their hints, and every file
(names exactly where they are not random: snapshot/, changelog/, schema/, tag/; else how many of each kind per
directory: data and changelog files per bucket, manifests, manifest lists, index manifests, index files). Java
then reads the paimon_ds table, and streams from a changelog-only id are compared with Java's stream scan.

Commits are appends of a partition's rows and overwrites of a partition (which remove files: the files only
expired snapshots held are what expiry deletes), so that neither writer compacts and both leave one file per
partition and commit; time retention runs on the real clock, in bursts separated by sleeps longer than it
(the final state depends only on the last burst being quicker than the retention).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, write_arrow
from paimon_ds.operation.read import TableRead
from paimon_ds.operation.stream import StreamScan

from .java_stream import java_stream_plans

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])

# Creates the twin table with OPTIONS (primary key PK, partitioned by p) and commits each of COMMITS with Java
# Paimon 0.9's own batch writer: (kind, partition, rows, options), kind "append" or "overwrite" (of the partition),
# options the commit's dynamic table options (a copy of the table, as a job's options).
JAVA_COMMITS = '''
import pyarrow as pa
from pypaimon import Schema
catalog.create_database(ident.split(".")[0], True)
if table is None:
    catalog.create_table(ident, Schema(
        pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                   ("v", pa.string())]),
        partition_keys=["p"], primary_keys=PK, options=OPTIONS), True)
base = catalog.get_table(ident)._j_table
P = jvm.org.apache.paimon
io = P.disk.IOManager.create(TMP)
dynamic = str(base.bucketMode().name()) == "HASH_DYNAMIC"
for kind, partition, rows, options in COMMITS:
    t = base.copy(options) if options else base
    wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
    if kind == "overwrite":
        spec = jvm.java.util.HashMap()
        spec.put("p", partition)
        wb = wb.withOverwrite(spec)
    w = wb.newWrite().withIOManager(io)
    c = wb.newCommit()
    if dynamic:  # dynamic buckets, as Flink's sink of parallelism 1 assigns them (tests/oracles java_dynamic_write)
        assigner = P.index.HashBucketAssigner(t.snapshotManager(), "expire-twin", t.store().newIndexFileHandler(),
                                              1, 1, 0, t.coreOptions().dynamicBucketTargetRowNum())
        extractor = P.table.sink.RowPartitionKeyExtractor(t.schema())
    for i, p, v in rows:
        r = P.data.GenericRow(3)
        r.setField(0, i)
        r.setField(1, P.data.BinaryString.fromString(p))
        r.setField(2, P.data.BinaryString.fromString(v))
        if dynamic:
            w.write(r, assigner.assign(extractor.partition(r), extractor.trimmedPrimaryKey(r).hashCode()))
        else:
            w.write(r)
    c.commit(w.prepareCommit())
    w.close()
    c.close()
'''


def rows(p: str, lo: int, hi: int, tag: str) -> list[tuple[int, str, str]]:
    return [(i, p, f"{tag}-{p}{i}") for i in range(lo, hi)]


def scenario(n: int, options: dict[str, str] | None = None, empty_overwrite: int | None = None) -> list[tuple]:
    """``n`` commits over partitions a, b, c: appends of overlapping keys, and every fourth commit an overwrite
    of a partition (commit ``empty_overwrite`` overwrites partition c with nothing); each with ``options``."""
    out: list[tuple] = []
    for k in range(n):
        p = "abc"[k % 3]
        if k == empty_overwrite:
            out.append(("overwrite", "c", [], options or {}))
        elif k % 4 == 3:
            out.append(("overwrite", p, rows(p, 0, 3, f"o{k}"), options or {}))
        else:
            out.append(("append", None, rows(p, k * 2, k * 2 + 4, f"c{k}"), options or {}))
    return out


class Twins:
    """A table written by paimon_ds and its twin written by Java Paimon 0.9, with the same options."""

    def __init__(self, tmp_path: Path, java_oracle, options: dict[str, str], primary_key: list[str]) -> None:
        warehouse = tmp_path / "warehouse" / "db.db"
        warehouse.mkdir(parents=True, exist_ok=True)
        self.ours, self.java = str(warehouse / "ours"), str(warehouse / "java")
        self.oracle, self.options, self.primary_key, self.tmp = java_oracle, options, primary_key, tmp_path
        write_arrow(self.ours, pa.table({"id": [], "p": [], "v": []}, schema=SCHEMA), partition_by="p",
                    primary_key=primary_key or None, options=options)  # the table, without a snapshot

    def commit(self, commits: list[tuple]) -> None:
        """The commits, on paimon_ds's table, then on Java's."""
        for kind, partition, written, options in commits:
            data = pa.table({"id": [r[0] for r in written], "p": [r[1] for r in written],
                             "v": [r[2] for r in written]}, schema=SCHEMA)
            table = Table.load(self.ours, options)
            if kind == "overwrite":
                table.overwrite(data, partition={"p": partition})
            else:
                table.append(data)
        self.oracle.exec(self.java, JAVA_COMMITS.replace("OPTIONS", repr(self.options))
                         .replace("PK", repr(self.primary_key)).replace("COMMITS", repr(commits))
                         .replace("TMP", repr(str(self.tmp))))

    def assert_same_files(self) -> None:
        assert layout(self.ours) == layout(self.java)


def layout(path: str) -> dict:
    """What a table leaves on disk: exact names where they are not random, else counts per directory and kind;
    its directories; the hints."""
    root = Path(path)
    exact, counted, dirs = set(), Counter(), set()
    for f in root.rglob("*"):
        rel = f.relative_to(root).as_posix()
        if f.is_dir():
            dirs.add(rel)
            continue
        top = rel.split("/")[0]
        if top in ("snapshot", "changelog", "schema", "tag", "consumer"):
            exact.add(rel)
        elif top == "manifest":
            kind = re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+$", "", f.name)
            counted[f"manifest/{kind}"] += 1
        else:
            kind = f.name.split("-")[0]  # data, changelog, index
            counted[f"{f.parent.relative_to(root).as_posix()}/{kind}"] += 1
    hints = {f"{d}/{h}": (root / d / h).read_text() for d in ("snapshot", "changelog") for h in ("EARLIEST", "LATEST")
             if (root / d / h).exists()}
    return {"exact": sorted(exact), "counted": dict(sorted(counted.items())), "dirs": sorted(dirs), "hints": hints}


def ids(path: str, directory: str, prefix: str) -> list[int]:
    d = Path(path) / directory
    return sorted(int(f.name[len(prefix):]) for f in d.glob(f"{prefix}*")) if d.exists() else []


def our_stream(path: str, options: dict[str, str]) -> list[tuple]:
    """paimon_ds's streaming read of ``path`` up to its latest snapshot: (kind, id, p, v) rows."""
    table = Table.load(path, options)
    scan = StreamScan(table)
    start = scan.initial_position()
    read = TableRead(table, row_kind_column="rowkind")
    out = []
    for s in scan.splits_between(start, scan.latest_position(start)):
        for b in read.read(s.split, delta=s.delta, changelog=s.changelog):
            out += [(r["rowkind"], r["id"], r["p"], r["v"]) for r in b.to_pylist()]
    return sorted(out)


def java_stream(java_oracle, path: str, options: dict[str, str]) -> list[tuple]:
    return sorted(r[1:] for r in java_stream_plans(java_oracle, path, options))


def test_time_retained_min_and_limit_leave_what_java_leaves(tmp_path, java_oracle):
    """`snapshot.time-retained` 2 s, `snapshot.num-retained.min` 3, the default `snapshot.expire.limit` (10):
    12 quick commits, a pause, 5 commits, a pause, 3 commits. The first commit after the first pause may expire
    snapshots 1-10 only (the limit), the next ones the rest of the old burst, then the young stay; after the
    second pause min 3 is what keeps snapshots: 18, 19, 20 remain, EARLIEST 18, and with them exactly the files
    Java leaves."""
    twins = Twins(tmp_path, java_oracle, {"snapshot.time-retained": "2 s", "snapshot.num-retained.min": "3"}, [])
    commits = scenario(20)
    twins.commit(commits[:12])
    assert ids(twins.ours, "snapshot", "snapshot-") == list(range(1, 13))
    time.sleep(2.3)
    twins.commit(commits[12:17])
    assert ids(twins.ours, "snapshot", "snapshot-") == list(range(13, 18))
    time.sleep(2.3)
    twins.commit(commits[17:])
    assert ids(twins.ours, "snapshot", "snapshot-") == [18, 19, 20]
    assert (Path(twins.ours) / "snapshot/EARLIEST").read_text() == "18"
    twins.assert_same_files()


def test_num_retained_max_leaves_what_java_leaves(tmp_path, java_oracle):
    """`snapshot.num-retained.max` 5 (min 2): each commit expires the snapshot beyond the fifth, whatever its age.
    35 commits: past the 30 manifests at which a commit merges them (`manifest.merge-min-count`), whose inputs
    expire with the snapshots that held them."""
    twins = Twins(tmp_path, java_oracle, {"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "2"}, [])
    twins.commit(scenario(35))
    assert ids(twins.ours, "snapshot", "snapshot-") == [31, 32, 33, 34, 35]
    assert (Path(twins.ours) / "snapshot/EARLIEST").read_text() == "31"
    twins.assert_same_files()
    ours = sorted(Table.load(twins.ours).to_arrow().to_pylist(), key=lambda r: (r["p"], r["id"]))
    assert ours == sorted(Table.load(twins.java).to_arrow().to_pylist(), key=lambda r: (r["p"], r["id"]))
    assert ours == sorted(java_oracle.read(twins.ours).to_pylist(), key=lambda r: (r["p"], r["id"]))


def test_expire_limit_and_empty_directories_leave_what_java_leaves(tmp_path, java_oracle):
    """12 commits keep every snapshot (the defaults: min 10, 1 h); then the commits' options ask for at most 3,
    with `snapshot.expire.limit` 2: each commit expires 2 of the 10 due, so the expiry catches up over the next
    commits (17-20 remain, not 18-20). Partition z is overwritten with nothing at commit 11; with
    `snapshot.clean-empty-directories` its file goes with the snapshots that held it, and so do its directories."""
    twins = Twins(tmp_path, java_oracle, {}, [])
    later = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1", "snapshot.expire.limit": "2",
             "snapshot.clean-empty-directories": "true"}
    # (Java's core overwrite is dynamic unless told: an empty one would change nothing)
    commits = [("append", None, rows("z", 0, 2, "z"), {})] + scenario(10) + \
        [("overwrite", "z", [], {"dynamic-partition-overwrite": "false"})] + scenario(8, later)
    twins.commit(commits)
    assert ids(twins.ours, "snapshot", "snapshot-") == [17, 18, 19, 20]
    assert not (Path(twins.ours) / "p=z").exists()
    twins.assert_same_files()


@pytest.mark.parametrize("primary_key", [["id", "p"], []], ids=["input-changelog", "append"])
def test_decoupled_changelog_leaves_what_java_leaves_and_streams_as_java(tmp_path, java_oracle, primary_key):
    """`changelog.num-retained.max` 8 above `snapshot.num-retained.max` 4 (min 2): expired snapshots leave
    changelog-<id> (the snapshot's JSON) and their changelog files (a primary-key table with the input changelog
    producer) or their appended files and manifest lists (an append table); the changelog expiry removes them
    from the ninth back. After 20 commits: snapshots 17-20, changelogs 13-16, the same files as Java's. A stream
    from 14, a changelog-only id, reads the changelogs then the snapshots, as Java's stream scan reads it."""
    options = {"snapshot.num-retained.max": "4", "snapshot.num-retained.min": "2", "changelog.num-retained.max": "8"}
    if primary_key:  # one bucket that never compacts: each commit adds a data file and a changelog file
        options.update({"changelog-producer": "input", "bucket": "1", "num-sorted-run.compaction-trigger": "50"})
    twins = Twins(tmp_path, java_oracle, options, primary_key)
    twins.commit(scenario(20))
    assert ids(twins.ours, "snapshot", "snapshot-") == [17, 18, 19, 20]
    assert ids(twins.ours, "changelog", "changelog-") == [13, 14, 15, 16]
    twins.assert_same_files()
    changelog = json.loads((Path(twins.ours) / "changelog/changelog-14").read_text())
    assert changelog["id"] == 14 and changelog["commitKind"] == "APPEND"

    scan = {"scan.mode": "from-snapshot", "scan.snapshot-id": "14"}
    expected = java_stream(java_oracle, twins.ours, scan)
    assert expected == java_stream(java_oracle, twins.java, scan)
    assert our_stream(twins.ours, scan) == expected
    assert our_stream(twins.java, scan) == expected
    assert {r[2] for r in expected} == {"a", "b", "c"}  # the rows of commits 14-20 (overwrites skipped)


def test_index_files_only_expired_snapshots_held_go_as_in_java(tmp_path, java_oracle):
    """A dynamic-bucket table: each commit writes a new hash index file for the buckets it touched and the index
    manifest drops the bucket's old one; expiry deletes the index files and index manifests only expired
    snapshots held (`snapshot.num-retained.max` 3), as Java's."""
    options = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1", "bucket": "-1",
               "dynamic-bucket.target-row-num": "4", "num-sorted-run.compaction-trigger": "50"}
    twins = Twins(tmp_path, java_oracle, options, ["id", "p"])
    commits = [("append", None, rows("ab"[k % 2], k * 3, k * 3 + 5, f"c{k}"), {}) for k in range(10)]
    twins.commit(commits)
    assert ids(twins.ours, "snapshot", "snapshot-") == [8, 9, 10]
    found = layout(twins.ours)
    assert found["counted"]["index/index"] > 0 and found["counted"]["manifest/index-manifest"] == 3
    twins.assert_same_files()
    assert sorted(Table.load(twins.ours).to_arrow().to_pylist(), key=lambda r: (r["p"], r["id"])) == \
        sorted(java_oracle.read(twins.ours).to_pylist(), key=lambda r: (r["p"], r["id"]))

