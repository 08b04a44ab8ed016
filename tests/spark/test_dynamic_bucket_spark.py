"""Dynamic-bucket and cross-partition tables through Spark: the package's shuffle to bucket assigners, then to
writers by (partition, bucket), for batch writes, SQL INSERT and foreachBatch streams."""

from __future__ import annotations

import random

import pytest

import paimon_ds
from paimon_ds.options.registry import OptionError
from paimon_ds.table import Table

from ._helpers import save


def table_rows(spark, path: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect())


def buckets_per_partition(path: str) -> dict[str, list[int]]:
    table = Table.load(path)
    scan = table.new_scan()
    out: dict[str, set[int]] = {}
    for e in scan.read_entries():
        out.setdefault(scan.partition_dir(e.partition), set()).add(e.bucket)
    return {k: sorted(v) for k, v in sorted(out.items())}


DYNAMIC = {"primary-key": "id,dt", "partition": "dt", "bucket": "-1", "dynamic-bucket.target-row-num": "100"}


def test_dynamic_bucket_write_upsert_and_java_reads(spark, table_path, java_oracle):
    rng = random.Random(5)
    model: dict[tuple[int, str], int] = {}
    for round_ in range(3):
        rows = [(rng.randrange(1200), f"d{rng.randrange(2)}", round_ * 1000 + i) for i in range(700)]
        for k, dt, v in rows:
            model[(k, dt)] = v  # within one write, later rows of a key win only if Spark keeps their order
        df = spark.createDataFrame(rows, "id bigint, dt string, v bigint").coalesce(1)
        paimon_ds.write(df, table_path, options=DYNAMIC if round_ == 0 else None, parallelism=2)
        got = table_rows(spark, table_path)
        assert len(got) == len({(r[0], r[1]) for r in got}), "a key is in two buckets"
        assert got == sorted((k, dt, v) for (k, dt), v in model.items()), f"round {round_}"
    # keys per bucket, from the hash index: none beyond the target; about n / 100 buckets per partition
    from paimon_ds.index.bucket_assigner import snapshot_index_entries
    table = Table.load(table_path)
    entries = snapshot_index_entries(table.store, table.latest_snapshot())
    scan = table.new_scan()
    keys_per_bucket = {(scan.partition_dir(e.partition), e.bucket): e.index_file.row_count for e in entries}
    assert max(keys_per_bucket.values()) <= 100
    for dt in ("d0", "d1"):
        n = sum(1 for (_, d) in model if d == dt)
        mine = [c for (p, _), c in keys_per_bucket.items() if p == f"dt={dt}"]
        assert sum(mine) == n
        assert -(-n // 100) <= len(mine) <= -(-n // 100) + 1, (dt, n, mine)
    assert buckets_per_partition(table_path) == {
        p: sorted(b for (q, b) in keys_per_bucket if q == p) for p in ("dt=d0", "dt=d1")}
    java = java_oracle.read(table_path)
    assert sorted((r["id"], r["dt"], r["v"]) for r in java.to_pylist()) == table_rows(spark, table_path)


def test_plain_spark_write_to_a_dynamic_bucket_table(spark, table_path):
    """paimon_ds.write's table, continued by df.write.format (no shuffle: buckets from the snapshot's index)."""
    paimon_ds.write(spark.createDataFrame([(1, "a", 1)], "id bigint, dt string, v bigint"), table_path,
                    options=DYNAMIC)
    save(spark.createDataFrame([(2, "a", 2), (1, "a", 9)], "id bigint, dt string, v bigint"), table_path)
    assert table_rows(spark, table_path) == [(1, "a", 9), (2, "a", 2)]


def test_sql_insert_into_a_dynamic_bucket_table(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    paimon_ds.sql(spark, "CREATE DATABASE dyn")
    paimon_ds.sql(spark, "CREATE TABLE dyn.t (id BIGINT NOT NULL, dt STRING NOT NULL, v STRING) PARTITIONED BY (dt) "
                         "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '-1')")
    paimon_ds.sql(spark, "INSERT INTO dyn.t VALUES (1, 'a', 'x'), (2, 'a', 'y'), (1, 'b', 'z')")
    paimon_ds.sql(spark, "INSERT INTO dyn.t VALUES (1, 'a', 'x2')")
    paimon_ds.sql(spark, "INSERT OVERWRITE dyn.t PARTITION (dt = 'b') SELECT 3, 'w'")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM dyn.t").collect()) == [
        (1, "a", "x2"), (2, "a", "y"), (3, "b", "w")]
    spark.sql("INSERT INTO dyn.t VALUES (4, 'a', 'plain'), (1, 'a', 'x3')")  # plain spark.sql: no shuffle needed
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM dyn.t").collect()) == [
        (1, "a", "x3"), (2, "a", "y"), (3, "b", "w"), (4, "a", "plain")]


