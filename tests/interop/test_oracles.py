"""Compatibility with the two reference implementations, in both directions.

Oracles: pypaimon 2.1 (pure Python) and Apache Paimon 0.9 (Java, through pypaimon 0.2's py4j bridge);
see tests/oracles/. The paimon_ds side always goes through Spark (`df.write` / `spark.read`), plus the
core `Table` API for reads. Every check compares exact rows (sorted by the unique `id`) with what was written.

Oracle limits met here (each checked to be the oracle's, not ours):
- Java 0.9's bridge converts Paimon rows to Arrow with MAP values declared NOT NULL, so a map holding a
  null value cannot leave the JVM (pyarrow refuses the batch). A table written by pypaimon 2.1 itself with
  `map<string, bigint>` values that are null fails the same way, and pypaimon reads both tables, so the
  generated maps hold no null values (whole maps are null often); null map values are read back by
  pypaimon and paimon_ds in `test_null_map_values_reach_pypaimon`.
- The Java bridge can only create tables whose columns are ints, floats, strings and booleans, but it can
  append any type when handed Arrow data in its own shapes (see `java_arrow_shape`).
- pypaimon 2.1 cannot read manifests written by Java 0.9 (KeyError `_VALUE_STATS_COLS`): it reads a
  Java-created table only after paimon_ds rewrote the manifests (`manifest.merge-min-count`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import Oracle

import paimon_ds
from paimon_ds.predicate.predicates import Leaf

# ------------------------------------------------------------------------------------------ data

ALL_TYPES = pa.schema([
    ("id", pa.int32()), ("dt", pa.string()), ("ti", pa.int8()), ("si", pa.int16()), ("bi", pa.int64()),
    ("f", pa.float32()), ("d", pa.float64()), ("dec10", pa.decimal128(10, 2)), ("dec30", pa.decimal128(30, 5)),
    ("s", pa.string()), ("bin", pa.binary()), ("b", pa.bool_()), ("day", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")), ("ts_ntz", pa.timestamp("us")), ("arr", pa.list_(pa.int32())),
    ("m", pa.map_(pa.string(), pa.int64())), ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("sparse", pa.string()), ("all_null", pa.int64()),
])
# The columns the Java bridge can create a table with.
JAVA_TYPES = pa.schema([ALL_TYPES.field(n) for n in
                        ("id", "dt", "ti", "si", "bi", "f", "d", "s", "b", "sparse", "all_null")])
# Empty, ASCII, multi-byte and astral-plane unicode, and strings far longer than the 16-char stats truncation.
STRINGS = ["", "plain", "héllo wörld ✓ 日本語 😀 ümlaut", "x" * 5000, "ü😀" * 700, "zzz"]
UTC = dt.timezone.utc


def _value(name: str, i: int) -> Any:
    if name == "id":
        return i
    if name == "dt":
        return f"d{i % 3}"
    if name == "all_null":
        return None
    if name == "sparse":
        return f"sparse-{i}" if i % 10 == 0 else None
    if (i * 7 + len(name) * 3) % 5 == 0:  # ~20% nulls in every other column, at rows that differ per column
        return None
    if name == "ti":
        return (i * 37) % 256 - 128
    if name == "si":
        return (i * 331) % 65536 - 32768
    if name == "bi":
        return (-1) ** i * i * 10**15 + i
    if name == "f":
        return i * 0.5 - 40.0  # exact in float32
    if name == "d":
        return i / 7 - 11.0
    if name == "dec10":
        return Decimal((i * 7919 * 1013) % 10**10 - 5 * 10**9).scaleb(-2)
    if name == "dec30":
        return Decimal((-1) ** i * (i * 10**24 + i * 12345)).scaleb(-5)
    if name == "s":
        return STRINGS[i % len(STRINGS)] + (str(i) if i % len(STRINGS) else "")
    if name == "bin":
        return bytes(range(i % 40)) + b"\x00\xff"
    if name == "b":
        return i % 3 == 0
    if name == "day":  # before and after the epoch
        return dt.date(1970, 1, 1) + dt.timedelta(days=i * 37 - 5000)
    if name == "ts":
        return dt.datetime(1965, 3, 1, tzinfo=UTC) + dt.timedelta(days=i * 11, microseconds=i * 1234567)
    if name == "ts_ntz":
        return dt.datetime(1969, 12, 31, 23, 59) + dt.timedelta(hours=i * 5, microseconds=i * 7)
    if name == "arr":
        return [] if i % 4 == 1 else [i, None, -i]
    if name == "m":  # no null values: see the module docstring
        return {} if i % 4 == 2 else {f"k{i}": i, "z": -i}
    if name == "st":
        return {"a": None if i % 2 else i, "b": f"s{i}"}
    raise KeyError(name)


def rows(ids: Sequence[int] | range, schema: pa.Schema = ALL_TYPES) -> pa.Table:
    return pa.table({f.name: pa.array([_value(f.name, i) for i in ids], f.type) for f in schema}, schema=schema)


def java_arrow_shape(t: pa.DataType) -> pa.DataType:
    """The Arrow type the Java bridge insists on when appending (it compares schemas strictly)."""
    if pa.types.is_timestamp(t) and t.tz:
        return pa.timestamp(t.unit, tz="Etc/UTC")
    if pa.types.is_list(t):
        return pa.list_(pa.field("$data$", java_arrow_shape(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(java_arrow_shape(t.key_type), pa.field("value", java_arrow_shape(t.item_type), nullable=False))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, java_arrow_shape(f.type), f.nullable) for f in t])
    return t


def for_java(data: pa.Table) -> pa.Table:
    return data.cast(pa.schema([pa.field(f.name, java_arrow_shape(f.type)) for f in data.schema]))


# ------------------------------------------------------------------------------------------ comparing

def canonical(t: pa.DataType) -> pa.DataType:
    """An Arrow type with the differences between equivalent spellings removed.

    Readers spell the same data differently: Java 0.9 names list items `$data$`, declares map values
    NOT NULL and names the LTZ zone `Etc/UTC`; pypaimon names a map's entries after the column. The
    values are the same, so only these spellings are ignored; units, widths, precision and scale are not.
    """
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz="UTC" if t.tz in ("UTC", "Etc/UTC", "+00:00") else t.tz)
    if pa.types.is_list(t):
        return pa.list_(canonical(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(canonical(t.key_type), canonical(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, canonical(f.type)) for f in t])
    return t


def assert_same_rows(got: pa.Table, expected: pa.Table, who: str) -> None:
    assert got.column_names == expected.column_names, who
    for g, e in zip(got.schema, expected.schema):
        assert canonical(g.type) == canonical(e.type), f"{who}: column {g.name} is {g.type}, expected {e.type}"
    got = got.cast(expected.schema).sort_by("id")  # the types are equivalent (checked above)
    expected = expected.sort_by("id")
    assert got.num_rows == expected.num_rows, f"{who}: {got.num_rows} rows, expected {expected.num_rows}"
    if not got.equals(expected):
        for name in expected.column_names:
            g, e = got.column(name).to_pylist(), expected.column(name).to_pylist()
            bad = [i for i in range(len(e)) if g[i] != e[i]]
            if bad:
                i = bad[0]
                pytest.fail(f"{who}: column {name} differs in {len(bad)} rows; id={expected['id'][i]}: "
                            f"{str(g[i])[:200]!r} != {str(e[i])[:200]!r}")
        pytest.fail(f"{who}: tables differ")


# ------------------------------------------------------------------------------------------ helpers

def spark_write(spark, path: str, data: pa.Table, options: dict[str, str], mode: str = "append") -> None:
    from pyspark.sql.pandas.types import from_arrow_schema
    # An explicit schema keeps tz-less timestamps TIMESTAMP_NTZ; 3 partitions make several tasks write
    # the same buckets in one commit.
    df = spark.createDataFrame(data, schema=from_arrow_schema(data.schema)).repartition(3)
    df.write.format("paimon").mode(mode).options(**options).save(path)


def spark_read(spark, path: str, **options: str) -> pa.Table:
    return spark.read.format("paimon").options(**options).load(path).toArrow()


def snapshots(path: str) -> list[dict[str, Any]]:
    snap_dir = Path(path) / "snapshot"
    ids = sorted(int(p.name.split("-")[1]) for p in snap_dir.glob("snapshot-*"))
    return [json.loads((snap_dir / f"snapshot-{i}").read_text()) for i in ids]


def _manifest_list(path: str, name: str) -> list[dict[str, Any]]:
    with open(Path(path) / "manifest" / name, "rb") as fh:
        return list(fastavro.reader(fh))


def delta_entries(path: str, snapshot_id: int) -> list[dict[str, Any]]:
    """The manifest entries a snapshot added, read straight from the Avro files (not through paimon_ds)."""
    snap = json.loads((Path(path) / "snapshot" / f"snapshot-{snapshot_id}").read_text())
    return [e for meta in _manifest_list(path, snap["deltaManifestList"])
            for e in _manifest_list(path, meta["_FILE_NAME"])]


# ------------------------------------------------------------- 1. paimon_ds writes -> oracles read

C1, C2, C3 = range(0, 120), range(120, 240), range(240, 330)
LAYOUTS = {
    # name: (options, third commit: None | "append" | "overwrite" (whole table) | "dynamic" (partition d1))
    "unaware": ({}, None),
    "partitioned": ({"partition": "dt"}, "dynamic"),
    "bucketed": ({"bucket": "4", "bucket-key": "id"}, "overwrite"),
    "partitioned-bucketed": ({"partition": "dt", "bucket": "4", "bucket-key": "id"}, "append"),
}


def data_snapshots(path: str) -> list[dict]:
    """The snapshots of data commits: a paimon_ds commit whose tasks left a bucket at a compaction trigger (small
    files of a fixed-bucket append table) is followed by its COMPACT snapshot, as Paimon's writer compacts."""
    return [s for s in snapshots(path) if s["commitKind"] != "COMPACT"]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_oracles_read_what_paimon_ds_writes(spark, table_path, pypaimon_oracle, java_oracle, layout):
    options, third = LAYOUTS[layout]
    spark_write(spark, table_path, rows(C1), options)
    spark_write(spark, table_path, rows(C2), options)
    expected = rows([*C1, *C2])
    if third == "append":
        spark_write(spark, table_path, rows(C3), options)
        expected = rows([*C1, *C2, *C3])
    elif third == "overwrite":  # Paimon's default overwrite replaces the whole table
        spark_write(spark, table_path, rows(C3), options, mode="overwrite")
        expected = rows(C3)
    elif third == "dynamic":  # only the partitions written (d1) are replaced
        d1 = [i for i in C3 if i % 3 == 1]
        spark_write(spark, table_path, rows(d1), {**options, "partitionOverwriteMode": "dynamic"}, mode="overwrite")
        expected = rows([i for i in [*C1, *C2] if i % 3 != 1] + d1)
    snaps = data_snapshots(table_path)  # the commits' own compactions aside
    assert len(snaps) == 2 + (1 if third else 0)
    assert snaps[-1]["commitKind"] == ("OVERWRITE" if third in ("overwrite", "dynamic") else "APPEND")

    assert_same_rows(pypaimon_oracle.read(table_path), expected, "pypaimon 2.1")
    assert_same_rows(java_oracle.read(table_path), expected, "Java Paimon 0.9")
    if "bucket" in options:
        assert pypaimon_oracle.check_buckets(table_path) == {"rows": expected.num_rows, "wrong_bucket": 0}


