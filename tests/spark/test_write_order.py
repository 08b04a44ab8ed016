"""Which row wins when one df.write.format("paimon") holds a key several times.

Tasks of a non-clustered write share buckets. The rule: a later Spark partition's row wins over an
earlier partition's, and a later row within a partition wins over an earlier one (first-row: the first
row in that order is kept). Each case is checked exactly against a Python model, the partitions
against spark_partition_id(), and the table against Java Paimon 0.9 and pypaimon 2.1.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from paimon_ds import Table
from paimon_ds.mergetree.files import RUNS_PER_TASK

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
SPARK_SCHEMA = "id BIGINT, v BIGINT, s STRING"
PARTITION_TAG = 1_000_000  # v = partition * PARTITION_TAG + the row's position in its partition


def chunk(partition: int, ids: np.ndarray, rng: np.random.Generator, nulls: bool = False) -> pa.Table:
    """Partition ``partition``'s rows in order: v names the row; s = str(v) (partial-update: either may be null)."""
    v = partition * PARTITION_TAG + np.arange(len(ids), dtype=np.int64)
    s = v.astype(str).astype(object)
    v_mask = s_mask = None
    if nulls:
        v_mask, s_mask = rng.random(len(ids)) < 0.3, rng.random(len(ids)) < 0.3
        s[s_mask] = None
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(v, pa.int64(), mask=v_mask),
                     "s": pa.array(s, pa.string())}, schema=SCHEMA)


def partitions(rows_per_partition: int, keys: int, seed: int, nulls: bool = False) -> list[pa.Table]:
    """Three partitions of random keys (repeated within and across partitions), plus keys 0..9 that
    partition 1 holds first and partition 0 last.

    Those keys are the case the old interleaving got wrong: task i's row n took base + 1 + n * 65536 + i,
    so partition 1's first row (n = 0: base + 2) lost to partition 0's last row (n = rows - 1:
    base + 1 + (rows - 1) * 65536), though it comes from the later partition."""
    rng = np.random.default_rng(seed)
    crafted = np.arange(10)
    ids = [rng.integers(10, keys, rows_per_partition) for _ in range(3)]
    ids[0] = np.concatenate([ids[0], crafted])
    ids[1] = np.concatenate([crafted[::-1], ids[1]])
    return [chunk(p, i, rng, nulls) for p, i in enumerate(ids)]


