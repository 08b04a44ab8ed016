"""The aggregate functions hll_sketch, theta_sketch, rbm32 and rbm64 (paimon_ds/mergetree/sketches.py,
java_roaring.py), without Java.

The expected bytes and estimates below were taken from Java Paimon 0.9 itself (the oracle's JVM: the
FieldAggregators folding values Paimon's own HllSketchUtil.sketchOf, ThetaSketch.sketchOf,
RoaringBitmap32.bitmapOf and RoaringBitmap64.bitmapOf built); tests/interop/test_sketch_aggregates.py
checks the same rules against the live JVM on tables both sides write.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys

import datasketches as ds
import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import OptionError, Table
from paimon_ds.deletionvectors import roaring
from paimon_ds.mergetree import java_roaring
from paimon_ds.mergetree.kv import DELETE, INSERT
from paimon_ds.mergetree.sketches import UNIONS, SketchError, java_theta_bytes, union_groups

from .test_merge_engines import make_engine, merged


def hll(values, lg_k: int = 12, kind=ds.tgt_hll_type.HLL_4) -> bytes:
    """A sketch as Paimon's HllSketchUtil.sketchOf builds it (lgK 12, HLL_4, each int updated as a long)."""
    sketch = ds.hll_sketch(lg_k, kind)
    for v in values:
        sketch.update(int(v))
    return sketch.serialize_compact()


def theta(values) -> bytes:
    sketch = ds.update_theta_sketch()
    for v in values:
        sketch.update(int(v))
    return sketch.compact().serialize()


def union(function: str, values: list[bytes | None]) -> bytes | None:
    return union_groups(function, pa.array(values, pa.binary()), np.array([0])).to_pylist()[0]


def hll_estimate(buf: bytes) -> float:
    return ds.hll_sketch.deserialize(buf).get_estimate()


def theta_estimate(buf: bytes) -> float:
    return ds.compact_theta_sketch.deserialize(buf).get_estimate()


# ------------------------------------------------------------------------------------------ groups

@pytest.mark.parametrize("function", ["hll_sketch", "theta_sketch", "rbm32", "rbm64"])
def test_nulls_are_skipped_and_a_lone_value_is_kept_as_it_is(function):
    """FieldXxxAgg.agg: null with null is null, a value with null is that value (not re-serialized)."""
    make = {"hll_sketch": lambda v: hll(v, 10, ds.tgt_hll_type.HLL_8), "theta_sketch": theta,
            "rbm32": lambda v: roaring.encode32(np.array(v)),
            "rbm64": lambda v: java_roaring.encode64(np.array(v, dtype=np.uint64))}[function]
    a, b = make([1, 2, 3]), make([3, 4])
    # a lone value that is not in the union's own form (another lgK and type, C++'s theta header, a 32-bit
    # array container of five consecutive values, which runOptimize would make a run) stays what it was
    raw = b if function != "rbm32" else struct.pack("<IIHHI5H", 12346, 1, 0, 4, 16, 0, 1, 2, 3, 4)
    values = pa.array([None, None, a, None, b, None, raw, b, None, a, None], pa.binary())
    starts = np.array([0, 2, 4, 6, 7, 10])
    out = union_groups(function, values, starts).to_pylist()
    assert out[0] is None and out[5] is None
    assert out[1] == a and out[2] == b and out[3] == raw
    assert out[4] == union(function, [b, a]) != b
    if function == "rbm32":
        assert roaring.decode32(out[4])[0].tolist() == [1, 2, 3, 4]
        assert union(function, [raw, a]) == roaring.encode32(np.arange(5))  # the union is run-optimised
    elif function == "rbm64":
        assert java_roaring.parse64(out[4]).values().tolist() == [1, 2, 3, 4]
    # a chunked column, and no group of several values
    chunked = pa.chunked_array([values[:5], values[5:]])
    assert union_groups(function, chunked, starts).to_pylist() == out
    assert union_groups(function, values, np.arange(11)).to_pylist() == values.to_pylist()


# --------------------------------------------------------------------------------------- sketches

def test_hll_union_equals_java():
    """HllSketchUtil.union folded over three sketches: Java's bytes and estimate (lgK 12, HLL_4)."""
    out = union("hll_sketch", [hll(range(1000)), hll(range(500, 2000)), hll([7, 8, 9])])
    assert hashlib.sha256(out).hexdigest() == "983991ec538122ba490b9dd90cba0b90a0b731965e6c6b6aeac0a86ffe9b5f3e"
    assert hll_estimate(out) == 1990.9528673495734
    # small sets stay exact (list mode); a union's lgK is the smaller one, its type HLL_4
    small = union("hll_sketch", [hll([1, 2, 3], 14, ds.tgt_hll_type.HLL_8), hll([3, 4, 5, 6], 10)])
    sketch = ds.hll_sketch.deserialize(small)
    assert round(sketch.get_estimate()) == 6 and sketch.lg_config_k == 10
    assert sketch.tgt_type == ds.tgt_hll_type.HLL_4


