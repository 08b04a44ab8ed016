"""Bloom-filter file indexes (`file-index.bloom-filter.columns`), both ways with Java Paimon 0.9.

Four commits write one data file each; row i (0..39) goes to commit i % 4, so every file's min/max stats span the
whole range and only an index can tell that a value is absent from a file. Java 0.9 writes the indexes (in the
manifest entry under `file-index.in-manifest-threshold`, else in `<data file>.index` beside the data file, named
in the entry's extra files); paimon_ds plans exactly the file holding a value, for every hashed type, and reads
the exact rows after the files it must skip are deleted. paimon_ds writes them; Java skips the same files:
embedded indexes when planning (AppendOnlyFileStoreScan.testFileIndex), side files when reading
(RawFileSplitRead with FileIndexSkipper), so Java's read returns only the rows of the file holding the value
(Java filters append files, it does not filter their rows), also once the other data files are deleted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ds import Table
from paimon_ds.format.file_index import INDEX_FILE_SUFFIX, read_index_file
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.table import write_arrow

from .java_rows import java_script

FIELDS = [["id", "INT"], ["s", "STRING"], ["n", "BIGINT"], ["d", "DOUBLE"], ["f", "FLOAT"], ["dt", "DATE"],
          ["t3", "TIMESTAMP(3)"], ["t6", "TIMESTAMP(6)"], ["b", "BYTES"]]
COLUMNS = [name for name, _ in FIELDS]
BASE_NS = 1_700_000_000_000_000_000
EPOCH = dt.datetime(1970, 1, 1)


def plain_row(i: int) -> list[Any]:
    """Row i in java_rows' plain form (timestamps in epoch nanoseconds, dates in days, binaries in hex)."""
    return [i, f"s{i}", i * 10**10, i + 0.5, i + 0.25, 19000 + i, BASE_NS + i * 1_000_000,
            BASE_NS + i * 1_001_000, bytes([i, 7]).hex()]