def test_null_map_values_reach_pypaimon(spark, table_path, pypaimon_oracle):
    """Null values inside maps (which Java 0.9's Arrow bridge cannot hand out, see the module docstring)."""
    data = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                     "m": pa.array([[("a", None), ("b", 2)], [("c", None)], None], pa.map_(pa.string(), pa.int64()))})
    spark_write(spark, table_path, data, {})
    assert_same_rows(pypaimon_oracle.read(table_path), data, "pypaimon 2.1")
    assert_same_rows(paimon_ds.Table.load(table_path).to_arrow(), data, "paimon_ds core")


# ------------------------------------------------------------- 2. oracles write -> paimon_ds reads

ORACLE_COMMITS = (range(0, 100), range(100, 200), range(200, 300))  # disjoint id ranges: stats can prune
BUCKETED = {"partition": "dt", "bucket": 3, "options": {"bucket-key": "id"}}


@pytest.fixture(scope="module")
def oracle_tables(oracles_ready, tmp_path_factory):
    """Tables written by each oracle, made once per module and only when a test asks for that oracle.

    `bucketed`: partition dt, bucket 3, bucket-key id, 3 commits; `plain`: unpartitioned, unaware bucket.
    """
    made: dict[str, dict[str, tuple[str, pa.Table]]] = {}

    def get(impl: str) -> dict[str, tuple[str, pa.Table]]:
        if impl not in made:
            base = tmp_path_factory.mktemp(impl)
            oracle = Oracle(impl, base)
            schema = JAVA_TYPES if impl == "java" else ALL_TYPES
            db = base / "warehouse" / "db.db"
            db.mkdir(parents=True)
            bucketed, plain = str(db / "bucketed"), str(db / "plain")
            for ids in ORACLE_COMMITS:
                oracle.write(bucketed, rows(ids, schema), **BUCKETED)
            oracle.write(plain, rows(range(1000, 1050), schema))
            made[impl] = {"bucketed": (bucketed, rows([i for c in ORACLE_COMMITS for i in c], schema)),
                          "plain": (plain, rows(range(1000, 1050), schema))}
        return made[impl]
    return get


