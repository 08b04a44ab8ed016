"""Tables of parquet, ORC and Avro data files, read and written as Paimon does (`file.format`,
`file.format.per.level`, `manifest.format`); the file-level tests of paimon_ds.format.data_file are in
test_data_file.py.

Every table here is compared, row for row, with what the reference implementations read: Java Paimon 0.9
(through the oracle's py4j bridge) and pypaimon 2.1. Tables are written by each of the three (Java tables
also compacted by Java itself, which is how per-level formats arise) and read by the other two. Each
oracle runs a whole plan of steps in one process (see Plan), as a JVM start costs seconds.

Limits met here (each checked to be the oracle's or pyarrow's, not ours):
- pyarrow's ORC writer stores timestamps before 1970 that have a fraction of a second with negative
  nanoseconds; Java's ORC reader throws on them. paimon_ds refuses to write such values to ORC, so ORC data
  written by paimon_ds here has those timestamps cut to whole seconds (test_data_file.orc_safe).
- Java keeps Avro maps in a HashMap: the order of a map's entries is not the file's (sorted_maps).
- pypaimon 2.1's Avro writer has no MAP and declares array items NOT NULL.
- Java 0.9's oracle cannot write snappy Avro (its shaded Avro lacks snappy-java).
"""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest
from interop import test_oracles as base
from interop.test_oracles import (
    ALL_TYPES,
    JAVA_TYPES,
    for_java,
    rows,
    spark_read,
    spark_write,
)

import paimon_ds
from format.test_data_file import rows_for
from paimon_ds.format.data_file import format_of, sniff_format
from paimon_ds.operation.scan import TableScan

PK = {"primary-key": "id", "bucket": "2"}


def sorted_maps(t: pa.Table) -> pa.Table:
    """Map entries in key order: Java keeps an Avro map in a HashMap, so their order is not the file's."""
    for i, f in enumerate(t.schema):
        if pa.types.is_map(f.type):
            values = [None if v is None else sorted(v) for v in t.column(i).to_pylist()]
            t = t.set_column(i, f, pa.array(values, f.type))
    return t


def assert_same_rows(got: pa.Table, expected: pa.Table, who: str) -> None:
    """Exactly the same rows (map entries compared as sets of entries, see sorted_maps)."""
    base.assert_same_rows(sorted_maps(got), sorted_maps(expected), who)


def avro_codec(path: Path) -> str:
    with path.open("rb") as fh:
        return fastavro.reader(fh).codec


def data_files(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).rglob("*") if p.is_file() and p.name.startswith("data-"))


def live_files(path: str) -> list[tuple[str, int]]:
    """(file name, level) of the latest snapshot's files (paimon_ds's scan)."""
    t = paimon_ds.Table.load(path)
    return sorted((e.file.file_name, e.file.level) for e in TableScan(t).read_entries(t.latest_snapshot()))


def core_write(path: str, data: pa.Table, options: dict[str, str]) -> None:
    t = paimon_ds.Table.for_write(path, data.schema, options)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit(commit_user="test").commit(w.prepare_commit())


# --------------------------------------------------------------------------------------- oracle plans
# Each oracle runs a whole plan of steps in one process (a JVM start costs seconds): create a table, commit
# a parquet file's rows, fully compact (Java), read a table (at a snapshot) into a parquet file.

