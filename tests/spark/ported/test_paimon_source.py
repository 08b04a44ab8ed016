"""Apache Paimon 1.4.1's `PaimonSourceTest` (paimon-spark-ut/src/test/scala/org/apache/paimon/spark/), ported: its
statements, options and expected rows are the specification. Each case reads a table written as the suite's
`prepareTableAndGetLocation` writes it (`(a INT, b STRING)`, primary key or bucket key `a`, 2 buckets, parquet; snapshot
N adds rows 10N, 10N+1, 10N+2 through `df.write.format("paimon")`) with `spark.readStream.format("paimon")` into a
memory sink, as the Scala suite does. Assertions on `PaimonSourceOffset` (Paimon's own offset class) are replaced by
the rows and the number of non-empty micro-batches, which say the same thing."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest
from pyspark.errors import StreamingQueryException

from paimon_ds import Table
from paimon_ds.operation.stream import StreamPosition, StreamScan

from ._sql import sql
from ._stream import answer, location, rows_sorted, to_memory

NEW_40 = [(40, "v_40"), (41, "v_41"), (42, "v_42")]
NEW_50 = [(50, "v_50"), (51, "v_51"), (52, "v_52")]


class Prepared:
    """Paimon's TableSnapshotState: the table's path, its rows, the rows of its latest snapshot, and the number of
    splits a stream plans for each snapshot's changes."""

    def __init__(self, spark, wh, snapshots: int, has_pk: bool, name: str = "T") -> None:
        keys = "'primary-key'='a'," if has_pk else "'bucket-key'='a',"
        sql(spark, f"DROP TABLE IF EXISTS {name}")
        sql(spark, f"CREATE TABLE {name} (a INT, b STRING) TBLPROPERTIES ({keys} 'bucket'='2', "
                   "'file.format'='parquet')")
        self.location = location(spark, wh, name)
        merged: dict[int, str] = {}
        unmerged: list[tuple] = []
        self.latest_changes: list[tuple] = []
        for snapshot in range(1, snapshots + 1):
            data = [(i, f"v_{i}") for i in range(10 * snapshot, 10 * snapshot + 3)]
            for a, b in data:
                merged[a] = b
                unmerged.append((a, b))
            self.latest_changes = data
            # one task: Paimon's Spark writer shuffles rows by bucket (one writer, one file per bucket and commit), a
            # distribution a Python data source cannot ask Spark for; two tasks writing one bucket would leave more
            # sorted runs, and the compaction they trigger adds a COMPACT snapshot Paimon's suite does not expect
            (spark.createDataFrame(data, "a INT, b STRING").coalesce(1)
             .write.format("paimon").mode("append").save(self.location))
        self.snapshot_data = sorted(merged.items()) if has_pk else sorted(unmerged)


def stream(spark, path: str, checkpoint, trigger: dict | None = None, table: str | None = None, **options: str):
    reader = spark.readStream.format("paimon").options(**options)
    df = reader.table(table) if table else reader.load(path)
    return to_memory(df, checkpoint, trigger)


def insert(spark, rows: list[tuple], table: str = "T") -> None:
    spark.sql(f"INSERT INTO {table} VALUES " + ", ".join(f"({a}, '{b}')" for a, b in rows))


def non_empty_batches(query) -> int:
    return sum(1 for p in query.recentProgress if p.numInputRows != 0)


def test_equal_null_safe(spark, wh):
    """Paimon Source: EQUAL_NULL_SAFE (a batch read)."""
    Prepared(spark, wh, 0, has_pk=True)
    spark.sql("INSERT INTO T VALUES (1, CAST(null as string)), (2, CAST(null as string))")
    current = "SELECT * FROM T WHERE !(b <=> 'v_1')"
    assert answer(spark, current) == [(1, None), (2, None)]
    spark.sql("INSERT INTO T VALUES (3, 'v_1'), (4, CAST(null as string))")
    assert answer(spark, current) == [(1, None), (2, None), (4, None)]
    assert answer(spark, "SELECT * FROM T WHERE b <=> 'v_1'") == [(3, "v_1")]
    assert answer(spark, "SELECT * FROM T WHERE b <=> null") == [(1, None), (2, None), (4, None)]