@pytest.mark.parametrize("impl", ["java", "pypaimon"])
@pytest.mark.parametrize("kind", ["bucketed", "plain"])
def test_paimon_ds_reads_oracle_tables(spark, oracle_tables, impl, kind):
    path, expected = oracle_tables(impl)[kind]
    if kind == "bucketed":
        assert [s["id"] for s in snapshots(path)] == [1, 2, 3]
        assert {e["_TOTAL_BUCKETS"] for e in delta_entries(path, 1)} == {3}
    else:  # neither oracle is told a bucket count: both make an unaware-bucket table
        assert [(e["_BUCKET"], e["_TOTAL_BUCKETS"]) for e in delta_entries(path, 1)] == [(0, -1)]
    if impl == "java":
        # The case pypaimon 2.1 cannot read: Java 0.9's manifests predate _VALUE_STATS_COLS and later fields.
        with open(Path(path) / "manifest" / snapshots(path)[0]["deltaManifestList"], "rb") as fh:
            manifest = next(iter(fastavro.reader(fh)))["_FILE_NAME"]
        with open(Path(path) / "manifest" / manifest, "rb") as fh:
            file_fields = [f["name"] for f in fastavro.reader(fh).writer_schema["fields"][-1]["type"]["fields"]]
        assert "_FILE_SOURCE" in file_fields and "_VALUE_STATS_COLS" not in file_fields
    assert_same_rows(spark_read(spark, path), expected, f"paimon_ds Spark read of a {impl} table")
    assert_same_rows(paimon_ds.Table.load(path).to_arrow(), expected, f"paimon_ds core read of a {impl} table")


