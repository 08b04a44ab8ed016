"""Scenarios run inside the Java Paimon 0.9 oracle (java_oracle.exec) for the lookup and full-compaction changelog
producers: Paimon's own batch TableWrite commits each step, and its own streaming scan reads the changelog back."""

from __future__ import annotations

# Creates (if absent) a primary-key table `db.<name>` (id INT NOT NULL, op STRING, a STRING, b INT; primary key id,
# `rowkind.field` op, 2 buckets, the variant's options) for each (name, options, steps) of TABLES, and commits each
# step with Paimon's own batch writer, one commit per step. Its lookup compaction (an IOManager gives it a temp
# directory) lifts level 0 before each commit (ForceUpLevel0Compaction); for the full-compaction producer the
# writer is asked for a full compaction of both buckets before the commit, as Paimon's Flink sink
# (GlobalFullCompactionSinkWrite: every `full-compaction.delta-commits` checkpoints, default 1) and Spark writer
# (DataWrite.preCommit) do, the step counting as that checkpoint. A step of WRITE_ONLY[name] commits with
# `write-only` (no compaction).
WRITES = '''
import pyarrow as pa
from pypaimon import Schema
P = jvm.org.apache.paimon
io = P.disk.IOManager.create(TMP)
catalog.create_database("db", True)
for name, options, steps in TABLES:
    ident2 = "db." + name
    catalog.create_table(ident2, Schema(
        pa.schema([pa.field("id", pa.int32(), nullable=False), ("op", pa.string()), ("a", pa.string()),
                   ("b", pa.int32())]),
        primary_keys=["id"], options=dict(options, **{"bucket": "2", "rowkind.field": "op"})), True)
    base = catalog.get_table(ident2)._j_table
    for n, step in enumerate(steps):
        write_only = n in WRITE_ONLY.get(name, ())
        t = base.copy({"write-only": "true" if write_only else "false"})
        wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
        w = wb.newWrite().withIOManager(io)
        c = wb.newCommit()
        for op, i, a, b in step:
            r = P.data.GenericRow(4)
            r.setField(0, i)
            r.setField(1, P.data.BinaryString.fromString(op))
            r.setField(2, P.data.BinaryString.fromString(a) if a is not None else None)
            r.setField(3, b)
            w.write(r)
        every = int(options.get("full-compaction.delta-commits", "1"))
        if options.get("changelog-producer") == "full-compaction" and not write_only and (n + 1) % every == 0:
            for bucket in (0, 1):
                w.compact(P.data.BinaryRow.EMPTY_ROW, bucket, True)
        c.commit(w.prepareCommit())
        w.close()
        c.close()
'''

# A dedicated compaction of every bucket with Paimon's own writer (its compact action does the same): lookup
# compaction lifts level 0, FULL asks for a full compaction.
COMPACT = '''
P = jvm.org.apache.paimon
io = P.disk.IOManager.create(TMP)
t = catalog.get_table(IDENT)._j_table
wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
w = wb.newWrite().withIOManager(io)
c = wb.newCommit()
for bucket in (0, 1):
    w.compact(P.data.BinaryRow.EMPTY_ROW, bucket, FULL)
c.commit(w.prepareCommit())
w.close()
c.close()
'''

# For each table path of PATHS, as one JSON line {path: {...}}: its snapshots [id, commit kind,
# changelogRecordCount, has a changelog manifest list]; Java's streaming read from snapshot 1 (DataTableStreamScan,
# scan.mode from-snapshot): [snapshot, row kind, id, op, a, b] of every changelog row; and its batch read.
READS = '''
import json
P = jvm.org.apache.paimon


def rows_of(read, split, snapshot):
    out = []
    reader = read.createReader(split)
    it = reader.readBatch()
    while it is not None:
        row = it.next()
        while row is not None:
            out.append([snapshot, str(row.getRowKind().shortString()), row.getInt(0),
                        None if row.isNullAt(1) else row.getString(1).toString(),
                        None if row.isNullAt(2) else row.getString(2).toString(),
                        None if row.isNullAt(3) else row.getInt(3)])
            row = it.next()
        it.releaseBatch()
        it = reader.readBatch()
    reader.close()
    return out


result = {}
for p in PATHS:
    base = P.table.FileStoreTableFactory.create(P.fs.local.LocalFileIO.create(), P.fs.Path(p))
    sm = base.snapshotManager()
    latest = sm.latestSnapshotId()
    snapshots = []
    for sid in range(sm.earliestSnapshotId(), latest + 1):
        s = sm.snapshot(sid)
        snapshots.append([sid, str(s.commitKind().name()), s.changelogRecordCount(),
                          s.changelogManifestList() is not None])
    t = base.copy({"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    scan = t.newStreamScan()
    read = t.newRead()
    stream = []
    for n in range(4 * latest + 4):
        for split in scan.plan().splits():
            stream += rows_of(read, split, split.snapshotId())
        nxt = scan.checkpoint()
        if nxt is not None and nxt > latest:
            break
    rb = jvm.InvocationUtil.getReadBuilder(base)
    batch = [r[1:] for split in rb.newScan().plan().splits() for r in rows_of(rb.newRead(), split, 0)]
    result[p] = {"snapshots": snapshots, "stream": stream, "batch": batch}
print(json.dumps(result))
'''
