"""Merge engines of primary-key tables (paimon_ds/mergetree/merge.py), without Spark.

Two levels: the engines on small hand-made key-value tables (rows of one key sorted by sequence
number, as the writer buffer and the reader's k-way merge hand them over), and the same semantics
end to end through `Table` writes and merge-on-read over several commits (one sorted run each).
Expected values are Paimon's (checked against Apache Paimon 0.9 where noted): deduplicate keeps the
last row, first-row the first, partial-update the last non-null value of each column, aggregation
folds each column with its function; `-U`/`-D` rows retract.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import OptionError, SchemaError, Table
from paimon_ds.mergetree.engine import MergeEngine
from paimon_ds.mergetree.kv import DELETE, INSERT, KIND, SEQ, UPDATE_AFTER, UPDATE_BEFORE, KeyValueLayout
from paimon_ds.mergetree.merge import merge_engine, merge_sorted_runs
from paimon_ds.options.registry import Options
from paimon_ds.schema.manager import TableSchema

KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
ROWS = pa.schema([("id", pa.int32()), ("a", pa.int64()), ("s", pa.string()), ("ts", pa.int64())])

# One column per aggregate function (id is the primary key).
AGG_SCHEMA = pa.schema([
    ("id", pa.int32()), ("sm", pa.int64()), ("pr", pa.int64()), ("mn", pa.int64()), ("mx", pa.float64()),
    ("lv", pa.string()), ("lnn", pa.string()), ("fv", pa.string()), ("fnn", pa.string()),
    ("band", pa.bool_()), ("bor", pa.bool_()), ("la", pa.string()),
])
AGG_OPTIONS = {
    "merge-engine": "aggregation",
    "fields.sm.aggregate-function": "sum", "fields.pr.aggregate-function": "product",
    "fields.mn.aggregate-function": "min", "fields.mx.aggregate-function": "max",
    "fields.lv.aggregate-function": "last_value", "fields.lnn.aggregate-function": "last_non_null_value",
    "fields.fv.aggregate-function": "first_value", "fields.fnn.aggregate-function": "first_non_null_value",
    "fields.band.aggregate-function": "bool_and", "fields.bor.aggregate-function": "bool_or",
    "fields.la.aggregate-function": "listagg", "fields.la.list-agg-delimiter": "|",
}
# Three rows of key 1, in sequence order, with nulls placed so that every function shows its null rule.
AGG_KEY1 = [
    {"id": 1, "sm": 1, "pr": 2, "mn": 5, "mx": 5.5, "lv": "a", "lnn": "a", "fv": None, "fnn": None,
     "band": True, "bor": False, "la": "x"},
    {"id": 1, "sm": None, "pr": 3, "mn": 3, "mx": None, "lv": "b", "lnn": "b", "fv": "f", "fnn": "g",
     "band": None, "bor": None, "la": None},
    {"id": 1, "sm": 4, "pr": None, "mn": None, "mx": 9.25, "lv": None, "lnn": None, "fv": "h", "fnn": "i",
     "band": False, "bor": True, "la": "y"},
]
AGG_KEY1_RESULT = {"id": 1, "sm": 5, "pr": 6, "mn": 3, "mx": 9.25, "lv": None, "lnn": "b", "fv": None, "fnn": "g",
                   "band": False, "bor": True, "la": "x|y"}
AGG_KEY2 = {"id": 2, "sm": None, "pr": None, "mn": None, "mx": None, "lv": None, "lnn": None, "fv": None,
            "fnn": None, "band": None, "bor": None, "la": None}


# ----------------------------------------------------------------------------------------- helpers

def make_engine(options: dict[str, str], schema: pa.Schema = ROWS) -> MergeEngine:
    ts = TableSchema.from_arrow(schema, [], ["id"], {"bucket": "1", **options})
    return merge_engine(ts, Options(ts.options))


def kv_table(engine: MergeEngine, rows: list[tuple[str, dict[str, Any]]], schema: pa.Schema = ROWS) -> pa.Table:
    """Rows (kind, values) with sequence numbers in list order, sorted by key then sequence number."""
    data = pa.Table.from_pylist([r for _, r in rows], schema=schema)
    kinds = np.array([KINDS[k] for k, _ in rows], dtype=np.int8)
    return engine.layout.sort(engine.layout.to_kv(data, np.arange(len(rows), dtype=np.int64), kinds))


def merged(engine: MergeEngine, rows: list[tuple[str, dict[str, Any]]], schema: pa.Schema = ROWS,
           drop_retract: bool = True) -> list[dict[str, Any]]:
    """The engine's result as user rows (with their row kind when retracts are kept), by id."""
    out = engine.merge(kv_table(engine, rows, schema), drop_retract)
    names = {v: k for k, v in KINDS.items()}
    result = []
    for r in out.to_pylist():
        row = {n: r[n] for n in schema.names}
        if not drop_retract:
            row["kind"] = names[r[KIND]]
        result.append(row)
    return sorted(result, key=lambda r: r["id"])