def test_theta_union_equals_java():
    """ThetaSketch.union (4096 nominal entries, ordered compact result) folded over three sketches: Java's
    bytes, in estimation mode and in the header forms datasketches-java writes for small results."""
    out = union("theta_sketch", [theta(range(5000)), theta(range(2500, 9000)), theta([123456789])])
    assert hashlib.sha256(out).hexdigest() == "b9d80070195fc1f86f34fb425f2f1f8ade3547b2f7eadaec3658a9639032f6ae"
    assert theta_estimate(out) == 8934.379640935043
    small = union("theta_sketch", [theta([1, 2, 3]), theta([123456789])])
    assert small.hex() == ("02030300001acc93040000000000803f15f97dcbbd86a105c397fc1281709d1ec93a365d14f58e4b"
                           "ba40b3c1da06695d")  # p = 1.0 in the preamble
    assert theta_estimate(small) == 4.0
    single = theta([123456789])
    assert union("theta_sketch", [single, single]).hex() == "01030300003acc93c93a365d14f58e4b"  # SingleItemSketch
    assert union("theta_sketch", [theta([]), theta([])]).hex() == "01030300001e0000"  # EmptyCompactSketch
    assert java_theta_bytes(single) == bytes.fromhex("01030300003acc93c93a365d14f58e4b")


def test_theta_update_sketch_images_are_unioned_as_java_reads_them():
    """Java's Union.union(Memory) also takes an UpdateSketch's image (its hash table): here the preamble
    datasketches-java 4.2 wrote for UpdateSketch.builder().build() after updates 0..49, its 128-slot table
    holding the same hashes."""
    table = np.zeros(128, dtype="<i8")
    hashes = ds.compact_theta_sketch.deserialize(theta(range(50)))
    for i, h in enumerate(sorted(hashes)):  # any slots: the union reads the non-zero entries below theta
        table[(i * 37) % 128] = h
    image = bytes.fromhex("c303020c0700cc93320000000000803fffffffffffffff7f") + table.tobytes()
    out = union("theta_sketch", [image, theta([123456789])])
    assert theta_estimate(out) == 51.0
    assert out == union("theta_sketch", [theta(range(50)), theta([123456789])])


def test_sketch_garbage_is_refused():
    for function in ("hll_sketch", "theta_sketch", "rbm32", "rbm64"):
        with pytest.raises(SketchError):
            union(function, [b"\x07garbage!", b"\x07garbage!"])


# ---------------------------------------------------------------------------------------- bitmaps

def test_rbm32_union_of_known_sets_in_java_container_kinds():
    """RoaringBitmap.or then runOptimize: the union of {0..3} (a run), {10} and {20, 21} is 7 values in 3
    runs, where runs and an array take the same room. A fresh bitmap keeps the array (runOptimize converts
    only when strictly smaller); Java's in-place OR keeps the run container it started from: its bytes."""
    parts = [roaring.encode32(np.array(v)) for v in ([0, 1, 2, 3], [10], [20, 21])]
    out = union("rbm32", parts)
    assert out.hex() == "3b30000001000006000300000003000a00000014000100"
    assert roaring.decode32(out)[0].tolist() == [0, 1, 2, 3, 10, 20, 21]
    assert out != roaring.encode32(np.array([0, 1, 2, 3, 10, 20, 21]))
    rng = np.random.default_rng(5)
    sets = [rng.choice(1 << 21, size=n, replace=False) for n in (3, 5000, 70000, 1)]
    sets.append(np.arange(1 << 16, 3 << 16))  # full containers
    got = union("rbm32", [roaring.encode32(s) for s in sets])
    assert roaring.decode32(got)[0].tolist() == sorted(set(np.concatenate(sets).tolist()))