def literal(column: str, i: int) -> Any:
    """Row i's value of ``column`` as a predicate literal here."""
    v = plain_row(i)[COLUMNS.index(column)]
    if column == "dt":
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if column in ("t3", "t6"):
        return EPOCH + dt.timedelta(microseconds=v // 1000)
    if column == "b":
        return bytes.fromhex(v)
    return v


def arrow_commit(k: int) -> pa.Table:
    rows = [plain_row(i) for i in range(k, 40, 4)]
    cols = list(zip(*rows))
    return pa.table({
        "id": pa.array(cols[0], pa.int32()), "s": pa.array(cols[1]), "n": pa.array(cols[2], pa.int64()),
        "d": pa.array(cols[3], pa.float64()), "f": pa.array(cols[4], pa.float32()),
        "dt": pa.array(cols[5], pa.int32()).cast(pa.date32()),
        "t3": pa.array([v // 1_000_000 for v in cols[6]], pa.int64()).cast(pa.timestamp("ms")),
        "t6": pa.array([v // 1000 for v in cols[7]], pa.int64()).cast(pa.timestamp("us")),
        "b": pa.array([bytes.fromhex(v) for v in cols[8]], pa.binary())})


# sizes that put the indexes in the manifest (a filter of 100 items, threshold 64 KB) or beside the data
# (2000 items: 1.2 KB per column, over the default 500 B threshold)
EMBEDDED = {"file-index.bloom-filter.columns": ",".join(COLUMNS), "file-index.in-manifest-threshold": "64 kb",
            **{f"file-index.bloom-filter.{c}.items": "100" for c in COLUMNS}}
SIDE_FILE = {"file-index.bloom-filter.columns": ",".join(COLUMNS),
             **{f"file-index.bloom-filter.{c}.items": "2000" for c in COLUMNS}}
LAYOUTS = {"embedded": EMBEDDED, "side-file": SIDE_FILE}

# Java: the table with OPTIONS, one commit per entry of COMMITS
JAVA_WRITE = """
create_table(FIELDS, (), (), OPTIONS)
for rows in COMMITS:
    write_rows(rows)
"""

# Java: per query [column, kind, value]: the data files its scan plans and the ids of the rows its read returns
JAVA_FILTERED = """
t = catalog.get_table(ident)._j_table
names = [f.name() for f in t.rowType().getFields()]
out = []
for column, kind, value in QUERIES:
    if kind == "string":
        value = D.BinaryString.fromString(value)
    elif kind == "long":
        value = jvm.java.lang.Long.valueOf(str(value))
    predicate = J.predicate.PredicateBuilder(t.rowType()).equal(names.index(column), value)
    rb = jvm.InvocationUtil.getReadBuilder(t).withFilter(predicate)
    read = rb.newRead()
    files, ids = [], []
    for split in rb.newScan().plan().splits():
        files += [str(f.fileName()) for f in split.dataFiles()]
        it = J.reader.RecordReaderIterator(read.createReader(split))
        while it.hasNext():
            ids.append(it.next().getInt(0))
        it.close()
    out.append({"files": sorted(files), "ids": sorted(ids)})
print(json.dumps(out))
"""


def files_by_commit(path: str) -> dict[int, Any]:
    """commit k (its rows' id % 4) -> the manifest entry of its data file."""
    t = Table.load(path)
    out = {}
    for e in t.new_scan().read_entries():
        split_dir = f"{t.root}/bucket-{e.bucket}"
        ids = pq.read_table(f"{split_dir}/{e.file.file_name}", columns=["id"]).column(0).to_pylist()
        out[ids[0] % 4] = e
    assert sorted(out) == [0, 1, 2, 3]
    return out


def planned(path: str, predicate) -> set[str]:
    return {f.file_name for s in Table.load(path).new_scan(predicate).plan() for f in s.files}


def check_layout(path: str, entries: dict[int, Any], layout: str) -> None:
    for e in entries.values():
        f = e.file
        if layout == "embedded":
            assert f.embedded_index is not None and not f.extra_files
            index = read_index_file(f.embedded_index)
        else:
            assert f.embedded_index is None and f.extra_files == (f.file_name + INDEX_FILE_SUFFIX,)
            with open(f"{path}/bucket-{e.bucket}/{f.extra_files[0]}", "rb") as fh:
                index = read_index_file(fh.read())
        assert sorted(index) == sorted(COLUMNS) and all(list(v) == ["bloom-filter"] for v in index.values())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_java_written_indexes_skip_files(java_oracle, tmp_path, layout):
    path = str(tmp_path / "wh" / "db.db" / "t")
    commits = [[plain_row(i) for i in range(k, 40, 4)] for k in range(4)]
    java_oracle.exec(path, java_script(JAVA_WRITE, FIELDS=FIELDS, OPTIONS=LAYOUTS[layout], COMMITS=commits))
    entries = files_by_commit(path)
    check_layout(path, entries, layout)
    # every hashed type: a value of row i is planned in exactly the file of commit i % 4
    for n, column in enumerate(COLUMNS):
        i = 5 + 3 * n
        assert planned(path, Leaf("=", column, (literal(column, i),))) == {entries[i % 4].file.file_name}, column
        assert planned(path, Leaf("in", column, (literal(column, i), literal(column, i + 1)))) == {
            entries[i % 4].file.file_name, entries[(i + 1) % 4].file.file_name}, column
    assert planned(path, Leaf("=", "s", ("absent",))) == set()
    # the files a filter must skip are deleted: its rows are read exactly from the others
    t = Table.load(path)
    for k in (0, 3):
        os.remove(f"{t.root}/bucket-0/{entries[k].file.file_name}")
    got = t.scan(filter="s IN ('s13', 's14')").to_arrow()
    assert sorted(got.column("id").to_pylist()) == [13, 14]
    os.remove(f"{t.root}/bucket-0/{entries[2].file.file_name}")
    got = t.scan(filter="n = 170000000000").to_arrow()
    assert got.column("s").to_pylist() == ["s17"]
    # `file-index.read.enabled` false: the scan plans every file its stats do not rule out
    off = Table.load(path, {"file-index.read.enabled": "false"})
    assert len([f for s in off.new_scan(Leaf("=", "s", ("s17",))).plan() for f in s.files]) == 4


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_java_skips_files_with_indexes_written_here(java_oracle, tmp_path, layout):
    path = str(tmp_path / "wh" / "db.db" / "t")
    for k in range(4):
        write_arrow(path, arrow_commit(k), options={"bucket": "-1", **LAYOUTS[layout]})
    entries = files_by_commit(path)
    check_layout(path, entries, layout)
    queries = [["s", "string", "s13"], ["id", "int", 22], ["n", "long", 31 * 10**10], ["d", "double", 8.5],
               ["dt", "int", 19000 + 27]]
    ids = [13, 22, 31, 8, 27]
    out = json.loads(java_oracle.exec(path, java_script(JAVA_FILTERED, QUERIES=queries)).strip().splitlines()[-1])
    every = sorted(e.file.file_name for e in entries.values())
    for (column, _, _), i, got in zip(queries, ids, out):
        kept = entries[i % 4].file.file_name
        # Java plans with embedded indexes; it tests side files when it reads
        assert got["files"] == ([kept] if layout == "embedded" else every), column
        assert got["ids"] == list(range(i % 4, 40, 4)), column  # only the rows of the file holding the value
    for k in (0, 2, 3):
        os.remove(f"{path}/bucket-0/{entries[k].file.file_name}")
    out = json.loads(java_oracle.exec(path, java_script(JAVA_FILTERED, QUERIES=queries[:1])).strip().splitlines()[-1])
    assert out[0]["ids"] == list(range(1, 40, 4))


BITMAP_COLUMNS = [c for c in COLUMNS if c != "b"]  # Java's bitmap index refuses binary columns
BITMAPS = {"embedded": {"file-index.bitmap.columns": ",".join(BITMAP_COLUMNS),
                        "file-index.in-manifest-threshold": "64 kb"},
           "side-file": {"file-index.bitmap.columns": ",".join(BITMAP_COLUMNS)}}  # ~1 KB: over 500 B


@pytest.mark.parametrize("layout", sorted(BITMAPS))
def test_java_written_bitmap_indexes_skip_files(java_oracle, tmp_path, layout):
    """Java 0.9's bitmap indexes (BitmapFileIndex): a file holds a value iff its index's head lists it."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    commits = [[plain_row(i) for i in range(k, 40, 4)] for k in range(4)]
    java_oracle.exec(path, java_script(JAVA_WRITE, FIELDS=FIELDS, OPTIONS=BITMAPS[layout], COMMITS=commits))
    entries = files_by_commit(path)
    for e in entries.values():
        f = e.file
        assert (f.embedded_index is not None) == (layout == "embedded")
        assert bool(f.extra_files) == (layout == "side-file")
    for n, column in enumerate(BITMAP_COLUMNS):
        i = 6 + 3 * n
        assert planned(path, Leaf("=", column, (literal(column, i),))) == {entries[i % 4].file.file_name}, column
        assert planned(path, Leaf("in", column, (literal(column, i), literal(column, i + 2)))) == {
            entries[i % 4].file.file_name, entries[(i + 2) % 4].file.file_name}, column
    t = Table.load(path)
    for k in (0, 2, 3):
        os.remove(f"{t.root}/bucket-0/{entries[k].file.file_name}")
    got = t.scan(filter="s = 's21' OR id IN (9, 33)").to_arrow()
    assert sorted(got.column("id").to_pylist()) == [9, 21, 33]


# Java: per query [column, op, value] ("eq" / "null"), the data files its scan plans and its read's row count
JAVA_BITMAP_QUERIES = """
t = catalog.get_table(ident)._j_table
names = [f.name() for f in t.rowType().getFields()]
out = []
for column, op, value in QUERIES:
    pb = J.predicate.PredicateBuilder(t.rowType())
    i = names.index(column)
    predicate = pb.isNull(i) if op == "null" else pb.equal(i, D.BinaryString.fromString(value))
    rb = jvm.InvocationUtil.getReadBuilder(t).withFilter(predicate)
    read = rb.newRead()
    files, rows = [], 0
    for split in rb.newScan().plan().splits():
        files += [str(f.fileName()) for f in split.dataFiles()]
        it = J.reader.RecordReaderIterator(read.createReader(split))
        while it.hasNext():
            it.next()
            rows += 1
        it.close()
    out.append({"files": sorted(files), "rows": rows})
print(json.dumps(out))
"""


@pytest.mark.parametrize("threshold", ["1 mb", "500 b"])
def test_java_reads_bitmap_indexes_written_here(java_oracle, tmp_path, threshold):
    """Bitmaps of many rows (array and bitmap containers, two 65536-row blocks) and of nulls, which Java's
    reader deserializes (RoaringBitmap32) to decide: in the manifest (1 MB threshold) or beside the data."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    opts = {"bucket": "-1", "file-index.bitmap.columns": "g", "file-index.in-manifest-threshold": threshold}
    n = 70_000
    first = pa.table({"id": pa.array(range(n), pa.int32()),
                      "g": pa.array(["a" if i % 7 else "b" for i in range(n)])})
    second = pa.table({"id": pa.array(range(n, n + 10), pa.int32()),
                       "g": pa.array([None if i % 2 else "c" for i in range(10)], pa.string())})
    write_arrow(path, first, options=opts)
    write_arrow(path, second, options=opts)
    t = Table.load(path)
    entries = sorted(t.new_scan().read_entries(), key=lambda e: e.file.row_count)
    small, big = entries[0].file.file_name, entries[1].file.file_name
    assert (entries[1].file.embedded_index is None) == (threshold == "500 b")
    queries = [["g", "eq", "a"], ["g", "eq", "b"], ["g", "eq", "c"], ["g", "null", None], ["g", "eq", "zz"]]
    out = json.loads(java_oracle.exec(path, java_script(JAVA_BITMAP_QUERIES, QUERIES=queries)).strip().splitlines()[-1])
    if threshold == "1 mb":  # Java plans with embedded indexes
        assert [q["files"] for q in out] == [[big], [big], [small], [small], []]
    # either way, Java reads only the file holding the value (append files are read whole)
    assert [q["rows"] for q in out] == [n, n, 10, 10, 0]
    # and paimon_ds plans the same
    for (column, op, value), q in zip(queries, out):
        if op == "eq":
            assert [f.file_name for s in t.new_scan(Leaf("=", column, (value,))).plan() for f in s.files] == (
                [big] if q["rows"] == n else [small] if q["rows"] else [])
