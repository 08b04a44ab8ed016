"""hll_sketch, theta_sketch, rbm32 and rbm64 aggregation tables, both ways with Java Paimon 0.9.

Java builds its values in its own JVM with the classes Paimon bundles (HllSketchUtil.sketchOf,
ThetaSketch.sketchOf, RoaringBitmap32/RoaringBitmap64.bitmapOf: datasketches-java 4.2, RoaringBitmap 1.0.5)
and writes them with its own writer: several rows of a key in one commit (its write buffer folds them),
rows of a key across commits left in level 0 (`write-only`) for the reader to fold, nulls, and a full
compaction. paimon_ds must read every snapshot byte for byte as Java reads it. The other way, paimon_ds
writes values built here (the C++ DataSketches library, our roaring encoders) over several commits and a
full compaction of its own; Java reads the table byte for byte as paimon_ds does, computes the same
estimates, cardinalities and contents, and keeps aggregating it (a commit of its own and a full
compaction), which paimon_ds then reads as Java.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import datasketches as ds
import numpy as np
import pyarrow as pa

from paimon_ds import Table
from paimon_ds.deletionvectors import roaring
from paimon_ds.mergetree import java_roaring
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.scan import TableScan

COLUMNS = ("h", "t", "r32", "r64")
OPTIONS = {"merge-engine": "aggregation", "bucket": "1", "fields.h.aggregate-function": "hll_sketch",
           "fields.t.aggregate-function": "theta_sketch", "fields.r32.aggregate-function": "rbm32",
           "fields.r64.aggregate-function": "rbm64"}

# Creates the table (id INT primary key, h, t, r32, r64 BYTES) unless it exists, and commits each (rows,
# mode) of COMMITS with Paimon's batch writer: mode "write-only" leaves level-0 files, "compact" ends with
# a full compaction. A row is (id, ints, ints, ints, longs), a list None for a null value.
JAVA_WRITES = '''
import struct
P = jvm.org.apache.paimon
U = P.utils
from pypaimon.py4j.java_gateway import get_gateway
gw = get_gateway()
LE = jvm.java.nio.ByteOrder.LITTLE_ENDIAN

def java_array(kind, values):  # one py4j call for the whole array
    arr = gw.new_array(gw.jvm.int if kind == "i" else gw.jvm.long, len(values))
    if values:
        buf = jvm.java.nio.ByteBuffer.wrap(struct.pack(f"<{len(values)}{kind}", *values)).order(LE)
        (buf.asIntBuffer() if kind == "i" else buf.asLongBuffer()).get(arr)
    return arr

if table is None:
    catalog._j_catalog.createDatabase(ident.split(".")[0], True)
    T = P.types.DataTypes
    b = P.schema.Schema.newBuilder().column("id", T.INT().notNull())
    for c in ("h", "t", "r32", "r64"):
        b.column(c, T.BYTES())
    keys = jvm.java.util.ArrayList()
    keys.add("id")
    b.primaryKey(keys)
    for k, v in OPTIONS.items():
        b.option(k, v)
    catalog._j_catalog.createTable(P.catalog.Identifier.fromString(ident), b.build(), False)
base = catalog._j_catalog.getTable(P.catalog.Identifier.fromString(ident))
io = P.disk.IOManager.create(TMP)
for rows, mode in COMMITS:
    t = base.copy({"write-only": "true" if mode == "write-only" else "false"})
    wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
    w = wb.newWrite().withIOManager(io)
    c = wb.newCommit()
    for id_, h, th, r32, r64 in rows:
        r = P.data.GenericRow(5)
        r.setField(0, id_)
        r.setField(1, None if h is None else U.HllSketchUtil.sketchOf(java_array("i", h)))
        r.setField(2, None if th is None else U.ThetaSketch.sketchOf(java_array("i", th)))
        r.setField(3, None if r32 is None else U.RoaringBitmap32.bitmapOf(java_array("i", r32)).serialize())
        r.setField(4, None if r64 is None else U.RoaringBitmap64.bitmapOf(java_array("q", r64)).serialize())
        w.write(r)
    if mode == "compact":
        w.compact(P.data.BinaryRow.EMPTY_ROW, 0, True)
    c.commit(w.prepareCommit())
    w.close()
    c.close()
'''

# What Java makes of serialized values (hex): HLL and theta estimates, bitmap cardinalities and contents.
JAVA_STATS = '''
import json
S = jvm.org.apache.paimon.shade.org.apache.datasketches
R = jvm.org.apache.paimon.shade.org.roaringbitmap
J = jvm.java
out = {"h": [], "t": [], "r32": [], "r64": []}

def values(arr, width):  # a Java int[] / long[] as hex, in one transfer
    buf = J.nio.ByteBuffer.allocate(width * len(arr)).order(J.nio.ByteOrder.LITTLE_ENDIAN)
    (buf.asIntBuffer() if width == 4 else buf.asLongBuffer()).put(arr)
    return bytes(buf.array()).hex()

for h, t, r32, r64 in VALUES:
    out["h"].append(S.hll.HllSketch.heapify(bytes.fromhex(h)).getEstimate())
    out["t"].append(S.theta.Sketches.wrapSketch(S.memory.Memory.wrap(bytes.fromhex(t))).getEstimate())
    b32 = R.RoaringBitmap()
    b32.deserialize(J.nio.ByteBuffer.wrap(bytes.fromhex(r32)))
    out["r32"].append([b32.getLongCardinality(), values(b32.toArray(), 4)])
    b64 = R.longlong.Roaring64Bitmap()
    b64.deserialize(J.io.DataInputStream(J.io.ByteArrayInputStream(bytes.fromhex(r64))))
    out["r64"].append([b64.getLongCardinality(), values(b64.toArray(), 8)])
print(json.dumps(out))
'''


def java_writes(java_oracle, path: str, commits: list, tmp: Path) -> None:
    java_oracle.exec(path, JAVA_WRITES.replace("OPTIONS", repr(OPTIONS)).replace("COMMITS", repr(commits))
                     .replace("TMP", repr(str(tmp))))


def by_id(t: pa.Table) -> dict[int, tuple]:
    return {r["id"]: tuple(r[c] for c in COLUMNS) for r in t.to_pylist()}


def random_set(rng: random.Random) -> list[int]:
    """Sets that give the sketches every mode (HLL list, set and HLL; theta exact and estimating) and the
    bitmaps arrays, runs (some at the size where Java's OR keeps a run an array would not become),
    bitmaps and several containers."""
    shape = rng.choice(["few", "few", "few", "runs", "runs", "dense", "many", "spread"])
    if shape == "few":
        return rng.sample(range(1 << 17), rng.randint(1, 6))
    if shape == "runs":
        start, out = rng.randint(0, 50), []
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(1, 4)
            out += range(start, start + n)
            start += n + rng.randint(1, 3)
        return out
    if shape == "dense":
        start = rng.randint(0, 1 << 18)
        return list(range(start, start + rng.randint(100, 4500)))
    if shape == "many":  # a bitmap container
        return rng.sample(range(1 << 16), 4200)
    return rng.sample(range(1 << 30), rng.randint(50, 400))


def java_row(rng: random.Random, id_: int) -> tuple:
    cols = [None if rng.random() < 0.2 else random_set(rng) for _ in COLUMNS]
    if cols[3] is not None:  # 64-bit: keys above 2^32 and the top bit (negative longs in Java)
        cols[3] = [v + rng.choice([0, 1 << 33, 1 << 47]) - rng.choice([0, 0, 1 << 63]) for v in cols[3]]
    return (id_, *cols)


def test_java_sketch_table_reads_as_java(java_oracle, tmp_path):
    rng = random.Random(31)
    commits = []
    for mode in ("write-only", "write-only", "normal", "write-only", "compact", "write-only"):
        ids = [rng.randint(0, 9) for _ in range(10)]  # keys repeat within and across commits
        commits.append(([java_row(rng, i) for i in ids], mode))
    path = str(tmp_path / "wh/db.db/sk")
    java_writes(java_oracle, path, commits, tmp_path / "io")
    for sid in Table.load(path).snapshot_manager.list_ids():
        java = by_id(java_oracle.read(path, snapshot=sid))
        ours = by_id(Table.load(path, {"scan.snapshot-id": str(sid)}).to_arrow())
        assert ours == java, f"snapshot {sid}"
    # the scenario folded several values of a key at read time and in Java's compaction
    levels = [e.file.level for e in TableScan(Table.load(path)).read_entries(Table.load(path).latest_snapshot())]
    assert 0 in levels and max(levels) > 0


def python_values(rng: random.Random) -> dict:
    """A row's values built here: HLL sketches of several lgK and types, C++'s theta bytes, our bitmaps."""
    values = random_set(rng)
    lg_k, kind = rng.choice([(12, ds.tgt_hll_type.HLL_4), (12, ds.tgt_hll_type.HLL_8), (11, ds.tgt_hll_type.HLL_6)])
    h = ds.hll_sketch(lg_k, kind)
    t = ds.update_theta_sketch()
    for v in values:
        h.update(v)
        t.update(v)
    wide = [v + (1 << 40) if v % 3 == 0 else v for v in values]
    return {"h": h.serialize_compact(), "t": t.compact().serialize(), "r32": roaring.encode32(np.array(values)),
            "r64": java_roaring.encode64(np.array(wide, dtype=np.uint64)), "set": values, "wide": wide}


def test_paimon_ds_sketch_table_reads_and_aggregates_in_java(java_oracle, tmp_path):
    rng = random.Random(7)
    path = str(tmp_path / "wh/db.db/sk")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False)] + [(c, pa.binary()) for c in COLUMNS])
    expected: dict[int, dict[str, set]] = {}
    for commit in range(4):
        if commit == 2:  # the unions so far written to files by paimon_ds's own full compaction
            assert compact_in_process(Table.load(path), None, full=True) is not None
        rows = []
        for i in [rng.randint(0, 9) for _ in range(12)]:
            v = python_values(rng)
            nulls = {c for c in COLUMNS if rng.random() < 0.2}
            rows.append({"id": i, **{c: None if c in nulls else v[c] for c in COLUMNS}})
            seen = expected.setdefault(i, {"r32": set(), "r64": set()})
            seen["r32"] |= set() if "r32" in nulls else set(v["set"])
            seen["r64"] |= set() if "r64" in nulls else set(v["wide"])
        table = Table.for_write(path, schema, {"primary-key": "id", **OPTIONS})
        write = table.new_write()
        write.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        table.new_commit().commit(write.prepare_commit())
    ours = by_id(Table.load(path).to_arrow())
    assert ours == by_id(java_oracle.read(path))
    # Java's estimates of the merged sketches are ours; its bitmaps hold exactly the values written
    keys = sorted(k for k, v in ours.items() if None not in v)
    assert len(keys) >= 5
    stats = json.loads(java_oracle.exec(path, JAVA_STATS.replace(
        "VALUES", repr([[b.hex() for b in ours[k]] for k in keys]))).strip().splitlines()[-1])
    assert stats["h"] == [ds.hll_sketch.deserialize(ours[k][0]).get_estimate() for k in keys]
    assert stats["t"] == [ds.compact_theta_sketch.deserialize(ours[k][1]).get_estimate() for k in keys]
    for k, (card32, hex32), (card64, hex64) in zip(keys, stats["r32"], stats["r64"]):
        assert card32 == len(expected[k]["r32"]) and np.frombuffer(bytes.fromhex(hex32), "<u4").tolist() == sorted(
            expected[k]["r32"])
        assert card64 == len(expected[k]["r64"]) and np.frombuffer(bytes.fromhex(hex64), "<u8").tolist() == sorted(
            expected[k]["r64"])
    # Java keeps aggregating the table: a commit of its own, then a full compaction
    more = random.Random(3)
    java_writes(java_oracle, path, [([java_row(more, i) for i in range(0, 10, 2)], "write-only"),
                                    ([java_row(more, 1)], "compact")], tmp_path / "io")
    for sid in Table.load(path).snapshot_manager.list_ids()[-2:]:
        java = by_id(java_oracle.read(path, snapshot=sid))
        assert by_id(Table.load(path, {"scan.snapshot-id": str(sid)}).to_arrow()) == java, f"snapshot {sid}"
