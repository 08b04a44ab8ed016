"""register() and attach() on every session of an application (`spark.newSession()`), and again on one.

Python data sources are registered per session, but classic Spark checks a new name against the active
session: without paimon_ds.spark.session.register_source a second session was refused
DATA_SOURCE_ALREADY_EXISTS for `paimon` and for every table an earlier attach() had registered.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog


@pytest.fixture(autouse=True)
def shared_session_active_after(spark):
    """Leave the run's shared session the active one: classic Spark resolves a write's format in the active
    session, which these tests move to their new sessions."""
    yield
    spark.createDataFrame([], "x INT")  # the public call that makes a session the active one


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_register_twice_and_on_a_new_session(spark, tmp_path):
    paimon_ds.register(spark)
    paimon_ds.register(spark)  # again on the same session: replaces its `paimon`
    other = spark.newSession()
    path = str(tmp_path / "wh" / "db.db" / "t")
    # registries are per session: the new one does not see the first one's `paimon`
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):
        other.read.format("paimon").load(path)

    paimon_ds.register(other)
    paimon_ds.register(other)
    df = other.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    df.write.format("paimon").option("primary-key", "id").option("bucket", "1").mode("append").save(path)
    other.createDataFrame([(2, "B")], df.schema).write.format("paimon").mode("append").save(path)
    assert rows(other.read.format("paimon").load(path)) == [(1, "a"), (2, "B")]
    assert rows(other.read.format("paimon").load(path).where("id > 1")) == [(2, "B")]  # filter push-down is on

    # the original session still works, and registers again while the other one is active
    spark.createDataFrame([(3, "c")], df.schema).write.format("paimon").mode("append").save(path)
    assert rows(spark.read.format("paimon").load(path)) == [(1, "a"), (2, "B"), (3, "c")]
    paimon_ds.register(spark)
    assert rows(other.read.format("paimon").load(path)) == [(1, "a"), (2, "B"), (3, "c")]


def test_attach_on_a_new_session_after_the_first(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("sessions")
    catalog.create_table("sessions.t", pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"})
    # the first session registers the table's source (and its system tables'); a new session registers
    # the same names, which Spark refused while the first session was active
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO sessions.t VALUES (1, 'a')")

    other = spark.newSession()
    paimon_ds.attach(other, warehouse)
    other.sql("INSERT INTO sessions.t VALUES (2, 'b'), (1, 'A')")
    assert rows(other.sql("SELECT * FROM sessions.t")) == [(1, "A"), (2, "b")]
    assert rows(other.sql("SELECT snapshot_id, commit_kind FROM global_temp.`sessions.t$snapshots`")) == \
        [(1, "APPEND"), (2, "APPEND")]

    # the original session goes on with the same table
    spark.sql("INSERT INTO sessions.t VALUES (3, 'c')")
    assert rows(spark.sql("SELECT * FROM sessions.t")) == [(1, "A"), (2, "b"), (3, "c")]
    paimon_ds.attach(spark, warehouse)  # again, while the other session is active
    assert rows(spark.sql("SELECT * FROM sessions.t WHERE id >= 2")) == [(2, "b"), (3, "c")]
    assert rows(other.sql("SELECT * FROM sessions.t")) == [(1, "A"), (2, "b"), (3, "c")]


def test_package_statements_from_a_new_thread(spark, tmp_path):
    """A thread's JVM thread has no active session until a call sets one, and classic Spark looks a format name up
    in the active session only: paimon_ds's own reads and writes (here a MERGE through paimon_ds.sql, which reads
    and writes with format("paimon"), and paimon_ds.read) set it, so they run from a fresh thread pool."""
    warehouse = str(tmp_path / "wh")
    paimon_ds.attach(spark, warehouse)
    paimon_ds.sql(spark, "CREATE DATABASE thread_db")
    paimon_ds.sql(spark, "CREATE TABLE thread_db.t (id INT, b INT)")
    paimon_ds.sql(spark, "INSERT INTO thread_db.t VALUES (1, 1), (2, 2)")

    def merge() -> list[tuple]:
        paimon_ds.sql(spark, "MERGE INTO thread_db.t USING (SELECT 2 AS id, 20 AS b) s ON t.id = s.id "
                             "WHEN MATCHED THEN UPDATE SET b = s.b")
        return sorted(tuple(r) for r in paimon_ds.read(spark, f"{warehouse}/thread_db.db/t").collect())
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(merge).result() == [(1, 1), (2, 20)]
