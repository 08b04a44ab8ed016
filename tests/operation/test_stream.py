"""StreamScan without Spark: positions, units and the planning cache."""

from __future__ import annotations

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.operation.stream import StreamLimit, StreamPosition, StreamScan

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