@pytest.mark.parametrize("impl", ["java", "pypaimon"])
def test_filter_push_down_on_oracle_table(spark, oracle_tables, impl):
    path, expected = oracle_tables(impl)["bucketed"]
    got = spark.read.format("paimon").load(path).filter("id = 5").toArrow()
    assert_same_rows(got, expected.filter(pc.field("id") == 5), f"id = 5 on a {impl} table")

    # The files a scan keeps for id = 5 are exactly those whose real id range (read from the parquet
    # data) holds 5, so the oracle's stats are decoded right; commits 2 and 3 hold other ids.
    table = paimon_ds.Table.load(path)
    ranges, no_stats = {}, set()
    for split in table.new_scan().plan():
        for f in split.files:
            mm = pc.min_max(pq.read_table(split.file_path(f), columns=["id"]).column("id"))
            ranges[split.file_path(f)] = (mm["min"].as_py(), mm["max"].as_py())
            if f.value_stats_cols == ():
                no_stats.add(split.file_path(f))
    assert len(ranges) == 27  # 3 commits x 3 partitions x 3 buckets
    if impl == "java":
        assert not no_stats  # Java 0.9 keeps stats of every column (no _VALUE_STATS_COLS field at all)
        should_keep = {p for p, (lo, hi) in ranges.items() if lo <= 5 <= hi}
        assert 1 <= len(should_keep) <= 9
    else:
        # pypaimon 2.1 writes no value stats (_VALUE_STATS_COLS = []): nothing may be pruned on id.
        assert no_stats == set(ranges)
        should_keep = set(ranges)
    kept = {s.file_path(f) for s in table.new_scan(Leaf("=", "id", (5,))).plan() for f in s.files}
    assert kept == should_keep

    # IS NULL on a column whose stats say "unknown": Java records parquet's null count -1 when parquet-mr
    # dropped a chunk's statistics (a value over 4 KiB); it must not read as "no nulls".
    if impl == "java":
        s_index = JAVA_TYPES.names.index("s")
        assert any(f.value_stats.null_counts[s_index] == -1 for sp in table.new_scan().plan() for f in sp.files)
    got = spark.read.format("paimon").load(path).filter("s IS NULL").toArrow()
    assert_same_rows(got, expected.filter(pc.field("s").is_null()), f"s IS NULL on a {impl} table")

    # Spark hands its filters to the scan: with one split per file, it plans one partition per kept file
    # (the dt filter prunes by the oracle's partition values as well).
    df = spark.read.format("paimon").option("source.split.target-size", "1").load(path)
    assert df.rdd.getNumPartitions() == 27
    assert df.filter("id = 5").rdd.getNumPartitions() == len(should_keep)
    in_d2 = df.filter("id = 5 AND dt = 'd2'")
    assert in_d2.rdd.getNumPartitions() == len({p for p in should_keep if "/dt=d2/" in p})
    assert_same_rows(in_d2.toArrow(), expected.filter(pc.field("id") == 5), f"id = 5, dt = d2 on a {impl} table")