def row(id_: int, a: int | None = None, s: str | None = None, ts: int | None = None) -> dict[str, Any]:
    return {"id": id_, "a": a, "s": s, "ts": ts}


def write(path: str, data: list[dict[str, Any]], schema: pa.Schema, options: dict[str, str] | None = None) -> None:
    """One commit through the core Table API."""
    table = Table.for_write(path, schema, options or {})
    tw = table.new_write()
    tw.write_arrow(pa.Table.from_pylist(data, schema=schema))
    table.new_commit().commit(tw.prepare_commit())


def read(path: str) -> list[dict[str, Any]]:
    return sorted(Table.load(path).to_arrow().to_pylist(), key=lambda r: r["id"])


def snapshot_count(path: str) -> int:
    table = Table.load(path)
    return table.latest_snapshot().id if table.latest_snapshot() else 0


OP_ROWS = pa.schema([("id", pa.int32()), ("op", pa.string()), ("a", pa.int64()), ("s", pa.string())])


def op_row(id_: int, op: str, a: int | None = None, s: str | None = None) -> dict[str, Any]:
    return {"id": id_, "op": op, "a": a, "s": s}


def pk(**options: str) -> dict[str, str]:
    return {"primary-key": "id", "bucket": "2", "rowkind.field": "op", **options}


# ------------------------------------------------------------------------------ deduplicate (kv)

def test_deduplicate_last_row_wins():
    eng = make_engine({})
    rows = [("+I", row(1, 1, "a")), ("+I", row(2, 2, "b")), ("+U", row(1, 10, None)), ("+I", row(3, 3, "c")),
            ("+U", row(1, 11, "z")), ("+I", row(2, None, None))]
    assert merged(eng, rows) == [row(1, 11, "z"), row(2, None, None), row(3, 3, "c")]


def test_deduplicate_delete_removes_the_key_and_is_kept_for_older_runs():
    eng = make_engine({})
    rows = [("+I", row(1, 1)), ("-D", row(1, 1)), ("+I", row(2, 2)), ("-U", row(2, 2)), ("+U", row(2, 3)),
            ("+I", row(3, 3)), ("-U", row(3, 3)), ("-D", row(4, 4))]
    assert merged(eng, rows) == [row(2, 3)]
    # Within a run (writer buffer, non-final compaction) the delete must survive: it hides older runs.
    assert merged(eng, rows, drop_retract=False) == [
        {**row(1, 1), "kind": "-D"}, {**row(2, 3), "kind": "+U"}, {**row(3, 3), "kind": "-U"},
        {**row(4, 4), "kind": "-D"}]


def test_deduplicate_ignore_delete_keeps_the_previous_row():
    eng = make_engine({"ignore-delete": "true"})
    rows = [("+I", row(1, 1)), ("-D", row(1, 1)), ("-U", row(2, 2)), ("+I", row(3, 3)), ("-U", row(3, 3)),
            ("+U", row(3, 4)), ("-D", row(3, 4))]
    assert merged(eng, rows, drop_retract=False) == [{**row(1, 1), "kind": "+I"}, {**row(3, 4), "kind": "+U"}]


# ------------------------------------------------------------------------------- first-row (kv)

def test_first_row_keeps_the_first_row():
    eng = make_engine({"merge-engine": "first-row"})
    rows = [("+I", row(1, 1, "first")), ("+I", row(2, None, "b")), ("+I", row(1, 2, "second")),
            ("+U", row(2, 5, "later")), ("+I", row(1, 3, "third"))]
    assert merged(eng, rows) == [row(1, 1, "first"), row(2, None, "b")]


def test_first_row_refuses_deletes_unless_ignore_delete():
    eng = make_engine({"merge-engine": "first-row"})
    eng.check_input(np.array([INSERT, UPDATE_AFTER], dtype=np.int8))  # accepted
    for kind in (DELETE, UPDATE_BEFORE):
        with pytest.raises(OptionError, match="first-row merge engine cannot take DELETE/UPDATE_BEFORE.*ignore-delete"):
            eng.check_input(np.array([INSERT, kind], dtype=np.int8))
    ignoring = make_engine({"merge-engine": "first-row", "ignore-delete": "true"})
    ignoring.check_input(np.array([DELETE, UPDATE_BEFORE], dtype=np.int8))
    rows = [("-D", row(1, 0, "deleted first")), ("+I", row(1, 1, "kept")), ("-D", row(1, 1, "kept")),
            ("+I", row(1, 2, "later")), ("-U", row(2, 2))]
    assert merged(ignoring, rows, drop_retract=False) == [{**row(1, 1, "kept"), "kind": "+I"}]


# --------------------------------------------------------------------------- partial-update (kv)

def test_partial_update_takes_the_last_non_null_value_of_each_column():
    eng = make_engine({"merge-engine": "partial-update"})
    rows = [("+I", row(1, 1, None, 100)), ("+I", row(2, None, "only s")), ("+U", row(1, None, "s1", None)),
            ("+I", row(1, 3, None, None)), ("+I", row(3))]
    assert merged(eng, rows) == [row(1, 3, "s1", 100), row(2, None, "only s"), row(3)]


