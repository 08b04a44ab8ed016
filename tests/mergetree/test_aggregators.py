"""Every aggregate function of Paimon's aggregation engine (paimon_ds/mergetree/aggregators.py), without Spark.

Three levels: each function's null and retraction rules with values worked out from Paimon's Java classes
(`aggregate/Field*Agg.java`, named per test); the vectorised fold of many keys against the record-by-record
definition (a transcription of Java's `agg` / `aggReversed` / `retract`) on random data with every operation; and
the aggregation engine's options (remove-record-on-delete, ignore-retract, sequence fields, refusals).
"""

from __future__ import annotations

import decimal
import math
from datetime import date, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import OptionError
from paimon_ds.mergetree.aggregators import AGG, RETRACT, REV, SKIP, create_aggregator
from paimon_ds.mergetree.kv import DELETE, INSERT, KIND, UPDATE_AFTER, UPDATE_BEFORE
from paimon_ds.mergetree.merge import merge_engine
from paimon_ds.options.registry import Options
from paimon_ds.schema.manager import TableSchema
from paimon_ds.schema.types import DataField, FieldIdAllocator, from_arrow_type

OPS = {"+": AGG, "<": REV, "-": RETRACT, ".": SKIP}


def field(name: str, t: pa.DataType) -> DataField:
    return DataField(1, name, from_arrow_type(t, True, FieldIdAllocator(2)))


def fold(function: str, t: pa.DataType, values: list, ops: str = "", starts: list[int] | None = None,
         **options: str) -> list:
    """The function over ``values`` (one group unless ``starts``), ops per row as '+' agg, '<' older row
    (aggReversed), '-' retract, '.' skip; default all '+'."""
    opts = Options({f"fields.c.{k.replace('_', '-')}": v for k, v in options.items()})
    agg = create_aggregator(function, field("c", t), opts)
    op = np.array([OPS[c] for c in (ops or "+" * len(values))], np.int8)
    return agg.fold(pa.array(values, t), op, np.array(starts or [0], np.int64)).to_pylist()


def one(function: str, t: pa.DataType, values: list, ops: str = "", **options: str) -> Any:
    [out] = fold(function, t, values, ops, **options)
    return out


D = decimal.Decimal


# ------------------------------------------------------------------------------ numeric functions