def test_manifest_entries_match_java_bytes(table_path, tmp_path, java_oracle):
    """The same rows written by Java 0.9 and by paimon_ds give byte-identical manifest entries: partition
    and stats BinaryRows (strings truncated to 16 chars), bucket of every row, counts, sequence numbers."""
    data = rows(range(100), JAVA_TYPES)
    # parquet-mr keeps no statistics for a chunk with a value over 4 KiB, and Java Paimon then records
    # "unknown" (see test_filter_push_down_on_oracle_table); shorter strings keep Java's stats comparable.
    data = data.set_column(data.schema.get_field_index("s"), "s", pc.utf8_slice_codeunits(data["s"], 0, 1000))
    java_oracle.write(table_path, data, partition="dt", bucket=3, options={"bucket-key": "id"})
    ours = str(tmp_path / "warehouse" / "db.db" / "ours")
    table = paimon_ds.Table.for_write(ours, JAVA_TYPES, {"partition": "dt", "bucket": "3", "bucket-key": "id"})
    write = table.new_write()
    write.write_arrow(data)
    table.new_commit().commit(write.prepare_commit())

    def by_bucket(path: str) -> dict[tuple[bytes, int], dict[str, Any]]:
        out = {}
        for e in delta_entries(path, 1):
            f = e.pop("_FILE")
            # names, sizes and times differ by nature; fields born after 0.9 are absent from Java's files
            for k in ("_FILE_NAME", "_FILE_SIZE", "_CREATION_TIME", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
                      "_FIRST_ROW_ID", "_WRITE_COLS"):
                f.pop(k, None)
            out[(e["_PARTITION"], e["_BUCKET"])] = {**e, **f}
        return out

    java, mine = by_bucket(table_path), by_bucket(ours)
    assert len(java) == 9
    assert mine == java

    def manifest_list(path: str) -> list[dict[str, Any]]:
        return [{k: m[k] for k in ("_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_PARTITION_STATS", "_SCHEMA_ID")}
                for m in _manifest_list(path, snapshots(path)[0]["deltaManifestList"])]
    assert manifest_list(ours) == manifest_list(table_path)


