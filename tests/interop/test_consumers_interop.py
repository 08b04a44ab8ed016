"""Consumers against Java Paimon 0.9: one `consumer/consumer-<id>` file, whoever writes it, means the same to both.

Java's streaming scan with `consumer-id` (DataTableStreamScan.notifyCheckpointComplete, what Flink calls when a
checkpoint completes) writes the file; paimon_ds reads it byte for byte, keeps the snapshots it needs from its
expiry, and a paimon_ds stream with that id resumes where Java's left off, reading what Java's scan reads next.
The other way, a consumer paimon_ds records is one Java's ConsumerManager reads, whose snapshots Java's own expiry
keeps, which Java's streaming scan resumes from, and which Java's committer expires (`consumer.expiration-time`,
TableCommitImpl.expire) as paimon_ds's does.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa

from paimon_ds import Table, procedures
from paimon_ds.operation.maintenance import expire_snapshots
from paimon_ds.operation.read import TableRead
from paimon_ds.operation.stream import StreamScan
from paimon_ds.schema.change import SetOption, commit_changes
from paimon_ds.store.consumer import Consumer, ConsumerManager

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
# six commits: new ids, and from the second on an update of an earlier id
COMMITS = [[(10 * c + i, f"c{c}") for i in range(2)] + ([(10 * (c - 1), f"upd{c}")] if c > 1 else [])
           for c in range(1, 7)]

# Java helpers: rows of a plan as [kind, id, v]; the consumers Java's ConsumerManager sees
JAVA_HELPERS = """
import json
P = jvm.org.apache.paimon

def rows_of(j, plan):
    read, out = j.newRead(), []
    for split in plan.splits():
        reader = read.createReader(split)
        it = reader.readBatch()
        while it is not None:
            row = it.next()
            while row is not None:
                out.append([str(row.getRowKind().shortString()), row.getLong(0), row.getString(1).toString()])
                row = it.next()
            it.releaseBatch()
            it = reader.readBatch()
        reader.close()
    return sorted(out)

def java_consumers(j):
    manager = P.consumer.ConsumerManager(j.fileIO(), j.location())
    found = {str(e.getKey()): e.getValue() for e in manager.consumers().entrySet()}
    return {"consumers": found, "ids": sorted(str(i) for i in manager.listAllIds()),
            "min": manager.minNextSnapshot().getAsLong() if manager.minNextSnapshot().isPresent() else None}

def snapshot_ids(j):
    sm = j.snapshotManager()
    return list(range(sm.earliestSnapshotId(), sm.latestSnapshotId() + 1))