ORACLE_PLAN = r"""
import json, os
import pyarrow.parquet as pq
plan = json.loads(PLAN)
wh = os.path.dirname(os.path.dirname(path))


def commit(t, data):
    commit_arrow(t, data, cast=False)


if IMPL == "java":
    from pypaimon import Schema
    from pypaimon.py4j.java_implementation import Table

    def get(name):
        return catalog.get_table("db." + name)

    def create(name, schema, partition, pk, options):
        catalog.create_database("db", True)
        catalog.create_table("db." + name, Schema(schema, partition_keys=partition, primary_keys=pk,
                                                   options=options), True)

    def read(name, snapshot):
        t = get(name)
        if snapshot is not None:
            t = Table(t._j_table.copy({"scan.snapshot-id": str(snapshot)}), t._catalog_options)
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def compact(name):  # Paimon's own full compaction of every bucket, one COMPACT snapshot
        j_table = get(name)._j_table
        builder = jvm.InvocationUtil.getBatchWriteBuilder(j_table)
        write, commit_ = builder.newWrite(), builder.newCommit()
        for bucket in range(int(j_table.options().get("bucket"))):
            write.compact(jvm.org.apache.paimon.data.BinaryRow.EMPTY_ROW, bucket, True)
        commit_.commit(write.prepareCommit())
        write.close()
        commit_.close()
else:
    from pypaimon import CatalogFactory, Schema
    from pypaimon.table.file_store_table import FileStoreTable
    cat = CatalogFactory.create({"warehouse": wh})

    def get(name):
        return cat.get_table("db." + name)

    def create(name, schema, partition, pk, options):
        cat.create_database("db", True)
        cat.create_table("db." + name, Schema.from_pyarrow_schema(schema, partition_keys=partition, primary_keys=pk,
                                                                  options=options), True)

    def read(name, snapshot):
        t = FileStoreTable.from_path(os.path.join(wh, "db.db", name))
        if snapshot is not None:
            t = t.copy({"scan.snapshot-id": str(snapshot)})
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

for step in plan:
    op, name = step["op"], step["table"]
    if op == "create":
        create(name, pq.read_schema(step["file"]), step.get("partition"), step.get("pk"), step["options"])
    elif op == "write":
        commit(get(name), pq.read_table(step["file"]))
    elif op == "compact":
        compact(name)
    elif op == "read":
        pq.write_table(read(name, step.get("snapshot")), step["out"])
"""