def dataframe(spark, chunks: list[pa.Table]):
    """A DataFrame of exactly len(chunks) partitions, partition i holding chunks[i] in order."""
    def emit(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from chunks[i].to_batches(max_chunksize=5000)
    return spark.range(0, len(chunks), 1, len(chunks)).mapInArrow(emit, SPARK_SCHEMA)


def check_partitions(df, chunks: list[pa.Table]) -> None:
    """Spark's partitions of ``df`` are exactly ``chunks``, in order."""
    got = df.select(F.spark_partition_id().alias("p"), "v").toArrow()
    expected = [(p, v) for p, t in enumerate(chunks) for v in t.column("v").to_pylist()]
    assert list(zip(got.column("p").to_pylist(), got.column("v").to_pylist())) == expected


def model(chunks: list[pa.Table], engine: str) -> dict[int, tuple]:
    """The table the rule gives: rows in partition order, then row order, merged per key."""
    out: dict[int, tuple] = {}
    for t in chunks:
        for i, v, s in zip(*(t.column(c).to_pylist() for c in ("id", "v", "s"))):
            if engine == "first-row":
                out.setdefault(i, (v, s))
            elif engine == "partial-update":  # the last non-null value of each column
                old = out.get(i, (None, None))
                out[i] = (v if v is not None else old[0], s if s is not None else old[1])
            else:
                out[i] = (v, s)
    return out


def as_model(t: pa.Table) -> dict[int, tuple]:
    got = {i: (v, s) for i, v, s in zip(*(t.column(c).to_pylist() for c in ("id", "v", "s")))}
    assert len(got) == t.num_rows
    return got


def level0_sequences(path: str) -> dict[int, list[int]]:
    """bucket -> the sequence number of each data file the write's commit (snapshot 1, before the compaction the
    commit may run after it) added (one number per file: min == max)."""
    out: dict[int, list[int]] = {}
    table = Table.load(path)
    for e in table.new_scan().read_entries(table.snapshot_manager.snapshot(1)):
        assert e.file.min_sequence_number == e.file.max_sequence_number, e.file
        out.setdefault(e.bucket, []).append(e.file.min_sequence_number)
    return {b: sorted(s) for b, s in sorted(out.items())}


CASES = {
    # name: (table options, rows per partition, keys, oracles)
    "deduplicate": ({}, 400, 300, True),
    # spills: a 256 KB buffer takes about one 5000-row batch; the spilled runs merge into one run per task
    "spilled": ({"write-buffer-size": "256 kb"}, 30_000, 8_000, False),
    # no spilling: every full buffer is a level-0 run of its own, several per task and bucket
    "not-spillable": ({"write-buffer-size": "256 kb", "write-buffer-spillable": "false"}, 30_000, 8_000, True),
    "first-row": ({"merge-engine": "first-row", "write-buffer-size": "256 kb", "write-buffer-spillable": "false"},
                  30_000, 8_000, True),
    "partial-update": ({"merge-engine": "partial-update"}, 400, 300, True),
    # readers skip level 0: the committer's lookup compaction merges the runs up
    "deletion-vectors": ({"deletion-vectors.enabled": "true", "write-buffer-size": "256 kb",
                          "write-buffer-spillable": "false"}, 30_000, 8_000, True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_later_partition_and_a_later_row_win(spark, table_path, java_oracle, pypaimon_oracle, name):
    options, rows, keys, oracles = CASES[name]
    engine = options.get("merge-engine", "deduplicate")
    chunks = partitions(rows, keys, seed=len(name), nulls=engine == "partial-update")
    df = dataframe(spark, chunks)
    check_partitions(df, chunks)
    df.write.format("paimon").option("primary-key", "id").option("bucket", "2").options(**options) \
        .mode("append").save(table_path)

    expected = model(chunks, engine)
    assert as_model(Table.load(table_path).to_arrow()) == expected
    assert as_model(spark.read.format("paimon").load(table_path).toArrow()) == expected
    if engine == "deduplicate":
        # keys 0..9: partition 1's first rows beat partition 0's last rows
        assert {k: expected[k][0] // PARTITION_TAG for k in range(10)} == {k: 1 for k in range(10)}

    if engine == "first-row" or name == "deletion-vectors":
        # the committer compacted the level-0 runs up (these tables' readers skip level 0)
        assert all(f.level > 0 for s in Table.load(table_path).new_scan().plan() for f in s.files)
    elif name == "not-spillable":
        seqs = level0_sequences(table_path)
        # each task writes runs 0, 1, ... of its own: base + 1 + partition * 2**16 + run (base -1)
        for bucket, numbers in seqs.items():
            tasks = {n // RUNS_PER_TASK for n in numbers}
            assert tasks == {0, 1, 2}
            for p in tasks:
                runs = sorted(n - p * RUNS_PER_TASK for n in numbers if n // RUNS_PER_TASK == p)
                assert runs == list(range(len(runs))) and len(runs) >= 2, (bucket, p, runs)
    else:
        # one run per task and bucket (spilled runs merge into it): base + 1 + partition * 2**16
        one_each = [0, RUNS_PER_TASK, 2 * RUNS_PER_TASK]
        assert level0_sequences(table_path) == {0: one_each, 1: one_each}

    if oracles:
        # Java merges the level-0 runs itself (files of one commit, one number each)
        assert as_model(java_oracle.read(table_path)) == expected
        assert as_model(pypaimon_oracle.read(table_path)) == expected


# --------------------------------------------------------------------------------------- streaming

def write_file(directory: Path, name: str, table: pa.Table, mtime: int) -> None:
    pq.write_table(table, directory / name)
    os.utime(directory / name, (mtime, mtime))


def test_stream_micro_batch_a_later_partition_wins(spark, tmp_path, table_path, java_oracle):
    """One micro-batch of three files in two Spark partitions: the same numbering as a batch write."""
    source = tmp_path / "in"
    source.mkdir()
    rng = np.random.default_rng(11)
    # the file source packs the files into partitions largest first (here a and b, then c); the largest
    # file is also the newest, so neither file age nor name order is what decides
    sizes = {"a.parquet": 900, "b.parquet": 600, "c.parquet": 300}
    for i, (name, n) in enumerate(sizes.items()):
        write_file(source, name, chunk(i, rng.integers(0, 1500, n), rng), 1_700_000_000 - i)

    # the partitions a read of these files gets: the partition of every row, in order
    probe = spark.read.schema(SPARK_SCHEMA).parquet(str(source)) \
        .select(F.spark_partition_id().alias("p"), "id", "v", "s").toArrow()
    parts = probe.column("p").to_pylist()
    files = [v // PARTITION_TAG for v in probe.column("v").to_pylist()]
    assert sorted(set(zip(parts, files))) == [(0, 0), (0, 1), (1, 2)]
    in_order = [probe.filter(pc.equal(probe["p"], p)).select(["id", "v", "s"]) for p in (0, 1)]
    expected = model(in_order, "deduplicate")
    # the partition order decides, and within partition 0 the row order (b's rows after a's). The old
    # interleaving (row n of task i: base + 1 + n * 65536 + i) let b's rows (n >= 900) beat c's (n < 300).
    assert expected != model(in_order[::-1], "deduplicate")
    assert {v // PARTITION_TAG for v, _ in expected.values()} == {0, 1, 2}

    df = spark.readStream.schema(SPARK_SCHEMA).parquet(str(source))
    q = (df.writeStream.format("paimon").option("primary-key", "id").option("bucket", "2")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(table_path))
    try:
        q.awaitTermination()
    finally:
        q.stop()
    table = Table.load(table_path)
    sm = table.snapshot_manager
    assert [sm.snapshot(i).commit_kind for i in sm.list_ids()] == ["APPEND"]  # one micro-batch, no compaction
    assert as_model(table.to_arrow()) == expected
    # one run per partition and bucket: base + 1 + partition * 2**16 (base -1)
    assert level0_sequences(table_path) == {0: [0, RUNS_PER_TASK], 1: [0, RUNS_PER_TASK]}
    assert as_model(java_oracle.read(table_path)) == expected