def test_sum_nulls_and_retraction():
    """FieldSumAgg: null + v = v; retract(null, v) = -v; retract(acc, null) = acc."""
    assert one("sum", pa.int64(), [5, None, 3], "++-") == 2
    assert one("sum", pa.int64(), [5], "-") == -5
    assert one("sum", pa.int64(), [None, None], "+-") is None
    assert one("sum", pa.int32(), [1, 2, 3], "+<+") == 6  # an older row adds too
    assert one("sum", pa.decimal128(5, 2), [D("1.25"), D("2.50"), D("0.05")], "++-") == D("3.70")
    assert one("sum", pa.float64(), [0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3  # added in order, as Java does


def test_sum_wraps_around_as_java_0_9():
    """Paimon 0.9 adds in the column's width: (byte) (a + b) (master throws on overflow)."""
    assert one("sum", pa.int8(), [100, 100]) == -56
    assert one("sum", pa.int32(), [2**31 - 1, 1]) == -2**31
    assert one("sum", pa.int64(), [2**63 - 1, 1]) == -2**63
    assert one("sum", pa.int8(), [-128], "-") == -128  # -(-128) in a byte


def test_float_sum_is_float32_arithmetic_in_order():
    values = [1e8, 1.0, -1e8, 0.25, 3.3]
    expected = np.float32(values[0])
    for v in values[1:]:
        expected = np.float32(expected + np.float32(v))
    assert one("sum", pa.float32(), values) == float(expected)


def test_product_and_its_retraction_by_division():
    """FieldProductAgg: retract divides (Java's integer division truncates toward zero); null keeps the
    accumulator; retract(null, v) = null."""
    assert one("product", pa.int64(), [2, 3, None, 4]) == 24
    assert one("product", pa.int64(), [7, 2], "+-") == 3
    assert one("product", pa.int64(), [-7, 2], "+-") == -3
    assert one("product", pa.int32(), [5], "-") is None
    assert one("product", pa.int32(), [6, 4, 2], "+-+") == 2  # (6 / 4) * 2 in order
    assert one("product", pa.float64(), [3.0, 2.0], "+-") == 1.5
    with pytest.raises(ArithmeticError, match="/ by zero"):
        one("product", pa.int32(), [6, 0], "+-")


def test_decimal_product_rounds_half_up_to_the_scale_after_each_step():
    """Decimal.fromBigDecimal(multiply, p, s): HALF_UP to the scale; beyond the precision: null."""
    assert one("product", pa.decimal128(5, 2), [D("1.25"), D("1.25")]) == D("1.56")
    assert one("product", pa.decimal128(5, 2), [D("1.35"), D("1.35"), D("1.00")]) == D("1.82")
    assert one("product", pa.decimal128(5, 2), [D("1.50"), D("0.50")], "+-") == D("3.00")
    assert one("product", pa.decimal128(5, 2), [D("999.00"), D("999.00")]) is None
    with pytest.raises(ArithmeticError, match="Non-terminating decimal expansion"):
        one("product", pa.decimal128(5, 2), [D("1.00"), D("3.00")], "+-")


@pytest.mark.parametrize("t, values, lo, hi", [
    (pa.int32(), [3, None, -1, 7], -1, 7),
    (pa.string(), ["b", "ä", "a", None, "z"], "a", "ä"),  # UTF-8 byte order, as BinaryString.compareTo
    (pa.binary(), [b"\xff", b"\x01\x02", b"\x01"], b"\x01", b"\xff"),
    (pa.decimal128(6, 3), [D("1.500"), D("-2.250"), D("1.499")], D("-2.250"), D("1.500")),
    (pa.date32(), [date(2024, 1, 2), date(1999, 12, 31)], date(1999, 12, 31), date(2024, 1, 2)),
    (pa.timestamp("us"), [datetime(2024, 1, 1, 0, 0, 0, 5), datetime(2024, 1, 1)], datetime(2024, 1, 1),
     datetime(2024, 1, 1, 0, 0, 0, 5)),
    (pa.bool_(), [True, False, None], False, True),
])
def test_min_max_of_comparable_types(t, values, lo, hi):
    assert one("min", t, values) == lo
    assert one("max", t, values) == hi
    assert one("max", t, [None, None]) is None


def test_min_max_of_floats_order_as_java_compare():
    """Float.compare / Double.compare: -0.0 < 0.0 and NaN above everything."""
    assert str(one("min", pa.float64(), [0.0, -0.0])) == "-0.0"
    assert str(one("max", pa.float64(), [-0.0, 0.0])) == "0.0"
    assert math.isnan(one("max", pa.float64(), [1.0, float("nan"), float("inf")]))
    assert one("min", pa.float32(), [float("nan"), 2.5, None]) == 2.5


def test_min_max_cannot_retract_unless_ignored():
    with pytest.raises(OptionError, match="'max' of column 'c' does not support retraction.*ignore-retract"):
        one("max", pa.int32(), [1, 2], "+-")


def test_bool_and_or():
    assert one("bool_and", pa.bool_(), [True, None, False]) is False
    assert one("bool_or", pa.bool_(), [False, None, True]) is True
    assert one("bool_or", pa.bool_(), [None]) is None


# ----------------------------------------------------------------------- first / last families

def test_last_value_and_last_non_null_value():
    """FieldLastValueAgg: the last value even if null, a retraction nulls it; FieldLastNonNullValueAgg:
    retract(acc, v) = null if v is not null, else acc."""
    assert one("last_value", pa.string(), ["a", "b", None]) is None
    assert one("last_value", pa.string(), ["a", "b"], "+-") is None
    assert one("last_non_null_value", pa.string(), ["a", None]) == "a"
    assert one("last_non_null_value", pa.string(), ["a", "x"], "+-") is None
    assert one("last_non_null_value", pa.string(), ["a", None], "+-") == "a"
    assert one("last_non_null_value", pa.string(), ["a", "x", "b"], "+-+") == "b"


def test_older_rows_of_a_group_for_last_functions():
    """aggReversed(acc, v) = agg(v, acc): last_value keeps acc; last_non_null_value fills a null acc."""
    assert one("last_value", pa.string(), ["a", "old"], "+<") == "a"
    assert one("last_non_null_value", pa.string(), [None, "old", "older"], "+<<") == "old"
    assert one("last_non_null_value", pa.string(), ["a", "x", "old"], "+-<") == "old"
    assert one("last_non_null_value", pa.string(), ["a", "old"], "+<") == "a"


def test_first_value_and_first_non_null_value():
    assert one("first_value", pa.int32(), [None, 1, 2]) is None
    assert one("first_non_null_value", pa.int32(), [None, 1, 2]) == 1
    assert one("first_non_null_value", pa.int32(), [None, None]) is None
    assert one("first_not_null_value", pa.int32(), [None, 3]) == 3  # Paimon's legacy name
    with pytest.raises(OptionError, match="'first_value' of column 'c' does not support retraction"):
        one("first_value", pa.int32(), [1, 2], "+-")


def test_older_rows_of_a_group_for_first_functions():
    """first_value: once initialised, agg(v, acc) = v takes the older value; the first row being older leaves
    null. first_non_null_value: Java's state machine, null values included."""
    assert one("first_value", pa.int32(), [1, 0], "+<") == 0
    assert one("first_value", pa.int32(), [1, 0, 5, -1], "+<+<") == -1
    assert one("first_value", pa.int32(), [7, 8], "<+") is None
    assert one("first_non_null_value", pa.int32(), [1, 0], "+<") == 0
    assert one("first_non_null_value", pa.int32(), [1, None], "+<") is None  # agg(null, 1) once initialised
    assert one("first_non_null_value", pa.int32(), [5, 6], "<<") == 5  # fills, then initialises keeping it
    assert one("first_non_null_value", pa.int32(), [None, 5, 6], "+<+") == 6  # the older 5 did not initialise


# ---------------------------------------------------------------------------------------- strings

def test_listagg():
    """FieldListaggAgg (1.x): blank strings (Character.isWhitespace only) are skipped; delimiter option."""
    assert one("listagg", pa.string(), ["a", None, "", " \t", "b", "\u00a0"]) == "a,b,\u00a0"
    assert one("listagg", pa.string(), ["a", "b"], list_agg_delimiter="|") == "a|b"
    assert one("listagg", pa.string(), [None, " "]) is None
    assert one("listagg", pa.string(), ["a", "old"], "+<") == "old,a"  # agg(v, acc)


def test_listagg_distinct_splits_by_the_delimiter():
    """distinct: new tokens of each value not yet in the accumulator are appended; the first value is kept
    as it came (its own repeats stay)."""
    assert one("listagg", pa.string(), ["a;a", "b;a", "c"], list_agg_delimiter=";", distinct="true") == "a;a;b;c"
    assert one("listagg", pa.string(), ["x", "x,,y"], distinct="true") == "x,y"


def test_listagg_cannot_retract():
    with pytest.raises(OptionError, match="'listagg' of column 'c' does not support retraction"):
        one("listagg", pa.string(), ["a", "a"], "+-")


# --------------------------------------------------------------------------------- lists and maps

def test_collect():
    """FieldCollectAgg: concatenation (null lists skipped); distinct keeps one of each element; retract
    removes one occurrence per retracted element; retract(null, v) = null."""
    t = pa.list_(pa.int32())
    assert one("collect", t, [[1, 2], None, [2, None]]) == [1, 2, 2, None]
    assert one("collect", t, [None, None]) is None
    assert one("collect", t, [[]]) == []
    assert sorted(one("collect", t, [[3, 1, 3], [1, 2]], distinct="true")) == [1, 2, 3]
    assert one("collect", t, [[1, 1]], distinct="true") == [1]  # even one row
    assert one("collect", t, [[1, 2, 1, 3], [1, 3]], "+-") == [2, 1]
    assert one("collect", t, [[1], [1]], "-+") == [1]
    assert one("collect", t, [[1, 2], [5]], "+<") == [1, 2, 5]  # aggReversed is agg
    rows = pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))
    assert one("collect", rows, [[{"a": 1, "b": "x"}], [{"a": 1, "b": "x"}, {"a": 2, "b": None}]],
               distinct="true") == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]


