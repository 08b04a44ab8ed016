"""Consumers without Spark (paimon_ds.store.consumer): the file Paimon keeps per streaming reader, what expiry keeps for
it, its expiry after a commit, streaming scans that start at it and record into it, `$consumers`, the procedures
and the command line."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, procedures
from paimon_ds.cli import main as cli
from paimon_ds.operation import after_commit
from paimon_ds.operation.maintenance import expire_snapshots
from paimon_ds.operation.stream import CONSUMER_REFRESH_SECONDS, StreamLimit, StreamPosition, StreamScan
from paimon_ds.options.registry import OptionError, validate
from paimon_ds.readers.system_tables import system_table
from paimon_ds.snapshot.manager import SnapshotNotFound
from paimon_ds.store.consumer import Consumer, ConsumerError, ConsumerManager, expire_consumers, protected_from

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def commit(path: str, ids: list[int], options: dict[str, str] | None = None) -> int:
    """One APPEND commit of rows (id, 'a' if even else 'b'); its snapshot id."""
    table = Table.for_write(path, SCHEMA, {"partition": "p", **(options or {})})
    write = table.new_write()
    write.write_arrow(pa.table({"id": ids, "p": ["a" if i % 2 == 0 else "b" for i in ids]}, schema=SCHEMA))
    snapshot = table.new_commit().commit(write.prepare_commit())
    assert snapshot is not None
    return snapshot.id


def table_with(tmp_path: Path, commits: int, options: dict[str, str] | None = None) -> str:
    path = str(tmp_path / "t")
    for c in range(commits):
        commit(path, [2 * c, 2 * c + 1], options)  # a file in each partition: two splits per commit
    return path


def consumer_files(path: str) -> dict[str, str]:
    directory = Path(path) / "consumer"
    return {f.name: f.read_text() for f in sorted(directory.iterdir())} if directory.exists() else {}


def age(path: str, consumer_id: str, seconds: float) -> None:
    """Make a consumer file look last written ``seconds`` ago."""
    f = Path(path) / "consumer" / f"consumer-{consumer_id}"
    then = time.time() - seconds
    os.utime(f, (then, then))


# ------------------------------------------------------------------ the file
def test_the_file_is_what_java_writes_and_replaced_whole(tmp_path):
    path = table_with(tmp_path, 1)
    consumers = ConsumerManager.of(Table.load(path).store)
    assert consumers.consumer("job-1") is None and consumers.consumers() == {} and consumers.min_next_snapshot() is None
    consumers.reset("job-1", 3)
    consumers.reset("job-0", 7)
    consumers.reset("job-1", 5)  # replaced: no temporary file is left, none is ever named consumer-*
    # Jackson's default pretty printer, as Java's Consumer.toJson (checked against Java in the interop test)
    assert consumer_files(path) == {"consumer-job-0": '{\n  "nextSnapshot" : 7\n}',
                                    "consumer-job-1": '{\n  "nextSnapshot" : 5\n}'}
    assert consumers.ids() == ["job-0", "job-1"]
    assert consumers.consumers() == {"job-0": 7, "job-1": 5} and consumers.min_next_snapshot() == 5
    # Java ignores unknown fields, and so do we; a hidden file (a write in flight) is no consumer
    (Path(path) / "consumer" / "consumer-flink").write_text('{"nextSnapshot": 4, "extra": "x"}')
    (Path(path) / "consumer" / ".consumer-job-9.0123456789abcdef0123456789abcdef.tmp").write_text("{")
    assert consumers.consumers() == {"flink": 4, "job-0": 7, "job-1": 5} and protected_from(Table.load(path).store) == 4
    consumers.delete("flink")
    consumers.delete("never-was")
    assert consumers.consumers() == {"job-0": 7, "job-1": 5}
    assert Consumer.from_json('{"nextSnapshot":12}') == Consumer(12)


def test_bad_ids_and_files_are_refused(tmp_path, monkeypatch):
    path = table_with(tmp_path, 1)
    consumers = ConsumerManager.of(Table.load(path).store)
    for bad in ("", "a/b"):
        with pytest.raises(ConsumerError):
            consumers.reset(bad, 1)
    (Path(path) / "consumer").mkdir()
    (Path(path) / "consumer" / "consumer-broken").write_text('{"nextSnapshot": ')  # as if Java were writing it
    monkeypatch.setattr("paimon_ds.store.consumer._READ_RETRY_SECONDS", 0.0)
    with pytest.raises(ConsumerError, match="consumer file .*consumer-broken cannot be read"):
        consumers.consumer("broken")
    with pytest.raises(OptionError, match="consumer id cannot be empty string"):
        validate({"consumer-id": ""})
    with pytest.raises(OptionError, match="consumer.mode"):
        validate({"consumer.mode": "at-most-once"})
    validate({"consumer-id": "a", "consumer.mode": "AT-LEAST-ONCE", "consumer.ignore-progress": "true",
              "consumer.expiration-time": "1 d"})


def test_clear_takes_whole_id_regular_expressions(tmp_path):
    path = table_with(tmp_path, 1)
    consumers = ConsumerManager.of(Table.load(path).store)

    def reset_all() -> None:
        for consumer_id in ("myid", "myid1", "myid12", "other"):
            consumers.reset(consumer_id, 1)

    reset_all()
    # Paimon 1.x's clearConsumers: Pattern.matcher(id).matches(), the whole id
    assert consumers.clear("my") == [] and consumers.clear("myid.*", "myid1.*") == ["myid"]
    assert consumers.ids() == ["myid1", "myid12", "other"]
    assert consumers.clear(None, "other") == ["myid1", "myid12"]
    assert consumers.clear("") == ["other"] and consumers.ids() == []
    reset_all()
    with pytest.raises(ConsumerError, match="is not a regular expression"):
        consumers.clear("(")
    assert consumers.ids() == ["myid", "myid1", "myid12", "other"]


# ------------------------------------------------------------------ expiry keeps what consumers need
def test_expire_snapshots_keeps_every_snapshot_from_the_slowest_consumer_on(tmp_path):
    path = table_with(tmp_path, 8)
    table = Table.load(path)
    consumers = ConsumerManager.of(table.store)
    consumers.reset("fast", 7)
    consumers.reset("slow", 4)
    # retain_max 1 would leave snapshot 8 alone: the slow consumer still reads 4 and on
    assert expire_snapshots(table, retain_min=1, retain_max=1).expired == [1, 2, 3]
    assert table.snapshot_manager.list_ids() == [4, 5, 6, 7, 8] and table.snapshot_manager.earliest_id() == 4
    assert Table.load(path, {"scan.snapshot-id": "4"}).to_arrow().num_rows == 8
    # a consumer at the snapshot after the latest protects nothing yet; time retention still applies
    consumers.delete("slow")
    consumers.reset("fast", 9)
    assert expire_snapshots(table, retain_min=2, time_retained_ms=3_600_000).expired == []
    assert expire_snapshots(table, retain_min=2, time_retained_ms=0).expired == [4, 5, 6]
    consumers.reset("fast", 1)  # behind the earliest: nothing more may expire
    assert expire_snapshots(table, retain_min=1, retain_max=1).expired == []
    assert table.snapshot_manager.list_ids() == [7, 8]


def test_stale_consumers_expire_first_after_each_commit(tmp_path):
    assert after_commit.STEPS[0][0] == "consumer expiry"  # before snapshot expiry, as TableCommitImpl.expire
    path = table_with(tmp_path, 3)
    consumers = ConsumerManager.of(Table.load(path).store)
    for consumer_id in ("gone", "alive"):
        consumers.reset(consumer_id, 2)
    age(path, "gone", 7200)
    age(path, "alive", 1800)
    commit(path, [100])  # no consumer.expiration-time: consumers never expire
    assert consumers.ids() == ["alive", "gone"]
    commit(path, [101], {"consumer.expiration-time": "1 h"})  # as a write option
    assert consumers.ids() == ["alive"]
    # as a table option, checked at every commit
    procedures.reset_consumer(path, "gone", 2)
    age(path, "gone", 120)
    table = Table.load(path, {"consumer.expiration-time": "1 min"})
    assert expire_consumers(table.store) == ["alive", "gone"] and consumers.ids() == []


# ------------------------------------------------------------------ streaming scans
def test_a_stream_starts_at_its_consumer_unless_told_to_ignore_it(tmp_path):
    path = table_with(tmp_path, 5)
    with_id = {"consumer-id": "job"}
    assert StreamScan(Table.load(path, with_id)).initial_position() == StreamPosition(5, full=True)  # no record yet
    procedures.reset_consumer(path, "job", 3)
    assert StreamScan(Table.load(path, with_id)).initial_position() == StreamPosition(3)
    assert StreamScan(Table.load(path, {**with_id, "scan.mode": "latest"})).initial_position() == StreamPosition(3)
    ignoring = {**with_id, "consumer.ignore-progress": "true"}
    assert StreamScan(Table.load(path, ignoring)).initial_position() == StreamPosition(5, full=True)
    assert StreamScan(Table.load(path)).initial_position() == StreamPosition(5, full=True)  # no consumer-id
    expire_snapshots(Table.load(path), retain_min=1, retain_max=1)  # keeps 3, 4, 5 for the consumer
    ConsumerManager.of(Table.load(path).store).reset("job", 1)  # behind the earliest: from the earliest
    assert StreamScan(Table.load(path, with_id)).initial_position() == StreamPosition(3)


def test_progress_is_the_snapshot_whose_delta_comes_next(tmp_path, monkeypatch):
    path = table_with(tmp_path, 3)
    scan = StreamScan(Table.load(path, {"consumer-id": "job"}))
    consumers = ConsumerManager.of(Table.load(path).store)
    scan.record_progress(StreamPosition(3, full=True))  # the starting full scan is no delta: nothing recorded
    scan.record_progress(StreamPosition(3, full=True, index=1))
    assert consumers.consumers() == {}
    scan.record_progress(StreamPosition(4))  # snapshots up to 3 consumed
    assert consumers.consumers() == {"job": 4}
    scan.record_progress(StreamPosition(2, index=1))  # inside snapshot 2: it is read again on resume
    assert consumers.consumers() == {"job": 2}
    # an unchanged record is rewritten only every CONSUMER_REFRESH_SECONDS (it keeps the file fresh)
    age(path, "job", 600)
    scan.record_progress(StreamPosition(2))
    written = (Path(path) / "consumer" / "consumer-job").stat().st_mtime
    assert written < time.time() - 500
    clock = time.monotonic() + CONSUMER_REFRESH_SECONDS
    monkeypatch.setattr("paimon_ds.operation.stream.time.monotonic", lambda: clock)
    scan.record_progress(StreamPosition(2))
    assert (Path(path) / "consumer" / "consumer-job").stat().st_mtime > time.time() - 60
    # without consumer-id, nothing is recorded
    StreamScan(Table.load(path)).record_progress(StreamPosition(3))
    assert consumers.consumers() == {"job": 2}


def test_exactly_once_batches_take_whole_snapshots(tmp_path):
    path = table_with(tmp_path, 4)  # two splits (partitions a, b) per snapshot
    one_file = StreamLimit(max_files=1)

    def batch_ends(options: dict[str, str]) -> list[StreamPosition]:
        scan = StreamScan(Table.load(path, {"scan.mode": "from-snapshot", "scan.snapshot-id": "2", **options}))
        ends, pos = [], scan.initial_position()
        while True:
            end = scan.latest_position(pos, one_file)
            if end == pos:
                return ends
            ends.append(end)
            pos = end

    assert batch_ends({}) == [StreamPosition(2, index=1), StreamPosition(3), StreamPosition(3, index=1),
                              StreamPosition(4), StreamPosition(4, index=1), StreamPosition(5)]
    assert batch_ends({"consumer-id": "c", "consumer.mode": "at-least-once"}) == batch_ends({})
    # exactly-once (the default mode): a batch ends on a snapshot boundary, taking at least one whole snapshot
    assert batch_ends({"consumer-id": "c"}) == [StreamPosition(3), StreamPosition(4), StreamPosition(5)]
    many = StreamScan(Table.load(path, {"consumer-id": "c", "scan.mode": "from-snapshot", "scan.snapshot-id": "1"}))
    # whole snapshots of 2 splits while fewer than 5 splits are taken (Paimon's guard: the last may pass the max)
    assert many.latest_position(StreamPosition(1), StreamLimit(max_files=5)) == StreamPosition(4)
    # from inside a snapshot (a checkpoint written without the consumer), to its end
    assert many.latest_position(StreamPosition(2, index=1), one_file) == StreamPosition(3)


# ------------------------------------------------------------------ $consumers, procedures, command line
def test_consumers_system_table_and_procedures(tmp_path):
    path = table_with(tmp_path, 3)
    empty = system_table(Table.load(path).store, "$consumers")
    assert empty.num_rows == 0 and empty.schema == pa.schema([pa.field("consumer_id", pa.string(), False),
                                                              pa.field("next_snapshot_id", pa.int64(), False)])
    procedures.reset_consumer(path, "b", 3)
    procedures.reset_consumer(path, "a", 1)
    assert system_table(Table.load(path).store, "consumers").to_pylist() == [
        {"consumer_id": "a", "next_snapshot_id": 1}, {"consumer_id": "b", "next_snapshot_id": 3}]
    assert procedures.list_consumers(path) == {"a": 1, "b": 3}
    with pytest.raises(SnapshotNotFound):  # Paimon 1.x: the snapshot must exist
        procedures.reset_consumer(path, "a", 4)
    procedures.reset_consumer(path, "a")  # no snapshot: delete
    assert procedures.list_consumers(path) == {"b": 3}
    assert procedures.clear_consumers(path) == ["b"] and procedures.list_consumers(path) == {}
    # a branch has its own consumers (Paimon: branch/branch-<name>/consumer)
    procedures.create_tag(path, "t2", 2)
    procedures.create_branch(path, "dev", "t2")
    procedures.reset_consumer(Table.load(path, {"branch": "dev"}), "on-dev", 2)
    assert procedures.list_consumers(path) == {}
    assert consumer_files(str(Path(path) / "branch" / "branch-dev")) == {
        "consumer-on-dev": '{\n  "nextSnapshot" : 2\n}'}


def test_command_line(tmp_path, capsys):
    path = table_with(tmp_path, 3)

    def run(*args: str) -> dict:
        assert cli([*args, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    assert run("consumers", path) == {"consumers": []}
    assert run("reset-consumer", path, "job-1", "--next-snapshot", "2") == {"consumer_id": "job-1",
                                                                          "next_snapshot_id": 2}
    run("reset-consumer", path, "job-2", "--next-snapshot", "3")
    run("reset-consumer", path, "other", "--next-snapshot", "1")
    assert run("consumers", path) == {"consumers": [{"consumer_id": "job-1", "next_snapshot_id": 2},
                                                    {"consumer_id": "job-2", "next_snapshot_id": 3},
                                                    {"consumer_id": "other", "next_snapshot_id": 1}]}
    assert cli(["consumers", path, "--plain"]) == 0
    assert capsys.readouterr().out == "job-1\t2\njob-2\t3\nother\t1\n"
    assert run("clear-consumers", path, "--including", "job-.*", "--excluding", "job-2") == {
        "cleared_consumers": ["job-1"]}
    assert run("reset-consumer", path, "other") == {"consumer_id": "other", "next_snapshot_id": None}
    assert procedures.list_consumers(path) == {"job-2": 3}
    assert cli(["reset-consumer", path, "x", "--next-snapshot", "9"]) == 3  # not found
    assert "snapshot 9" in capsys.readouterr().err
    assert cli(["clear-consumers", path, "--including", "("]) == 2  # bad input
    assert "is not a regular expression" in capsys.readouterr().err
