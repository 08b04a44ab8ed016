"""Paimon system tables ($snapshots, $files, ...) computed from a table's metadata, checked row by row."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import os
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from paimon_ds import Catalog, Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import create_tag
from paimon_ds.readers.system_tables import SCHEMAS, SYSTEM_TABLES, render_value, system_table
from paimon_ds.schema.types import DataType

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.float64()), ("s", pa.string())])
OPTIONS = {"primary-key": "dt,id", "partition": "dt", "bucket": "2", "write-only": "true"}
BATCH = 2**63 - 1  # Paimon's commitIdentifier of a batch commit


def upsert(path: str, rows: list[dict]) -> None:
    table = Table.for_write(path, SCHEMA, OPTIONS)
    write = table.new_write()
    write.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def utc_now() -> dt.datetime:
    # paimon_ds stores file creation times as UTC wall time, truncated to milliseconds
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def local(millis: int) -> dt.datetime:
    """Epoch millis as local wall time, as Paimon shows commit times."""
    return dt.datetime.fromtimestamp(millis // 1000) + dt.timedelta(milliseconds=millis % 1000)


@pytest.fixture(scope="module")
def pk_table(tmp_path_factory) -> tuple[str, dt.datetime, dt.datetime]:
    """Snapshots: 1, 2 APPEND (tag t1 on 2), 3 COMPACT (full), 4 APPEND. Buckets by Paimon's hash of id:
    dt=a: ids 1, 2 -> bucket 0; ids 0, 3, 9 -> bucket 1. dt=b: ids 1, 2 -> bucket 0."""
    path = str(tmp_path_factory.mktemp("sys") / "wh" / "db.db" / "t")  # a catalog layout, for the Java oracle
    before = utc_now()
    upsert(path, [{"dt": "a", "id": i, "v": i + 0.5, "s": f"x{i}"} for i in range(4)]
           + [{"dt": "b", "id": 1, "v": None, "s": "y1"}])
    upsert(path, [{"dt": "a", "id": 1, "v": 10.0, "s": None}, {"dt": "b", "id": 2, "v": 2.0, "s": "y2"}])
    create_tag(Table.load(path), "t1")
    assert compact_in_process(Table.load(path), None, full=True) is not None
    upsert(path, [{"dt": "a", "id": 9, "v": 1e20, "s": "q"}])
    return path, before, utc_now()


def rows(path: str, name: str, **options: str) -> list[dict]:
    t = system_table(Table.load(path, options).store, name)
    assert t.schema == SCHEMAS[name.lstrip("$")]
    return t.to_pylist()


def snapshot_json(path: str, sid: int) -> dict:
    return json.loads(Path(path, "snapshot", f"snapshot-{sid}").read_text())


def test_snapshots(pk_table):
    path = pk_table[0]
    got = rows(path, "snapshots")
    assert [(r["snapshot_id"], r["schema_id"], r["commit_kind"], r["commit_identifier"], r["total_record_count"],
             r["delta_record_count"], r["changelog_record_count"], r["changelog_manifest_list"], r["watermark"])
            for r in got] == [(1, 0, "APPEND", BATCH, 5, 5, 0, None, None),
                              (2, 0, "APPEND", BATCH, 7, 2, 0, None, None),
                              (3, 0, "COMPACT", BATCH, 6, -1, 0, None, None),
                              (4, 0, "APPEND", BATCH, 7, 1, 0, None, None)]
    for r in got:
        raw = snapshot_json(path, r["snapshot_id"])
        assert (r["commit_user"], r["base_manifest_list"], r["delta_manifest_list"], r["commit_time"]) == \
            (raw["commitUser"], raw["baseManifestList"], raw["deltaManifestList"], local(raw["timeMillis"]))


def test_schemas_and_options(pk_table):
    path = pk_table[0]
    raw = json.loads(Path(path, "schema", "schema-0").read_text())
    assert rows(path, "$schemas") == [{
        "schema_id": 0,
        "fields": '[{"id":0,"name":"dt","type":"STRING NOT NULL"},{"id":1,"name":"id","type":"BIGINT NOT NULL"},'
                  '{"id":2,"name":"v","type":"DOUBLE"},{"id":3,"name":"s","type":"STRING"}]',
        "partition_keys": '["dt"]', "primary_keys": '["dt","id"]',
        "options": '{"bucket":"2","write-only":"true"}', "comment": None, "update_time": local(raw["timeMillis"]),
    }]
    assert rows(path, "options") == [{"key": "bucket", "value": "2"}, {"key": "write-only", "value": "true"}]


def test_files_of_the_latest_snapshot(pk_table):
    path, before, after = pk_table
    got = rows(path, "files")
    assert [(r["partition"], r["bucket"], r["level"], r["record_count"], r["min_sequence_number"],
             r["max_sequence_number"], r["min_key"], r["max_key"], r["schema_id"], r["file_format"]) for r in got] == [
        ("[a]", 0, 5, 2, 1, 2, "[1]", "[2]", 0, "parquet"),   # ids 1 (seq 2, the upsert) and 2 (seq 1), compacted
        ("[a]", 1, 0, 1, 2, 2, "[9]", "[9]", 0, "parquet"),   # id 9 written after the compaction
        ("[a]", 1, 5, 2, 0, 1, "[0]", "[3]", 0, "parquet"),
        ("[b]", 0, 5, 2, 0, 1, "[1]", "[2]", 0, "parquet"),
    ]
    assert [(r["null_value_counts"], r["min_value_stats"], r["max_value_stats"]) for r in got] == [
        ("{dt=0, id=0, s=1, v=0}", "{dt=a, id=1, s=x2, v=2.5}", "{dt=a, id=2, s=x2, v=10.0}"),
        ("{dt=0, id=0, s=0, v=0}", "{dt=a, id=9, s=q, v=1.0E20}", "{dt=a, id=9, s=q, v=1.0E20}"),
        ("{dt=0, id=0, s=0, v=0}", "{dt=a, id=0, s=x0, v=0.5}", "{dt=a, id=3, s=x3, v=3.5}"),
        ("{dt=0, id=0, s=0, v=1}", "{dt=b, id=1, s=y1, v=2.0}", "{dt=b, id=2, s=y2, v=2.0}"),
    ]
    for r in got:
        p = Path(r["file_path"])
        assert p.parent == Path(path, f"dt={r['partition'][1:-1]}", f"bucket-{r['bucket']}")
        assert r["file_size_in_bytes"] == p.stat().st_size
        assert before <= r["creation_time"] <= after
    live = {f.file_name for s in Table.load(path).new_scan().plan() for f in s.files}
    assert {Path(r["file_path"]).name for r in got} == live


def test_files_of_a_tag_before_the_compaction(pk_table):
    """Time travel options pick the snapshot, as in Paimon: level-0 files only, one per commit and bucket."""
    path = pk_table[0]
    got = rows(path, "files", **{"scan.tag-name": "t1"})
    assert [(r["partition"], r["bucket"], r["level"], r["record_count"], r["min_sequence_number"],
             r["max_sequence_number"], r["min_key"], r["max_key"]) for r in got] == [
        ("[a]", 0, 0, 2, 0, 1, "[1]", "[2]"), ("[a]", 0, 0, 1, 2, 2, "[1]", "[1]"),
        ("[a]", 1, 0, 2, 0, 1, "[0]", "[3]"),
        ("[b]", 0, 0, 1, 0, 0, "[1]", "[1]"), ("[b]", 0, 0, 1, 1, 1, "[2]", "[2]"),
    ]
    assert got[1]["null_value_counts"] == "{dt=0, id=0, s=1, v=0}"
    assert got[3]["min_value_stats"] == "{dt=b, id=1, s=y1, v=null}"  # only null values: no min
    assert [r["snapshot_id"] for r in rows(path, "snapshots", **{"scan.tag-name": "t1"})] == [1, 2, 3, 4]


def test_partitions_and_buckets(pk_table):
    path = pk_table[0]
    files = rows(path, "files")

    def summary(keep) -> tuple:
        chosen = [f for f in files if keep(f)]
        return (sum(f["record_count"] for f in chosen), sum(f["file_size_in_bytes"] for f in chosen), len(chosen),
                max(f["creation_time"] for f in chosen))

    assert [(r["partition"], r["record_count"], r["file_count"]) for r in rows(path, "partitions")] == \
        [("[a]", 5, 3), ("[b]", 2, 1)]
    for r in rows(path, "partitions"):
        assert (r["record_count"], r["file_size_in_bytes"], r["file_count"], r["last_update_time"]) == \
            summary(lambda f, p=r["partition"]: f["partition"] == p)
    got = rows(path, "buckets")
    assert [(r["partition"], r["bucket"], r["record_count"], r["file_count"]) for r in got] == \
        [("[a]", 0, 2, 1), ("[a]", 1, 3, 2), ("[b]", 0, 2, 1)]
    for r in got:
        assert (r["record_count"], r["file_size_in_bytes"], r["file_count"], r["last_update_time"]) == \
            summary(lambda f, p=r["partition"], b=r["bucket"]: (f["partition"], f["bucket"]) == (p, b))


def read_avro(path: Path) -> list[dict]:
    return list(fastavro.reader(io.BytesIO(path.read_bytes())))


def test_manifests(pk_table):
    path = pk_table[0]
    latest = snapshot_json(path, 4)
    listed = [m for name in (latest["baseManifestList"], latest["deltaManifestList"])
              for m in read_avro(Path(path, "manifest", name))]
    got = rows(path, "manifests")
    assert [r["file_name"] for r in got] == [m["_FILE_NAME"] for m in listed]
    for r in got:
        entries = read_avro(Path(path, "manifest", r["file_name"]))
        assert (r["num_added_files"], r["num_deleted_files"], r["file_size"], r["schema_id"]) == \
            (sum(e["_KIND"] == 0 for e in entries), sum(e["_KIND"] == 1 for e in entries),
             os.path.getsize(Path(path, "manifest", r["file_name"])), 0)
    # what the manifests add minus what they delete: the 4 live files
    assert sum(r["num_added_files"] for r in got) - sum(r["num_deleted_files"] for r in got) == 4


def test_tags(pk_table, tmp_path):
    path = pk_table[0]
    s2 = snapshot_json(path, 2)
    assert rows(path, "tags") == [{"tag_name": "t1", "snapshot_id": 2, "schema_id": 0,
                                   "commit_time": local(s2["timeMillis"]), "record_count": 7, "create_time": None,
                                   "time_retained": None}]
    # a tag as Java Paimon writes it: LocalDateTime as an array, Duration in seconds (Jackson's JavaTimeModule)
    copy = tmp_path / "t"
    shutil.copytree(path, copy)
    java_tag = dict(s2, tagCreateTime=[2024, 1, 2, 3, 4, 5, 6_000_000], tagTimeRetained=5400.0)
    (copy / "tag" / "tag-from-java").write_text(json.dumps(java_tag))
    got = rows(str(copy), "tags")
    assert [(r["tag_name"], r["create_time"], r["time_retained"]) for r in got] == \
        [("from-java", dt.datetime(2024, 1, 2, 3, 4, 5, 6000), "PT1H30M"), ("t1", None, None)]


def test_append_table_and_empty_table(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("name", pa.string())])
    table = catalog.create_table("db.logs", schema, options={"file.format": "parquet"})
    for name in SYSTEM_TABLES:
        got = system_table(table.store, name)
        assert got.schema == SCHEMAS[name]
        assert got.num_rows == {"schemas": 1, "options": 1}.get(name, 0), name
    assert system_table(table.store, "options").to_pylist() == [{"key": "file.format", "value": "parquet"}]

    for batch in ([1, 2, None], [7, 8]):
        t = Table.for_write(table.path, schema)
        w = t.new_write()
        names = [None if x is None else f"n{x}" for x in batch]
        w.write_arrow(pa.table({"k": pa.array(batch, pa.int32()), "name": names}))
        t.new_commit().commit(w.prepare_commit())
    got = system_table(Table.load(table.path).store, "files").to_pylist()
    assert [(r["partition"], r["bucket"], r["level"], r["record_count"], r["min_key"], r["max_key"],
             r["null_value_counts"], r["min_value_stats"], r["max_value_stats"]) for r in got] == [
        ("[]", 0, 0, 2, None, None, "{k=0, name=0}", "{k=7, name=n7}", "{k=8, name=n8}"),
        ("[]", 0, 0, 3, None, None, "{k=1, name=1}", "{k=1, name=n1}", "{k=2, name=n2}"),
    ]
    # rows are ordered by partition, bucket, level, then sequence range: each append commit starts at 0
    assert [(r["min_sequence_number"], r["max_sequence_number"]) for r in got] == [(0, 1), (0, 2)]
    assert [(r["partition"], r["record_count"], r["file_count"]) for r in
            system_table(Table.load(table.path).store, "partitions").to_pylist()] == [("[]", 5, 2)]


def test_unknown_system_table(pk_table):
    with pytest.raises(ValueError, match="unknown system table 'snapshot'.*snapshots, schemas, options, files, "
                                         "manifests, partitions, buckets, tags"):
        system_table(Table.load(pk_table[0]).store, "snapshot")


def test_values_render_as_paimon_shows_them():
    assert [render_value(v, t) for v, t in [
        (None, None), (True, DataType("BOOLEAN")), (0.1, DataType("DOUBLE")), (1e7, DataType("DOUBLE")),
        (1.25e-5, DataType("DOUBLE")), (-2.0, DataType("DOUBLE")), (0.1, DataType("FLOAT")),
        (decimal.Decimal("12.50"), DataType("DECIMAL", (10, 2))), (dt.date(2024, 1, 2), DataType("DATE")),
        (dt.datetime(2024, 1, 2, 3, 4, 5, 6000), DataType("TIMESTAMP", (3,))), (b"\x01\xff", DataType("BYTES")),
    ]] == ["null", "true", "0.1", "1.0E7", "1.25E-5", "-2.0", "0.1", "12.50", "2024-01-02",
           "2024-01-02T03:04:05.006000", "0x01ff"]


def test_java_paimon_shows_the_same_system_tables(pk_table, java_oracle):
    """Apache Paimon 0.9 reading `t$snapshots`, `t$files` and `t$partitions` of the same table agrees,
    schema (types, nullability) included; 0.9's file_path is the bare file name (ours: the full path)."""
    path = pk_table[0]
    for name in ("snapshots", "files", "partitions"):
        java = java_oracle.read(f"{path}${name}")
        assert java.schema.remove_metadata() == SCHEMAS[name], name
        ours = rows(path, name)
        theirs = java.to_pylist()
        if name == "files":
            for r in ours:
                r["file_path"] = Path(r["file_path"]).name
        key = {"snapshots": "snapshot_id", "files": "file_path", "partitions": "partition"}[name]
        assert sorted(theirs, key=lambda r: r[key]) == sorted(ours, key=lambda r: r[key]), name
