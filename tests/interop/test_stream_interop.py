"""Streamed tables and their changes read alike by paimon_ds and Paimon's own readers.

A CDC stream lands in primary-key tables through `writeStream.format("paimon")`. Java Paimon 0.9
reads the table contents; pypaimon 2.1's streaming reader reads the changes snapshot by snapshot
(the changelog files of a `changelog-producer=input` table, the commits' files otherwise) and must
see exactly the rows, row kinds and snapshot grouping that paimon_ds's streaming source emits.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ds import Table

SCHEMA = "id BIGINT, v STRING, op STRING"
# three micro-batches of changes: inserts, then updates and a delete, then a re-insert
BATCHES = [
    [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")],
    [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I")],
    [(2, "b2", "+I"), (3, "c3", "+U")],
]


def stream_cdc(spark, tmp_path: Path, path: str, options: dict[str, str]) -> None:
    source = tmp_path / "cdc"
    source.mkdir()
    for i, rows in enumerate(BATCHES):
        f = source / f"batch-{i}.parquet"
        pq.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "v": [r[1] for r in rows],
                                 "op": [r[2] for r in rows]}), f)
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    q = (df.coalesce(1).writeStream.format("paimon").options(**options)
         .option("checkpointLocation", str(tmp_path / "ck-write")).trigger(availableNow=True).start(path))
    try:
        q.awaitTermination()
    finally:
        q.stop()


def paimon_ds_changes(spark, tmp_path: Path, path: str) -> list[tuple]:
    """paimon_ds's streaming source from snapshot 1: (batch, rowkind, id, v) for every row."""
    out = tmp_path / "changes"
    # one file per snapshot (one bucket): one micro-batch per snapshot, as pypaimon plans them
    df = (spark.readStream.format("paimon").option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
          .option("read.stream.maxFilesPerTrigger", "1")
          .option("paimon_ds.row-kind-column", "rowkind").load(path))

    def keep(batch_df, batch_id: int) -> None:
        batch_df.selectExpr(f"{batch_id} AS batch", "*").write.mode("append").parquet(str(out))

    q = df.writeStream.foreachBatch(keep).option("checkpointLocation", str(tmp_path / "ck-read")) \
        .trigger(availableNow=True).start()
    try:
        q.awaitTermination()
    finally:
        q.stop()
    rows = pq.read_table(out).to_pylist() if out.exists() else []
    return [(r["batch"], r["rowkind"], r["id"], r["v"]) for r in rows]


def grouped(rows: list[tuple]) -> list[list[tuple]]:
    """Rows per batch, batches in order, rows within a batch sorted (their order is not defined)."""
    batches: dict[int, list[tuple]] = {}
    for b, *rest in rows:
        batches.setdefault(b, []).append(tuple(rest))
    return [sorted(batches[b]) for b in sorted(batches)]


@pytest.mark.parametrize("producer, expected", [
    # the changelog holds every input record with its kind
    ("input", [[("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
               [("+I", 4, "d"), ("+U", 1, "a2"), ("-D", 2, "b")],
               [("+I", 2, "b2"), ("+U", 3, "c3")]]),
    # without a producer a commit's files are read: the same records here (one per key per batch)
    ("none", [[("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
              [("+I", 4, "d"), ("+U", 1, "a2"), ("-D", 2, "b")],
              [("+I", 2, "b2"), ("+U", 3, "c3")]]),
])
def test_streamed_changes_match_pypaimon_stream_reader(spark, tmp_path, table_path, pypaimon_oracle,
                                                       java_oracle, producer, expected):
    stream_cdc(spark, tmp_path, table_path, {"primary-key": "id", "bucket": "1", "rowkind.field": "op",
                                             "changelog-producer": producer})
    ours = grouped(paimon_ds_changes(spark, tmp_path, table_path))
    assert ours == expected

    theirs = pypaimon_oracle.stream_read(table_path, from_snapshot=1)
    theirs_rows = [(r["_plan"], r["_row_kind"], r["id"], r["v"]) for r in theirs.to_pylist()]
    assert grouped(theirs_rows) == expected

    final = sorted((r["id"], r["v"]) for r in Table.load(table_path).to_arrow().to_pylist())
    assert final == [(1, "a2"), (2, "b2"), (3, "c3"), (4, "d")]
    java = sorted((r["id"], r["v"]) for r in java_oracle.read(table_path).to_pylist())
    assert java == final
    snapshot = Table.load(table_path).snapshot_manager.snapshot(1)
    assert (snapshot.changelog_manifest_list is not None) == (producer == "input")
