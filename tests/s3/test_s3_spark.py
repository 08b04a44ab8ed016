"""The foundation's acceptance on S3 (the loopback server): Spark writes and reads Paimon tables on s3://.

Credentials reach the job three ways, each exercised here: per-job options (Paimon's `s3.*` names), Spark
conf (`spark.hadoop.fs.s3a.*`, bound into the registered source by paimon_ds.register) and attach(); the
table's files hold none of them. The oracles read a local copy of each table (their bundled Hadoop has no
S3A): what paimon_ds wrote to S3 is byte-for-byte what they read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F
from spark._helpers import sorted_rows
from spark.test_roundtrip import all_types_table

import paimon_ds
from paimon_ds import Catalog, Table
from paimon_ds.options.storage import environment_has_credentials
from paimon_ds.spark.options import session_storage


def save(df, path: str, opts: dict[str, str], mode: str = "append", **extra: str) -> None:
    df.write.format("paimon").mode(mode).options(**opts).options(**extra).save(path)


def load(spark, path: str, opts: dict[str, str]):
    return spark.read.format("paimon").options(**opts).load(path)


def table_files(s3_server, path: str) -> dict[str, bytes]:
    fs = s3_server.fs()
    root = path.removeprefix("s3://")
    return {p[len(root) + 1:]: fs.cat_file(p) for p in fs.find(root)}


def test_every_type_round_trips_on_s3(spark, s3_server, s3_table, tmp_path, pypaimon_oracle):
    path, opts = s3_table
    data = all_types_table()
    df = spark.createDataFrame(data).withColumn("ntz", F.col("ntz").cast("timestamp_ntz"))
    save(df, path, opts, partition="b", bucket="3", **{"bucket-key": "id"})
    back = load(spark, path, opts)
    assert back.schema == df.schema
    assert sorted_rows(back.toArrow()) == sorted_rows(data)

    # the oracles read what was written to S3
    local = s3_server.download(path, tmp_path / "copy" / "warehouse" / "db.db" / "t")
    # (Java's oracle bridge cannot hand over map columns: it reads the partitions test's table below)
    assert sorted_rows(pypaimon_oracle.read(local)) == sorted_rows(data)


def test_partitions_buckets_overwrites_and_filters_on_s3(spark, s3_server, s3_table, tmp_path, java_oracle):
    path, opts = s3_table
    rows = [(i, f"d{i % 3}", i * 1.5) for i in range(300)]
    df = spark.createDataFrame(rows, "id BIGINT, dt STRING, amount DOUBLE")
    save(df, path, opts, partition="dt", bucket="4", **{"bucket-key": "id"})
    save(spark.createDataFrame([(1000, "d0", 1.0)], df.schema), path, opts)
    # dynamic overwrite: only d1 is replaced
    save(spark.createDataFrame([(7, "d1", 7.0)], df.schema), path, opts, mode="overwrite",
         partitionOverwriteMode="dynamic")
    expected = sorted([r for r in rows if r[1] != "d1"] + [(1000, "d0", 1.0), (7, "d1", 7.0)])
    assert sorted(tuple(r) for r in load(spark, path, opts).collect()) == expected
    assert sorted(tuple(r) for r in load(spark, path, opts).where("dt = 'd2' AND id < 20").collect()) == \
        [r for r in expected if r[1] == "d2" and r[0] < 20]
    table = Table.load(path, None, opts)
    assert [table.snapshot_manager.snapshot(i).commit_kind for i in table.snapshot_manager.list_ids()] == \
        ["APPEND", "APPEND", "OVERWRITE"]
    local = s3_server.download(path, tmp_path / "copy" / "warehouse" / "db.db" / "t")
    assert sorted(tuple(r.values()) for r in java_oracle.read(local).to_pylist()) == expected

    # nothing but the path in the table's metadata: no key, secret or endpoint in any file
    for name, content in table_files(s3_server, path).items():
        for secret in (s3_server.ACCESS_KEY, s3_server.SECRET_KEY, s3_server.endpoint):
            assert secret.encode() not in content, f"{secret!r} is in {name}"


def test_credentials_from_spark_conf(spark, s3_server):
    """`spark.hadoop.fs.s3a.*` (the names users already set for Hadoop's S3A) and no per-job options."""
    path = f"s3://{s3_server.new_bucket('conf')}/warehouse/db.db/t"
    conf = {"spark.hadoop.fs.s3a.endpoint": s3_server.endpoint,
            "spark.hadoop.fs.s3a.access.key": s3_server.ACCESS_KEY,
            "spark.hadoop.fs.s3a.secret.key": s3_server.SECRET_KEY,
            "spark.hadoop.fs.s3a.path.style.access": "true"}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        paimon_ds.register(spark)
        assert session_storage(spark) == {k.removeprefix("spark.hadoop."): v for k, v in conf.items()}
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
        df.write.format("paimon").mode("append").option("primary-key", "id").option("bucket", "1").save(path)
        spark.createDataFrame([(2, "B")], df.schema).write.format("paimon").mode("append").save(path)
        assert sorted(tuple(r) for r in spark.read.format("paimon").load(path).collect()) == [(1, "a"), (2, "B")]
        assert paimon_ds.compact(spark, path, full=True).commit_kind == "COMPACT"
        assert sorted(tuple(r) for r in paimon_ds.read(spark, path, snapshot_id=1).collect()) == [(1, "a"), (2, "b")]
    finally:
        for k in conf:
            spark.conf.unset(k)
        paimon_ds.register(spark)
    assert session_storage(spark) == {}


def spark_workers_find_aws_credentials(spark) -> bool:
    """Whether botocore finds credentials in Spark's Python workers, where a source plans its reads and writes
    (they have the environment the driver had when Spark started, not what a test sets later)."""
    found = F.udf(lambda _: bool(environment_has_credentials()), "boolean")
    return spark.range(1).select(found("id")).first()[0]


def test_s3_conf_set_after_register_is_refused_before_any_task(spark, s3_server):
    """`spark.hadoop.fs.s3a.*` set after register() are not seen by the source (it cannot read Spark conf): with
    no other credentials, the job is refused while Spark plans it, saying to register again."""
    if spark_workers_find_aws_credentials(spark):
        pytest.skip("Spark's workers find AWS credentials in their environment: nothing would be missing")
    path = f"s3://{s3_server.new_bucket('late')}/warehouse/db.db/t"
    conf = {"spark.hadoop.fs.s3a.endpoint": s3_server.endpoint,
            "spark.hadoop.fs.s3a.access.key": s3_server.ACCESS_KEY,
            "spark.hadoop.fs.s3a.secret.key": s3_server.SECRET_KEY,
            "spark.hadoop.fs.s3a.path.style.access": "true"}
    tracker = spark.sparkContext.statusTracker()
    refused = re.escape(f"MissingCredentialsError: no S3 credentials for {path}: the storage settings have no "
                        "access key and secret key. Looked in the job's options (no storage options), the "
                        "session's spark.hadoop.fs.s3a.* settings bound into the source when "
                        "paimon_ds.register(spark) (or attach) last ran (none bound), and the environment")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    paimon_ds.register(spark)  # with no S3 settings in the session
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        jobs = set(tracker.getJobIdsForGroup())
        with pytest.raises(AnalysisException, match=refused) as raised:
            df.write.format("paimon").mode("append").save(path)
        assert "call paimon_ds.register(spark) again after setting them" in str(raised.value)
        assert set(tracker.getJobIdsForGroup()) == jobs  # refused while planned: no Spark job, so no task
        assert s3_server.fs().find(path.removeprefix("s3://")) == []  # and nothing written

        paimon_ds.register(spark)  # binds the settings the session has now
        df.write.format("paimon").mode("append").save(path)
        assert set(tracker.getJobIdsForGroup()) > jobs
        back = spark.read.format("paimon").load(path)
        assert back.schema == df.schema
        assert sorted(tuple(r) for r in back.collect()) == [(1, "a"), (2, "b")]
    finally:
        for k in conf:
            spark.conf.unset(k)
        paimon_ds.register(spark)
    assert session_storage(spark) == {}
    # the settings gone (and unbound) again: reads are refused while planned too, batch and stream alike
    jobs = set(tracker.getJobIdsForGroup())
    with pytest.raises(AnalysisException, match=refused):
        spark.read.format("paimon").load(path)
    with pytest.raises(AnalysisException, match=refused):
        spark.readStream.format("paimon").load(path)
    assert set(tracker.getJobIdsForGroup()) == jobs


def test_anonymous_access_needs_no_credentials(spark, s3_server):
    """`fs.s3a.aws.credentials.provider` = Anonymous...: unsigned requests, which the check lets through."""
    bucket = s3_server.new_bucket("public")
    s3_server.fs().call_s3("put_bucket_acl", Bucket=bucket, ACL="public-read-write")
    path = f"s3://{bucket}/warehouse/db.db/t"
    opts = {"s3.endpoint": s3_server.endpoint, "s3.path.style.access": "true",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    save(df, path, opts, bucket="1", **{"primary-key": "id"})
    save(spark.createDataFrame([(2, "B")], df.schema), path, opts)
    assert sorted(tuple(r) for r in load(spark, path, opts).collect()) == [(1, "a"), (2, "B")]


def test_credentials_from_the_environment(s3_server, tmp_path):
    """No options and no Spark conf: botocore's own chain (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL_S3, ...)."""
    path = f"s3://{s3_server.new_bucket('env')}/warehouse/db.db/t"
    script = tmp_path / "env_job.py"
    script.write_text(
        "import sys, pyarrow as pa\n"
        "from paimon_ds import Table\n"
        "data = pa.table({'id': pa.array([1, 2], pa.int64())})\n"
        "t = Table.for_write(sys.argv[1], data.schema, {'bucket': '1', 'bucket-key': 'id'})\n"
        "w = t.new_write(); w.write_arrow(data); t.new_commit().commit(w.prepare_commit())\n"
        "print(sorted(Table.load(sys.argv[1]).to_arrow().column('id').to_pylist()))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=s3_server.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=s3_server.SECRET_KEY,
               AWS_ENDPOINT_URL_S3=s3_server.endpoint, AWS_DEFAULT_REGION="us-east-1")
    out = subprocess.run([sys.executable, str(script), path], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[1, 2]"
    assert Table.load(path, None, s3_server.options()).to_arrow().column("id").to_pylist() == [1, 2]


def test_attached_s3_warehouse_with_sql(spark, s3_server):
    warehouse = f"s3://{s3_server.new_bucket('wh')}/warehouse"
    opts = s3_server.options()
    catalog = Catalog(warehouse, opts)
    catalog.create_database("shop")
    catalog.create_table("shop.orders", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                   ("amount", pa.float64())]),
                         primary_keys=["id"], options={"bucket": "2"})
    assert Catalog(warehouse, opts).list_tables("shop") == ["orders"]  # the database is listable on S3
    paimon_ds.attach(spark, warehouse, opts)
    spark.sql("INSERT INTO shop.orders VALUES (1, 1.0), (2, 2.0)")
    spark.sql("INSERT INTO shop.orders VALUES (2, 20.0)")
    assert [tuple(r) for r in spark.sql("SELECT * FROM shop.orders ORDER BY id").collect()] == [(1, 1.0), (2, 20.0)]
    paimon_ds.sql(spark, "DELETE FROM shop.orders WHERE id = 1")
    assert [tuple(r) for r in spark.sql("SELECT * FROM shop.orders").collect()] == [(2, 20.0)]
    assert [r.commit_kind for r in spark.sql(
        "SELECT commit_kind FROM global_temp.`shop.orders$snapshots` ORDER BY snapshot_id").collect()] == \
        ["APPEND", "APPEND", "APPEND"]


def test_bad_credentials_and_missing_bucket_fail_clearly(spark, s3_server, s3_table):
    path, opts = s3_table
    df = spark.createDataFrame([(1, "a")], "id BIGINT, v STRING")
    save(df, path, opts)
    missing = f"s3://no-such-bucket-{s3_server.new_bucket('x')}-gone/t"
    with pytest.raises(Exception, match="(?i)no Paimon table|NoSuchBucket|does not exist"):
        load(spark, missing, opts).collect()
    before = table_files(s3_server, path)
    wrong = {**opts, "s3.endpoint": "http://127.0.0.1:9"}  # nothing listens there
    with pytest.raises(Exception, match="(?i)connect|endpoint"):
        save(df, path, wrong)
    assert table_files(s3_server, path) == before
