"""StreamScan without Spark: positions, units and the planning cache."""

from __future__ import annotations

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.operation.stream import StreamLimit, StreamPosition, StreamScan
from paimon_ds.procedures import create_tag

SCHEMA = pa.schema([("id", pa.int64())])


def commit(path: str, ids: list[int]) -> None:
    table = Table.for_write(path, SCHEMA, {})
    write = table.new_write()
    write.write_arrow(pa.table({"id": ids}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def test_positions_walk_the_units_and_committed_units_are_forgotten(tmp_path):
    path = str(tmp_path / "t")
    for i in range(4):
        commit(path, [i])
    scan = StreamScan(Table.load(path, {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}))
    start = scan.initial_position()
    assert start == StreamPosition(2, full=True)
    one = scan.latest_position(start, StreamLimit(max_files=1))
    assert one == StreamPosition(3)  # the full scan of snapshot 2 is one split (2 files)
    end = scan.latest_position(start)
    assert end == StreamPosition(5)
    read = Table.load(path).new_read()
    rows = [r["id"] for s in scan.splits_between(start, end) for b in read.read(s.split) for r in b.to_pylist()]
    assert sorted(rows[:2]) == [0, 1] and rows[2:] == [2, 3]
    assert set(scan._units) == {(2, True), (3, False), (4, False)}
    scan.forget_before(StreamPosition(4))
    assert set(scan._units) == {(4, False)}
    assert scan.latest_position(end) == end  # nothing new: the batch end stays where it is


def test_batch_only_starting_points_are_refused_in_streams(tmp_path):
    """Java 0.9's AbstractDataTableScan.createStartingScanner: a stream refuses incremental reads, a watermark
    and a tag as its start (checkArgument(!isStreaming, ...)); the batch reads of the same options work."""
    path = str(tmp_path / "t")
    for i in range(3):
        commit(path, [i])
    create_tag(path, "t1", 2)
    refused = {"incremental-between": ("1,3", "Cannot read incremental in streaming mode"),
               "scan.watermark": ("0", "Cannot scan from watermark in streaming mode"),
               "scan.tag-name": ("t1", "Cannot scan from tag in streaming mode")}
    for key, (value, message) in refused.items():
        table = Table.load(path, {key: value})
        try:
            StreamScan(table).check_streamable()
        except Exception as e:  # noqa: BLE001 - the message is the assertion
            assert message in str(e), (key, e)
        else:
            raise AssertionError(f"{key} was accepted in a stream")
    assert sorted(Table.load(path, {"scan.tag-name": "t1"}).scan().to_arrow()["id"].to_pylist()) == [0, 1]
    StreamScan(Table.load(path, {"scan.snapshot-id": "2"})).check_streamable()


def test_latest_mode_starts_with_the_latest_snapshots_own_changes(tmp_path):
    """Paimon's Spark source (PaimonMicroBatchStream.initOffset over ContinuousLatestStartingScanner's starting
    context (latest id, delta)) reads the latest snapshot's delta first."""
    path = str(tmp_path / "t")
    commit(path, [0])
    assert StreamScan(Table.load(path, {"scan.mode": "latest"})).initial_position() == StreamPosition(1)
    for i in (1, 2):
        commit(path, [i])
    scan = StreamScan(Table.load(path, {"scan.mode": "latest"}))
    start = scan.initial_position()
    assert start == StreamPosition(3)
    read = Table.load(path).new_read()
    end = scan.latest_position(start)
    assert [r["id"] for s in scan.splits_between(start, end) for b in read.read(s.split) for r in b.to_pylist()] == [2]


def test_read_limits_combine_and_min_rows_holds_a_small_batch(tmp_path):
    """Paimon's Spark source's rule (PaimonReadLimitGuard, 1.4.1): a split is admitted while what the batch took
    before it is under every max that is set; with min rows (and the delay not passed: hold_below_min_rows) a batch
    whose admitted rows, plus the first split the maxes refuse, are fewer is held back (its start returned)."""
    path = str(tmp_path / "t")
    sizes = (3, 3, 4, 6)  # snapshots 1..4, one split each
    for n, size in enumerate(sizes):
        commit(path, list(range(10 * n, 10 * n + size)))
    scan = StreamScan(Table.load(path, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}))
    p = StreamPosition

    def end(start: int, hold: bool = False, **limit: int) -> StreamPosition:
        return scan.latest_position(p(start), StreamLimit(**limit), hold_below_min_rows=hold)

    # each max alone; the last split admitted may pass maxRows (3 + 3 < 6 is not, so s3 waits; 4 < 6, so s4 joins)
    assert [end(1, max_rows=6), end(3, max_rows=6)] == [p(3), p(5)]
    assert [end(1, max_files=2), end(1, max_bytes=1)] == [p(3), p(2)]
    # composite: every max applies
    assert [end(1, max_rows=6, max_files=1), end(1, max_rows=100, max_files=3, max_bytes=10**9)] == [p(2), p(4)]
    # min rows: 16 rows in all, 6 in snapshot 4
    assert [end(1, True, min_rows=8), end(4, True, min_rows=8), end(4, False, min_rows=8)] == [p(5), p(4), p(5)]
    # with a max: the refused split's rows count towards min rows (3 admitted + 3 refused = 6)
    assert [end(1, True, max_rows=3, min_rows=5), end(1, True, max_rows=3, min_rows=7)] == [p(2), p(1)]
    assert end(1, False, max_rows=3, min_rows=7) == p(2)  # the delay passed: the batch goes as the maxes cut it
    assert end(5, True, min_rows=1) == p(5)  # nothing new