def test_rbm64_union_equals_java():
    """Roaring64Bitmap.or then runOptimize and Java's serialization (the ART, container slots in the order keys
    came): bitmapOf(5, 2^40 + 5, 70000) OR bitmapOf(3, 2^20, -1)."""
    a = java_roaring.encode64(np.array([5, (1 << 40) + 5, 70000], dtype=np.uint64))
    b = java_roaring.encode64(np.array([3, 1 << 20, (1 << 64) - 1], dtype=np.uint64))
    assert a.hex() == (
        "010300000000000000000200020000000001000002000200000000010004000000000000000000000000000000000004"
        "000000000000000001020000000000000004000000000001000000010000000000000001000000fe030000000102010"
        "0000005000102010000000500010201000000701103000000000000000000000002000000")
    out = union("rbm64", [a, b])
    assert out.hex() == (
        "010500000000000000000200000000ff000002000100000001000003000200000010010004000000000000000000000000000000000"
        "004000000000000000001020000000000000004000000000000000010030000000000000004000000000001000000010000000000"
        "000004000000ffffffffffff040000000000000001000000fe0600000001020200000003000500010201000000050001020100000070"
        "110102010000000000010201000000ffff0005000000000000000000000004000000")
    assert java_roaring.parse64(out).values().tolist() == [3, 5, 70000, 1 << 20, (1 << 40) + 5, (1 << 64) - 1]
    assert java_roaring.serialize64(java_roaring.parse64(out)) == out


def test_rbm64_wide_trees_round_trip_and_union():
    """Keys under every ART node kind (4, 16, 48 and 256 children), across several prefixes."""
    rng = np.random.default_rng(9)
    sets = []
    for keys in (3, 14, 40, 300):
        high = rng.choice(1 << 16, size=keys, replace=False).astype(np.uint64) | np.uint64(1 << 40)
        sets.append((high << np.uint64(16)) | rng.integers(0, 1 << 16, size=keys).astype(np.uint64))
    blobs = [java_roaring.encode64(s) for s in sets]
    kinds = {java_roaring.parse64(b).root.type for b in blobs}
    assert kinds >= {java_roaring.NODE4, java_roaring.NODE16, java_roaring.NODE48}
    for blob, values in zip(blobs, sets):
        assert java_roaring.serialize64(java_roaring.parse64(blob)) == blob
        assert java_roaring.parse64(blob).values().tolist() == sorted(values.tolist())
    out = union("rbm64", blobs)
    assert java_roaring.parse64(out).root.type == java_roaring.NODE256
    assert java_roaring.parse64(out).values().tolist() == sorted(set(np.concatenate(sets).tolist()))


def test_rbm32_many_groups_fold_as_one_at_a_time():
    """The vectorised fold over many groups gives each group what folding it alone gives."""
    rng = np.random.default_rng(11)
    pool = [roaring.encode32(rng.integers(0, 1 << 18, size=rng.integers(1, 40))) for _ in range(40)]
    pool += [roaring.encode32(np.arange(s, s + n)) for s, n in ((0, 4), (10, 1), (20, 2), (5, 5000))]
    sizes = rng.integers(1, 6, size=60)
    values = [pool[i] for i in rng.integers(0, len(pool), size=int(sizes.sum()))]
    starts = np.cumsum(sizes) - sizes
    together = union_groups("rbm32", pa.array(values, pa.binary()), starts).to_pylist()
    alone = [union("rbm32", values[s:s + n]) for s, n in zip(starts, sizes)]
    assert together == alone


# ---------------------------------------------------------------------------------------- engine

SCHEMA = pa.schema([("id", pa.int32()), ("h", pa.binary()), ("t", pa.binary()), ("r32", pa.binary()),
                    ("r64", pa.binary())])
OPTIONS = {"merge-engine": "aggregation", "fields.h.aggregate-function": "hll_sketch",
           "fields.t.aggregate-function": "theta_sketch", "fields.r32.aggregate-function": "rbm32",
           "fields.r64.aggregate-function": "rbm64"}


def sketch_row(id_: int, values: list[int] | None) -> dict:
    if values is None:
        return {"id": id_, "h": None, "t": None, "r32": None, "r64": None}
    return {"id": id_, "h": hll(values), "t": theta(values), "r32": roaring.encode32(np.array(values)),
            "r64": java_roaring.encode64(np.array(values, dtype=np.uint64))}


