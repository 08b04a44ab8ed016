"""operation/raw_files.py without Spark: which files a plain columnar reader may read as the table's rows."""

from __future__ import annotations

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.operation.raw_files import raw_readable_table, split_raw_files
from paimon_ds.operation.write import BucketRestore

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def _write(table: Table, ids: list[int], **write_args) -> None:
    write = table.new_write(**write_args)
    write.write_arrow(pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def test_append_files_are_raw_except_avro(tmp_path):
    path = str(tmp_path / "t")
    _write(Table.for_write(path, SCHEMA, {}), [1, 2, 3])
    _write(Table.for_write(path, SCHEMA, {"file.format": "avro"}), [4])
    table = Table.load(path)
    raw, rest = split_raw_files(table, table.new_scan().plan())
    assert [(f.format, f.keyed, f.deletion) for f in raw] == [("parquet", False, None)]
    assert [f.file_name.endswith(".avro") for s in rest for f in s.files] == [True]


def test_primary_key_bucket_is_raw_only_as_one_sorted_run(tmp_path):
    path = str(tmp_path / "pk")
    options = {"primary-key": "id", "bucket": "1"}
    _write(Table.for_write(path, SCHEMA, options), [1, 2, 3], restore=BucketRestore())
    table = Table.load(path)
    raw, rest = split_raw_files(table, table.new_scan().plan())
    # inserts only (the file's delete count is 0): no row kind to read and filter on
    assert len(raw) == 1 and not raw[0].keyed and rest == []
    _write(Table.for_write(path, SCHEMA, options), [2], restore=BucketRestore.from_table(Table.load(path)))
    table = Table.load(path)
    raw, rest = split_raw_files(table, table.new_scan().plan())
    assert raw == [] and len(rest) == 1 and len(rest[0].files) == 2  # two runs: merged by the Python reader


def test_tables_with_types_a_columnar_reader_gives_differently_stay_python(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("xs", pa.list_(pa.int32()))])
    table = Table.for_write(str(tmp_path / "nested"), schema, {})
    assert "xs ARRAY<INT>" in raw_readable_table(table)



def test_primary_key_file_with_retractions_carries_its_row_kind(tmp_path):
    """A file whose delete count says it holds -U / -D rows is read with its row kind, which drops them."""
    path = str(tmp_path / "pk")
    table = Table.for_write(path, SCHEMA, {"primary-key": "id", "bucket": "1"})
    write = table.new_write(restore=BucketRestore(), row_kind_column="kind")
    write.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "kind": ["+I", "-D", "+I"]}))
    table.new_commit().commit(write.prepare_commit())
    table = Table.load(path)
    splits = table.new_scan().plan()
    assert [f.delete_row_count for s in splits for f in s.files] == [1]
    raw, rest = split_raw_files(table, splits)
    assert len(raw) == 1 and raw[0].keyed and rest == []