def test_merge_map():
    """FieldMergeMapAgg: later values win; retract removes the retracted keys; an older row's values lose."""
    t = pa.map_(pa.string(), pa.int32())
    assert dict(one("merge_map", t, [[("a", 1), ("b", 2)], None, [("b", 3), ("c", None)]])) == {
        "a": 1, "b": 3, "c": None}
    assert dict(one("merge_map", t, [[("a", 1), ("b", 2)], [("a", 9)]], "+-")) == {"b": 2}
    assert one("merge_map", t, [[("a", 1)]], "-") is None
    assert dict(one("merge_map", t, [[("a", 1)], [("a", 0), ("z", 0)]], "+<")) == {"a": 1, "z": 0}


def test_merge_map_with_keytime():
    """FieldMergeMapWithKeyTimeAgg (1.4): per key the row with the greater time string; a null row removes
    the key; a row with a null time is skipped."""
    t = pa.map_(pa.string(), pa.struct([("v", pa.int32()), ("ts", pa.string())]))
    out = one("merge_map_with_keytime", t, [
        [("a", {"v": 1, "ts": "2024-01-02"}), ("b", {"v": 1, "ts": "2024-01-01"}), ("c", {"v": 1, "ts": "1"})],
        [("a", {"v": 2, "ts": "2024-01-01"}), ("b", {"v": 2, "ts": "2024-01-05"}), ("c", None),
         ("d", {"v": 4, "ts": None})]])
    assert dict(out) == {"a": {"v": 1, "ts": "2024-01-02"}, "b": {"v": 2, "ts": "2024-01-05"}}
    assert dict(one("merge_map_with_keytime", t, [[("a", {"v": 1, "ts": "2"})], [("a", {"v": 2, "ts": "1"})]],
                    ts_field="v")) == {"a": {"v": 2, "ts": "1"}}


