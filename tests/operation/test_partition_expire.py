"""Partition expiration after every commit (operation.partition_expire), as Paimon's PartitionExpire does it.

Partition values far in the past (2020) and far ahead (2099) make the expectations independent of the clock; the
update-time strategy uses a one-second expiration and short sleeps. Java Paimon 0.9 leaves the same partitions and
snapshots for the same commits (tests/interop/test_partition_expire_interop.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, write_arrow
from paimon_ds.index.manifest import IndexManifestFile
from paimon_ds.operation import after_commit, partition_expire
from paimon_ds.operation.partition_expire import expire_partitions
from paimon_ds.operation.scan import TableScan
from paimon_ds.options.registry import OptionError, validate
from paimon_ds.schema.change import SetOption, commit_changes
from paimon_ds.snapshot.manager import BATCH_COMMIT_IDENTIFIER

EVERY_COMMIT = {"partition.expiration-time": "1 d", "partition.expiration-check-interval": "0"}


def rows(**columns) -> pa.Table:
    return pa.table({k: pa.array(v, pa.int32() if k in ("id", "hr") else None) for k, v in columns.items()})


def partitions(path: str) -> list[str]:
    table = Table.load(path)
    scan = TableScan(table)
    return sorted({scan.partition_dir(e.partition) for e in scan.read_entries()})


def history(path: str) -> list[tuple[str, int]]:
    return [(s.commit_kind, s.delta_record_count) for s in Table.load(path).snapshots()]


def contents(path: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in Table.load(path).to_arrow().to_pylist())


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_values_time_drops_old_partitions_in_an_overwrite_snapshot_of_the_committer(tmp_path):
    path = str(tmp_path / "t")
    # Paimon's default formatters are lenient: 2020-1-2 is a date, 2020-13-01 is 2021-01-01; `abc` and the null
    # partition have no time and never expire
    write_arrow(path, rows(id=[1, 2, 3, 4, 5, 6, 7], dt=["2020-01-01", "2020-01-01", "2099-01-01", "abc", None,
                                                         "2020-1-2", "2020-13-01"]),
                partition_by="dt", options=EVERY_COMMIT)
    assert history(path) == [("APPEND", 7), ("OVERWRITE", -4)]
    append, drop = Table.load(path).snapshots()
    assert (drop.commit_user, drop.commit_identifier) == (append.commit_user, BATCH_COMMIT_IDENTIFIER)
    assert partitions(path) == ["dt=2099-01-01", "dt=__DEFAULT_PARTITION__", "dt=abc"]
    assert contents(path) == [(3, "2099-01-01"), (4, "abc"), (5, None)]
    # a commit that leaves nothing expired adds no snapshot of its own
    Table.load(path).append(rows(id=[8], dt=["2099-01-01"]))
    assert history(path)[2:] == [("APPEND", 1)]


def test_the_expired_partitions_index_files_go_with_them(tmp_path):
    # a dynamic-bucket primary-key table: each partition's hash index is in the index manifest
    path = str(tmp_path / "t")
    write_arrow(path, rows(id=[1, 2, 3], dt=["2020-01-01", "2099-01-01", "2099-01-01"]), primary_key="id,dt",
                partition_by="dt", options={**EVERY_COMMIT, "bucket": "-1"})
    table = Table.load(path)
    append, drop = table.snapshots()
    index = IndexManifestFile(table.io, table.root)
    scan = TableScan(table)
    assert sorted(scan.partition_dir(e.partition) for e in index.read(append.index_manifest)) == \
        ["dt=2020-01-01", "dt=2099-01-01"]
    assert [scan.partition_dir(e.partition) for e in index.read(drop.index_manifest)] == ["dt=2099-01-01"]
    assert contents(path) == [(2, "2099-01-01"), (3, "2099-01-01")]


def test_timestamp_pattern_and_formatter(tmp_path):
    patterned = str(tmp_path / "patterned")
    write_arrow(patterned, rows(id=[1, 2, 3], dt=["2020-01-01", "2099-01-01", "2020-01-01"], hr=[10, 3, 24]),
                partition_by="dt,hr",
                options={**EVERY_COMMIT, "partition.timestamp-pattern": "$dt $hr:00:00"})
    # Paimon's default formatter resolves leniently: `2020-01-01 24:00:00` is 2020-01-02's midnight
    assert partitions(patterned) == ["dt=2099-01-01/hr=3"]
    formatted = str(tmp_path / "formatted")
    write_arrow(formatted, rows(id=[1, 2, 3, 4], dt=["20200101", "20990101", "2020-01-01", "20200230"]),
                partition_by="dt", options={**EVERY_COMMIT, "partition.timestamp-formatter": "yyyyMMdd"})
    # with a formatter only its form parses; SMART resolution takes 2020-02-30 as 2020-02-29
    assert partitions(formatted) == ["dt=2020-01-01", "dt=20990101"]
    both = str(tmp_path / "both")
    write_arrow(both, rows(id=[1, 2], y=["2020", "2099"], md=["0101", "0101"]), partition_by="y,md",
                options={**EVERY_COMMIT, "partition.timestamp-pattern": "$y$md",
                         "partition.timestamp-formatter": "yyyyMMdd"})
    assert partitions(both) == ["y=2099/md=0101"]


def test_date_partitions_do_not_parse_their_values_but_expire_by_update_time(tmp_path):
    # Paimon reads a DATE partition value as its internal day number (18262 for 2020-01-01), which no formatter
    # parses as a date: values-time never expires it
    path = str(tmp_path / "t")
    old = pa.table({"id": pa.array([1], pa.int32()), "d": pa.array([dt.date(2020, 1, 1)])})
    write_arrow(path, old, partition_by="d", options=EVERY_COMMIT)
    assert history(path) == [("APPEND", 1)]
    commit_changes(path, [SetOption("partition.expiration-strategy", "update-time"),
                          SetOption("partition.expiration-time", "1 s")])
    time.sleep(1.1)
    Table.load(path).append(pa.table({"id": pa.array([2], pa.int32()), "d": pa.array([dt.date(2099, 1, 1)])}))
    assert history(path) == [("APPEND", 1), ("APPEND", 1), ("OVERWRITE", -1)]
    assert partitions(path) == ["d=47117"]  # Paimon names a DATE partition by its day number too


def test_update_time_drops_the_partitions_not_written_for_the_expiration_time(tmp_path):
    path = str(tmp_path / "t")
    options = {"partition.expiration-time": "1 s", "partition.expiration-check-interval": "0",
               "partition.expiration-strategy": "update-time"}
    write_arrow(path, rows(id=[1, 2], p=["a", "b"]), partition_by="p", options=options)
    time.sleep(1.1)
    Table.load(path).append(rows(id=[3], p=["b"]))  # b written again: only a is older than a second
    assert history(path) == [("APPEND", 2), ("APPEND", 1), ("OVERWRITE", -1)]
    assert contents(path) == [(2, "b"), (3, "b")]


def test_the_check_interval_is_kept_per_table_in_the_process(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, rows(id=[1, 2], dt=["2020-01-01", "2099-01-01"]), partition_by="dt",
                options={"partition.expiration-time": "1 d"})  # the default interval: 1 h
    assert partitions(path) == ["dt=2099-01-01"]  # the first commit of the process checks
    Table.load(path).append(rows(id=[3], dt=["2020-01-02"]))  # within the hour: no check
    assert partitions(path) == ["dt=2020-01-02", "dt=2099-01-01"]
    table = Table.load(path)
    later = dt.datetime.now() + dt.timedelta(minutes=61)
    assert expire_partitions(table, table.latest_snapshot(), now=later) == [{"dt": "2020-01-02"}]
    assert partitions(path) == ["dt=2099-01-01"]
    # end-input.check-partition-expire: a batch commit checks whatever the interval
    commit_changes(path, [SetOption("end-input.check-partition-expire", "true")])
    Table.load(path).append(rows(id=[4], dt=["2020-01-03"]))
    assert partitions(path) == ["dt=2099-01-01"]
    assert [k for k, _ in history(path)] == ["APPEND", "OVERWRITE", "APPEND", "OVERWRITE", "APPEND", "OVERWRITE"]


def test_max_num_and_batch_size_as_paimon_1x(tmp_path):
    path = str(tmp_path / "t")
    old = [f"2020-01-0{i}" for i in (5, 3, 1, 4, 2)]
    write_arrow(path, rows(id=list(range(6)), dt=old + ["2099-01-01"]), partition_by="dt",
                options={**EVERY_COMMIT, "partition.expiration-max-num": "3", "partition.expiration-batch-size": "2"})
    # the first three by value, two per commit
    assert history(path) == [("APPEND", 6), ("OVERWRITE", -2), ("OVERWRITE", -1)]
    assert partitions(path) == ["dt=2020-01-04", "dt=2020-01-05", "dt=2099-01-01"]
    Table.load(path).append(rows(id=[9], dt=["2099-01-01"]))
    assert history(path)[3:] == [("APPEND", 1), ("OVERWRITE", -2)]
    assert partitions(path) == ["dt=2099-01-01"]


def test_write_only_tables_and_unpartitioned_tables_do_not_expire(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, rows(id=[1], dt=["2020-01-01"]), partition_by="dt",
                options={**EVERY_COMMIT, "write-only": "true"})
    assert history(path) == [("APPEND", 1)]
    flat = str(tmp_path / "flat")
    write_arrow(flat, rows(id=[1], dt=["2020-01-01"]), options=EVERY_COMMIT)
    assert history(flat) == [("APPEND", 1)]


def test_the_drop_commit_runs_no_maintenance_of_its_own(tmp_path, monkeypatch):
    calls = []
    steps = [(name, lambda table, snapshot, step=step, name=name: (calls.append((name, snapshot.commit_kind)),
                                                                   step(table, snapshot)))
             for name, step in after_commit.STEPS]
    monkeypatch.setattr(after_commit, "STEPS", steps)
    path = str(tmp_path / "t")
    write_arrow(path, rows(id=[1, 2], dt=["2020-01-01", "2099-01-01"]), partition_by="dt", options=EVERY_COMMIT)
    assert history(path) == [("APPEND", 2), ("OVERWRITE", -1)]
    assert calls == [(name, "APPEND") for name, _ in after_commit.STEPS]  # each step once, for the APPEND only


def test_a_failed_expiration_leaves_the_commit_and_is_retried_by_the_next(tmp_path, monkeypatch, caplog):
    path = str(tmp_path / "t")
    real = partition_expire.partition_entries

    def broken(table):
        raise OSError("storage unavailable")
    monkeypatch.setattr(partition_expire, "partition_entries", broken)
    with caplog.at_level(logging.WARNING):
        write_arrow(path, rows(id=[1, 2], dt=["2020-01-01", "2099-01-01"]), partition_by="dt",
                    options={"partition.expiration-time": "1 d"})
    assert "partition expiration after snapshot 1" in caplog.text and "storage unavailable" in caplog.text
    assert history(path) == [("APPEND", 2)]
    monkeypatch.setattr(partition_expire, "partition_entries", real)
    Table.load(path).append(rows(id=[3], dt=["2099-01-01"]))  # no check was recorded: this commit checks
    assert partitions(path) == ["dt=2099-01-01"]


def test_options_it_cannot_honour_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(OptionError, match="'MMM' \\(a month's name\\) is not supported by paimon_ds"):
        validate({"partition.timestamp-formatter": "yyyy-MMM-dd"})
    with pytest.raises(OptionError, match="is not one of values-time, update-time"):
        validate({"partition.expiration-strategy": "custom"})
    with pytest.raises(OptionError, match="partition.expiration-max-num"):
        validate({"partition.expiration-max-num": "-1"})
    path = str(tmp_path / "t")
    write_arrow(path, rows(id=[1], dt=["2099-01-01"]), partition_by="dt")
    # a value stored by another writer (Java takes any DateTimeFormatter pattern): the write is refused
    table = Table.load(path)
    schema = table.table_schema
    table.schema_manager.create(dataclasses.replace(schema, id=schema.id + 1, options={
        **schema.options, "partition.expiration-time": "1 d", "partition.timestamp-formatter": "EEE yyyy"}))
    before = listing(Path(path))
    with pytest.raises(OptionError, match="invalid value 'EEE yyyy' for option 'partition.timestamp-formatter'"):
        Table.load(path).append(rows(id=[2], dt=["2099-01-01"]))
    assert listing(Path(path)) == before