class Plan:
    """Steps for one oracle process (see ORACLE_PLAN); tables live in ``warehouse``/db.db/."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = warehouse
        self.steps: list[dict] = []
        self.n = 0

    def path(self, table: str) -> str:
        return str(self.warehouse / "db.db" / table)

    def _file(self, data: pa.Table) -> str:
        self.n += 1
        f = self.warehouse / f"in-{self.n}.parquet"
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, f)
        return str(f)

    def create(self, table: str, data: pa.Table, partition: str | None = None, pk: str | None = None,
               bucket: int = -1, options: dict[str, str] | None = None) -> None:
        self.steps.append({"op": "create", "table": table, "file": self._file(data.slice(0, 0)),
                           "partition": [partition] if partition else None, "pk": [pk] if pk else None,
                           "options": {"bucket": str(bucket), **(options or {})}})
        self.write(table, data)

    def write(self, table: str, data: pa.Table) -> None:
        self.steps.append({"op": "write", "table": table, "file": self._file(data)})

    def compact(self, table: str) -> None:
        self.steps.append({"op": "compact", "table": table})

    def read(self, table: str, snapshot: int | None = None) -> str:
        self.n += 1
        out = str(self.warehouse / f"out-{self.n}.parquet")
        self.steps.append({"op": "read", "table": table, "snapshot": snapshot, "out": out})
        return out

    def run(self, oracle) -> None:
        script = f"IMPL = {oracle.impl!r}\nPLAN = {json.dumps(json.dumps(self.steps))}\n" + ORACLE_PLAN
        (self.warehouse / "db.db").mkdir(parents=True, exist_ok=True)
        oracle.exec(str(self.warehouse / "db.db" / "_plan"), script)
        self.steps = []


def with_s(t: pa.Table, prefix: str) -> pa.Table:
    """The same rows with new values of the string column `s` (an update of every key)."""
    return t.set_column(t.schema.get_field_index("s"), "s", pa.array([f"{prefix}{i}" for i in t["id"].to_pylist()]))


def upserted(first: pa.Table, second: pa.Table) -> pa.Table:
    """``first`` with the rows of ``second`` inserted or replacing those of the same id."""
    new = set(second["id"].to_pylist())
    kept = first.filter(pc.invert(pc.is_in(first["id"], pa.array(list(new), first.schema.field("id").type))))
    return pa.concat_tables([kept, second])


# --------------------------------------------------------------------------------------- Java writes

SPARK_READS = {"append_orc", "pk_avro", "every_orc", "every_avro", "manifest_parquet", "codec_lz4"}


def test_java_tables_read(spark, tmp_path, java_oracle):
    """Java 0.9 writes ORC and Avro tables over several commits: append (partitioned) and primary-key
    (`file.format.per.level` 5:parquet, then fully compacted by Java, so levels differ in format); and
    appends rows of every type to ORC / Avro tables paimon_ds made. paimon_ds (core and Spark) reads
    exactly what Java reads, at the latest snapshot and before the compaction."""
    plan = Plan(tmp_path / "wh")
    outs: dict[str, tuple[str, pa.Table]] = {}
    for fmt in ("orc", "avro"):
        plan.create(f"append_{fmt}", rows(range(0, 40), JAVA_TYPES), partition="dt", options={"file.format": fmt})
        plan.write(f"append_{fmt}", rows(range(40, 70), JAVA_TYPES))
        outs[f"append_{fmt}"] = (plan.read(f"append_{fmt}"), rows(range(70), JAVA_TYPES))
        first, second = rows(range(0, 50), JAVA_TYPES), with_s(rows(range(30, 80), JAVA_TYPES), "v2-")
        plan.create(f"pk_{fmt}", first, pk="id", bucket=2,
                    options={"file.format": fmt, "file.format.per.level": "5:parquet"})
        plan.write(f"pk_{fmt}", second)
        outs[f"pk_{fmt}@2"] = (plan.read(f"pk_{fmt}"), upserted(first, second))
        plan.compact(f"pk_{fmt}")
        outs[f"pk_{fmt}"] = (plan.read(f"pk_{fmt}"), upserted(first, second))
        ours = plan.path(f"every_{fmt}")
        core_write(ours, rows_for(fmt, range(0, 60)), {"file.format": fmt, "partition": "dt"})
        plan.write(f"every_{fmt}", for_java(rows(range(60, 120))))  # Java appends every type in its Arrow shapes
        outs[f"every_{fmt}"] = (plan.read(f"every_{fmt}"),
                                pa.concat_tables([rows_for(fmt, range(0, 60)), rows(range(60, 120))]))
    for codec in ("snappy", "lz4"):  # ORC honours file.compression; per level here: L5 is zstd Avro
        plan.create(f"codec_{codec}", rows(range(0, 30), JAVA_TYPES), pk="id", bucket=1,
                    options={"file.format": "orc", "file.compression": codec, "file.format.per.level": "5:avro",
                             "file.compression.per.level": "5:zstd"})
        second = with_s(rows(range(10, 40), JAVA_TYPES), "c-")
        plan.write(f"codec_{codec}", second)
        expected = upserted(rows(range(0, 30), JAVA_TYPES), second)
        outs[f"codec_{codec}@2"] = (plan.read(f"codec_{codec}"), expected)
        plan.compact(f"codec_{codec}")
        outs[f"codec_{codec}"] = (plan.read(f"codec_{codec}"), expected)
    for mfmt in ("orc", "parquet"):  # Paimon 0.9 writes manifests and manifest lists in `manifest.format`
        first, second = rows(range(0, 30), JAVA_TYPES), with_s(rows(range(20, 45), JAVA_TYPES), "m-")
        plan.create(f"manifest_{mfmt}", first, pk="id", bucket=2,
                    options={"manifest.format": mfmt, "file.format": "avro"})
        plan.write(f"manifest_{mfmt}", second)
        outs[f"manifest_{mfmt}"] = (plan.read(f"manifest_{mfmt}"), upserted(first, second))
    plan.run(java_oracle)

    for codec in ("snappy", "lz4"):
        files = [p for p in Path(plan.path(f"codec_{codec}")).rglob("data-*")]
        assert {avro_codec(p) for p in files if p.suffix == ".avro"} == {"zstandard"}
        assert {po.ORCFile(str(p)).compression for p in files if p.suffix == ".orc"} == {codec.upper()}
    for mfmt in ("orc", "parquet"):
        path = plan.path(f"manifest_{mfmt}")
        manifests = list((Path(path) / "manifest").iterdir())
        assert len(manifests) == 6 and {sniff_format(m.read_bytes()) for m in manifests} == {mfmt}
    for fmt in ("orc", "avro"):
        assert {format_of(n) for n in data_files(plan.path(f"append_{fmt}"))} == {fmt}
        assert {format_of(n) for n in data_files(plan.path(f"every_{fmt}"))} == {fmt}
        pk = plan.path(f"pk_{fmt}")
        assert {(format_of(n), lv) for n, lv in live_files(pk)} == {("parquet", 5)}
        assert {format_of(n) for n in data_files(pk)} == {fmt, "parquet"}  # the compacted-away L0 files remain
    for key, (out, expected) in outs.items():
        name, _, snapshot = key.partition("@")
        java = pq.read_table(out)
        assert_same_rows(java, expected, f"Java Paimon 0.9 {key}")
        options = {"scan.snapshot-id": snapshot} if snapshot else {}
        assert_same_rows(paimon_ds.Table.load(plan.path(name), options).to_arrow(), java, f"paimon_ds core {key}")
        if key in SPARK_READS:  # Spark reads through the same core reader: a sample of tables keeps the test short
            assert_same_rows(spark_read(spark, plan.path(name)), java, f"paimon_ds Spark {key}")

    # paimon_ds commits to Java's tables with orc / parquet manifests in that format, and Java reads them
    for mfmt in ("orc", "parquet"):
        path = plan.path(f"manifest_{mfmt}")
        third = with_s(rows(range(40, 50), JAVA_TYPES), "ours-")
        core_write(path, third, {})
        manifests = list((Path(path) / "manifest").iterdir())
        assert len(manifests) == 9 and {sniff_format(m.read_bytes()) for m in manifests} == {mfmt}
        expected = upserted(outs[f"manifest_{mfmt}"][1], third)
        assert_same_rows(java_oracle.read(path), expected, f"Java Paimon 0.9 manifest_{mfmt} after our commit")
        assert_same_rows(paimon_ds.Table.load(path).to_arrow(), expected, f"paimon_ds manifest_{mfmt}")


# --------------------------------------------------------------------------------------- paimon_ds writes

def test_paimon_ds_tables_read_by_oracles(spark, tmp_path, java_oracle, pypaimon_oracle):
    """paimon_ds writes ORC and Avro append and primary-key tables of every type over two commits, then
    compacts them (paimon_ds.compact; the primary-key tables into a parquet top level by
    `file.format.per.level`); Java 0.9 and pypaimon 2.1 read exactly our rows, before and after."""
    java, pypaimon = Plan(tmp_path / "wh"), Plan(tmp_path / "wh")
    expected: dict[str, pa.Table] = {}
    for fmt in ("orc", "avro"):
        append = java.path(f"append_{fmt}")
        core_write(append, rows_for(fmt, range(0, 80)), {"file.format": fmt, "partition": "dt"})
        core_write(append, rows_for(fmt, range(80, 150)), {})
        expected[f"append_{fmt}"] = rows_for(fmt, range(150))
        pk = java.path(f"pk_{fmt}")
        first, second = rows_for(fmt, range(0, 100)), with_s(rows_for(fmt, range(60, 130)), "u")
        core_write(pk, first, {"file.format": fmt, "file.format.per.level": "5:parquet", **PK})
        core_write(pk, second, {})
        expected[f"pk_{fmt}"] = upserted(first, second)
        assert {format_of(n) for n in data_files(pk)} == {format_of(n) for n in data_files(append)} == {fmt}
    # the plans run after the compactions: snapshot 2 (two commits, uncompacted), then the latest
    outs = [(name, 2, java.read(name, 2), pypaimon.read(name, 2)) for name in expected]
    for fmt in ("orc", "avro"):
        pk, append = java.path(f"pk_{fmt}"), java.path(f"append_{fmt}")
        paimon_ds.compact(spark, pk, full=True)
        assert {(format_of(n), lv) for n, lv in live_files(pk)} == {("parquet", 5)}
        paimon_ds.compact(spark, append, full=True)
        assert {format_of(n) for n, _ in live_files(append)} == {fmt}
        assert len(live_files(append)) == 3  # one file per partition
    outs += [(name, None, java.read(name), pypaimon.read(name)) for name in expected]
    java.run(java_oracle)
    pypaimon.run(pypaimon_oracle)
    for name, snapshot, java_out, pypaimon_out in outs:
        options = {"scan.snapshot-id": str(snapshot)} if snapshot else {}
        who = f"{name} at snapshot {snapshot or 'latest'}"
        assert_same_rows(paimon_ds.Table.load(java.path(name), options).to_arrow(), expected[name], f"paimon_ds {who}")
        assert_same_rows(pq.read_table(java_out), expected[name], f"Java Paimon 0.9 {who}")
        assert_same_rows(pq.read_table(pypaimon_out), expected[name], f"pypaimon 2.1 {who}")


# --------------------------------------------------------------------------------------- pypaimon writes

def test_pypaimon_tables_read(tmp_path, pypaimon_oracle):
    """pypaimon 2.1 writes ORC and Avro tables (append, primary key) of every type; paimon_ds reads them exactly."""
    plan = Plan(tmp_path / "wh")
    outs = {}
    for fmt in ("orc", "avro"):
        def data(ids: range, fmt: str = fmt) -> pa.Table:
            # pypaimon 2.1's Avro writer has no MAP ("Unsupported pyarrow type for Avro conversion") and
            # declares array items NOT NULL (fastavro refuses [0, None, 0])
            if fmt == "orc":
                return rows(ids)
            t = rows(ids, pa.schema([f for f in ALL_TYPES if f.name != "m"]))
            arr = [None if v is None else [x for x in v if x is not None] for v in t["arr"].to_pylist()]
            return t.set_column(t.schema.get_field_index("arr"), "arr", pa.array(arr, t.schema.field("arr").type))

        plan.create(f"append_{fmt}", data(range(0, 50)), partition="dt", options={"file.format": fmt})
        plan.write(f"append_{fmt}", data(range(50, 90)))
        outs[f"append_{fmt}"] = (plan.read(f"append_{fmt}"), data(range(90)))
        first, second = data(range(0, 50)), with_s(data(range(40, 70)), "p")
        plan.create(f"pk_{fmt}", first, pk="id", bucket=2, options={"file.format": fmt})
        plan.write(f"pk_{fmt}", second)
        outs[f"pk_{fmt}"] = (plan.read(f"pk_{fmt}"), upserted(first, second))
    plan.run(pypaimon_oracle)
    for name, (out, expected) in outs.items():
        assert {format_of(n) for n in data_files(plan.path(name))} == {name.split("_")[1]}
        oracle = pq.read_table(out)
        assert_same_rows(oracle, expected, f"pypaimon 2.1 {name}")
        assert_same_rows(paimon_ds.Table.load(plan.path(name)).to_arrow(), oracle, f"paimon_ds {name}")


# deletion vectors in the parquet table, the dynamic-bucket hash index in the orc one: both kinds of index manifest
@pytest.mark.parametrize("mfmt, index", [("parquet", "deletion-vectors"), ("orc", "dynamic-bucket")])
def test_paimon_ds_writes_manifests_in_manifest_format(mfmt, index, tmp_path, java_oracle):
    """`manifest.format` parquet / orc: manifests, manifest lists and index manifests in that format, with
    Paimon's column types. Java 0.9 reads our table, commits to it in turn, and both read the same rows."""
    from deletionvectors.java_scripts import pk_writes
    path = str(tmp_path / "wh" / "db.db" / "t")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                        ("v", pa.string())])
    options = {"manifest.format": mfmt, "primary-key": "id,p", "partition": "p",
               **({"bucket": "2", "deletion-vectors.enabled": "true"} if index == "deletion-vectors"
                  else {"bucket": "-1"})}
    model: dict[tuple[int, str], str] = {}
    for commit in range(3):
        ids = range(commit * 5, commit * 5 + 10)  # each commit upserts half of the previous one's keys
        data = pa.table({"id": list(ids), "p": [f"p{i % 2}" for i in ids], "v": [f"v{commit}-{i}" for i in ids]},
                        schema=schema)
        core_write(path, data, options)
        model.update({(i, f"p{i % 2}"): f"v{commit}-{i}" for i in ids})
    manifests = list((Path(path) / "manifest").iterdir())
    kinds = {m.name.split("-")[0] + ("-list" if "-list-" in m.name else "") for m in manifests}
    assert kinds == {"manifest", "manifest-list", "index"}  # index: the index manifests
    assert {sniff_format(m.read_bytes()) for m in manifests} == {mfmt}
    assert list((Path(path) / "index").iterdir())

    def expected() -> list[tuple]:
        return sorted((i, p, v) for (i, p), v in model.items())

    def as_rows(t: pa.Table) -> list[tuple]:
        return sorted((r["id"], r["p"], r["v"]) for r in t.to_pylist())

    assert as_rows(java_oracle.read(path)) == expected()
    if index == "deletion-vectors":  # Java's writer restores our vectors for its lookup compaction
        java_oracle.exec(path, pk_writes([[("+I", 0, "p0", "java-0"), ("+I", 100, "p0", "java-100")]], {},
                                         str(tmp_path / "io"), partition=["p"]))
    else:  # through Java's dynamic bucket assigner, which restores our hash index
        java_oracle.write(path, pa.table({"id": [0, 100], "p": ["p0", "p0"], "v": ["java-0", "java-100"]},
                                         schema=schema))
    model.update({(0, "p0"): "java-0", (100, "p0"): "java-100"})
    assert {sniff_format(m.read_bytes()) for m in (Path(path) / "manifest").iterdir()} == {mfmt}
    assert as_rows(paimon_ds.Table.load(path).to_arrow()) == expected()
    assert as_rows(java_oracle.read(path)) == expected()


