"""FLOAT / DOUBLE primary keys, bucket keys and partitions: one value as Paimon's comparators define it.

Paimon's key comparator is Java's Double.compare / Float.compare (paimon-codegen GenerateUtils.generateCompare, from
Paimon 2.0, apache/paimon#8295): every NaN is one key, above +Infinity, and -0.0 a key of its own below 0.0. Its
predicates compare the same way (CompareUtils.compareLiteral: Double.compareTo). BinaryRow keeps a double's raw bits
(MemorySegment.putDouble: doubleToRawLongBits), so paimon_ds stores the canonical NaN (Java's Double.NaN) in keys,
partitions and bucket keys: a NaN of any payload is then one key, one bucket, one partition. Arrow's own equality and
sort (IEEE: NaN equal to nothing, -0.0 equal to 0.0) used to keep two NaN keys as two rows.
"""

from __future__ import annotations

import os
import struct

import mmh3
import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table, col
from paimon_ds.format.binary_row import serialize_row
from paimon_ds.format.partition import PartitionFilter
from paimon_ds.manifest.meta import DataFileMeta
from paimon_ds.mergetree.compact import sorted_runs
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.types import parse_type, total_order, total_order_value
from paimon_ds.table import write_arrow

NAN = float("nan")
# NaNs of other payloads than Java's Double.NaN (0x7ff8000000000000): x86's default NaN, and one with low bits
NEG_NAN = np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0]
ODD_NAN = np.array([0x7FF0000000000001], np.uint64).view(np.float64)[0]
DOUBLES = [-np.inf, -1.5, -0.0, 0.0, 5e-324, 1.0, np.inf, NAN, NEG_NAN, ODD_NAN]


def java_double_compare(a: float, b: float) -> int:
    """Java's Double.compare, as its source reads: `<` / `>`, then doubleToLongBits (every NaN the canonical one)."""
    if a < b:
        return -1
    if a > b:
        return 1

    def bits(v: float) -> int:
        return 0x7FF8000000000000 if v != v else struct.unpack("<q", struct.pack("<d", v))[0]
    return (bits(a) > bits(b)) - (bits(a) < bits(b))


def sign(x: int) -> int:
    return (x > 0) - (x < 0)


def test_total_order_ranks_as_java_double_compare():
    ranks = total_order(pa.array(DOUBLES)).to_pylist()
    float_ranks = total_order(pa.array(DOUBLES, pa.float32())).to_pylist()
    for i, a in enumerate(DOUBLES):
        for j, b in enumerate(DOUBLES):
            want = java_double_compare(a, b)
            assert sign(ranks[i] - ranks[j]) == want, (a, b)
            assert sign(total_order_value(a) - total_order_value(b)) == want, (a, b)
            if not (a == 5e-324 or b == 5e-324):  # 5e-324 is 0.0 in float32
                assert sign(float_ranks[i] - float_ranks[j]) == want, (a, b)
    assert total_order(pa.array([1.0, None])).to_pylist()[1] is None  # nulls stay null (sequence fields)


def _write(path: str, keys: list[float], values: list[str], kinds: list[str] | None = None, **options: str) -> None:
    data = {"k": pa.array(keys, pa.float64()), "v": values}
    if kinds is not None:
        data["op"] = kinds
    write_arrow(path, pa.table(data), primary_key="k",
                options={"bucket": "1", "write-only": "true", "rowkind.field": "op", **options} if kinds is not None
                else {"bucket": "1", "write-only": "true", **options})


def _rows(path: str) -> list[tuple]:
    """(key bits, value) of every row: NaN payloads and zero signs shown."""
    t = Table.load(path).to_arrow()
    bits = t.column("k").to_numpy().view(np.uint64)
    return sorted((hex(int(b)), v) for b, v in zip(bits, t.column("v").to_pylist()))


CANONICAL, MINUS_ZERO, ZERO, ONE = "0x7ff8000000000000", "0x8000000000000000", "0x0", "0x3ff0000000000000"


def test_upserts_of_nan_and_signed_zero_keys(table_path):
    """Four commits, each a level-0 run (write-only), NaNs of three payloads, both zeros, duplicates within a
    commit, a delete of -0.0: one row per key as Double.compare groups keys, the newest winning."""
    ops = ["+I"] * 3
    _write(table_path, [1.0, NAN, 0.0], ["a", "b", "c"], ops)
    _write(table_path, [NEG_NAN, -0.0], ["d", "e"], ops[:2])
    _write(table_path, [NAN, 0.0, ODD_NAN, -0.0], ["f", "g", "h", "i"], ops + ["+I"])
    expected = [(ZERO, "g"), (ONE, "a"), (CANONICAL, "h"), (MINUS_ZERO, "i")]
    assert _rows(table_path) == expected
    _write(table_path, [-0.0, NEG_NAN], ["x", "j"], ["-D", "+I"])
    expected = [(ZERO, "g"), (ONE, "a"), (CANONICAL, "j")]
    assert _rows(table_path) == expected
    table = Table.load(table_path)
    [split] = table.new_scan().plan()
    assert len(sorted_runs(split.files)) == 4  # merged on read, from four runs
    # the stored keys are canonical: every file's min / max key bytes, and the rows
    compact_in_process(table, None, full=True)
    [split] = Table.load(table_path).new_scan().plan()
    assert [f.level for f in split.files] == [5]
    assert split.files[0].max_key == serialize_row([NAN], [parse_type("DOUBLE NOT NULL")])
    assert _rows(table_path) == expected


