"""NaN and -0.0 as primary keys and partitions, against Java Paimon 0.9 and pypaimon 2.1.

The rule is Paimon's own comparator, Java's Double.compare: every NaN one key (above +Infinity), -0.0 a key apart
from 0.0 (tests/mergetree/test_float_keys.py shows it on paimon_ds alone). Both oracles get keys wrong where their
merge compares them, and right where a table needs no merge:

- Java Paimon 0.9 compares FLOAT / DOUBLE keys with `a > b ? 1 : a < b ? -1 : 0`
  (paimon-codegen/.../GenerateUtils.scala, release-0.9.0 lines 127-128: `case TINYINT | ... | FLOAT | DOUBLE | ...`),
  so NaN equals every key and merges with its neighbour; Paimon 2.0 fixed it to `java.lang.Double.compare`
  (same file, release-2.0.0 lines 130-133, apache/paimon#8295, whose test testFloatingPointComparatorMatchesTotalOrder
  pins the order), the order that Paimon 0.9 already used in InternalRowUtils.compare and SortUtil's normalized keys.
- pypaimon 2.1 compares keys with Python's `<` / `>` (read/reader/sort_merge_reader.py `_row_field_comparator`:
  "Primary-key equality is unchanged"), so NaN equals every key in its merge too; its writer sorts NaN keys first,
  keeps two rows of one NaN key, and merges -0.0 with 0.0.
- pypaimon 2.1 names a NaN partition `p=nan` (utils/file_store_path_factory.py `_floating_partition_string`:
  `str(value)` for a non-finite value), Java `p=NaN` (InternalRowPartitionComputer: the value's toString), so
  pypaimon reads no NaN partition Java or paimon_ds wrote, and neither reads one pypaimon wrote.

A fully compacted table is one sorted run, read without a merge: there all three agree.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.table import write_arrow

NAN = float("nan")
NEG_NAN = np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0]  # x86's default NaN
CANONICAL, MINUS_ZERO, ZERO, ONE = "0x7ff8000000000000", "0x8000000000000000", "0x0", "0x3ff0000000000000"


def rows(t: pa.Table) -> list[tuple]:
    """(key bits, value) of every row, sorted: NaN payloads and zero signs shown, duplicates kept."""
    return sorted((hex(int(b)), v) for b, v in zip(t.column("k").to_numpy().view(np.uint64), t.column("v").to_pylist()))


def test_paimon_ds_writes_nan_and_signed_zero_keys(java_oracle, pypaimon_oracle, table_path):
    """Three commits of level-0 runs (write-only): paimon_ds merges by Double.compare. Java 0.9 merges NaN with 1.0
    (its comparator) and pypaimon keeps two NaN keys and drops 1.0 (Python's comparisons); after a full compaction
    (one sorted run, read as it is) both read exactly paimon_ds's rows."""
    for keys, values in (([1.0, NAN, 0.0], ["a", "b", "c"]), ([NEG_NAN, -0.0], ["d", "e"]),
                         ([NAN, 0.0, -0.0], ["f", "g", "i"])):
        write_arrow(table_path, pa.table({"k": pa.array(keys, pa.float64()), "v": values}), primary_key="k",
                    options={"bucket": "1", "write-only": "true"})
    expected = [(ZERO, "g"), (ONE, "a"), (CANONICAL, "f"), (MINUS_ZERO, "i")]
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert rows(java_oracle.read(table_path)) == [(ZERO, "g"), (CANONICAL, "f"), (MINUS_ZERO, "i")]  # 1.0 lost
    assert rows(pypaimon_oracle.read(table_path)) == [(ZERO, "g"), (CANONICAL, "b"), (CANONICAL, "f"),
                                                      (MINUS_ZERO, "i")]
    compact_in_process(Table.load(table_path), None, full=True)
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert rows(java_oracle.read(table_path)) == expected
    assert rows(pypaimon_oracle.read(table_path)) == expected


def test_java_writes_nan_and_signed_zero_keys(java_oracle, table_path):
    """Java 0.9 writes one key per commit (its write buffer would merge NaN with its neighbour), level-0 runs:
    paimon_ds reads four keys, as Paimon 2.0 does, where Java 0.9 reads two."""
    java_oracle.exec(table_path, """
import pyarrow as pa
from pypaimon import Schema
catalog.create_database(ident.split(".")[0], True)
schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.string())])
catalog.create_table(ident, Schema(schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"}), True)
for k, v in [(1.0, "a"), (float("nan"), "b"), (-0.0, "c"), (0.0, "d"), (float("nan"), "e")]:
    commit_arrow(catalog.get_table(ident), pa.table({"k": pa.array([k], pa.float64()), "v": [v]}, schema=schema))
""")
    assert rows(Table.load(table_path).to_arrow()) == [(ZERO, "d"), (ONE, "a"), (CANONICAL, "e"), (MINUS_ZERO, "c")]
    # Java 0.9's merge: 1.0 merged into NaN, -0.0 into 0.0 (`a > b ? 1 : a < b ? -1 : 0` says both are equal)
    assert rows(java_oracle.read(table_path)) == [(ZERO, "d"), (CANONICAL, "e")]


def test_pypaimon_writes_nan_and_signed_zero_keys(pypaimon_oracle, table_path):
    """pypaimon 2.1's files: NaN keys sorted first, one NaN key twice in a file, -0.0 merged with 0.0 in one
    commit. paimon_ds sorts such a file into Paimon's key order and merges its equal keys (as Paimon's merge
    reader merges equal keys of one file), so it reads what Paimon 2.0 reads."""
    pypaimon_oracle.exec(table_path, """
import numpy as np
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
import os
cat = CatalogFactory.create({"warehouse": os.path.dirname(os.path.dirname(path))})
cat.create_database("db", True)
schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.string())])
cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["k"], options={"bucket": "1"}), True)
nan, neg_nan = float("nan"), np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0]
for keys, values in (([1.0, nan, 0.0], ["a", "b", "c"]), ([neg_nan, -0.0], ["d", "e"]),
                     ([nan, 0.0, nan, -0.0], ["f", "g", "h", "i"])):
    commit_arrow(cat.get_table("db.t"), pa.table({"k": pa.array(keys, pa.float64()), "v": values}, schema=schema))
""")
    # pypaimon's third commit stored -0.0 -> i (g merged into it), NaN -> f and NaN -> h
    assert rows(Table.load(table_path).to_arrow()) == [(ZERO, "c"), (ONE, "a"), (CANONICAL, "h"), (MINUS_ZERO, "i")]


def test_nan_partition_written_here(java_oracle, pypaimon_oracle, table_path):
    """Partitions NaN (two payloads: one partition), -0.0 and 0.0 (two): Java 0.9 reads them exactly; pypaimon
    looks for `p=nan` and fails (see the module's docstring)."""
    data = pa.table({"p": pa.array([NAN, NEG_NAN, -0.0, 0.0, 1.0]), "id": pa.array([1, 2, 3, 4, 5], pa.int32())})
    write_arrow(table_path, data, partition_by="p")
    assert sorted(d for d in os.listdir(table_path) if d.startswith("p=")) == ["p=-0.0", "p=0.0", "p=1.0", "p=NaN"]

    def by_id(t: pa.Table) -> list[tuple]:
        return sorted((i, hex(int(b))) for i, b in zip(t.column("id").to_pylist(),
                                                        t.column("p").to_numpy().view(np.uint64)))
    expected = [(1, CANONICAL), (2, CANONICAL), (3, MINUS_ZERO), (4, ZERO), (5, ONE)]
    assert by_id(Table.load(table_path).to_arrow()) == expected
    assert by_id(java_oracle.read(table_path)) == expected
    # pypaimon reads its splits in parallel: whichever of its wrong partition paths it opens first fails
    with pytest.raises(AssertionError, match=r"p=nan|p=-0\.0"):
        pypaimon_oracle.read(table_path)