def test_nested_update():
    """FieldNestedUpdateAgg: rows appended (null rows dropped, count-limit); with nested-key the later row of a
    key wins (or the greater nested-sequence-field); retract removes equal rows, or the retracted keys."""
    t = pa.list_(pa.struct([("k", pa.int32()), ("v", pa.string()), ("s", pa.int32())]))

    def r(k, v, s=0):
        return {"k": k, "v": v, "s": s}
    assert one("nested_update", t, [[r(1, "a")], None, [r(1, "a"), None]]) == [r(1, "a"), r(1, "a")]
    assert one("nested_update", t, [[r(1, "a"), r(2, "b")], [r(3, "c")]], count_limit="2") == [r(1, "a"), r(2, "b")]
    assert sorted(map(str, one("nested_update", t, [[r(1, "a"), r(2, "b")], [r(1, "z")]], nested_key="k"))) == \
        sorted(map(str, [r(1, "z"), r(2, "b")]))
    assert one("nested_update", t, [[r(1, "new", 5)], [r(1, "old", 4)]], nested_key="k",
               nested_sequence_field="s") == [r(1, "new", 5)]
    assert one("nested_update", t, [[r(1, "a"), r(2, "b"), r(1, "a")], [r(1, "a")]], "+-") == [r(2, "b")]
    assert one("nested_update", t, [[r(1, "a"), r(2, "b")], [r(1, "x")]], "+-", nested_key="k") == [r(2, "b")]
    assert one("nested_update", t, [[r(1, "a"), r(1, "b")]], nested_key="k") == [r(1, "b")]  # even one row


def test_nested_partial_update():
    """FieldNestedPartialUpdateAgg (1.4): rows merged by nested-key, each field its last non-null value."""
    t = pa.list_(pa.struct([("k", pa.int32()), ("a", pa.string()), ("b", pa.int32())]))
    out = one("nested_partial_update", t, [[{"k": 1, "a": "x", "b": None}, {"k": 2, "a": "y", "b": 2}],
                                            [{"k": 1, "a": None, "b": 5}]], nested_key="k")
    assert out == [{"k": 1, "a": "x", "b": 5}, {"k": 2, "a": "y", "b": 2}]
    with pytest.raises(OptionError, match="needs 'fields.c.nested-key'"):
        one("nested_partial_update", t, [None])


