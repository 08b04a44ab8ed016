"""TIMESTAMP(7..9) and TIMESTAMP_LTZ(9) everywhere a table puts them: partition values, primary keys and bucket
keys, min/max stats, file indexes, filters, writes continuing a Java table, through Spark and the core.

Java Paimon 0.9 writes a partitioned primary-key table (parquet, ORC) whose partition, key and bucket key are
nanosecond timestamps, in two commits (an upsert and a delete in the second), and append tables with bloom-filter
and bitmap file indexes on such columns (kept in the manifest, or in files beside the data). paimon_ds reads them
as Java does (the core to the nanosecond, Spark truncated to microseconds as Paimon's Spark connector does),
filters on every kind of column return exactly the rows the same filter keeps in Python, and paimon_ds continues
the primary-key table (the core API with nanoseconds, `df.write.format("paimon")` with Spark's microseconds):
Java reads the merged result, so keys, buckets and partition directories agree. A table paimon_ds creates is read
by Java, also through a filter its min/max keys prune. Paimon 0.9 has bloom-filter and bitmap file indexes; the
bit-sliced index (BSI) came later and no oracle here writes it.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.predicate.predicates import And, Leaf

from .java_rows import java_read_plain, java_script, plain_rows, row_differences, spark_rows

MS = 1_000_000
FIELDS = [["p", "TIMESTAMP(9) NOT NULL"], ["k", "TIMESTAMP(9) NOT NULL"], ["id", "INT NOT NULL"],
          ["v", "TIMESTAMP(9)"], ["l", "TIMESTAMP(9) WITH LOCAL TIME ZONE"], ["t7", "TIMESTAMP(7)"], ["s", "STRING"]]
P1, P2 = 1_700_000_000_123_456_789, 1_600_000_000_000_000_001  # partitions: with nanoseconds
K = [1_700_000_000_000_000_500, 1_700_000_000_000_000_999, 1_700_000_000_000_001_000, 946_684_800_123_456_789,
     -1_000_000_000 * 86400]  # keys: below the microsecond, on it, 2000-01-01, 1969-12-31


def _row(p: int, k: int, i: int, shift: int = 0) -> list[Any]:
    v = k + 123 + shift
    return [p, k, i, v, v + 7, v - v % 100, f"s{i}-{shift}"]


COMMIT1 = [_row(p, k, i) for p in (P1, P2) for i, k in enumerate(K)]
COMMIT2 = [_row(P1, K[0], 0, shift=1000), _row(P2, K[2], 2, shift=-7)]  # upserts
DELETE2 = [_row(P1, K[3], 3)]

# Java: the primary-key table (options OPTIONS), two commits (an upsert and a delete in the second); its rows
JAVA_WRITE = """
create_table(FIELDS, ["p", "k", "id"], ["p"], OPTIONS)
write_rows(COMMIT1)
write_rows(COMMIT2 + DELETE2, ["+I"] * len(COMMIT2) + ["-D"] * len(DELETE2))
print(json.dumps({"rows": read_rows()}))
"""

# Java: an append table with file indexes (options OPTIONS), one commit; its rows and each file's index
# (in the manifest or in a file beside the data file)
JAVA_INDEXED = """
create_table(FIELDS, [], ["p"], OPTIONS)
write_rows(COMMIT1)
t = catalog.get_table(ident)._j_table
indexes = []
for split in t.newSnapshotReader().read().dataSplits():
    for f in split.dataFiles():
        indexes.append([f.embeddedIndex() is not None, [str(x) for x in f.extraFiles()]])