def test_partial_update_refuses_deletes_by_default():
    eng = make_engine({"merge-engine": "partial-update"})
    eng.check_input(np.array([INSERT, UPDATE_AFTER], dtype=np.int8))
    for kind in (DELETE, UPDATE_BEFORE):
        with pytest.raises(OptionError, match="partial-update merge engine cannot take delete rows.*ignore-delete"):
            eng.check_input(np.array([kind], dtype=np.int8))


def test_partial_update_ignore_delete():
    eng = make_engine({"merge-engine": "partial-update", "ignore-delete": "true"})
    eng.check_input(np.array([DELETE, UPDATE_BEFORE], dtype=np.int8))
    rows = [("+I", row(1, 1, "a")), ("-D", row(1, 9, "gone?")), ("+U", row(1, None, "b")), ("-U", row(2, 2))]
    assert merged(eng, rows) == [row(1, 1, "b")]


def test_partial_update_remove_record_on_delete():
    eng = make_engine({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    # Paimon ignores UPDATE_BEFORE rows with this option (Apache Paimon 0.9 reads them so) and takes DELETEs.
    eng.check_input(np.array([INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE], dtype=np.int8))
    rows = [
        # key 1: deleted, then rebuilt from nothing: the values before the delete do not come back
        ("+I", row(1, 1, "old", 7)), ("-D", row(1)), ("+I", row(1, None, "new")),
        # key 2: deleted last: gone (and the delete is kept for older runs while retracts are kept)
        ("+I", row(2, 2, "x")), ("-D", row(2)),
        # key 3: an update-before changes nothing
        ("+I", row(3, 3, "three", 30)), ("-U", row(3, 99, "retracted", 99)), ("+U", row(3, None, "3b")),
        # key 4: only an update-before: nothing
        ("-U", row(4, 4)),
    ]
    assert merged(eng, rows) == [row(1, None, "new"), row(3, 3, "3b", 30)]
    kept = merged(eng, rows, drop_retract=False)
    assert [(r["id"], r["kind"]) for r in kept] == [(1, "+I"), (2, "-D"), (3, "+I")]


# ------------------------------------------------------------------------------ aggregation (kv)

def test_aggregation_functions():
    eng = make_engine(AGG_OPTIONS, AGG_SCHEMA)
    rows = [("+I", r) for r in AGG_KEY1] + [("+I", AGG_KEY2)]
    rows.insert(2, ("+I", {**AGG_KEY2, "id": 3, "sm": 7, "la": "solo"}))
    assert merged(eng, rows, AGG_SCHEMA) == [AGG_KEY1_RESULT, AGG_KEY2, {**AGG_KEY2, "id": 3, "sm": 7, "la": "solo"}]


def test_aggregation_default_function_is_last_non_null_value():
    eng = make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})
    rows = [("+I", row(1, 1, "a", 5)), ("+I", row(1, 2, None, None)), ("+I", row(1, None, "c", None))]
    assert merged(eng, rows) == [row(1, 3, "c", 5)]


def test_aggregation_sum_retracts_update_before_and_delete():
    eng = make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                       "fields.s.ignore-retract": "true", "fields.ts.ignore-retract": "true"})
    rows = [("+I", row(1, 10, "a")), ("+I", row(1, 5, "b")), ("-U", row(1, 5, "b")), ("+U", row(1, 7, "c")),
            ("-D", row(1, 3, "d")), ("-D", row(1, None, "e")),
            ("-D", row(2, 4, "x", 1))]  # a retraction alone: Paimon keeps the key with the negated sum
    assert merged(eng, rows) == [row(1, 14, "c"), row(2, -4, None, None)]
    assert [r["kind"] for r in merged(eng, rows, drop_retract=False)] == ["+I", "+I"]


def test_aggregation_refuses_retracting_a_function_that_cannot():
    eng = make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "max"})
    eng.check_input(np.array([INSERT, UPDATE_AFTER], dtype=np.int8))
    # last_non_null_value (s, ts) retracts (a retracted value clears it): only max cannot
    with pytest.raises(OptionError, match=r"column\(s\) \['a'\] cannot retract.*ignore-retract"):
        eng.check_input(np.array([INSERT, DELETE], dtype=np.int8))
    ignoring = make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "max",
                            "fields.a.ignore-retract": "true", "fields.s.ignore-retract": "true",
                            "fields.ts.ignore-retract": "true"})
    ignoring.check_input(np.array([INSERT, DELETE, UPDATE_BEFORE], dtype=np.int8))
    rows = [("+I", row(1, 3, "a")), ("-U", row(1, 50, "b")), ("+U", row(1, 2, None)), ("-D", row(1, 60, "d"))]
    assert merged(ignoring, rows) == [row(1, 3, "a")]
    # ignore-delete: writers drop the retractions before they reach the engine (Paimon 1.x's RowKindFilter)
    whole = make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "max", "ignore-delete": "true"})
    kinds = np.array([KINDS[k] for k, _ in rows], dtype=np.int8)
    keep = whole.input_filter(kinds)
    assert keep.tolist() == [True, False, True, False]
    whole.check_input(kinds[keep])
    assert merged(whole, [r for r, k in zip(rows, keep) if k]) == [row(1, 3, "a")]


