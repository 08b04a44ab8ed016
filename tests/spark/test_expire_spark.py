"""Spark writes commit through Table.new_commit, so the expiry after every commit runs there too."""

from __future__ import annotations

from paimon_ds import Table


def test_spark_writes_expire_snapshots_after_each_commit(spark, tmp_path):
    path = str(tmp_path / "t")
    options = {"primary-key": "id", "bucket": "1", "snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"}
    for k in range(6):
        df = spark.createDataFrame([(i, k) for i in range(k, k + 3)], "id long, v long")
        df.write.format("paimon").options(**options).mode("append").save(path)
        latest = Table.load(path).snapshot_manager.latest_id()
        assert Table.load(path).snapshot_manager.list_ids() == list(range(max(1, latest - 2), latest + 1))
    assert len(Table.load(path).snapshot_manager.list_ids()) == 3
    assert sorted((r.id, r.v) for r in spark.read.format("paimon").load(path).collect()) == \
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)] + [(5, 5), (6, 5), (7, 5)]