def test_engine_folds_sketch_columns_and_refuses_retraction():
    eng = make_engine(OPTIONS, SCHEMA)
    rows = [("+I", sketch_row(1, [1, 2])), ("+I", sketch_row(1, None)), ("+I", sketch_row(1, [2, 3, 70000])),
            ("+I", sketch_row(2, [9])), ("+I", sketch_row(3, None))]
    out = merged(eng, rows, SCHEMA)
    assert roaring.decode32(out[0]["r32"])[0].tolist() == [1, 2, 3, 70000]
    assert java_roaring.parse64(out[0]["r64"]).values().tolist() == [1, 2, 3, 70000]
    assert round(hll_estimate(out[0]["h"])) == 4 and theta_estimate(out[0]["t"]) == 4.0
    assert out[1] == sketch_row(2, [9]) and out[2] == sketch_row(3, None)
    with pytest.raises(OptionError, match=r"cannot retract.*ignore-retract"):
        eng.check_input(np.array([INSERT, DELETE], dtype=np.int8))
    ignoring = make_engine({**OPTIONS, **{f"fields.{c}.ignore-retract": "true" for c in ("h", "t", "r32", "r64")}},
                           SCHEMA)
    ignoring.check_input(np.array([INSERT, DELETE], dtype=np.int8))
    # FieldIgnoreRetractAgg: a retraction leaves the accumulator as it is
    assert merged(ignoring, rows[:3] + [("-D", sketch_row(1, [5]))], SCHEMA)[0] == out[0]


def test_sketch_functions_need_varbinary_columns():
    """FieldAggregator: `checkArgument(fieldType instanceof VarBinaryType)`; BINARY(n) is refused."""
    schema = pa.schema([("id", pa.int32()), ("h", pa.binary(16))])
    with pytest.raises(OptionError, match="Data type for hll sketch column 'h' must be 'VarBinaryType' "
                       "but was 'BINARY\\(16\\)'"):
        make_engine({"merge-engine": "aggregation", "fields.h.aggregate-function": "hll_sketch"}, schema)
    with pytest.raises(OptionError, match="Data type for roaring bitmap column 'v' must be 'VarBinaryType' "
                       "but was 'STRING'"):
        make_engine({"merge-engine": "aggregation", "fields.v.aggregate-function": "rbm32"},
                    pa.schema([("id", pa.int32()), ("v", pa.string())]))


def test_sketch_table_through_commits(tmp_path):
    """Each commit a sorted run; the read merges them; a full compaction writes the same values."""
    path = str(tmp_path / "t")
    commits = [[sketch_row(1, [1, 2]), sketch_row(2, None)], [sketch_row(1, [3]), sketch_row(2, [7, 8])],
               [sketch_row(1, None), sketch_row(3, list(range(100, 5000)))], [sketch_row(1, [2, 1 << 20])]]
    for rows in commits:
        table = Table.for_write(path, SCHEMA, {"primary-key": "id", "bucket": "1", **OPTIONS})
        tw = table.new_write()
        tw.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        table.new_commit().commit(tw.prepare_commit())
    got = sorted(Table.load(path).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert roaring.decode32(got[0]["r32"])[0].tolist() == [1, 2, 3, 1 << 20]
    assert json.dumps([theta_estimate(r["t"]) for r in got]) == "[4.0, 2.0, 4900.0]"
    assert [round(hll_estimate(r["h"])) for r in got[:2]] == [4, 2]
    assert got[1]["r64"] == sketch_row(2, [7, 8])["r64"]  # a key's only value, untouched


def test_scalar_and_vectorised_container_kind_rules_agree():
    """The 64-bit fold decides container kinds one at a time, the 32-bit fold for arrays of containers: the
    same rules, over every pair of kinds and the cardinalities and run counts around each boundary."""
    kinds = [roaring.ARRAY, roaring.BITMAP, roaring.RUN]
    grid = [(a, b, card, runs) for a in kinds for b in kinds
            for card in (1, 2, 3, 4, 5, 6, 7, 8, 4095, 4096, 4097, 8190, 8194, 65535, 65536)
            for runs in (1, 2, 3, 4, 2046, 2047, 2048, 4096, 4097) if runs <= card]
    a, b, card, runs = (np.array(column) for column in zip(*grid))
    vector = java_roaring.or_kinds(a, b, card, runs)
    assert vector.tolist() == [java_roaring.or_kind(*g) for g in grid]
    wide = java_roaring.run_optimize_kinds(vector, card, runs, wide=True)
    assert wide.tolist() == [java_roaring.run_optimize_wide(k, c, r) for k, c, r in zip(vector.tolist(), card, runs)]


def test_without_datasketches_the_error_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasketches", None)  # as on a Spark Connect server without it
    with pytest.raises(SketchError, match=r"need the `datasketches` package.*pip install 'datasketches>=5.2'"):
        union("hll_sketch", [hll([1]), hll([2])])
    assert UNIONS["rbm32"](pa.array([roaring.encode32(np.array([1])), roaring.encode32(np.array([2]))]),
                           np.array([0])).to_pylist() == [roaring.encode32(np.array([1, 2]))]  # no package needed