def test_aggregation_count_is_refused():
    with pytest.raises(OptionError, match="'count' is not an aggregate function of Paimon's aggregation engine"):
        make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "count"})


def test_aggregation_unknown_function_and_column_are_refused():
    with pytest.raises(OptionError, match="unknown aggregate function 'median' for column 'a'"):
        make_engine({"merge-engine": "aggregation", "fields.a.aggregate-function": "median"})
    with pytest.raises(OptionError, match="names column 'nope', which is not in the table"):
        make_engine({"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"})


def test_unknown_merge_engine_is_refused():
    with pytest.raises(OptionError, match="invalid value 'upsert' for option 'merge-engine': 'upsert' is not one of "
                                          "deduplicate, partial-update, aggregation, first-row"):
        make_engine({"merge-engine": "upsert"})


# ------------------------------------------------------------------------------ sequence.field (kv)

def test_sequence_field_orders_before_the_sequence_number():
    eng = make_engine({"sequence.field": "ts"})
    rows = [("+I", row(1, 1, "newest", 30)), ("+I", row(1, 2, "older", 20)),
            ("+I", row(2, 1, "null ts written first", None)), ("+I", row(2, 2, "ts wins", 1)),
            ("+I", row(3, 1, "ts 5", 5)), ("+I", row(3, 2, "null ts written last", None)),
            ("+I", row(4, 1, "tie: first", 7)), ("+I", row(4, 2, "tie: last written wins", 7))]
    # a null sequence.field sorts before every value (Apache Paimon 0.9 reads the same)
    assert merged(eng, rows) == [row(1, 1, "newest", 30), row(2, 2, "ts wins", 1), row(3, 1, "ts 5", 5),
                                 row(4, 2, "tie: last written wins", 7)]


def test_sequence_field_must_exist(tmp_path):
    with pytest.raises(SchemaError, match="nope"):
        Table.for_write(str(tmp_path / "t"), ROWS, {"primary-key": "id", "bucket": "1", "sequence.field": "nope"})
    assert not (tmp_path / "t").exists()


# ------------------------------------------------------------------------- merge_sorted_runs

ENGINE_CASES = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "partial-update-groups": {"merge-engine": "partial-update", "fields.ts.sequence-group": "a,s",
                              "fields.a.aggregate-function": "sum"},
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                    "fields.ts.aggregate-function": "max", "fields.ts.ignore-retract": "true",
                    "fields.s.ignore-retract": "true"},
    "aggregation-listagg": {"merge-engine": "aggregation", "fields.a.aggregate-function": "product",
                            "fields.s.aggregate-function": "listagg", "fields.s.distinct": "true",
                            "fields.s.ignore-retract": "true", "fields.ts.aggregate-function": "last_value"},
    "aggregation-remove-on-delete": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                                     "aggregation.remove-record-on-delete": "true"},
    "sequence-field": {"sequence.field": "ts"},
    "sequence-field-descending": {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
}