print(json.dumps({"rows": read_rows(), "indexes": indexes}))
"""

# Java: the rows a filter COLUMN > LOW (nanoseconds) keeps, planned with the table's stats (files pruned by them)
JAVA_FILTERED = """
t = catalog.get_table(ident)._j_table
types = children(t.rowType())
col = [f.name() for f in t.rowType().getFields()].index(COLUMN)
low = D.Timestamp.fromEpochMillis(LOW // 1000000, LOW % 1000000)
predicate = J.predicate.PredicateBuilder(t.rowType()).greaterThan(col, low)
rb = jvm.InvocationUtil.getReadBuilder(t).withFilter(predicate)
read = rb.newRead()
out, files = [], 0
for split in rb.newScan().plan().splits():
    files += split.dataFiles().size()
    it = J.reader.RecordReaderIterator(read.createReader(split))
    while it.hasNext():
        row = it.next()
        out.append([plain_of(row, i, f) for i, f in enumerate(types)])
    it.close()
print(json.dumps({"rows": out, "files": files}))
"""

# Paimon 0.9 writes file indexes for append tables (for primary-key tables only with deletion vectors)
INDEXED = {
    "parquet": {"file.format": "parquet", "file-index.bloom-filter.columns": "v,k", "file-index.bitmap.columns": "t7,s",
                # bloom filters sized for a few values (the default, a million, is far past the threshold)
                "file-index.bloom-filter.v.items": "100", "file-index.bloom-filter.k.items": "100",
                "file-index.in-manifest-threshold": "64 kb"},
    "orc": {"file.format": "orc", "file-index.bloom-filter.columns": "v,k", "file-index.bitmap.columns": "t7,s"},
}


def _merged(*commits: list[list[Any]], deletes: list[list[Any]] = ()) -> list[list[Any]]:
    rows: dict[tuple, list[Any]] = {}
    for commit in commits:
        for r in commit:
            rows[tuple(r[:3])] = r
    for r in deletes:
        rows.pop(tuple(r[:3]), None)
    return sorted(rows.values(), key=_key)


def _key(r: list[Any]) -> tuple:
    return (r[0], r[1], r[2])


def _datetime(ns: int) -> dt.datetime:
    """A nanosecond value as the microsecond datetime Spark filters with (truncated)."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=ns // 1000)


def _check_table(spark, path: str, want: list[list[Any]]) -> None:
    table = Table.load(path)
    core = sorted(plain_rows(table.to_arrow()), key=_key)
    assert core == want, row_differences(core, want, [n for n, _ in FIELDS])
    via_spark = sorted(plain_rows(spark.read.format("paimon").load(path).toArrow()), key=_key)
    expect_spark = spark_rows(want, table.arrow_schema())
    assert via_spark == sorted(expect_spark, key=_key), row_differences(via_spark, expect_spark)


def _check_filters(spark, path: str, want: list[list[Any]], columns: tuple[str, ...] = ("p", "k", "v")) -> None:
    """Spark filters (on the microsecond values Spark sees) and core predicates (on the nanoseconds) keep exactly
    the rows the same test keeps in Python, for the named columns (partition, key, indexed, plain)."""
    from pyspark.sql import functions as F
    df = spark.read.format("paimon").load(path)
    schema = Table.load(path).arrow_schema()
    micros = spark_rows(want, schema)
    ops = {"=": lambda a, b: a == b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b}
    for column in columns:
        index = [n for n, _ in FIELDS].index(column)
        for value in sorted({r[index] for r in want if r[index] is not None})[:2]:
            lit = _datetime(value)
            for op, test in ops.items():
                expr = {"=": F.col(column) == lit, ">": F.col(column) > lit, ">=": F.col(column) >= lit,
                        "<": F.col(column) < lit, "<=": F.col(column) <= lit}[op]
                got = sorted(plain_rows(df.filter(expr).toArrow()), key=_key)
                micro_lit = value - value % 1000
                keep = sorted([r for r in micros if r[index] is not None and test(r[index], micro_lit)], key=_key)
                assert got == keep, (column, op, value)
                # the core compares the stored nanoseconds
                import pandas as pd
                literal = pd.Timestamp(value, unit="ns")
                core = sorted(plain_rows(Table.load(path).to_arrow(Leaf(op, column, (literal,)))), key=_key)
                assert core == [r for r in want if r[index] is not None and test(r[index], value)], (column, op, value)
        got = sorted(plain_rows(df.filter(F.col(column).isin(_datetime(want[0][index]))).toArrow()), key=_key)
        assert got == [r for r in micros if r[index] == want[0][index] - want[0][index] % 1000]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_java_nanosecond_table_read_filtered_and_continued(spark, java_oracle, table_path, fmt):
    # Java 0.9 cannot read its own parquet INT96 before 1970 with digits below the millisecond: keys are whole
    # milliseconds before 1970 here (the sweep covers paimon_ds's reading of those)
    out = json.loads(java_oracle.exec(table_path, java_script(
        JAVA_WRITE, FIELDS=FIELDS, OPTIONS={"file.format": fmt, "bucket": "2"}, COMMIT1=COMMIT1, COMMIT2=COMMIT2,
        DELETE2=DELETE2)).strip().splitlines()[-1])
    want = _merged(COMMIT1, COMMIT2, deletes=DELETE2)
    assert sorted(out["rows"], key=_key) == want
    _check_table(spark, table_path, want)
    _check_filters(spark, table_path, want)

    # paimon_ds continues the table: nanoseconds through the core, microseconds through Spark
    table = Table.load(table_path)
    schema = table.arrow_schema()
    from .java_rows import arrow_table_from_plain
    commit3 = [_row(P1, K[1], 1, shift=5), _row(P2, K[2], 9), _row(P1 + 1, K[0], 0)]  # upsert, new key, partition
    w = table.new_write()
    w.write_arrow(arrow_table_from_plain(commit3, schema))
    table.new_commit("paimon_ds").commit(w.prepare_commit())
    micro_rows = spark_rows([_row(P2, K[0], 0, shift=3000), _row(P2, K[1] + 2000, 11)], schema)
    spark_schema = spark.read.format("paimon").load(table_path).schema
    micro_schema = pa.schema([f.with_type(pa.timestamp("us", tz=f.type.tz)) if pa.types.is_timestamp(f.type) else f
                              for f in schema])
    df = spark.createDataFrame(arrow_table_from_plain(micro_rows, micro_schema), spark_schema)
    df.write.format("paimon").mode("append").save(table_path)
    want = _merged(want, commit3, micro_rows)
    assert sorted(java_read_plain(java_oracle, table_path), key=_key) == want
    _check_table(spark, table_path, want)
    # every partition value has one directory, named as Java names it (Spark's microseconds made P2 - 1 a new one)
    dirs = sorted(d.name for d in Path(table_path).iterdir() if d.name.startswith("p="))
    assert dirs == sorted({f"p={_java_partition_name(r[0])}" for r in want}), dirs
    assert len(dirs) == 4


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_java_nanosecond_table_with_file_indexes(spark, java_oracle, table_path, fmt):
    """Bloom-filter and bitmap indexes on nanosecond columns, kept in the manifest (parquet here) or in files beside
    the data (ORC here): paimon_ds reads and filters the table (indexes do not change what a read returns)."""
    out = json.loads(java_oracle.exec(table_path, java_script(
        JAVA_INDEXED, FIELDS=FIELDS, OPTIONS=INDEXED[fmt], COMMIT1=COMMIT1)).strip().splitlines()[-1])
    if fmt == "parquet":
        assert out["indexes"] and all(embedded and not extra for embedded, extra in out["indexes"])
    else:
        assert out["indexes"] and all(not embedded and [x for x in extra if x.endswith(".index")]
                                      for embedded, extra in out["indexes"])
    want = sorted(COMMIT1, key=_key)
    assert sorted(out["rows"], key=_key) == want
    _check_table(spark, table_path, want)
    _check_filters(spark, table_path, want, ("v", "t7"))  # the bloom-filtered and the bitmap-indexed


def _java_partition_name(ns: int) -> str:
    """Paimon's partition directory value of a TIMESTAMP: LocalDateTime.toString, escaped (':' is %3A)."""
    secs, nanos = divmod(ns, 1_000_000_000)
    text = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{nanos:09d}"
    if nanos:
        text += "." + (fraction[:3] if nanos % MS == 0 else fraction[:6] if nanos % 1000 == 0 else fraction)
    return text.replace(":", "%3A")


def test_paimon_ds_nanosecond_table_read_by_java(spark, java_oracle, table_path):
    """paimon_ds creates the table (partition, key and bucket key nanosecond timestamps) and writes two commits;
    Java reads it, also through a filter its stats prune with."""
    from paimon_ds.fs.file_io import FileIO
    from paimon_ds.schema.manager import SchemaManager, TableSchema
    from paimon_ds.schema.types import DataField, parse_type

    from .java_rows import arrow_table_from_plain
    fields = [DataField(i, n, parse_type(t)) for i, (n, t) in enumerate(FIELDS)]
    SchemaManager(FileIO(table_path), table_path).create(TableSchema(
        0, tuple(fields), len(fields) - 1, ("p",), ("p", "k", "id"), {"bucket": "2"}, None, int(time.time() * 1000)))
    table = Table.load(table_path)
    # before 1970 with nanoseconds too: paimon_ds's INT96 keeps the nanoseconds of the day positive, which 0.9 reads
    commit1 = COMMIT1 + [_row(P2, -1_500_000_001, 20)]
    for rows in (commit1, COMMIT2):
        w = table.new_write()
        w.write_arrow(arrow_table_from_plain(rows, table.arrow_schema()))
        table.new_commit("u").commit(w.prepare_commit())
    want = _merged(commit1, COMMIT2)
    _check_table(spark, table_path, want)
    _check_filters(spark, table_path, want)
    assert sorted(java_read_plain(java_oracle, table_path), key=_key) == want
    # (pypaimon 2.1 names a TIMESTAMP(9) partition's directory with microseconds only, so it finds no file of a
    # partition value with nanoseconds, in Java's tables as in these; the type sweep has it read nanoseconds)
    # the min/max keys of nanosecond key columns (BinaryRows with non-compact timestamps), decoded exactly, prune
    # for Java as for paimon_ds: only the files holding the largest key can match
    files = [f for s in Table.load(table_path).new_scan().plan() for f in s.files]
    low = sorted({r[1] for r in want})[-2]
    out = json.loads(java_oracle.exec(table_path, java_script(JAVA_FILTERED, COLUMN="k", LOW=low)).strip()
                     .splitlines()[-1])
    assert sorted(r for r in out["rows"] if r[1] > low) == sorted(r for r in want if r[1] > low)
    assert 0 < out["files"] < len(files)
    ours = Table.load(table_path).new_scan(Leaf(">", "k", (_pd(low),))).plan()
    assert sum(len(s.files) for s in ours) == out["files"]


def _pd(ns: int) -> Any:
    import pandas as pd
    return pd.Timestamp(ns, unit="ns")


def test_nanosecond_predicates_prune_by_exact_stats(table_path):
    """A file whose largest value is 0.5 microseconds past a literal is kept for `>` on that literal (its max
    decodes to the nanosecond), and Spark's `=` on the truncated value becomes a half-open range."""
    from paimon_ds.spark.filters import to_predicate
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.timestamp("ns"))])
    t = Table.for_write(table_path, schema, {})
    w = t.new_write()
    w.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "v": pa.array([1_000_000_500], pa.timestamp("ns"))}))
    t.new_commit("u").commit(w.prepare_commit())
    table = Table.load(table_path)
    literal = dt.datetime(1970, 1, 1, 0, 0, 1)  # 1_000_000_000 ns
    assert [r["id"] for r in table.to_arrow(Leaf(">", "v", (literal,))).to_pylist()] == [1]
    assert table.to_arrow(Leaf("<=", "v", (literal,))).num_rows == 0

    class EqualTo:  # Spark's pushed filter, as pyspark.sql.datasource hands it over
        def __init__(self, attribute: tuple[str, ...], value: Any) -> None:
            self.attribute, self.value = attribute, value
    pred = to_predicate(EqualTo(("v",), literal), table.table_schema)
    assert isinstance(pred, And)  # v >= 1s and v < 1s + 1us: the row Spark sees as 00:00:01.000000
    assert [r["id"] for r in table.to_arrow(pred).to_pylist()] == [1]