@pytest.mark.parametrize("function, t, message", [
    ("sum", pa.string(), "Data type for sum column 'c' must be 'NumericType'"),
    ("product", pa.bool_(), "Data type for product column 'c' must be 'NumericType'"),
    ("max", pa.list_(pa.int32()), "Data type for max column 'c' must be comparable"),
    ("bool_or", pa.int32(), "Data type for bool or column 'c' must be 'BooleanType'"),
    ("listagg", pa.int32(), "Data type for list agg column 'c' must be 'VarCharType'"),
    ("collect", pa.int32(), "Data type for collect column 'c' must be 'Array'"),
    ("merge_map", pa.list_(pa.int32()), "Data type for merge map column 'c' must be 'MAP'"),
    ("merge_map_with_keytime", pa.map_(pa.string(), pa.int32()), "Value type of MAP for field 'c' must be ROW"),
    ("nested_update", pa.list_(pa.int32()), "Data type for nested table column 'c' must be 'Array<Row>'"),
    ("hll_sketch", pa.string(), "Data type for hll sketch column 'c' must be 'VarBinaryType'"),
    ("rbm64", pa.int64(), "Data type for roaring bitmap column 'c' must be 'VarBinaryType'"),
    ("median", pa.int32(), "unknown aggregate function 'median'"),
])
def test_column_types_are_checked_as_paimon_factories_do(function, t, message):
    with pytest.raises(OptionError, match=message):
        create_aggregator(function, field("c", t), Options({}))


# ------------------------------------------------------------- vectorised fold = Java's definition

def _values(kind: str, rng: np.random.Generator, n: int) -> tuple[pa.DataType, list]:
    def maybe(v):
        return None if rng.random() < 0.2 else v
    if kind == "int":
        return pa.int64(), [maybe(int(rng.integers(-9, 9))) for _ in range(n)]
    if kind == "nonzero":
        return pa.int64(), [maybe(int(rng.choice([-3, -2, -1, 1, 2, 3]))) for _ in range(n)]
    if kind == "double":
        return pa.float64(), [maybe(float(rng.integers(-99, 99)) / 8) for _ in range(n)]
    if kind == "string":
        return pa.string(), [maybe(str(rng.choice(["a", "b", "", " ", "c,d", "a,a"]))) for _ in range(n)]
    if kind == "bool":
        return pa.bool_(), [maybe(bool(rng.integers(2))) for _ in range(n)]
    if kind == "list":
        return pa.list_(pa.int32()), [maybe([int(x) for x in rng.integers(0, 4, rng.integers(0, 4))])
                                      for _ in range(n)]
    if kind == "map":
        return pa.map_(pa.string(), pa.int32()), [maybe([(str(k), int(rng.integers(9))) for k in rng.choice(
            list("abcd"), rng.integers(0, 3), replace=False)]) for _ in range(n)]
    raise AssertionError(kind)


CASES = [  # (function, value kind, ops allowed, options)
    ("sum", "int", "+<-.", {}), ("sum", "double", "+<-.", {}), ("product", "nonzero", "+<-.", {}),
    ("product", "double", "+<.", {}), ("min", "int", "+<.", {}), ("max", "string", "+<.", {}),
    ("max", "double", "+<.", {}), ("last_value", "string", "+<-.", {}), ("last_non_null_value", "int", "+<-.", {}),
    ("first_value", "int", "+<.", {}), ("first_non_null_value", "int", "+<.", {}), ("bool_and", "bool", "+<.", {}),
    ("bool_or", "bool", "+<.", {}), ("listagg", "string", "+<.", {}),
    ("listagg", "string", "+.", {"distinct": "true"}), ("collect", "list", "+<-.", {}),
    ("collect", "list", "+<-.", {"distinct": "true"}), ("merge_map", "map", "+<-.", {}),
]