def random_runs(engine: MergeEngine, rng: np.random.Generator, n_runs: int, keys: int) -> list[pa.Table]:
    """Sorted runs as writers leave them in a bucket: unique keys, each run already merged by the engine
    (so an aggregation run holds no retract rows), sequence numbers growing from run to run."""
    runs, seq = [], 0
    for _ in range(n_runs):
        n = int(rng.integers(0, keys // 2))
        ids = np.sort(rng.choice(keys, size=n, replace=False)).astype(np.int32)
        a = rng.integers(-100, 100, n)
        data = pa.table({
            "id": pa.array(ids, pa.int32()),
            "a": pa.array(a, pa.int64(), mask=rng.random(n) < 0.2),
            "s": pa.array([f"s{int(x)}" for x in a], pa.string(), mask=rng.random(n) < 0.3),
            "ts": pa.array(rng.integers(0, 50, n), pa.int64(), mask=rng.random(n) < 0.1),
        }, schema=ROWS)
        kinds = rng.choice([INSERT, UPDATE_AFTER, UPDATE_BEFORE, DELETE], size=n, p=[0.5, 0.2, 0.1, 0.2])
        seqs = seq + rng.permutation(n).astype(np.int64)  # any order inside a run, all above earlier runs
        seq += n
        kv = engine.layout.to_kv(data, seqs, kinds.astype(np.int8))
        runs.append(engine.merge(engine.layout.sort(kv), drop_retract=False))
    return runs


def chunked(run: pa.Table, rng: np.random.Generator) -> Iterator[pa.Table]:
    """A run as its reader yields it: chunks of random sizes, empty ones included."""
    start = 0
    while start < run.num_rows:
        size = int(rng.integers(0, 40))
        yield run.slice(start, size)
        start += size


@pytest.mark.parametrize("case", list(ENGINE_CASES))
@pytest.mark.parametrize("drop_retract", [True, False])
def test_merge_sorted_runs_equals_one_big_sort_and_merge(case, drop_retract):
    eng = make_engine(ENGINE_CASES[case])
    rng = np.random.default_rng(20240603)
    for _ in range(5):
        runs = random_runs(eng, rng, n_runs=int(rng.integers(2, 25)), keys=400)
        expected = eng.merge(eng.layout.sort(pa.concat_tables(runs)), drop_retract)
        pieces = list(merge_sorted_runs([chunked(r, rng) for r in runs], eng, drop_retract))
        got = pa.concat_tables(pieces) if pieces else expected.slice(0, 0)
        assert got.num_rows == expected.num_rows > 0
        assert got.equals(expected), case
        ids = got.column("_KEY_id").to_numpy()
        assert (np.diff(ids) > 0).all()  # one row per key, in key order


def test_merge_sorted_runs_with_a_composite_string_key():
    """Key (k1 string, k2 bigint): the watermark compares whole keys, and non-ASCII strings in byte order."""
    schema = pa.schema([("k1", pa.string()), ("k2", pa.int64()), ("v", pa.int64())])
    ts = TableSchema.from_arrow(schema, [], ["k1", "k2"], {"bucket": "1"})
    eng = merge_engine(ts, Options(ts.options))
    rng = np.random.default_rng(99)
    words = ["", "a", "ab", "b", "z", "é", "ü😀", "日本", "\uffff", "😀"]
    runs, seq = [], 0
    for _ in range(12):
        keys = sorted({(str(rng.choice(words)), int(rng.integers(-3, 3))) for _ in range(int(rng.integers(1, 40)))})
        n = len(keys)
        data = pa.table({"k1": [k for k, _ in keys], "k2": pa.array([k for _, k in keys], pa.int64()),
                         "v": pa.array(rng.integers(0, 100, n), pa.int64())}, schema=schema)
        kinds = rng.choice([INSERT, DELETE], size=n, p=[0.8, 0.2]).astype(np.int8)
        runs.append(eng.layout.sort(eng.layout.to_kv(data, seq + np.arange(n, dtype=np.int64), kinds)))
        seq += n
    expected = eng.merge(eng.layout.sort(pa.concat_tables(runs)), drop_retract=True)
    got = pa.concat_tables(list(merge_sorted_runs([chunked(r, rng) for r in runs], eng, drop_retract=True)))
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(expected)


def test_merge_sorted_runs_single_and_empty_runs():
    eng = make_engine({})
    rng = np.random.default_rng(7)
    [run] = random_runs(eng, rng, 1, 200)
    run = eng.layout.sort(run)
    out = pa.concat_tables(list(merge_sorted_runs([chunked(run, rng), iter([]), chunked(run.slice(0, 0), rng)],
                                                  eng, drop_retract=True)))
    assert out.equals(eng.drop_retracts(run))
    assert list(merge_sorted_runs([], eng, drop_retract=True)) == []


# --------------------------------------------------------------------- through Table writes

def test_deduplicate_through_commits(tmp_path):
    path = str(tmp_path / "t")
    write(path, [op_row(i, "+I", i, f"v{i}") for i in range(1, 7)], OP_ROWS, pk())
    write(path, [op_row(2, "-D", 2, "v2"), op_row(3, "-U", 3, "v3"), op_row(3, "+U", 30, "v3b"),
                 op_row(4, "-U", 4, "v4"), op_row(5, "+I", None, None), op_row(7, "-D"), op_row(8, "+I", 8, "v8")],
          OP_ROWS)
    assert read(path) == [op_row(1, "+I", 1, "v1"), op_row(3, "+U", 30, "v3b"), op_row(5, "+I", None, None),
                          op_row(6, "+I", 6, "v6"), op_row(8, "+I", 8, "v8")]
    write(path, [op_row(2, "+I", 22, "back"), op_row(1, "-D"), op_row(1, "+I", 11, "re")], OP_ROWS)
    assert read(path) == [op_row(1, "+I", 11, "re"), op_row(2, "+I", 22, "back"), op_row(3, "+U", 30, "v3b"),
                          op_row(5, "+I", None, None), op_row(6, "+I", 6, "v6"), op_row(8, "+I", 8, "v8")]


def test_deduplicate_ignore_delete_through_commits(tmp_path):
    path = str(tmp_path / "t")
    write(path, [op_row(1, "+I", 1, "a"), op_row(2, "+I", 2, "b")], OP_ROWS, pk(**{"ignore-delete": "true"}))
    write(path, [op_row(1, "-D", 1, "a"), op_row(2, "-U", 2, "b"), op_row(2, "+U", 20, "b2"), op_row(3, "-D")],
          OP_ROWS)
    assert read(path) == [op_row(1, "+I", 1, "a"), op_row(2, "+U", 20, "b2")]


def test_first_row_through_commits(tmp_path):
    path = str(tmp_path / "t")
    opts = pk(**{"merge-engine": "first-row"})
    write(path, [op_row(1, "+I", 1, "first"), op_row(1, "+I", 2, "same commit, later")], OP_ROWS, opts)
    write(path, [op_row(1, "+U", 3, "later commit"), op_row(2, "+I", 4, "new key")], OP_ROWS)
    assert read(path) == [op_row(1, "+I", 1, "first"), op_row(2, "+I", 4, "new key")]
    # each write is an APPEND plus the COMPACT that lifts level 0 (Paimon skips level 0 of first-row tables)
    assert snapshot_count(path) == 4
    with pytest.raises(OptionError, match="first-row merge engine cannot take DELETE/UPDATE_BEFORE"):
        write(path, [op_row(1, "-D", 1, "first")], OP_ROWS)
    assert snapshot_count(path) == 4 and read(path)[0] == op_row(1, "+I", 1, "first")

    ignoring = str(tmp_path / "ignoring")
    write(ignoring, [op_row(1, "+I", 1, "first")], OP_ROWS, pk(**{"merge-engine": "first-row",
                                                                   "ignore-delete": "true"}))
    write(ignoring, [op_row(1, "-D", 1, "first"), op_row(1, "+I", 5, "not first"), op_row(2, "-U", 2)], OP_ROWS)
    assert read(ignoring) == [op_row(1, "+I", 1, "first")]


def test_partial_update_through_commits(tmp_path):
    path = str(tmp_path / "t")
    opts = pk(**{"merge-engine": "partial-update"})
    write(path, [op_row(1, "+I", 1, None), op_row(2, "+I", None, "b")], OP_ROWS, opts)
    write(path, [op_row(1, "+U", None, "s1"), op_row(2, "+U", 2, None)], OP_ROWS)
    write(path, [op_row(1, "+I", 10, None)], OP_ROWS)
    assert read(path) == [op_row(1, "+I", 10, "s1"), op_row(2, "+U", 2, "b")]
    with pytest.raises(OptionError, match="partial-update merge engine cannot take delete rows"):
        write(path, [op_row(1, "-D")], OP_ROWS)
    assert snapshot_count(path) == 3


def test_partial_update_remove_record_on_delete_through_commits(tmp_path):
    path = str(tmp_path / "t")
    opts = pk(**{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    write(path, [op_row(1, "+I", 1, "one"), op_row(2, "+I", 2, "two"), op_row(3, "+I", 3, None)], OP_ROWS, opts)
    write(path, [op_row(1, "-D"), op_row(2, "-U", 99, "ignored"), op_row(3, "+U", None, "three")], OP_ROWS)
    assert read(path) == [op_row(2, "+I", 2, "two"), op_row(3, "+U", 3, "three")]
    # a key deleted in an earlier commit starts again from nothing
    write(path, [op_row(1, "+I", None, "again"), op_row(2, "-D")], OP_ROWS)
    write(path, [op_row(2, "+I", None, "fresh")], OP_ROWS)
    assert read(path) == [op_row(1, "+I", None, "again"), op_row(2, "+I", None, "fresh"),
                          op_row(3, "+U", 3, "three")]
    # A delete followed by an insert of the same key in ONE commit merges, in the write buffer, into
    # that insert alone, and the older runs' values show through its nulls again: Paimon's own
    # partial-update merge does the same (the merge is not associative across a delete).
    write(path, [op_row(3, "-D"), op_row(3, "+I", None, "after delete")], OP_ROWS)
    assert read(path)[2] == op_row(3, "+I", 3, "after delete")


def test_aggregation_through_commits(tmp_path):
    """Each row of key 1 in its own commit: the functions fold across sorted runs as within one."""
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "bucket": "2", **AGG_OPTIONS}
    for r in AGG_KEY1:
        write(path, [r], AGG_SCHEMA, opts)
    write(path, [AGG_KEY2], AGG_SCHEMA, opts)
    assert read(path) == [AGG_KEY1_RESULT, AGG_KEY2]
    assert snapshot_count(path) == 4


def test_aggregation_sum_retraction_through_commits(tmp_path):
    path = str(tmp_path / "t")
    opts = pk(**{"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                 "fields.s.ignore-retract": "true", "fields.op.ignore-retract": "true"})
    write(path, [op_row(1, "+I", 10, "a"), op_row(2, "+I", 1, "b")], OP_ROWS, opts)
    write(path, [op_row(1, "-U", 10, "x"), op_row(1, "+U", 12, "c"), op_row(2, "-D", 1, "y"), op_row(3, "-D", 5)],
          OP_ROWS)
    write(path, [op_row(1, "+I", 3, None), op_row(2, "+I", None, None)], OP_ROWS)
    assert read(path) == [op_row(1, "+I", 15, "c"), op_row(2, "+I", 0, "b"), op_row(3, None, -5, None)]
    with pytest.raises(OptionError, match="'count' is not an aggregate function"):
        write(str(tmp_path / "count"), [op_row(1, "+I", 1)], OP_ROWS,
              pk(**{"merge-engine": "aggregation", "fields.a.aggregate-function": "count"}))
    assert not Table.exists(str(tmp_path / "count"))


def test_sequence_field_through_commits(tmp_path):
    """A row with a higher sequence.field wins even when an earlier commit wrote it."""
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "bucket": "2", "sequence.field": "ts"}
    write(path, [row(1, 1, "newest", 30), row(2, 1, "old", 10), row(3, 1, "written first", 5)], ROWS, opts)
    write(path, [row(1, 2, "stale", 20), row(2, 2, "newer", 11), row(3, 2, "null ts", None),
                 row(4, 1, "b", 2), row(4, 2, "a", 1)], ROWS)
    assert read(path) == [row(1, 1, "newest", 30), row(2, 2, "newer", 11), row(3, 1, "written first", 5),
                          row(4, 1, "b", 2)]


def test_rowkind_field_values(tmp_path):
    path = str(tmp_path / "t")
    write(path, [op_row(1, "+I", 1), op_row(2, "+I", 2), op_row(3, "+I", 3), op_row(4, "+I", 4)], OP_ROWS, pk())
    write(path, [op_row(1, "-U", 1), op_row(1, "+U", 10), op_row(2, "-D", 2), op_row(3, "-U", 3)], OP_ROWS)
    assert read(path) == [op_row(1, "+U", 10), op_row(4, "+I", 4)]
    for bad in ("+X", "D", "", None):
        with pytest.raises(SchemaError, match=r"rowkind.field column 'op' holds .*row kinds are \+I, -U, \+U, -D"):
            write(path, [op_row(5, "+I", 5), op_row(6, bad, 6)], OP_ROWS)
    assert snapshot_count(path) == 2
    with pytest.raises(SchemaError, match="nope"):
        write(str(tmp_path / "missing"), [op_row(1, "+I")], OP_ROWS, pk(**{"rowkind.field": "nope"}))


def test_rows_of_one_key_in_one_commit_merge_in_the_buffer(tmp_path):
    """500 rows on 50 keys in one commit: the last of each key wins; files hold the kv layout."""
    path = str(tmp_path / "t")
    data = [op_row(i % 50, "+I", i, f"v{i}") for i in range(500)]
    write(path, data, OP_ROWS, pk(**{"bucket": "3"}))
    assert read(path) == [op_row(i, "+I", 450 + i, f"v{450 + i}") for i in range(50)]
    table = Table.load(path)
    layout = KeyValueLayout(table.table_schema)
    assert layout.key_columns == ["_KEY_id"]
    assert SEQ in layout.arrow_schema().names


def test_first_row_refuses_a_sequence_field(tmp_path):
    from paimon_ds.options.registry import OptionError as _OptionError
    with pytest.raises(_OptionError, match="first-row merge engine does not take a 'sequence.field'"):
        write(str(tmp_path / "t"), [op_row(1, "+I", 1, "x")], OP_ROWS,
              pk(**{"merge-engine": "first-row", "sequence.field": "a"}))
    assert not (tmp_path / "t" / "schema").exists()


# ------------------------------------------------------- sequence.field.sort-order, ignore-update-before

def test_sequence_field_descending_lets_the_smallest_win():
    """Paimon's UserDefinedSeqComparator with sort-order descending negates the comparison of two values;
    a null still sorts first (RecordComparator: nulls first either way), so it loses to any value."""
    eng = make_engine({"sequence.field": "ts", "sequence.field.sort-order": "DESCENDING"})
    rows = [("+I", row(1, 1, "ts 30", 30)), ("+I", row(1, 2, "ts 20", 20)),
            ("+I", row(2, 1, "ts 1", 1)), ("+I", row(2, 2, "null ts", None)),
            ("+I", row(3, 1, "tie: first", 7)), ("+I", row(3, 2, "tie: last written wins", 7))]
    assert merged(eng, rows) == [row(1, 2, "ts 20", 20), row(2, 1, "ts 1", 1), row(3, 2, "tie: last written wins", 7)]
    with pytest.raises(OptionError, match="'sequence.field.sort-order': 'down' is not one of ascending, descending"):
        make_engine({"sequence.field": "ts", "sequence.field.sort-order": "down"})


def test_sequence_field_descending_through_commits(tmp_path):
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "bucket": "2", "sequence.field": "ts", "sequence.field.sort-order": "descending"}
    write(path, [row(1, 1, "oldest write", 5), row(2, 1, "b", None)], ROWS, opts)
    write(path, [row(1, 2, "smaller ts", 3), row(2, 2, "b2", 9)], ROWS)
    write(path, [row(1, 3, "larger ts", 4)], ROWS)
    assert read(path) == [row(1, 2, "smaller ts", 3), row(2, 2, "b2", 9)]


@pytest.mark.parametrize("engine_options", [{}, {"merge-engine": "partial-update"},
                                            {"merge-engine": "aggregation", "fields.a.aggregate-function": "max"}])
def test_ignore_update_before_drops_them_before_the_writer(tmp_path, engine_options):
    """Paimon 1.x's RowKindFilter: with ignore-update-before writers never see -U rows (any engine: even one
    that cannot take them); -D rows still go through."""
    path = str(tmp_path / "t")
    opts = pk(**engine_options, **{"ignore-update-before": "true"})
    write(path, [op_row(1, "+I", 1, "a"), op_row(2, "+I", 2, "b")], OP_ROWS, opts)
    write(path, [op_row(1, "-U", 99, "gone"), op_row(1, "+U", 3, "a2"), op_row(2, "-U", 2, "b")], OP_ROWS)
    # (aggregation: max(1, 3); max could not retract the -U rows, so without the option the write is refused)
    assert read(path) == [op_row(1, "+U", 3, "a2"), op_row(2, "+I", 2, "b")]


def test_ignore_update_before_and_ignore_delete_on_an_append_table(tmp_path):
    """Append tables take +I rows only; Paimon 1.x's RowKindFilter drops -U (and with ignore-delete -D) rows
    before the writer, so a CDC stream with them can be written."""
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    rows = pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "kind": ["+I", "-U", "+I", "-D"]})

    def write_kinds(path: str, options: dict[str, str]) -> None:
        table = Table.for_write(path, schema, options)
        tw = table.new_write(row_kind_column="kind")
        tw.write_arrow(rows)
        table.new_commit().commit(tw.prepare_commit())
    with pytest.raises(SchemaError, match="an append table takes inserts only"):
        write_kinds(str(tmp_path / "plain"), {"ignore-update-before": "true"})
    assert not Table.exists(str(tmp_path / "plain"))
    write_kinds(str(tmp_path / "both"), {"ignore-update-before": "true", "ignore-delete": "true"})
    assert sorted(Table.load(str(tmp_path / "both")).to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 3, "v": "c"}]