# Paimon's cases that start queries on the table `Prepared(3, has_pk=True)` writes, then insert rows 40..42: per case,
# its queries, each (options, rows after the first processAllAvailable, rows after the insert), where "table" is the
# table's rows, "latest" the latest snapshot's changes, "+40" rows 40..42 added. The cases of one group share a table
# (so the suite stays fast); `table` in the options reads through `readStream.table("T")` instead of `load(path)`.
GROUPS = {
    "defaults": {
        "default scan mode": ({}, "table", "table+40"),
        "default scan mode with table api": ({"table": "T"}, "table", "table+40"),
        "default and from-snapshot scan mode with scan.snapshot-id (3)": (
            {"scan.snapshot-id": "3"}, "latest", "latest+40"),
        "default and from-snapshot scan mode with scan.snapshot-id (4)": ({"scan.snapshot-id": "4"}, "", "+40"),
        "default and from-timestamp scan mode with scan.timestamp-millis (before)": (
            {"scan.timestamp-millis": "before"}, "table", "table+40"),
        "default and from-timestamp scan mode with scan.timestamp-millis (after)": (
            {"scan.mode": "from-timestamp", "scan.timestamp-millis": "after"}, "", "+40"),
    },
    "modes": {
        "latest and latest-full scan mode (latest-full)": ({"scan.mode": "latest-full"}, "table", "table+40"),
        "latest and latest-full scan mode (latest)": ({"scan.mode": "latest"}, "latest", "latest+40"),
        "from-snapshot and from-snapshot-full scan mode (full)": (
            {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"}, "table", "table+40"),
        "from-snapshot and from-snapshot-full scan mode (from-snapshot)": (
            {"scan.mode": "from-snapshot", "scan.snapshot-id": "3"}, "latest", "latest+40"),
        # the 9 rows of the table's full scan in one batch (checked below)
        "default scan mode + maxRowsPerTrigger read limit": (
            {"read.stream.maxRowsPerTrigger": "10"}, "table", "table+40"),
    },
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_start_positions(spark, wh, tmp_path, group):
    before = str(int(time.time() * 1000))  # a timestamp before the table is created and written
    t = Prepared(spark, wh, 3, has_pk=True)
    time.sleep(0.002)
    after = str(int(time.time() * 1000))  # one after it is written
    rows = {"table": t.snapshot_data, "latest": t.latest_changes, "": []}
    queries = {}
    try:
        for i, (case, (options, _, _)) in enumerate(GROUPS[group].items()):
            opts = {k: {"before": before, "after": after}.get(v, v) for k, v in options.items() if k != "table"}
            queries[case] = stream(spark, t.location, tmp_path / f"ck{i}", table=options.get("table"), **opts)
            # one query at a time takes its first batch: starting Python workers side by side on a loaded machine
            # times them out ("Python worker failed to connect back")
            queries[case][0].processAllAvailable()
        for stage, add in ((1, []), (2, NEW_40)):
            got = {case: answer(spark, f"SELECT * FROM {mem}") for case, (_, mem) in queries.items()}
            expected = {case: rows_sorted(rows[spec[stage].removesuffix("+40")] + (add if spec[stage].endswith("+40")
                                                                                    else []))
                        for case, spec in GROUPS[group].items()}
            assert got == expected
            if stage == 1:
                if group == "modes":
                    assert non_empty_batches(queries["default scan mode + maxRowsPerTrigger read limit"][0]) == 1
                insert(spark, NEW_40)
                for query, _ in queries.values():
                    query.processAllAvailable()
    finally:
        for query, _ in queries.values():
            query.stop()


def test_available_now_and_processing_time(spark, wh, tmp_path):
    """Paimon Source: Trigger AvailableNow (scan.mode latest: the latest snapshot's changes, then the query stops and
    reads nothing committed later); Trigger AvailableNow + latest scan mode + maxFilesPerTrigger read limit (one
    split, one bucket's file, per micro-batch: the latest changes, in both buckets, take 2 batches); Trigger
    ProcessingTime 5s (scan.mode latest: the latest changes and two later commits; the Scala case sleeps 6 s,
    processAllAvailable waits for the same batches). One table for the three."""
    t = Prepared(spark, wh, 3, has_pk=True)
    once, once_mem = stream(spark, t.location, tmp_path / "ck1", trigger={"availableNow": True},
                            **{"scan.mode": "latest"})
    files, files_mem = stream(spark, t.location, tmp_path / "ck2", trigger={"availableNow": True},
                              **{"scan.mode": "latest", "read.stream.maxFilesPerTrigger": "1"})
    timed, timed_mem = stream(spark, t.location, tmp_path / "ck3", trigger={"processingTime": "5 seconds"},
                              **{"scan.mode": "latest"})
    try:
        for query in (once, files):
            assert query.awaitTermination(120)
        # Scala's insert follows start() at once, while its first trigger has planned from the latest snapshot:
        # wait for that first trigger here (Spark asks a source where it starts at its first trigger)
        deadline = time.monotonic() + 120
        while not timed.recentProgress and time.monotonic() < deadline:
            time.sleep(0.2)
        insert(spark, NEW_40)
        insert(spark, NEW_50)
        timed.processAllAvailable()
        assert answer(spark, f"SELECT * FROM {once_mem}") == t.latest_changes
        assert not once.isActive
        assert answer(spark, f"SELECT * FROM {files_mem}") == t.latest_changes
        assert non_empty_batches(files) == 2
        assert answer(spark, f"SELECT * FROM {timed_mem}") == rows_sorted(t.latest_changes + NEW_40 + NEW_50)
    finally:
        for query in (once, files, timed):
            query.stop()


def test_from_snapshot_max_bytes_per_trigger(spark, wh, tmp_path):
    """Paimon Source: Default Trigger + from-snapshot scan mode + maxBytesPerTrigger read limit (1 byte: one split per
    micro-batch), on the bucket-key table: as many batches as splits, then 2 more for the next commit's 2 buckets."""
    t = Prepared(spark, wh, 3, has_pk=False)
    splits = _splits_per_snapshot(t.location, 3)
    query, mem = stream(spark, t.location, tmp_path / "ck", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                                              "read.stream.maxBytesPerTrigger": "1"})
    try:
        query.processAllAvailable()
        assert non_empty_batches(query) == sum(splits)
        assert answer(spark, f"SELECT * FROM {mem}") == t.snapshot_data
        insert(spark, NEW_40)
        query.processAllAvailable()
        assert non_empty_batches(query) == sum(splits) + 2
        assert answer(spark, f"SELECT * FROM {mem}") == rows_sorted(t.snapshot_data + NEW_40)
    finally:
        query.stop()


def _splits_per_snapshot(path: str, snapshots: int) -> list[int]:
    """Paimon's snapshotToDataSplitNum (`streamScan.restore(id); streamScan.plan().splits().size()`): the splits a
    stream plans for each snapshot's changes."""
    scan = StreamScan(Table.load(path))
    return [len(scan.splits_between(StreamPosition(s), StreamPosition(s + 1))) for s in range(1, snapshots + 1)]


@pytest.mark.parametrize("lone", [{"read.stream.minRowsPerTrigger": "10"}, {"read.stream.maxTriggerDelayMs": "5000"}])
def test_min_rows_without_max_trigger_delay_refused(spark, wh, tmp_path, lone):
    """Paimon Source: default scan mode + minRowsPerTrigger and maxTriggerDelayMs read limits (its first statement:
    minRowsPerTrigger alone fails the query; PaimonMicroBatchStream refuses either option without the other)."""
    t = Prepared(spark, wh, 1, has_pk=True)
    with pytest.raises(StreamingQueryException, match=re.escape(
            "Can't provide only one of read.stream.minRowsPerTrigger and read.stream.maxTriggerDelayMs.")):
        query, _ = stream(spark, t.location, tmp_path / "ck", **lone)
        try:
            query.processAllAvailable()
        finally:
            query.stop()


def stamp(progress_timestamp: str) -> float:
    """A streaming progress report's trigger time as epoch seconds."""
    return datetime.strptime(progress_timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def test_default_min_rows_and_max_trigger_delay(spark, wh, tmp_path):
    """Paimon Source: default scan mode + minRowsPerTrigger and maxTriggerDelayMs read limits (5 rows): the table's 9
    rows in one batch (a query's first batch never waits); 3 new rows wait; once the delay passed since that batch
    was planned, they are read. Paimon's case sets 5000 ms; 10 s here, because the delay runs from the first batch's
    planning and that batch alone takes up to 5 s on a loaded machine (a Python worker starting): the wait the case
    needs is the rest of the delay, not all of it."""
    delay = 10.0
    t = Prepared(spark, wh, 3, has_pk=True)
    query, mem = stream(spark, t.location, tmp_path / "ck", **{"read.stream.minRowsPerTrigger": "5",
                                                              "read.stream.maxTriggerDelayMs": str(int(delay * 1000))})
    try:
        query.processAllAvailable()
        assert non_empty_batches(query) == 1
        assert answer(spark, f"SELECT * FROM {mem}") == t.snapshot_data
        # the first trigger began here (wall clock); its latestOffset, which starts the delay, ran after it
        first = query.recentProgress[0]
        planned = stamp(first["timestamp"])
        insert(spark, NEW_40)
        query.processAllAvailable()
        if non_empty_batches(query) == 1:  # held: fewer than 5 rows, and the delay has not passed
            assert answer(spark, f"SELECT * FROM {mem}") == t.snapshot_data
            time.sleep(max(0.0, planned + first["durationMs"]["latestOffset"] / 1000 + delay + 0.5 - time.time()))
            query.processAllAvailable()
        # read, and only once the delay had passed since the first batch was planned (on a machine so loaded that
        # the INSERT outlasts the delay, the rows are read at once: the timing below still has to hold)
        assert non_empty_batches(query) == 2
        second = [p for p in query.recentProgress if p["numInputRows"] > 0][1]
        released = stamp(second["timestamp"]) + second["durationMs"]["latestOffset"] / 1000
        assert released >= planned + delay - 0.05
        assert answer(spark, f"SELECT * FROM {mem}") == rows_sorted(t.snapshot_data + NEW_40)
    finally:
        query.stop()


def test_from_snapshot_max_rows_min_rows_and_max_trigger_delay(spark, wh, tmp_path):
    """Paimon Source: from-snapshot scan mode + maxRowsPerTrigger (6), minRowsPerTrigger (4) and maxTriggerDelayMs,
    on the bucket-key table: the first batch (3 rows) never waits; 3 more rows wait; then 10 more (4 in bucket 0, 6
    in bucket 1) make two batches: 3 + 4 rows (the bucket-0 split is admitted after 3 < 6 rows), then 6. Paimon's
    case sets the delay to 5000 ms and never waits for it; 60 s here, so that a loaded machine cannot pass it between
    two statements."""
    t = Prepared(spark, wh, 0, has_pk=False)
    query, mem = stream(spark, t.location, tmp_path / "ck", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxRowsPerTrigger": "6",
        "read.stream.minRowsPerTrigger": "4", "read.stream.maxTriggerDelayMs": "60000"})
    try:
        spark.sql("INSERT INTO T VALUES (10, 'v_10'), (11, 'v_11'), (12, 'v_12')")
        query.processAllAvailable()
        assert non_empty_batches(query) == 1
        spark.sql("INSERT INTO T VALUES (20, 'v_20'), (21, 'v_21'), (22, 'v_22')")
        query.processAllAvailable()
        assert non_empty_batches(query) == 1
        assert query.lastProgress["numInputRows"] == 3
        spark.sql("INSERT INTO T VALUES (30, 'v_30'), (31, 'v_31'), (32, 'v_32'), (33, 'v_33'), (34, 'v_34'), "
                  "(35, 'v_35'), (36, 'v_36'), (37, 'v_37'), (38, 'v_38'), (39, 'v_39')")
        query.processAllAvailable()
        assert non_empty_batches(query) == 3
        assert sum(p["numInputRows"] for p in query.recentProgress) == 16
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [3, 7, 6]
        assert answer(spark, f"SELECT * FROM {mem}") == rows_sorted(
            [(a, f"v_{a}") for a in [10, 11, 12, 20, 21, 22, *range(30, 40)]])
    finally:
        query.stop()


def test_with_error_options(spark, wh, tmp_path):
    """Paimon Source: with error options: scan.snapshot-id together with scan.timestamp-millis is refused."""
    t = Prepared(spark, wh, 3, has_pk=True)
    # Paimon's SchemaValidation: with both keys the mode is from-timestamp, where scan.snapshot-id must be null
    with pytest.raises(Exception, match=re.escape("[scan.snapshot-id] must be null when you set "
                                                  "[scan.timestamp-millis,scan.timestamp]")):
        query, _ = stream(spark, t.location, tmp_path / "ck", trigger={"processingTime": "5 seconds"},
                          **{"scan.snapshot-id": "3", "scan.timestamp-millis": str(int(time.time() * 1000))})
        try:
            query.processAllAvailable()
        finally:
            query.stop()


def test_incremental_scan_mode_refused_in_streaming(spark, wh, tmp_path):
    """Paimon Source: not supports compacted-full scan mode in streaming mode (scan.mode incremental)."""
    t = Prepared(spark, wh, 3, has_pk=True)
    with pytest.raises(Exception, match="Cannot read incremental in streaming mode"):
        query, _ = stream(spark, t.location, tmp_path / "ck", **{"scan.mode": "incremental",
                                                                "incremental-between": "3,5"})
        try:
            query.processAllAvailable()
        finally:
            query.stop()


def test_source_and_sink(spark, wh, tmp_path):
    """Paimon Source and Sink: T1 (from scan.snapshot-id 3) streamed into T2; a restart from the checkpoint ignores
    scan.snapshot-id and continues."""
    source = Prepared(spark, wh, 3, has_pk=True, name="T1")
    target = Prepared(spark, wh, 0, has_pk=False, name="T2")
    checkpoint = str(tmp_path / "ck")

    def start():
        return (spark.readStream.format("paimon").option("scan.snapshot-id", "3").load(source.location)
                .writeStream.format("paimon").option("checkpointLocation", checkpoint).start(target.location))

    expected = list(source.latest_changes)
    for new_rows in (NEW_40, NEW_50):  # the query stopped and started again from its checkpoint
        query = start()
        try:
            query.processAllAvailable()
            assert answer(spark, "SELECT * FROM T2") == rows_sorted(expected)
            insert(spark, new_rows, "T1")
            query.processAllAvailable()
            expected += new_rows
            assert answer(spark, "SELECT * FROM T2") == rows_sorted(expected)
        finally:
            query.stop()
