"""Automatic tags against a Java twin: the same commits made through Java Paimon 0.9's own commit (its TableCommitImpl
runs TagAutoManager after each commit) and through paimon_ds leave the same tags on the same snapshots; Java reads
paimon_ds's tags (their rows, their retention times: Java's TagTimeExpire deletes a tag of paimon_ds's once its
retention passed, and paimon_ds deletes Java's).

Watermark tags need snapshots with watermarks, which only Java's committer writes here: the twin's snapshots are
Java's commits with their watermarks, made with tag creation switched off for that commit (a dynamic option), and
then one paimon_ds commit tags them all, as Java's committers tagged the other table commit by commit.
"""

from __future__ import annotations

import datetime as dt
import json
import time

import pyarrow as pa

from paimon_ds import Table, write_arrow
from paimon_ds.operation.maintenance import create_tag
from paimon_ds.snapshot.manager import tag_retention

# Commits rows (id INT) to table NAME through Paimon's own TableCommitImpl, one commit per (rows, watermark), a new
# committer each (as a batch job's); TAGS_OFF: with tag creation off for these commits
JAVA_WATERMARK_COMMITS = '''
P = jvm.org.apache.paimon
base = catalog.get_table("db." + NAME)._j_table
j = base.copy({"tag.automatic-creation": "none"}) if TAGS_OFF else base
for n, (ids, watermark) in enumerate(COMMITS, 1):
    wb = jvm.InvocationUtil.getBatchWriteBuilder(j)
    w = wb.newWrite()
    for i in ids:
        r = P.data.GenericRow(1)
        r.setField(0, i)
        w.write(r)
    committable = P.manifest.ManifestCommittable(n, watermark)
    for m in w.prepareCommit():
        committable.addFileCommittable(m)
    c = j.newCommit("java-" + str(n))
    c.commit(committable)
    c.close()
    w.close()
'''

JAVA_CREATE = '''
import pyarrow as pa
from pypaimon import Schema
catalog.create_database("db", True)
for name, options in TABLES.items():
    catalog.create_table("db." + name, Schema(pa.schema([("id", pa.int32())]), options=options), True)
'''

# Java's commit of one row to each table (a batch commit: its committer's maintenance runs)
JAVA_APPEND = '''
import pyarrow as pa
for name in NAMES:
    commit_arrow(catalog.get_table("db." + name), pa.table({"id": pa.array([100], pa.int32())}))
'''

# Java's view of each table's tags: name -> (snapshot id, rows read through the tag, time retained)
JAVA_TAGS = '''
import json
from pypaimon.py4j.java_implementation import Table as JavaTable
out = {}
for name in NAMES:
    t = catalog.get_table("db." + name)
    tags = {}
    manager = t._j_table.tagManager()
    for pair in manager.tagObjects():
        tag, tag_name = pair.getLeft(), pair.getRight()
        read = JavaTable(t._j_table.copy({"scan.tag-name": tag_name}), t._catalog_options)
        rb = read.new_read_builder()
        ids = sorted(r["id"] for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
        retained = tag.getTagTimeRetained()
        tags[tag_name] = [tag.id(), ids, None if retained is None else retained.toMillis()]
    out[name] = tags
print(json.dumps(out))
'''

WATERMARKS = ["00:30", "01:10", "02:20", "03:05", "05:40"]