@pytest.mark.parametrize("function, kind, allowed, options", CASES, ids=lambda c: str(c))
def test_vectorised_fold_equals_the_record_by_record_definition(function, kind, allowed, options):
    rng = np.random.default_rng(11)
    for _ in range(3):
        lengths = rng.integers(1, 9, 60)
        n = int(lengths.sum())
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        t, values = _values(kind, rng, n)
        ops = np.array([OPS[c] for c in rng.choice(list(allowed), n)], np.int8)
        agg = create_aggregator(function, field("c", t), Options({f"fields.c.{k}": v for k, v in options.items()}))
        arr = pa.array(values, t)
        got = agg.fold(arr, ops, starts).to_pylist()
        want = agg.fold_python(arr, ops, starts).to_pylist()
        if function == "merge_map" or options.get("distinct") and function == "collect":
            got = [None if x is None else sorted(x, key=str) for x in got]
            want = [None if x is None else sorted(x, key=str) for x in want]
        assert got == want, function


# ------------------------------------------------------------------------------ the engine's options

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("a", pa.int64()), ("s", pa.string()),
                    ("ts", pa.int64())])
KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


def merged(options: dict[str, str], rows: list[tuple], drop_retract: bool = False) -> list[tuple]:
    ts = TableSchema.from_arrow(SCHEMA, [], ["id"], {"bucket": "1", "merge-engine": "aggregation", **options})
    eng = merge_engine(ts, Options(ts.options))
    data = pa.Table.from_pylist([dict(zip(SCHEMA.names, r[1:])) for r in rows], schema=SCHEMA)
    kinds = np.array([KINDS[r[0]] for r in rows], np.int8)
    kv = eng.layout.sort(eng.layout.to_kv(data, np.arange(len(rows), dtype=np.int64), kinds))
    names = {v: k for k, v in KINDS.items()}
    return [(names[r[KIND]], *[r[n] for n in SCHEMA.names]) for r in eng.merge(kv, drop_retract).to_pylist()]


def test_remove_record_on_delete():
    """aggregation.remove-record-on-delete (1.x): a -D empties the row (later rows rebuild it), -U retracts."""
    options = {"aggregation.remove-record-on-delete": "true", "fields.a.aggregate-function": "sum"}
    assert merged(options, [("+I", 1, 5, "x", 1), ("-D", 1, 5, "x", 1), ("+I", 1, 2, None, None)]) == [
        ("+I", 1, 2, None, None)]
    assert merged(options, [("+I", 1, 5, "x", 1), ("-D", 1, 5, "x", 1)]) == [("-D", 1, 5, "x", 1)]
    assert merged(options, [("+I", 1, 5, "x", 1), ("-D", 1, 5, "x", 1)], drop_retract=True) == []
    assert merged(options, [("+I", 1, 5, "x", 1), ("-U", 1, 2, "y", 1)]) == [("+I", 1, 3, None, None)]
    with pytest.raises(OptionError, match="remove-record-on-delete and fields.s.ignore-retract have conflicting"):
        merged({**options, "fields.s.ignore-retract": "true"}, [])


def test_a_sequence_field_is_its_last_value_and_cannot_aggregate():
    options = {"sequence.field": "ts", "fields.default-aggregate-function": "min"}
    assert merged(options, [("+I", 1, 1, None, 5), ("+I", 1, 2, None, 3)]) == [("+I", 1, 1, None, 5)]
    with pytest.raises(OptionError, match="Should not define aggregation on sequence field: 'ts'"):
        merged({"sequence.field": "ts", "fields.ts.aggregate-function": "max"}, [])


def test_one_row_per_key_becomes_an_insert():
    assert merged({}, [("+U", 1, 1, "a", 1), ("+I", 2, 2, "b", 2)]) == [("+I", 1, 1, "a", 1), ("+I", 2, 2, "b", 2)]


def test_retractions_that_reach_a_function_that_cannot_are_refused_at_write():
    ts = TableSchema.from_arrow(SCHEMA, [], ["id"], {"bucket": "1", "merge-engine": "aggregation",
                                                     "fields.a.aggregate-function": "max",
                                                     "aggregation.remove-record-on-delete": "true"})
    eng = merge_engine(ts, Options(ts.options))
    eng.check_input(np.array([INSERT, DELETE], np.int8))  # a -D removes, it does not retract
    with pytest.raises(OptionError, match=r"column\(s\) \['a'\] cannot retract"):
        eng.check_input(np.array([UPDATE_BEFORE], np.int8))
