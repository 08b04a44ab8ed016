"""Ordered read-ahead (io/prefetch.py) and the Spark-free scan that decodes files through it: the order of a
sequential read, limits that start only the files they need, bounded read-ahead, errors where they belong."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from paimon_ds import Table, write_arrow
from paimon_ds.io.prefetch import read_ahead


def _unit(name: str, n: int, log: list[str], delay: float = 0.0):
    def open_unit():
        log.append(name)
        for i in range(n):
            if delay:
                time.sleep(delay)
            yield f"{name}{i}"
    return open_unit


def test_items_come_in_sequential_order_whatever_finishes_first():
    log: list[str] = []
    # the first unit is the slowest: the later ones finish first, yet come after it
    units = [(3, _unit("a", 3, log, delay=0.02)), (2, _unit("b", 2, log)), (4, _unit("c", 4, log)),
             (1, _unit("d", 1, log))]
    assert list(read_ahead(units, workers=3, depth=2)) == ["a0", "a1", "a2", "b0", "b1", "c0", "c1", "c2", "c3",
                                                           "d0"]
    assert sorted(log) == ["a", "b", "c", "d"]


def test_a_row_budget_starts_only_the_units_it_needs():
    log: list[str] = []
    units = [(5, _unit(f"u{i}", 5, log)) for i in range(6)]
    out = read_ahead(units, workers=4, depth=2, row_budget=7)
    assert [next(out) for _ in range(7)] == [f"u0{i}" for i in range(5)] + ["u10", "u11"]
    out.close()
    assert sorted(log) == ["u0", "u1"]  # 10 rows started cover the 7: u2.. never opened


def test_read_ahead_is_bounded_and_closing_stops_the_threads():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    out = read_ahead([(1, endless), (1, endless)], workers=2, depth=3)
    assert next(out) == 0
    time.sleep(0.2)
    # each unit holds at most `depth` items in its queue, plus one in hand: a bounded read-ahead
    assert len(produced) <= 2 * (3 + 2)
    out.close()
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


def test_an_error_is_raised_where_its_unit_comes():
    def broken():
        yield "x0"
        raise ValueError("damaged")

    log: list[str] = []
    out = read_ahead([(1, _unit("a", 2, log)), (1, broken), (1, _unit("c", 1, log))], workers=3, depth=1)
    assert [next(out), next(out), next(out)] == ["a0", "a1", "x0"]
    with pytest.raises(ValueError, match="damaged"):
        next(out)


@pytest.fixture
def many_files(tmp_path):
    """An append table of 6 files (one per commit), ids 0..599 in file order."""
    path = str(tmp_path / "t")
    for i in range(6):
        write_arrow(path, pa.table({"id": pa.array(range(i * 100, (i + 1) * 100), pa.int64()),
                                    "name": [f"n{j}" for j in range(i * 100, (i + 1) * 100)]}))
    return path


def test_a_parallel_scan_gives_the_rows_of_a_sequential_one(many_files):
    table = Table.load(many_files)
    sequential = [b for split in table.scan().plan() for b in table.new_read().read(split)]
    expected = pa.Table.from_batches(sequential)
    assert sorted(expected.column("id").to_pylist()) == list(range(600))
    assert table.scan().to_arrow().equals(expected)
    batches = list(table.scan(columns=["name"]).to_batches())
    assert pa.Table.from_batches(batches).column("name").to_pylist() == expected.column("name").to_pylist()


def test_a_limit_under_parallel_decoding_keeps_the_first_rows(many_files):
    table = Table.load(many_files)
    expected = table.scan().to_arrow().column("id").to_pylist()
    for limit in (1, 99, 100, 101, 350, 600, 1000):
        assert table.scan(limit=limit).to_arrow().column("id").to_pylist() == expected[:limit]
    # a filter before the limit: the first matching rows in read order
    kept = [i for i in expected if 150 <= i < 450]
    assert table.scan(filter="id >= 150 AND id < 450", limit=120).to_arrow().column("id").to_pylist() == kept[:120]
    assert table.scan(limit=250).count() == 250