# ----------------------------------------------------------------------------- record-level expire

def test_record_level_expire_drops_expired_records_when_compacting(tmp_path):
    """Paimon's RecordLevelExpire: the records a compaction reads are dropped when their time field is older
    than the expire time (before they are merged: an older live version of the key then remains); reads
    before that see them all; a null time never expires."""
    from paimon_ds.operation.compact import compact_in_process
    path = str(tmp_path / "t")
    now = int(time.time())
    opts = {"primary-key": "id", "bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "ts"}
    write(path, [row(1, 1, "live", now), row(2, 1, "expired", 10), row(3, 1, "no time", None),
                 row(4, 1, "live, then expired update", now)], ROWS, opts)
    write(path, [row(4, 2, "expired update", 20)], ROWS)
    assert [r["s"] for r in read(path)] == ["live", "expired", "no time", "expired update"]
    compact_in_process(Table.load(path), None, full=True)
    assert [r["s"] for r in read(path)] == ["live", "no time", "live, then expired update"]
    # a bucket already compacted into one file: a full compaction rewrites a file holding expired records
    # (Paimon 1.x picks it by its value stats)
    write(path, [row(5, 1, "expires later", now - 3500)], ROWS)
    compact_in_process(Table.load(path), None, full=True)
    assert len(read(path)) == 4
    table = Table.load(path, {"record-level.expire-time": "1 min"})
    compact_in_process(table, None, full=True)
    assert [r["s"] for r in read(path)] == ["live", "no time", "live, then expired update"]


@pytest.mark.parametrize("options, message", [
    ({"record-level.expire-time": "1 h"}, "You should set time field for record-level expire"),
    ({"record-level.expire-time": "1 h", "record-level.time-field": "nope"}, "Can not find time field nope"),
    ({"record-level.expire-time": "1 h", "record-level.time-field": "s"},
     "The record level time field type should be one of INT, BIGINT, or TIMESTAMP"),
    ({"record-level.expire-time": "1 h", "record-level.time-field": "ts",
      "record-level.time-field-type": "seconds-int"}, "'record-level.time-field-type' = 'seconds-int' takes INT"),
])
def test_record_level_expire_is_checked_before_anything_is_written(tmp_path, options, message):
    with pytest.raises((OptionError, SchemaError), match=message):
        write(str(tmp_path / "t"), [row(1, 1)], ROWS, {"primary-key": "id", "bucket": "1", **options})
    assert not Table.exists(str(tmp_path / "t"))


# ------------------------------------------------------------------------------------------ ALTER

def test_alter_to_a_configuration_paimon_refuses_is_refused(tmp_path):
    from paimon_ds.catalog import Catalog
    from paimon_ds.schema.change import SetOption
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.t", ROWS, primary_keys=["id"], options={"bucket": "1", "merge-engine": "partial-update"})
    before = sorted(p.name for p in (tmp_path / "wh/db.db/t/schema").iterdir())
    with pytest.raises((OptionError, SchemaError), match="Must use sequence group for aggregation functions"):
        catalog.alter_table("db.t", SetOption("fields.a.aggregate-function", "sum"))
    with pytest.raises((OptionError, SchemaError), match="names column.*nope.*not in the table"):
        catalog.alter_table("db.t", SetOption("fields.ts.sequence-group", "nope"))
    assert sorted(p.name for p in (tmp_path / "wh/db.db/t/schema").iterdir()) == before
    catalog.alter_table("db.t", [SetOption("fields.ts.sequence-group", "a"), SetOption("fields.a.aggregate-function",
                                                                                         "sum")])
