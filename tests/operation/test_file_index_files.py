"""The files a bloom-filter file index puts beside data files (`<data file>.index`, listed in the manifest entry's
extra files) live and die with their data file: orphan removal keeps them, expiry deletes them with it, and an
append compaction gives the compacted file its own index (see format/file_index.py; Java 0.9 interop in
interop/test_file_index.py)."""

from __future__ import annotations

import os

import pyarrow as pa

from paimon_ds.catalog import Catalog
from paimon_ds.format.file_index import INDEX_FILE_SUFFIX
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.change import RenameColumn, SetOption
from paimon_ds.table import Table, write_arrow

SIDE_FILE = {"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": "2000", "bucket": "-1"}


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "s": [f"s{i}" for i in range(lo, hi)]})


def _index_files(path: str) -> list[str]:
    return sorted(f for f in os.listdir(f"{path}/bucket-0") if f.endswith(INDEX_FILE_SUFFIX))


def test_side_files_follow_their_data_files(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, _rows(0, 10), options=SIDE_FILE)
    write_arrow(path, _rows(10, 20))
    t = Table.load(path)
    live = sorted(e.file.file_name + INDEX_FILE_SUFFIX for e in t.new_scan().read_entries())
    assert _index_files(path) == live and len(live) == 2
    assert remove_orphan_files(t, older_than_ms=0) == []
    assert _index_files(path) == live
    # an overwrite replaces both files; expiring the older snapshots deletes them and their indexes
    write_arrow(path, _rows(100, 110), mode="overwrite")
    expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    t = Table.load(path)
    (entry,) = t.new_scan().read_entries()
    assert _index_files(path) == [entry.file.file_name + INDEX_FILE_SUFFIX]
    assert [f.file_name for s in t.new_scan(Leaf("=", "s", ("s105",))).plan() for f in s.files] == [
        entry.file.file_name]
    assert t.new_scan(Leaf("=", "s", ("s5",))).plan() == []


def test_compacted_file_gets_its_index(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        write_arrow(path, _rows(10 * k, 10 * k + 10), options=SIDE_FILE)
    assert compact_in_process(Table.load(path), None, full=True) is not None
    t = Table.load(path)
    (entry,) = t.new_scan().read_entries()
    assert entry.file.extra_files == (entry.file.file_name + INDEX_FILE_SUFFIX,)
    assert [f.file_name for s in t.new_scan(Leaf("in", "s", ("s3", "s27"))).plan() for f in s.files] == [
        entry.file.file_name]
    assert t.new_scan(Leaf("=", "s", ("s30",))).plan() == []
    assert sorted(t.scan(filter="s IN ('s3', 's27')").to_arrow().column("id").to_pylist()) == [3, 27]


def test_index_follows_field_ids_across_a_rename(tmp_path):
    """A file's index names the column as the file's schema did: a filter on the renamed column still tests it
    (matched by field id). The file of rows 0..9 spans `s0`..`s9`, so only its index rules out `s13`."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    path = str(tmp_path / "wh" / "db.db" / "t")
    write_arrow(path, _rows(0, 10), options=SIDE_FILE)
    write_arrow(path, _rows(10, 20))
    catalog.alter_table("db.t", [SetOption("file-index.bloom-filter.columns", "label"),
                                     SetOption("file-index.bloom-filter.label.items", "2000"),
                                     RenameColumn("s", "label")])
    write_arrow(path, _rows(20, 30).rename_columns(["id", "label"]))
    t = Table.load(path)
    assert [len(s.files) for s in t.new_scan(Leaf("=", "label", ("s13",))).plan()] == [1]
    assert [len(s.files) for s in t.new_scan(Leaf("=", "label", ("s25",))).plan()] == [1]
    assert t.scan(filter="label IN ('s3', 's25')").to_arrow().column("id").to_pylist() == [3, 25]