"""

# Java writes the table (write-only: no compaction snapshot in between), then streams it from snapshot 3 with a
# consumer: plans 0 (the start), 1, 2 read snapshots 3 and 4; the checkpoint completes (the consumer records 5);
# then the plans it would read next (snapshots 5 and 6, then nothing)
JAVA_WRITES_AND_CONSUMES = JAVA_HELPERS + """
import pyarrow as pa
from pypaimon import Schema
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
catalog.create_database(ident.split(".")[0], True)
catalog.create_table(ident, Schema(SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"}), True)
t = catalog.get_table(ident)
for rows in COMMITS:
    commit_arrow(t, pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA), cast=True)
j = t._j_table.copy({"consumer-id": "flink-job", "scan.mode": "from-snapshot", "scan.snapshot-id": "3"})
scan = j.newStreamScan()
before = [rows_of(j, scan.plan()) for _ in range(3)]
scan.notifyCheckpointComplete(scan.checkpoint())
after = [rows_of(j, scan.plan()) for _ in range(3)]
print(json.dumps({"before": before, "after": after, "java": java_consumers(j)}))
"""

# Java's view of a table paimon_ds wrote and recorded a consumer in: its consumers, then its own expiry (keep one
# snapshot, no time retention), then a stream with the consumer's id (plans until one is empty)
JAVA_EXPIRES_AND_RESUMES = JAVA_HELPERS + """
j = table._j_table
seen = java_consumers(j)
config = P.options.ExpireConfig.builder().snapshotRetainMin(1).snapshotRetainMax(1) \\
    .snapshotTimeRetain(jvm.java.time.Duration.ofMillis(0)).build()
expired = j.newExpireSnapshots().config(config).expire()
stream = j.copy({"consumer-id": "spark-job"})
scan = stream.newStreamScan()
plans = [rows_of(stream, scan.plan()) for _ in range(4)]
print(json.dumps({"java": seen, "expired": expired, "snapshots": snapshot_ids(j), "plans": plans}))
"""

# Java commits once more to a table whose consumer.expiration-time is 1 h: its committer expires stale consumers
JAVA_COMMITS = """
import pyarrow as pa
t = catalog.get_table(ident)
commit_arrow(t, pa.table({"id": [99], "v": ["java"]}), cast=True)
"""


def last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def expected_delta(commit: list[tuple[int, str]]) -> list[list]:
    return sorted(["+I", i, v] for i, v in commit)


def paimon_ds_stream(path: str, options: dict[str, str]) -> list[list]:
    """A core streaming read up to the latest snapshot: its [kind, id, v] rows per snapshot delta."""
    table = Table.load(path, options)
    scan = StreamScan(table)
    start = scan.initial_position()
    read = TableRead(table, row_kind_column="kind")
    per_unit: dict[int, list] = {}
    for sid in range(start.snapshot, table.snapshot_manager.latest_id() + 1):
        for s in scan.unit(sid, full=False):
            for b in read.read(s.split, delta=s.delta, changelog=s.changelog):
                per_unit.setdefault(sid, []).extend([r["kind"], r["id"], r["v"]] for r in b.to_pylist())
    return [sorted(rows) for _, rows in sorted(per_unit.items())]


def test_a_consumer_java_records_holds_our_expiry_and_we_resume_from_it(java_oracle, table_path):
    out = last_json(java_oracle.exec(table_path, f"COMMITS = {COMMITS!r}\n" + JAVA_WRITES_AND_CONSUMES))
    assert out["before"] == [[], expected_delta(COMMITS[2]), expected_delta(COMMITS[3])]
    assert out["after"] == [expected_delta(COMMITS[4]), expected_delta(COMMITS[5]), []]
    assert out["java"] == {"consumers": {"flink-job": 5}, "ids": ["flink-job"], "min": 5}
    # the bytes Java wrote are the bytes paimon_ds writes for the same record
    written = (Path(table_path) / "consumer" / "consumer-flink-job").read_text()
    assert written == Consumer(5).to_json() == '{\n  "nextSnapshot" : 5\n}'
    table = Table.load(table_path)
    assert ConsumerManager.of(table.store).consumers() == {"flink-job": 5}
    # keep one snapshot, whatever its age: the consumer still needs 5 and 6
    assert expire_snapshots(table, retain_min=1, retain_max=1, time_retained_ms=0).expired == [1, 2, 3, 4]
    assert table.snapshot_manager.list_ids() == [5, 6]
    # a paimon_ds stream with Java's consumer id starts where Java's would go on, and reads what it read
    assert StreamScan(Table.load(table_path, {"consumer-id": "flink-job"})).initial_position().snapshot == 5
    assert paimon_ds_stream(table_path, {"consumer-id": "flink-job"}) == out["after"][:2]
    # Java reads the expired table as paimon_ds does
    model = {}
    for commit in COMMITS:
        model.update(dict(commit))
    assert sorted(java_oracle.read(table_path).to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "v": v} for i, v in sorted(model.items())]


def test_a_consumer_we_record_is_javas(java_oracle, table_path):
    for commit in COMMITS:
        table = Table.for_write(table_path, SCHEMA, {"primary-key": "id", "bucket": "1", "write-only": "true"})
        write = table.new_write()
        write.write_arrow(pa.table({"id": [r[0] for r in commit], "v": [r[1] for r in commit]}, schema=SCHEMA))
        table.new_commit().commit(write.prepare_commit())
    procedures.reset_consumer(table_path, "spark-job", 4)
    out = last_json(java_oracle.exec(table_path, JAVA_EXPIRES_AND_RESUMES))
    assert out["java"] == {"consumers": {"spark-job": 4}, "ids": ["spark-job"], "min": 4}
    # Java's expiry keeps snapshot 4 and later for the consumer; its stream resumes at 4
    assert out["expired"] == 3 and out["snapshots"] == [4, 5, 6]
    assert out["plans"] == [[], expected_delta(COMMITS[3]), expected_delta(COMMITS[4]), expected_delta(COMMITS[5])]
    # our record is untouched by Java's read (Java records only when a checkpoint completes)
    assert ConsumerManager.of(Table.load(table_path).store).consumers() == {"spark-job": 4}

    # consumer.expiration-time: Java's committer deletes a consumer not written for longer, as ours does
    procedures.reset_consumer(table_path, "fresh", 5)
    stale = Path(table_path) / "consumer" / "consumer-spark-job"
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    commit_changes(table_path, [SetOption("consumer.expiration-time", "1 h")])
    java_oracle.exec(table_path, JAVA_COMMITS)
    assert ConsumerManager.of(Table.load(table_path).store).consumers() == {"fresh": 5}
