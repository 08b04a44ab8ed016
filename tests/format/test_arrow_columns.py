"""Leaf rewrites of nested Arrow columns (paimon_ds.format.arrow_columns): plain integers back into Paimon's
TIMESTAMP / TIME, and leaf casts through structs, lists and maps, sliced input included."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from paimon_ds.format.arrow_columns import cast_leaves, empty_batch, holds_plain_ints, map_leaf_types, paimon_form
from paimon_ds.schema.types import parse_type

ROW_OF_TIMES = parse_type({"type": "ROW", "fields": [
    {"id": 0, "name": "ts", "type": {"type": "ARRAY", "element": "TIMESTAMP(3)"}},
    {"id": 1, "name": "t", "type": {"type": "MAP", "key": "INT", "value": "TIME(0)"}},
    {"id": 2, "name": "s", "type": "STRING"}]})
PLAIN = pa.struct([("ts", pa.list_(pa.int64())), ("t", pa.map_(pa.int32(), pa.int32())), ("s", pa.string())])


def test_paimon_form_turns_nested_plain_ints_into_timestamps_and_times():
    arr = pa.array([{"ts": [0, 1500], "t": [(1, 3_600_000)], "s": "a"}, None,
                    {"ts": None, "t": [(2, None)], "s": "b"}, {"ts": [-1], "t": [], "s": None}], PLAIN)
    assert holds_plain_ints(PLAIN, ROW_OF_TIMES) and not holds_plain_ints(pa.string(), parse_type("STRING"))
    got = paimon_form(arr.slice(1), ROW_OF_TIMES)  # a slice: its lists start past element 0
    assert got.type == pa.struct([("ts", pa.list_(pa.timestamp("ms"))), ("t", pa.map_(pa.int32(), pa.time32("ms"))),
                                  ("s", pa.string())])
    epoch = dt.datetime(1970, 1, 1)
    assert got.to_pylist() == [None, {"ts": None, "t": [(2, None)], "s": "b"},
                               {"ts": [epoch - dt.timedelta(milliseconds=1)], "t": [], "s": None}]


def test_paimon_form_leaves_other_columns_alone():
    arr = pa.array([1, 2], pa.int64())
    assert paimon_form(arr, parse_type("BIGINT")) is arr


def test_cast_leaves_through_sliced_nested_columns():
    t = pa.struct([("l", pa.list_(pa.time64("us"))), ("m", pa.map_(pa.string(), pa.time64("us")))])
    target = map_leaf_types(t, lambda leaf: pa.int32() if pa.types.is_time(leaf) else leaf)
    assert target == pa.struct([("l", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32()))])
    arr = pa.array([{"l": [dt.time(0, 0, 1)], "m": [("a", dt.time(0, 0, 2))]}, None,
                    {"l": [None, dt.time(1)], "m": []}], t)
    got = cast_leaves(arr.slice(1), target, lambda a, to: a.cast(pa.time32("ms")).cast(to))
    assert got.type == target
    assert got.to_pylist() == [None, {"l": [None, 3_600_000], "m": []}]
    chunked = pa.chunked_array([arr])
    assert cast_leaves(chunked, t, None) is chunked  # nothing to change: untouched


def test_empty_batch_counts_rows():
    batch = empty_batch(7)
    assert batch.num_rows == 7 and batch.num_columns == 0
