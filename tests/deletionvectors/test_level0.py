"""Level 0 of deletion-vector primary-key tables: hidden from batch reads, shown to streams, as Paimon does.

A write-only commit leaves level-0 files that lookup compaction has not yet folded into the vectors. Batch
reads skip them (CoreOptions.batchScanSkipLevel0) unless the table sets `deletion-vectors.merge-on-read`
(Paimon 2.0; pypaimon 2.1 honours it), which merges level 0 in. A stream's starting full scan reads every
level (Paimon 1.3+, pypaimon 2.1). pypaimon 2.1 reads the same tables as the reference.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.operation.read import TableRead
from paimon_ds.operation.stream import StreamScan

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
DV = {"primary-key": "id", "bucket": "2", "deletion-vectors.enabled": "true"}


def commit(path: str, ids: range, tag: str, options: dict[str, str]) -> None:
    data = pa.table({"id": pa.array(ids, pa.int32()), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)
    t = Table.for_write(path, SCHEMA, options)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("level0-test").commit(w.prepare_commit())


def two_commits(path: str, extra: dict[str, str]) -> None:
    """Ids 0-29 lifted (with vectors), then updates of 20-39 left at level 0 by a write-only commit."""
    commit(path, range(0, 30), "a", {**DV, **extra})
    commit(path, range(20, 40), "b", {**DV, **extra, "write-only": "true"})
    levels = [f.level for s in Table.load(path).new_scan().read_entries() for f in [s.file]]
    assert 0 in levels and any(lv > 0 for lv in levels)


LIFTED = sorted((i, f"a{i}") for i in range(30))
MERGED = sorted([(i, f"a{i}") for i in range(20)] + [(i, f"b{i}") for i in range(20, 40)])


def pairs(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in t.to_pylist())


@pytest.mark.parametrize("merge_on_read, expected", [(False, LIFTED), (True, MERGED)])
def test_batch_reads_of_level0_match_pypaimon(spark, pypaimon_oracle, table_path, merge_on_read, expected):
    two_commits(table_path, {"deletion-vectors.merge-on-read": "true"} if merge_on_read else {})
    assert pairs(pypaimon_oracle.read(table_path)) == expected
    assert pairs(Table.load(table_path).to_arrow()) == expected
    assert sorted((r.id, r.v) for r in spark.read.format("paimon").load(table_path).collect()) == expected


def test_stream_full_scan_reads_level0_as_pypaimon(spark, pypaimon_oracle, table_path, tmp_path: Path):
    two_commits(table_path, {})
    theirs = pypaimon_oracle.stream_read(table_path)  # latest-full: the full scan of the latest snapshot
    assert sorted((r["_row_kind"], r["id"], r["v"]) for r in theirs.to_pylist()) == [("+I", *r) for r in MERGED]
    table = Table.load(table_path)
    scan = StreamScan(table)
    start = scan.initial_position()
    read = TableRead(table, row_kind_column="rowkind")
    core = [(r["rowkind"], r["id"], r["v"]) for s in scan.splits_between(start, scan.latest_position(start))
            for b in read.read(s.split, delta=s.delta, changelog=s.changelog) for r in b.to_pylist()]
    assert sorted(core) == [("+I", *r) for r in MERGED]
    out = tmp_path / "stream-out"
    q = (spark.readStream.format("paimon").option("paimon_ds.row-kind-column", "rowkind").load(table_path)
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    streamed = spark.read.parquet(str(out)).collect()
    assert sorted((r.rowkind, r.id, r.v) for r in streamed) == [("+I", *r) for r in MERGED]