def test_orc_and_avro_tables_on_s3(s3_table):
    """The readers work on fsspec's S3 files too (ORC seeks to its footer, Avro streams its blocks)."""
    path, storage = s3_table
    for fmt in ("orc", "avro"):
        data = rows_for(fmt, range(50))
        for i, part in enumerate((data.slice(0, 20), data.slice(20))):
            t = paimon_ds.Table.for_write(f"{path}_{fmt}", data.schema,
                                          {"file.format": fmt, **PK, **storage} if i == 0 else storage)
            w = t.new_write()
            w.write_arrow(with_s(part, "s3-") if i else part)
            t.new_commit(commit_user="test").commit(w.prepare_commit())
        got = paimon_ds.Table.load(f"{path}_{fmt}", None, storage).to_arrow()
        assert_same_rows(got, upserted(data.slice(0, 20), with_s(data.slice(20), "s3-")), f"S3 {fmt}")


def test_spark_writes_avro_and_orc(spark, tmp_path, pypaimon_oracle):
    """df.write into Avro (primary key, two commits) and ORC (append) tables; pypaimon 2.1 reads our rows."""
    plan = Plan(tmp_path / "wh")
    pk, append = plan.path("pk"), plan.path("append")
    first, second = rows(range(0, 40)), with_s(rows(range(30, 60)), "sp-")
    spark_write(spark, pk, first, {"file.format": "avro", **PK})
    spark_write(spark, pk, second, {})
    spark_write(spark, append, rows_for("orc", range(50)), {"file.format": "orc", "partition": "dt"})
    assert {format_of(n) for n in data_files(pk)} == {"avro"} and {format_of(n) for n in data_files(append)} == {"orc"}
    outs = {"pk": (plan.read("pk"), upserted(first, second)),
            "append": (plan.read("append"), rows_for("orc", range(50)))}
    plan.run(pypaimon_oracle)
    for name, (out, expected) in outs.items():
        assert_same_rows(pq.read_table(out), expected, f"pypaimon 2.1 {name}")
        assert_same_rows(spark_read(spark, plan.path(name)), expected, f"paimon_ds Spark {name}")