def test_foreach_batch_writer_commits_each_batch_once(spark, tmp_path):
    path = str(tmp_path / "warehouse" / "db.db" / "t")
    source, checkpoint = tmp_path / "src", tmp_path / "chk"
    source.mkdir()
    schema = "id bigint, dt string, v bigint"
    for i in range(3):
        spark.createDataFrame([(k, "a", i) for k in range(i * 5, i * 5 + 10)], schema).coalesce(1) \
            .write.mode("append").parquet(str(source / f"part{i}"))

    def run() -> None:
        stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                  .option("recursiveFileLookup", "true").parquet(str(source)))
        query = (stream.writeStream.foreachBatch(paimon_ds.foreach_batch_writer(path, "orders-feed", DYNAMIC))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()

    run()
    expected = sorted({k: (k, "a", i) for i in range(3) for k in range(i * 5, i * 5 + 10)}.values())
    assert table_rows(spark, path) == expected
    table = Table.load(path)
    snaps = [table.snapshot_manager.snapshot(i) for i in table.snapshot_manager.list_ids()]
    data = [(s.commit_user, s.commit_identifier) for s in snaps if s.commit_kind == "APPEND"]
    assert data == [("orders-feed", 0), ("orders-feed", 1), ("orders-feed", 2)]
    # Spark replays batch 2 (its commit log entry is gone): the table takes it once
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run()
    assert Table.load(path).snapshot_manager.list_ids() == [s.id for s in snaps]
    assert table_rows(spark, path) == expected


def test_bad_foreach_batch_writer(spark, table_path):
    with pytest.raises(ValueError, match="commit_user"):
        paimon_ds.foreach_batch_writer(table_path, "")
    with pytest.raises(OptionError):
        paimon_ds.write(spark.createDataFrame([(1, "a", 1)], "id bigint, dt string, v bigint"), table_path,
                        options={**DYNAMIC, "dynamic-bucket.target-row-num": "many"})
    assert not Table.exists(table_path)


CROSS = {"primary-key": "id", "partition": "dt", "bucket": "-1", "dynamic-bucket.target-row-num": "50"}


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_cross_partition_upsert_moves_keys(spark, table_path, java_oracle, pypaimon_oracle, engine):
    """Keys move between partitions over several writes: each key is in exactly one partition afterwards
    (its latest for deduplicate, its first for first-row), as Java Paimon 0.9 reads too."""
    rng = random.Random(9)
    model: dict[int, tuple[str, int]] = {}
    for round_ in range(3):
        keys = rng.sample(range(300), 150)
        rows = [(k, f"d{rng.randrange(3)}", round_ * 1000 + k) for k in keys]
        for k, dt, v in rows:
            if engine == "deduplicate" or k not in model:
                model[k] = (dt, v)
        df = spark.createDataFrame(rows, "id bigint, dt string, v bigint")
        paimon_ds.write(df, table_path, options={**CROSS, "merge-engine": engine} if round_ == 0 else None,
                        parallelism=2)
        got = table_rows(spark, table_path)
        assert [r[0] for r in got] == sorted({r[0] for r in got}), f"a key in two places after round {round_}"
        assert got == sorted((k, dt, v) for k, (dt, v) in model.items()), f"round {round_}"
        java = java_oracle.read(table_path)  # after every commit, Java Paimon 0.9 reads the same rows
        assert sorted((r["id"], r["dt"], r["v"]) for r in java.to_pylist()) == got, f"round {round_}"
    py = pypaimon_oracle.read(table_path)
    assert sorted((r["id"], r["dt"], r["v"]) for r in py.to_pylist()) == table_rows(spark, table_path)


@pytest.mark.parametrize("options", [DYNAMIC, CROSS], ids=["dynamic-bucket", "cross-partition"])
def test_delete_update_merge_on_dynamic_bucket_tables(spark, table_path, options):
    rows = [(i, f"d{i % 2}", i * 10) for i in range(20)]
    paimon_ds.write(spark.createDataFrame(rows, "id bigint, dt string, v bigint"), table_path, options=options,
                    parallelism=2)
    paimon_ds.delete(spark, table_path, "id < 5")
    paimon_ds.update(spark, table_path, {"v": "v + 1"}, "id >= 15")
    # key 8 lives in d0; the source names it in d1
    source = spark.createDataFrame([(7, "d1", -7), (8, "d1", -8), (30, "d0", 300)], "id bigint, dt string, v bigint")
    on = "t.id = s.id" if options is CROSS else "t.id = s.id AND t.dt = s.dt"
    paimon_ds.merge(spark, table_path, source, on, [paimon_ds.Update()], [paimon_ds.Insert()])
    expected = {(i, f"d{i % 2}"): i * 10 for i in range(5, 20)}
    expected.update({k: v + 1 for k, v in expected.items() if k[0] >= 15})
    expected.update({(7, "d1"): -7, (8, "d1"): -8, (30, "d0"): 300})
    if options is CROSS:  # matched on id alone, UPDATE SET * moves key 8 to d1: it leaves d0
        del expected[(8, "d0")]
    assert table_rows(spark, table_path) == sorted((k, dt, v) for (k, dt), v in expected.items())