# ------------------------------------------------------------- 3. mixed continuation

MIXED = {"partition": "dt", "bucket": "3", "bucket-key": "id"}


def test_paimon_ds_table_continued_by_java(spark, table_path, java_oracle):
    spark_write(spark, table_path, rows(C1), MIXED)
    java_oracle.write(table_path, for_java(rows(C2)))  # Java appends every type when given its Arrow shapes
    spark_write(spark, table_path, rows(C3), {})
    snaps = data_snapshots(table_path)  # the commits' own compactions aside
    assert len(snaps) == 3
    assert [s["totalRecordCount"] for s in snaps] == [len(C1), len(C1) + len(C2), len(C1) + len(C2) + len(C3)]
    assert len({s["commitUser"] for s in snaps}) == 3

    expected = rows([*C1, *C2, *C3])
    # pypaimon 2.1 is left out: snapshot 2's manifest is Java's, which it cannot read (module docstring).
    assert_same_rows(spark_read(spark, table_path), expected, "paimon_ds Spark")
    assert_same_rows(paimon_ds.Table.load(table_path).to_arrow(), expected, "paimon_ds core")
    assert_same_rows(java_oracle.read(table_path), expected, "Java Paimon 0.9")


def test_java_table_continued_by_paimon_ds(spark, table_path, java_oracle, pypaimon_oracle):
    java_oracle.write(table_path, rows(C1, JAVA_TYPES), partition="dt", bucket=3, options={"bucket-key": "id"})
    spark_write(spark, table_path, rows(C2, JAVA_TYPES), {})
    # merge-min-count=1 makes this commit rewrite the base manifests (Java's included) in today's layout,
    # after which pypaimon 2.1 can read the table too.
    spark_write(spark, table_path, rows(C3, JAVA_TYPES), {"manifest.merge-min-count": "1"})
    snaps = data_snapshots(table_path)  # the commits' own compactions aside
    assert len(snaps) == 3
    assert [s["commitKind"] for s in snaps] == ["APPEND"] * 3
    java_manifests = {m["_FILE_NAME"] for m in _manifest_list(table_path, snaps[0]["deltaManifestList"])}
    live = {m["_FILE_NAME"] for name in (snaps[2]["baseManifestList"], snaps[2]["deltaManifestList"])
            for m in _manifest_list(table_path, name)}
    assert java_manifests and not java_manifests & live

    expected = rows([*C1, *C2, *C3], JAVA_TYPES)
    assert_same_rows(java_oracle.read(table_path), expected, "Java Paimon 0.9")
    assert_same_rows(pypaimon_oracle.read(table_path), expected, "pypaimon 2.1")
    assert_same_rows(spark_read(spark, table_path), expected, "paimon_ds Spark")
    assert_same_rows(paimon_ds.Table.load(table_path).to_arrow(), expected, "paimon_ds core")
