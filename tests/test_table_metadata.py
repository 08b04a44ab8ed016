"""A table's metadata without Spark, as pyiceberg and deltalake users ask for it: `Table.inspect.<system table>()`,
`Table.schema()`, `Table.version()`, and short reprs of what writes and plans return (no raw bytes, no file lists)."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog, Table
from paimon_ds.format.binary_row import EMPTY_ROW, serialize_row
from paimon_ds.manifest.meta import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats
from paimon_ds.operation.messages import CommitMessage
from paimon_ds.operation.scan import Split
from paimon_ds.procedures import create_branch, create_tag, reset_consumer
from paimon_ds.readers.system_tables import SCHEMAS, SYSTEM_TABLES, InspectTable, system_table
from paimon_ds.schema.change import UpdateColumnComment
from paimon_ds.schema.types import DataType, SchemaError
from paimon_ds.snapshot.manager import Snapshot

DATA = pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 1], "v": [0.5, None, 2.0]})


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Table:
    """Snapshots 1 and 2 (APPEND), tag t1 on 1, branch b1 from it, consumer c1 at snapshot 2; two partitions."""
    path = str(tmp_path_factory.mktemp("meta") / "wh" / "db.db" / "t")
    paimon_ds.write_arrow(path, DATA, primary_key=["dt", "id"], partition_by="dt", options={"bucket": "1"})
    create_tag(path, "t1")
    create_branch(path, "b1", tag="t1")
    paimon_ds.write_arrow(path, pa.table({"dt": ["b"], "id": [7], "v": [7.0]}))
    reset_consumer(path, "c1", 2)
    return Table.load(path)


def test_inspect_has_every_system_table_with_its_rows(table):
    names = [n for n in dir(table.inspect) if not n.startswith("_")]
    # nothing else to tab-complete, nothing missing (audit_log, binlog and ro read data: tests/test_change_tables.py)
    assert names == sorted([*SYSTEM_TABLES, "audit_log", "binlog", "ro"])
    for name in SYSTEM_TABLES:
        got = getattr(table.inspect, name)()
        assert got.num_rows > 0, name  # every one has rows here, so equality below says something
        assert got.equals(system_table(table.store, name)), name
        assert got.schema == SCHEMAS[name]
        doc = getattr(InspectTable, name).__doc__
        assert all(column in doc for column in SCHEMAS[name].names), name
    assert repr(table.inspect) == (f"InspectTable('{table.path}': snapshots(), schemas(), options(), files(), "
                                   "manifests(), partitions(), buckets(), tags(), branches(), consumers(), "
                                   "audit_log(), binlog(), ro())")


def test_inspect_rows(table):
    snapshots = table.inspect.snapshots().select(["snapshot_id", "commit_kind", "total_record_count"])
    assert snapshots.to_pylist() == [{"snapshot_id": 1, "commit_kind": "APPEND", "total_record_count": 3},
                                     {"snapshot_id": 2, "commit_kind": "APPEND", "total_record_count": 4}]
    files = table.inspect.files().select(["partition", "bucket", "record_count", "min_key", "max_key"])
    assert sorted(files.to_pylist(), key=lambda r: (r["partition"], r["min_key"])) == [
        {"partition": "[a]", "bucket": 0, "record_count": 2, "min_key": "[1]", "max_key": "[2]"},
        {"partition": "[b]", "bucket": 0, "record_count": 1, "min_key": "[1]", "max_key": "[1]"},
        {"partition": "[b]", "bucket": 0, "record_count": 1, "min_key": "[7]", "max_key": "[7]"}]
    assert table.inspect.partitions().select(["partition", "record_count", "file_count"]).to_pylist() == [
        {"partition": "[a]", "record_count": 2, "file_count": 1},
        {"partition": "[b]", "record_count": 2, "file_count": 2}]
    assert table.inspect.options().to_pylist() == [{"key": "bucket", "value": "1"}]
    assert table.inspect.tags().column("tag_name").to_pylist() == ["t1"]
    assert table.inspect.branches().column("branch_name").to_pylist() == ["b1"]
    assert table.inspect.consumers().to_pylist() == [{"consumer_id": "c1", "next_snapshot_id": 2}]


def test_inspect_of_a_time_travel_load_reads_that_snapshot(table):
    old = Table.load(table.path, {"scan.snapshot-id": "1"})
    assert old.version() == 1
    assert old.inspect.files().equals(system_table(old.store, "files"))
    assert sorted(old.inspect.files().column("record_count").to_pylist()) == [1, 2]


def test_version(table, tmp_path):
    assert table.version() == 2
    assert Table.load(table.path, {"scan.tag-name": "t1"}).version() == 1
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    empty = catalog.create_table("db.e", pa.schema([("x", pa.int32())]))
    assert empty.version() is None
    assert empty.inspect.files().num_rows == 0 and empty.inspect.snapshots().num_rows == 0
    empty.append(pa.table({"x": [1]}))
    assert empty.version() == 1  # a table object sees later commits (as its scans do)


def test_schema_as_a_pyiceberg_user_reads_it(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.s", pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                                            ("dt", pa.date32())]),
                         partition_keys=["dt"], primary_keys=["id", "dt"], options={"bucket": "2"})
    table = catalog.alter_table("db.s", [UpdateColumnComment("name", "the user's name")])
    schema = table.schema()
    assert (schema.id, schema.column_names, schema.primary_keys, schema.partition_keys, schema.options) == (
        1, ["id", "name", "dt"], ("id", "dt"), ("dt",), {"bucket": "2"})
    assert [(f.id, f.name, f.type.sql(), f.nullable, f.description) for f in schema.fields] == [
        (0, "id", "BIGINT NOT NULL", False, None), (1, "name", "STRING", True, "the user's name"),
        (2, "dt", "DATE NOT NULL", False, None)]
    assert schema.field("name") is schema.find_field("name") is schema.find_field(1)
    assert repr(schema.find_field(1)) == "DataField(id=1, name='name', type=STRING, description=\"the user's name\")"
    assert repr(schema.field("id")) == "DataField(id=0, name='id', type=BIGINT NOT NULL)"
    with pytest.raises(SchemaError, match=r"no column 'nope' in the table \(columns: id, name, dt\)"):
        schema.find_field("nope")
    with pytest.raises(SchemaError, match=r"no column with field id 9 in the table \(ids: 0, 1, 2\)"):
        schema.find_field(9)
    arrow = schema.as_arrow()
    assert arrow == pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                               pa.field("dt", pa.date32(), nullable=False)])
    assert arrow.field("name").metadata == {b"description": b"the user's name"}
    assert arrow.field("id").metadata is None
    assert arrow == table.arrow_schema()
    assert repr(schema) == ("Schema(id=1, columns=[id BIGINT NOT NULL, name STRING, dt DATE NOT NULL], "
                            "primary_keys=['id', 'dt'], partition_keys=['dt'], options={'bucket': '2'})")


# ------------------------------------------------------------------ reprs
FILE = DataFileMeta("data-4f1c-0.parquet", 2001, 2, b"\x00" * 24, b"\x01" * 24,
                    SimpleStats(b"\x02" * 40, b"\x03" * 40, (0,)), SimpleStats(b"\x04" * 64, b"\x05" * 64, (0, 1)),
                    min_sequence_number=0, max_sequence_number=1, schema_id=0, level=0,
                    creation_time=dt.datetime(2024, 1, 2))


def test_snapshot_repr_is_short():
    snapshot = Snapshot(id=3, schema_id=0, base_manifest_list="manifest-list-" + "a" * 40 + "-0",
                        delta_manifest_list="manifest-list-" + "b" * 40 + "-1", commit_user="u" * 36,
                        commit_identifier=2**63 - 1, commit_kind="APPEND", time_millis=1704164645123,
                        total_record_count=10, delta_record_count=-2,
                        changelog_manifest_list="manifest-list-" + "c" * 40 + "-2", index_manifest="index-manifest-x")
    assert repr(snapshot) == ("Snapshot(id=3, kind=APPEND, time=2024-01-02T03:04:05.123+00:00, records=10 (-2), "
                              "schema_id=0)")


def test_write_results_and_plans_print_short(table, tmp_path):
    snapshot = paimon_ds.write_arrow(str(tmp_path / "t"), DATA, partition_by="dt")
    text = repr(snapshot)
    assert re.fullmatch(r"Snapshot\(id=1, kind=APPEND, time=\S+\+00:00, records=3 \(\+3\), schema_id=0\)", text)
    assert len(text) < 100
    plan = table.scan().plan()
    assert repr(sorted(plan, key=lambda s: s.directory)) == (
        "[Split(partition=dt=a, bucket=0, files=1, rows=2, snapshot=2), "
        "Split(partition=dt=b, bucket=0, files=2, rows=2, snapshot=2)]")
    assert all("\\x" not in repr(s.files) and len(repr(f)) < 200 for s in plan for f in s.files)
    # the partition is as many directories above the bucket's as the partition row has fields
    unpartitioned = Split(EMPTY_ROW, 3, "/wh/db.db/t=1/bucket-3", [FILE, FILE], None)
    assert repr(unpartitioned) == "Split(bucket=3, files=2, rows=4)"
    two = Split(serialize_row(["x", 1], [DataType("VARCHAR", (10,)), DataType("INT")]), 0,
                "/wh/db.db/t=1/d=x/h=1/bucket-0", [FILE], 5, branch="fb")
    assert repr(two) == "Split(partition=d=x/h=1, bucket=0, files=1, rows=2, snapshot=5, branch=fb)"


def test_file_entry_and_message_reprs_have_no_bytes():
    assert repr(FILE) == ("DataFileMeta('data-4f1c-0.parquet', rows=2, size=2001, level=0, sequence=0..1, "
                          "schema_id=0)")
    entry = ManifestEntry(FileKind.DELETE, b"\x00" * 16, 1, 4, FILE)
    assert repr(entry) == (f"ManifestEntry(DELETE, partition=<16 bytes>, bucket=1, total_buckets=4, file={FILE!r})")
    meta = ManifestFileMeta("manifest-9-0", 1500, 3, 1, SimpleStats(b"\x00" * 32, b"\x01" * 32, (0,)), 2)
    assert repr(meta) == "ManifestFileMeta('manifest-9-0', size=1500, added=3, deleted=1, schema_id=2)"
    assert repr(FILE.value_stats) == "SimpleStats(min_values=<64 bytes>, max_values=<64 bytes>, null_counts=[0, 1])"
    message = CommitMessage(b"\x00" * 16, 0, 2, [FILE], "dt=a", compact_before=[FILE, FILE], compact_after=[FILE],
                            added_hashes=np.array([1, 2, 3], dtype=np.int32))
    assert repr(message) == ("CommitMessage(partition='dt=a', bucket=0, new_files=1, rows=2, compact_before=2, "
                             "compact_after=1, added_hashes=3)")
    assert repr(CommitMessage(b"", 1, 1)) == "CommitMessage(bucket=1, new_files=0, rows=0)"
