"""A full compaction of an append table rewrites every file with a deletion vector, a lone file too (Paimon 1.x
BucketedAppendCompactManager.FullCompactTask: "the data file with deletion file always need to be compacted")."""

from __future__ import annotations

import pyarrow as pa

from paimon_ds import Catalog, Table
from paimon_ds.deletionvectors.index_file import dv_index_files
from paimon_ds.operation.compact import compact_in_process


def test_full_compaction_rewrites_a_lone_file_with_a_vector(tmp_path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("d")
    catalog.create_table("d.T", pa.schema([("id", pa.int32()), ("pt", pa.string())]), partition_keys=["pt"],
                         options={"bucket": "3", "bucket-key": "id", "deletion-vectors.enabled": "true"})
    path = catalog.table_path("d.T")
    Table.load(path).append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()), "pt": ["a", "a", "b", "b"]}))
    Table.load(path).delete("id = 2")
    table = Table.load(path)
    assert dv_index_files(table.store, table.latest_snapshot())  # one bucket, one file, one vector
    compact_in_process(table.store, None, full=True)
    table = Table.load(path)
    assert dv_index_files(table.store, table.latest_snapshot()) == {}
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 3, 4]
