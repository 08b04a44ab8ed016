"""Partition edge cases across Paimon implementations.

Tables partitioned by several keys of STRING, INT, DATE, BOOLEAN (and FLOAT, DECIMAL, TIMESTAMP) types,
with null, empty and blank values (Paimon puts them in `partition.default-name`) and characters that
Paimon escapes in directory names (`=`, `/`, `%`, `#`, `:`, ...) or keeps (spaces, non-ASCII). Java
Paimon 0.9 writes one table and paimon_ds the same rows into another: both must have exactly the same
partition directories, and every reader (paimon_ds, Java 0.9, pypaimon 2.1) reads the same rows.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.partition import partition_path
from paimon_ds.schema.types import DataType

STRINGS = ["a=b/c", "x%y #z", "", " ", None, "日本 語", "q?*:\\{}[]^'\"", "tab\there", "plain"]
SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string()), ("i", pa.int32()), ("d", pa.date32()),
                    ("b", pa.bool_()), ("v", pa.string())])
ROWS = [{"id": n, "s": s, "i": [1, -5, None][n % 3], "d": [dt.date(2024, 1, 31), None][n % 2],
         "b": [True, False, None][n % 3], "v": f"v{n}"} for n, s in enumerate(STRINGS)]
TYPES = {"id": "INT", "s": "STRING", "i": "INT", "d": "DATE", "b": "BOOLEAN", "v": "STRING",
         "f": "FLOAT", "x": "DECIMAL(5, 2)", "t": "TIMESTAMP(3)", "g": "DOUBLE"}

SCHEMA2 = pa.schema([("id", pa.int32()), ("f", pa.float32()), ("g", pa.float64()), ("x", pa.decimal128(5, 2)),
                     ("t", pa.timestamp("ms")), ("v", pa.string())])
ROWS2 = [
    {"id": 1, "f": 1.5, "g": 1e10, "x": Decimal("1.50"), "t": dt.datetime(2024, 1, 31, 10, 0), "v": "a"},
    {"id": 2, "f": 0.1, "g": 1e-5, "x": Decimal("-0.05"), "t": dt.datetime(2024, 1, 31, 10, 0, 5, 120000), "v": "b"},
    {"id": 3, "f": None, "g": -0.0, "x": None, "t": None, "v": "c"},
]

# Run in the Java oracle: create the table in Paimon 0.9's catalog (any types) and write `data` once.
JAVA_CREATE_AND_WRITE = """

J = jvm.org.apache.paimon
T = J.types.DataTypes


def jtype(text):
    if text.startswith("DECIMAL"):
        return T.DECIMAL(*(int(x) for x in text[8:-1].split(",")))
    if text == "TIMESTAMP(3)":
        return T.TIMESTAMP(3)
    return getattr(T, text)()


catalog._j_catalog.createDatabase("db", True)
b = J.schema.Schema.newBuilder()
for name in data.schema.names:
    b.column(name, jtype(TYPES[name]))
keys = jvm.java.util.ArrayList()
for k in PARTITION:
    keys.add(k)
b.partitionKeys(keys)
for k, v in OPTIONS.items():
    b.option(k, v)
catalog._j_catalog.createTable(J.catalog.Identifier.fromString(ident), b.build(), False)
commit_arrow(catalog.get_table(ident), data, cast=True)
"""


def partition_dirs(path: str) -> list[str]:
    """The partition directories holding buckets, relative to the table."""
    return sorted(str(p.parent.relative_to(path)) for p in Path(path).rglob("bucket-*"))


def java_table(java_oracle, path: str, data: pa.Table, partition: list[str], options: dict[str, str]) -> None:
    java_oracle.exec(path, f"TYPES = {TYPES!r}\nPARTITION = {partition!r}\nOPTIONS = {options!r}\n"
                     + JAVA_CREATE_AND_WRITE, data)


def paimon_ds_table(path: str, data: pa.Table, partition: list[str], options: dict[str, str]) -> None:
    t = Table.for_write(path, data.schema, {"partition": ",".join(partition), **options})
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("u").commit(w.prepare_commit())


def rows_of(t: pa.Table) -> list[dict]:
    return t.sort_by("id").to_pylist()


@pytest.mark.parametrize("data,partition,options", [
    (pa.Table.from_pylist(ROWS, SCHEMA), ["s", "i", "d", "b"], {}),
    (pa.Table.from_pylist(ROWS2, SCHEMA2), ["f", "g", "x", "t"], {"partition.default-name": "__NULL__ #%"}),
], ids=["string-int-date-bool", "float-decimal-timestamp-custom-default"])
def test_partitions_match_java(java_oracle, pypaimon_oracle, tmp_path, data, partition, options):
    java_path = str(tmp_path / "warehouse" / "db.db" / "java")
    ours = str(tmp_path / "warehouse" / "db.db" / "ours")
    java_table(java_oracle, java_path, data, partition, options)
    paimon_ds_table(ours, data, partition, options)
    # the same directory names as Java, for every value
    assert partition_dirs(ours) == partition_dirs(java_path)
    want = data.to_pylist()
    assert rows_of(Table.load(java_path).to_arrow()) == rows_of(java_oracle.read(java_path)) == want
    assert rows_of(java_oracle.read(ours)) == rows_of(pypaimon_oracle.read(ours)) == want
    assert rows_of(Table.load(ours).to_arrow()) == want


def test_partition_directory_names():
    types = [DataType("VARCHAR", (2147483647,)), DataType("INT"), DataType("DATE"), DataType("BOOLEAN")]
    assert partition_path(["s", "i", "d", "b"], ["a=b/c", -5, dt.date(2024, 1, 31), True], "__D__", types) == \
        "s=a%3Db%2Fc/i=-5/d=19753/b=true"
    for blank in ["", " ", "\t\n", "\u3000"]:  # Java's Character.isWhitespace: blank values are null partitions
        assert partition_path(["s"], [blank], "__D__", types[:1]) == "s=__D__"
    assert partition_path(["s"], ["\u00a0"], "__D__", types[:1]) == "s=\u00a0"  # no-break space is not blank
    assert partition_path(["k=ey"], ["x%#{}"], "__D__") == "k%3Dey=x%25%23%7B%7D"
    assert partition_path(["t"], [dt.time(10, 0, 1, 500000)], "__D__", [DataType("TIME", (3,))]) == "t=36001500"
    floats = [DataType("FLOAT"), DataType("DOUBLE"), DataType("DECIMAL", (10, 7)), DataType("TIMESTAMP", (6,))]
    assert partition_path(["f", "g", "x", "t"], [0.10000000149011612, 1e7, Decimal("0.0000001"),
                                                 dt.datetime(2024, 1, 31, 10, 0, 0, 123400)], "__D__", floats) == \
        "f=0.1/g=1.0E7/x=0.0000001/t=2024-01-31T10%3A00%3A00.123400"