def test_nan_and_zero_keys_in_one_commit_and_buffer_spills(table_path):
    """The write buffer's sort and merge (and a merge of spilled runs) group keys as Double.compare."""
    n = 3000
    keys = np.tile(np.array([NAN, NEG_NAN, -0.0, 0.0, ODD_NAN, 2.0]), n)
    values = [f"v{i}" for i in range(len(keys))]
    _write(table_path, list(keys), values, **{"write-buffer-size": "64kb", "write-buffer-spillable": "true"})
    last = {ZERO: values[-3], MINUS_ZERO: values[-4], CANONICAL: values[-2], "0x4000000000000000": values[-1]}
    assert _rows(table_path) == sorted(last.items())


def test_nan_keys_take_java_nan_bucket(table_path):
    """Fixed buckets: every NaN in the bucket of Java's Double.NaN, -0.0 in the bucket of its own bits (Java's
    BinaryRow: raw bits), computed here independently with mmh3 over the BinaryRow bytes."""
    _write(table_path, [NAN, NEG_NAN, ODD_NAN, -0.0, 0.0], list("abcde"), bucket="7")

    def java_bucket(bits: int) -> int:
        row = bytes(8) + struct.pack("<Q", bits)  # BinaryRow: null bits word, then the field's 8-byte slot
        h = mmh3.hash(row, 42)
        return abs(h - 7 * int(h / 7))  # Java's Math.abs(hash % 7): a truncating remainder
    buckets = {}
    for split in Table.load(table_path).new_scan().plan():
        for bits, _ in _rows_of(Table.load(table_path), split):
            buckets[bits] = split.bucket
    assert buckets == {CANONICAL: java_bucket(0x7FF8000000000000), MINUS_ZERO: java_bucket(0x8000000000000000),
                       ZERO: java_bucket(0)}


def _rows_of(table: Table, split) -> list[tuple]:
    t = pa.Table.from_batches(list(table.new_read().read(split)))
    return [(hex(int(b)), v) for b, v in zip(t.column("k").to_numpy().view(np.uint64), t.column("v").to_pylist())]


def test_dynamic_bucket_keys_nan_one_key(table_path):
    """Dynamic buckets (bucket=-1): the key hash of the hash index is the canonical key's."""
    for keys, vals in (([NAN, -0.0], ["a", "b"]), ([NEG_NAN, 0.0], ["c", "d"]), ([ODD_NAN], ["e"])):
        write_arrow(table_path, pa.table({"k": pa.array(keys, pa.float64()), "v": vals}), primary_key="k")
    assert _rows(table_path) == [(ZERO, "d"), (CANONICAL, "e"), (MINUS_ZERO, "b")]


def test_nan_and_signed_zero_partitions(table_path):
    """A NaN partition is one partition (`p=NaN`), -0.0 one apart from 0.0 (`p=-0.0`, `p=0.0`), as Java names them
    (the partition value's toString); partition filters compare as Paimon's (Double.compareTo)."""
    data = pa.table({"p": pa.array([NAN, NEG_NAN, -0.0, 0.0, ODD_NAN, 1.0], pa.float64()),
                     "id": pa.array([1, 2, 3, 4, 5, 6], pa.int32())})
    write_arrow(table_path, data, partition_by="p")
    write_arrow(table_path, data, partition_by="p")
    dirs = sorted(d for d in os.listdir(table_path) if d.startswith("p="))
    assert dirs == ["p=-0.0", "p=0.0", "p=1.0", "p=NaN"]
    table = Table.load(table_path)
    assert len({s.partition for s in table.new_scan().plan()}) == 4

    def ids(flt) -> list[int]:
        return sorted(table.scan(filter=flt).to_arrow().column("id").to_pylist())
    assert ids(Leaf("=", "p", (NAN,))) == [1, 1, 2, 2, 5, 5]
    assert ids(Leaf("=", "p", (0.0,))) == [4, 4]
    assert ids(Leaf("=", "p", (-0.0,))) == [3, 3]
    assert ids(Leaf(">", "p", (1.0,))) == [1, 1, 2, 2, 5, 5]  # NaN above every number
    assert ids(Leaf("in", "p", (NAN, 1.0))) == [1, 1, 2, 2, 5, 5, 6, 6]
    types = [parse_type("DOUBLE")]
    spec = PartitionFilter(["p"], types, [{"p": "NaN"}], "__DEFAULT_PARTITION__")
    assert [spec(serialize_row([v], types)) for v in (NAN, NEG_NAN, -0.0, 0.0)] == [True, True, False, False]


