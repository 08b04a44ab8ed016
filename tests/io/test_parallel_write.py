"""Parallel encoding in the Spark-free append write: a large row group split into whole files encoded at once,
(partition, bucket) writers closed in parallel, stats computed beside encoding; the files are the ones a
sequential write makes, in the rows' order, with their own stats, and a failure leaves nothing."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import paimon_ds.io.data_files as data_files
import paimon_ds.operation.batch_write as write_module
from paimon_ds import Table, write_arrow

ROWS = 30_000


def _rows(n: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{i % 97}" for i in range(n)],
                     "p": ["a" if i % 3 else "b" for i in range(n)]})


def test_a_large_row_group_is_written_as_files_encoded_in_parallel(tmp_path, monkeypatch):
    monkeypatch.setattr(data_files, "PARALLEL_FILE_BYTES", 1000)
    monkeypatch.setattr(data_files, "CONCURRENT_OBSERVE_ROWS", 1)
    monkeypatch.setattr(write_module, "CLOSE_WORKERS", 3)
    path = str(tmp_path / "t")
    data = _rows()
    write_arrow(path, data.drop_columns(["p"]))
    table = Table.load(path)
    assert table.inspect.files().num_rows == 3
    # the files, in the commit's order, hold consecutive ids: the read gives the rows in the order written
    assert table.scan().to_arrow().column("id").to_pylist() == list(range(ROWS))
    [split] = table.scan().plan()
    assert [f.row_count for f in split.files] == [10_000, 10_000, 10_000]
    stats = [(f.value_stats.min_values, f.value_stats.max_values) for f in split.files]
    assert len(set(stats)) == 3  # each file has its own stats
    assert [f.file_name for f in split.files] == sorted(f.file_name for f in split.files)
    # a filter on id prunes to the one file holding it
    assert len(table.scan(filter="id >= 25000").plan()[0].files) == 1


def test_small_writes_keep_one_file(tmp_path, monkeypatch):
    monkeypatch.setattr(write_module, "CLOSE_WORKERS", 3)
    path = str(tmp_path / "t")
    write_arrow(path, _rows().drop_columns(["p"]))
    assert Table.load(path).inspect.files().num_rows == 1


def test_partitions_close_in_parallel_with_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(write_module, "CLOSE_WORKERS", 2)
    path = str(tmp_path / "t")
    data = _rows()
    write_arrow(path, data, partition_by="p")
    table = Table.load(path)
    assert table.inspect.files().num_rows == 2
    out = table.scan().to_arrow().sort_by("id")
    assert out.column("id").to_pylist() == list(range(ROWS))
    assert out.column("p").to_pylist() == data.column("p").to_pylist()
    names = [f.file_name for s in table.scan().plan() for f in s.files]
    assert len(set(names)) == 2  # one namer shared by the threads: no name twice


def test_a_failing_parallel_encode_leaves_no_file_and_no_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(data_files, "PARALLEL_FILE_BYTES", 1000)
    monkeypatch.setattr(write_module, "CLOSE_WORKERS", 3)
    path = str(tmp_path / "t")
    write_arrow(path, _rows(10).drop_columns(["p"]))
    calls = []
    original = data_files.DataFileSink.write

    def failing(self, data):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        original(self, data)

    monkeypatch.setattr(data_files.DataFileSink, "write", failing)
    with pytest.raises(OSError, match="disk full"):
        write_arrow(path, _rows().drop_columns(["p"]))
    table = Table.load(path)
    assert table.version() == 1
    data_dir = os.path.join(path, "bucket-0")
    assert len([f for f in os.listdir(data_dir) if f.startswith("data-")]) == 1
