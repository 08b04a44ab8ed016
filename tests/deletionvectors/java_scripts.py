"""Scenarios run inside the Java Paimon 0.9 oracle (java_oracle.exec) to produce deletion vectors."""

from __future__ import annotations

# Creates a primary-key table (id INT NOT NULL, p STRING, v STRING; partition p if asked) and commits
# each list of (kind, id, p, v) rows with Paimon's own batch write: with deletion-vectors.enabled its
# writers run lookup compaction (they need an IOManager's temp directory), which folds level-0 files
# into higher levels and marks replaced rows of untouched files in deletion vectors.
PK_WRITES = '''
import pyarrow as pa
from pypaimon import Schema
if table is None:
    catalog.create_database(ident.split(".")[0], True)
    catalog.create_table(ident, Schema(
        pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                   ("v", pa.string())]),
        partition_keys=PARTITION, primary_keys=PRIMARY_KEYS, options=OPTIONS), True)
t = catalog.get_table(ident)._j_table
P = jvm.org.apache.paimon
kinds = {"+I": P.types.RowKind.INSERT, "-D": P.types.RowKind.DELETE}
io = P.disk.IOManager.create(TMP)
for rows in COMMITS:
    wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
    w = wb.newWrite().withIOManager(io)
    c = wb.newCommit()
    for k, i, p, v in rows:
        r = P.data.GenericRow(kinds[k], 3)
        r.setField(0, i)
        r.setField(1, P.data.BinaryString.fromString(p))
        r.setField(2, P.data.BinaryString.fromString(v) if v is not None else None)
        w.write(r)
    c.commit(w.prepareCommit())
    w.close()
    c.close()
'''

# Deletes rows of an append table as Paimon 0.9's Spark DELETE does with deletion vectors
# (PaimonSparkWriter.persistDeletionVectors): per (partition, bucket) an AppendDeletionFileMaintainer
# of the latest snapshot gets each touched data file's new deletion vector; the commit carries the
# index files it persists (IndexIncrement). Here every STEP-th row from OFFSET of each file is deleted.
APPEND_DELETES = '''
from pypaimon.py4j.java_gateway import get_gateway
t = table._j_table
P = jvm.org.apache.paimon
snapshot_id = t.snapshotManager().latestSnapshotId()
handler = t.store().newIndexFileHandler()
unaware = str(t.bucketMode().name()) == "BUCKET_UNAWARE"
messages = get_gateway().jvm.java.util.ArrayList()
for split in t.newSnapshotReader().read().dataSplits():
    if unaware:
        m = P.deletionvectors.append.AppendDeletionFileMaintainer.forUnawareAppend(
            handler, snapshot_id, split.partition())
    else:
        m = P.deletionvectors.append.AppendDeletionFileMaintainer.forBucketedAppend(
            handler, snapshot_id, split.partition(), split.bucket())
    dfs = split.deletionFiles()
    for n, f in enumerate(split.dataFiles()):
        dv = P.deletionvectors.BitmapDeletionVector()
        old = dfs.get().get(n) if dfs.isPresent() else None
        if old is not None:
            dv.merge(P.deletionvectors.DeletionVector.read(t.fileIO(), old))
        for pos in range(OFFSET, f.rowCount(), STEP):
            dv.delete(pos)
        m.notifyNewDeletionVector(f.fileName(), dv)
    added = get_gateway().jvm.java.util.ArrayList()
    deleted = get_gateway().jvm.java.util.ArrayList()
    for e in m.persist():
        (added if str(e.kind().name()) == "ADD" else deleted).add(e.indexFile())
    messages.add(P.table.sink.CommitMessageImpl(
        m.getPartition(), m.getBucket(), P.io.DataIncrement.emptyIncrement(),
        P.io.CompactIncrement.emptyIncrement(), P.io.IndexIncrement(added, deleted)))
c = jvm.InvocationUtil.getBatchWriteBuilder(t).newCommit()
c.commit(messages)
c.close()
'''

# Serializes sets of positions with Java's RoaringBitmap32 (bitmapOf, then runOptimize + portable
# serialization, as BitmapDeletionVector does): one "set hex" line per set of `data` (columns set, pos).
ROARING_BYTES = '''
from pypaimon.py4j.java_gateway import get_gateway
import struct
gw = get_gateway()
for s in sorted(set(data.column("set").to_pylist())):
    pos = [p for k, p in zip(data.column("set").to_pylist(), data.column("pos").to_pylist()) if k == s]
    arr = gw.new_array(gw.jvm.int, len(pos))
    if pos:
        jvm.java.nio.ByteBuffer.wrap(struct.pack(">%di" % len(pos), *pos)).asIntBuffer().get(arr)
    print(s, bytes(jvm.org.apache.paimon.utils.RoaringBitmap32.bitmapOf(arr).serialize()).hex())
'''


def pk_writes(commits: list, options: dict[str, str], tmp: str, partition: list[str] | None = None) -> str:
    keys = ["id", "p"] if partition else ["id"]
    return (PK_WRITES.replace("PARTITION", repr(partition)).replace("PRIMARY_KEYS", repr(keys))
            .replace("OPTIONS", repr(options)).replace("COMMITS", repr(commits)).replace("TMP", repr(tmp)))


def append_deletes(offset: int, step: int) -> str:
    return APPEND_DELETES.replace("OFFSET", str(offset)).replace("STEP", str(step))