def utc_millis(hhmm: str) -> int:
    return int(dt.datetime.fromisoformat(f"2024-01-01T{hhmm}").replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def java_tags(java_oracle, wh, names: list[str]) -> dict:
    out = java_oracle.exec(str(wh / names[0]), JAVA_TAGS.replace("NAMES", repr(names)))
    return json.loads(out.strip().splitlines()[-1])


def tags(path) -> dict[str, int]:
    sm = Table.load(str(path)).snapshot_manager
    return {n: sm.tag(n).id for n in sm.tag_names()}


def test_watermark_tags_match_javas(java_oracle, tmp_path):
    wh = tmp_path / "wh" / "db.db"
    configs = {
        "hourly": {"tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                   "tag.num-retained-max": "3"},
        "completed": {"tag.automatic-creation": "watermark", "tag.creation-period": "two-hours",
                      "tag.creation-delay": "10 min", "tag.automatic-completion": "true"},
    }
    tables = {**{f"java_{k}": v for k, v in configs.items()}, **{f"ours_{k}": v for k, v in configs.items()}}
    java_oracle.exec(str(wh / "java_hourly"), JAVA_CREATE.replace("TABLES", repr(tables)))
    commits = [([i], utc_millis(w)) for i, w in enumerate(WATERMARKS)]
    for name in configs:
        # Java's committers tag the java_ table commit by commit; the ours_ table gets the same snapshots untagged
        for prefix, off in (("java_", False), ("ours_", True)):
            java_oracle.exec(str(wh / f"{prefix}{name}"), JAVA_WATERMARK_COMMITS.replace("NAME", repr(prefix + name))
                             .replace("TAGS_OFF", repr(off)).replace("COMMITS", repr(commits)))
        assert tags(wh / f"ours_{name}") == {}
        Table.load(str(wh / f"ours_{name}")).append(pa.table({"id": pa.array([100], pa.int32())}))
    java_oracle.exec(str(wh / "java_hourly"), JAVA_APPEND.replace("NAMES", repr([f"java_{k}" for k in configs])))
    assert tags(wh / "java_hourly") == tags(wh / "ours_hourly") == {
        "2024-01-01 01": 3, "2024-01-01 02": 4, "2024-01-01 04": 5}
    assert tags(wh / "java_completed") == tags(wh / "ours_completed") == {
        "2023-12-31 22": 1, "2024-01-01 00": 3, "2024-01-01 02": 5}
    # Java reads paimon_ds's tags, their rows as of their snapshots
    seen = java_tags(java_oracle, wh, [f"ours_{k}" for k in configs])
    assert seen["ours_hourly"] == {"2024-01-01 01": [3, [0, 1, 2], None], "2024-01-01 02": [4, [0, 1, 2, 3], None],
                                   "2024-01-01 04": [5, [0, 1, 2, 3, 4], None]}


def test_process_time_tags_and_retention_times_match_javas(java_oracle, tmp_path):
    wh = tmp_path / "wh" / "db.db"
    options = {"tag.automatic-creation": "process-time", "tag.default-time-retained": "1 h",
               "tag.num-retained-max": "3"}
    java_oracle.exec(str(wh / "java"), JAVA_CREATE.replace("TABLES", repr({"java": options}))
                     + JAVA_APPEND.replace("NAMES", repr(["java", "java"])))
    write_arrow(str(wh / "ours"), pa.table({"id": pa.array([100], pa.int32())}), options=options)
    Table.load(str(wh / "ours")).append(pa.table({"id": pa.array([100], pa.int32())}))
    # both tag their first snapshot with the day before it (local time), once
    for name in ("java", "ours"):
        first = Table.load(str(wh / name)).snapshots()[0]
        day = dt.datetime.fromtimestamp(first.time_millis / 1000).date() - dt.timedelta(days=1)
        assert tags(wh / name) == {day.isoformat(): 1}, name
        created, retained = tag_retention(Table.load(str(wh / name)).snapshot_manager.tag(day.isoformat()))
        assert retained == 3600 * 10**9 and abs((dt.datetime.now() - created).total_seconds()) < 60
    seen = java_tags(java_oracle, wh, ["java", "ours"])
    assert list(seen["ours"].values()) == list(seen["java"].values()) == [[1, [100], 3_600_000]]


def test_each_side_expires_the_others_tags_past_their_retention(java_oracle, tmp_path):
    wh = tmp_path / "wh" / "db.db"
    for name in ("java_commits", "ours_commit"):
        write_arrow(str(wh / name), pa.table({"id": pa.array([1], pa.int32())}),
                    options={"tag.default-time-retained": "1 s"})
        create_tag(Table.load(str(wh / name)), "ours")
    # Java's create_tag gives its tag the table's retention too
    java_oracle.exec(str(wh / "java_commits"), '''
for name in ("java_commits", "ours_commit"):
    catalog.get_table("db." + name)._j_table.createTag("java", 1)
''')
    assert tags(wh / "java_commits") == tags(wh / "ours_commit") == {"java": 1, "ours": 1}
    time.sleep(1.1)
    java_oracle.exec(str(wh / "java_commits"), JAVA_APPEND.replace("NAMES", repr(["java_commits"])))
    Table.load(str(wh / "ours_commit")).append(pa.table({"id": pa.array([2], pa.int32())}))
    assert tags(wh / "java_commits") == tags(wh / "ours_commit") == {}


def test_java_reads_a_batch_tag(java_oracle, tmp_path):
    wh = tmp_path / "wh" / "db.db"
    path = str(wh / "batch")
    write_arrow(path, pa.table({"id": pa.array([1, 2], pa.int32())}), options={"tag.automatic-creation": "batch"})
    snapshot = Table.load(path).append(pa.table({"id": pa.array([3], pa.int32())}))
    name = "batch-write-" + dt.datetime.fromtimestamp(snapshot.time_millis / 1000).date().isoformat()
    assert tags(path) == {name: 2}
    assert java_tags(java_oracle, wh, ["batch"]) == {"batch": {name: [2, [1, 2, 3], None]}}