@pytest.mark.parametrize("values, op, literal, may", [
    ([1.0, NAN], ">", 1.0, True),      # a NaN row is above 1.0: the file's NaN drops its bounds
    ([1.0, 2.0], ">", 2.0, False),
    ([0.0, -0.0], "=", 0.0, True),     # Arrow's min_max says -0.0 .. -0.0: a zero bound covers both zeros
    ([-0.0], "=", 0.0, True),
    ([-0.0], "<", 0.0, True),          # Double.compare: -0.0 < 0.0
    ([0.0], ">", -0.0, True),
    ([1.0, 2.0], "=", NAN, False),     # no NaN in the file: NaN lies above its max
])
def test_float_stats_prune_as_paimon_compares(table_path, values, op, literal, may):
    """Files' value stats of float columns (written here) prune only files that hold no matching row, by
    Double.compare and by IEEE alike (Java Paimon prunes our files with CompareUtils, Spark filters with IEEE)."""
    write_arrow(table_path, pa.table({"id": pa.array(range(len(values)), pa.int32()),
                                      "x": pa.array(values, pa.float64())}))
    table = Table.load(table_path)
    assert bool(table.new_scan(Leaf(op, "x", (literal,))).plan()) is may


def test_core_filters_compare_floats_as_paimon(table_path):
    """Filters of the core API on a float column (a value column and a partition column alike) compare as Paimon's
    predicates (Double.compareTo): NaN equal to NaN and above every number, -0.0 below 0.0; so partition pruning,
    which compares the same way, never drops a row the filter keeps."""

    values = [NAN, -0.0, 0.0, 1.0, -1.0, None]
    data = pa.table({"id": pa.array(range(6), pa.int32()), "x": pa.array(values, pa.float64()),
                     "p": pa.array(values, pa.float64())})
    write_arrow(table_path, data, partition_by="p")
    table = Table.load(table_path)
    for name in ("x", "p"):
        c = col(name)
        cases = [(c == 0.0, [2]), (c == -0.0, [1]), (c == NAN, [0]), (c < 0.0, [1, 4]), (c <= 0.0, [1, 2, 4]),
                 (c > -0.0, [0, 2, 3]), (c >= 1.0, [0, 3]), (c != 0.0, [0, 1, 3, 4]), (c.isin([NAN, -0.0]), [0, 1])]
        for flt, ids in cases:
            assert sorted(table.scan(filter=flt).to_arrow().column("id").to_pylist()) == ids, (name, flt.sql())


def test_level_files_read_in_key_order(table_path):
    """A level's files are one sorted run, read in key order: the order of their decoded min keys (Paimon's
    Levels), not of the min keys' BinaryRow bytes (little-endian, so -5 sorts after 100 there). A full
    compaction of 140k negative and positive keys rolls its output into files of 65536 rows each."""
    keys = pa.array(range(-70000, 70000), pa.int32())
    opts = {"bucket": "1", "target-file-size": "4kb"}
    write_arrow(table_path, pa.table({"k": keys, "v": pa.array([0] * len(keys), pa.int64())}), primary_key="k",
                options=opts)
    compact_in_process(Table.load(table_path), None, full=True)
    [split] = Table.load(table_path).new_scan().plan()
    assert [f.row_count for f in split.files] == [65536, 65536, 8928]
    write_arrow(table_path, pa.table({"k": pa.array([-5, 300, 69999], pa.int32()), "v": pa.array([1, 1, 1])}),
                primary_key="k", options=opts)
    got = Table.load(table_path).to_arrow()
    assert got.num_rows == 140000 and sorted(got.filter(pa.compute.field("v") == 1).column("k").to_pylist()) == \
        [-5, 300, 69999]
    types = [parse_type("DOUBLE NOT NULL")]
    files = [DataFileMeta(file_name=str(v), file_size=1, row_count=1, level=2, min_sequence_number=0,
                          max_sequence_number=0, min_key=serialize_row([v], types))
             for v in (NAN, 0.0, -0.0, -np.inf, 1.0)]
    [run] = sorted_runs(files, types)
    assert [f.file_name for f in run.files] == ["-inf", "-0.0", "0.0", "1.0", "nan"]
