"""Consumers in Spark: `spark.readStream` with `consumer-id` records its progress as Paimon does, a new query (a new
checkpoint) with the same id resumes from it, and expiry keeps what it needs; `CALL sys.reset_consumer` /
`sys.clear_consumers` and the `$consumers` view. Tables are written through the core API."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import paimon_ds
from paimon_ds import Catalog, Table
from paimon_ds.operation.maintenance import expire_snapshots
from paimon_ds.store.consumer import ConsumerManager

from .test_stream_read import Consumer as Query
from .test_stream_read import Row, run_available_now, tuples

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", pa.int64()), ("v", pa.string())])


def commit(path: str, c: int) -> list[Row]:
    """Commit c: ids 10c, 10c+1 in partition `a`, 10c+2 in partition `b` (two files, two splits); its rows."""
    rows = [{"id": 10 * c + i, "c": c, "v": "a" if i < 2 else "b"} for i in range(3)]
    table = Table.for_write(path, SCHEMA, {"partition": "v"})
    write = table.new_write()
    write.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())
    return tuples(rows)


def consumers(path: str) -> dict[str, int]:
    return ConsumerManager.of(Table.load(path).store).consumers()


class Watched(Query):
    """A query whose sink also notes the consumer's record as each micro-batch runs."""

    def __init__(self, path: str, directory: Path, options: dict[str, str]) -> None:
        super().__init__(path, directory, options)
        self.seen: list[int | None] = []
        consumer_id = options["consumer-id"]
        self.sink.on_batch = lambda _: self.seen.append(consumers(path).get(consumer_id))


def test_a_new_query_resumes_where_the_consumer_is_and_expiry_keeps_it(spark, tmp_path):
    path = str(tmp_path / "t")
    first_rows = [r for c in (1, 2, 3) for r in commit(path, c)]
    # exactly-once (the default mode): a micro-batch takes whole snapshots, even with a one-file limit
    options = {"consumer-id": "job", "read.stream.maxFilesPerTrigger": "1"}
    first = Watched(path, tmp_path / "first", options)
    run_available_now(spark, first)
    assert first.sink.non_empty() == [sorted(first_rows)]  # the full scan of snapshot 3, in one batch
    assert first.seen == [None] and consumers(path) == {"job": 4}  # nothing before the full scan is done

    later = [commit(path, c) for c in (4, 5)]
    # the consumer keeps snapshots 4 and 5 from an expiry that would keep only the latest
    assert expire_snapshots(Table.load(path), retain_min=1, retain_max=1, time_retained_ms=0).expired == [1, 2, 3]
    second = Watched(path, tmp_path / "second", options)  # a new checkpoint: only the consumer tells where to start
    run_available_now(spark, second)
    assert second.sink.non_empty() == later  # snapshot 4, then 5: nothing twice, nothing lost
    # while a batch runs, the consumer holds that batch's first snapshot; at the end, the one after the last
    assert second.seen == [4, 5] and consumers(path) == {"job": 6}

    ignoring = Watched(path, tmp_path / "ignoring", {**options, "consumer.ignore-progress": "true"})
    run_available_now(spark, ignoring)  # scan.mode's start (latest-full), then recorded as usual
    assert ignoring.sink.non_empty() == [sorted(first_rows + later[0] + later[1])]
    assert consumers(path) == {"job": 6}


def test_at_least_once_batches_end_inside_snapshots(spark, tmp_path):
    path = str(tmp_path / "t")
    commits = [commit(path, c) for c in (1, 2)]
    query = Watched(path, tmp_path / "q", {"consumer-id": "alo", "consumer.mode": "at-least-once",
                                          "scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                          "read.stream.maxFilesPerTrigger": "1"})
    run_available_now(spark, query)
    # one split (partition) per batch; a snapshot read in part is the consumer's next one (read again on resume)
    assert query.sink.non_empty() == [commits[0][:2], commits[0][2:], commits[1][:2], commits[1][2:]]
    assert query.seen == [1, 1, 2, 2] and consumers(path) == {"alo": 3}


def test_sql_consumer_procedures_and_view(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("cs")
    catalog.create_table("cs.t", SCHEMA, partition_keys=["v"])
    path = catalog.table_path("cs.t")
    for c in (1, 2, 3):
        commit(path, c)
    paimon_ds.attach(spark, warehouse)
    view = "global_temp.`cs.t$consumers`"
    assert spark.sql(f"SELECT * FROM {view}").collect() == []
    # Paimon's Spark argument names, named or positional
    out = paimon_ds.sql(spark, "CALL sys.reset_consumer(table => 'cs.t', consumerId => 'job-1', nextSnapshotId => 2)")
    assert [tuple(r) for r in out.collect()] == [(True,)]
    paimon_ds.sql(spark, "CALL sys.reset_consumer('cs.t', 'job-2', 3)")
    paimon_ds.sql(spark, "CALL sys.reset_consumer('cs.t', 'other', 1)")
    assert [tuple(r) for r in spark.sql(f"SELECT consumer_id, next_snapshot_id FROM {view}").collect()] == [
        ("job-1", 2), ("job-2", 3), ("other", 1)]
    out = paimon_ds.sql(spark, "CALL sys.clear_consumers(table => 'cs.t', includingConsumers => 'job-.*', "
                               "excludingConsumers => 'job-2')")
    assert [tuple(r) for r in out.collect()] == [(True,)]
    paimon_ds.sql(spark, "CALL sys.reset_consumer('cs.t', 'other')")  # no snapshot: delete
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {view}").collect()] == [("job-2", 3)]
    assert [tuple(r) for r in paimon_ds.system_table(spark, path, "$consumers").collect()] == [("job-2", 3)]
    paimon_ds.sql(spark, "CALL sys.clear_consumers('cs.t')")
    assert consumers(path) == {}
