"""Merge semantics Paimon 0.9 lacks, against pypaimon 2.1 (which follows Paimon 1.x/2.x), both ways.

`sequence.field.sort-order` = descending, `ignore-update-before`, and the aggregate functions and options of
Paimon 1.x (merge_map_with_keytime, nested_partial_update, nested_update's count-limit, listagg's blank strings
and distinct, collect distinct): pypaimon writes a table in several commits and paimon_ds reads it, paimon_ds
writes its twin and pypaimon reads that; both must equal the rows Paimon's classes define (pinned here).
pypaimon 2.1 refuses retractions in aggregation tables, so these commits hold inserts (retraction is covered
against Java 0.9 and by the unit tests). Orders Java leaves to a HashMap are compared as sets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import Oracle

from paimon_ds import Table

from .java_rows import canonical

ROW = pa.struct([("k", pa.int32()), ("v", pa.string()), ("ts", pa.string())])

CASES: dict[str, dict[str, Any]] = {
    "sort_desc": {
        "schema": pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()), ("ts", pa.int64())]),
        "options": {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
        "commits": [
            [{"id": 1, "v": "a5", "ts": 5}, {"id": 2, "v": "b1", "ts": 1}, {"id": 3, "v": "c-null", "ts": None},
             {"id": 4, "v": "d7", "ts": 7}],
            [{"id": 1, "v": "a3", "ts": 3}, {"id": 2, "v": "b9", "ts": 9}, {"id": 3, "v": "c4", "ts": 4},
             {"id": 4, "v": "d7-again", "ts": 7}, {"id": 5, "v": "e-null", "ts": None}],
            [{"id": 1, "v": "a4", "ts": 4}, {"id": 5, "v": "e2", "ts": 2}, {"id": 5, "v": "e-null-2", "ts": None}],
        ],
        # the smallest sequence.field wins, a null one loses to any value, a tie goes to the later write
        "expected": [{"id": 1, "v": "a3", "ts": 3}, {"id": 2, "v": "b1", "ts": 1}, {"id": 3, "v": "c4", "ts": 4},
                     {"id": 4, "v": "d7-again", "ts": 7}, {"id": 5, "v": "e2", "ts": 2}],
    },
    "ignore_update_before": {
        "schema": pa.schema([pa.field("id", pa.int32(), nullable=False), ("op", pa.string()), ("v", pa.string())]),
        "options": {"rowkind.field": "op", "ignore-update-before": "true"},
        "commits": [
            [{"id": 1, "op": "+I", "v": "a"}, {"id": 2, "op": "+I", "v": "b"}, {"id": 3, "op": "+I", "v": "c"}],
            [{"id": 1, "op": "-U", "v": "a"}, {"id": 2, "op": "-U", "v": "b"}, {"id": 2, "op": "+U", "v": "b2"},
             {"id": 3, "op": "-D", "v": "c"}],
        ],
        # -U rows never reach the table; -D still deletes
        "expected": [{"id": 1, "op": "+I", "v": "a"}, {"id": 2, "op": "+U", "v": "b2"}],
    },
    "agg_1x": {
        "schema": pa.schema([
            pa.field("id", pa.int32(), nullable=False), ("kt", pa.map_(pa.string(), ROW)), ("npu", pa.list_(ROW)),
            ("nul", pa.list_(ROW)), ("la", pa.string()), ("lad", pa.string()), ("cd", pa.list_(pa.int32()))]),
        "options": {"merge-engine": "aggregation",
                    "fields.kt.aggregate-function": "merge_map_with_keytime", "fields.kt.ts-field": "ts",
                    "fields.npu.aggregate-function": "nested_partial_update", "fields.npu.nested-key": "k",
                    "fields.nul.aggregate-function": "nested_update", "fields.nul.count-limit": "2",
                    "fields.la.aggregate-function": "listagg",
                    "fields.lad.aggregate-function": "listagg", "fields.lad.distinct": "true",
                    "fields.lad.list-agg-delimiter": ";",
                    "fields.cd.aggregate-function": "collect", "fields.cd.distinct": "true"},
        "commits": [
            [{"id": 1, "kt": [("x", {"k": 1, "v": "x1", "ts": "2024-01-02"}), ("y", {"k": 1, "v": "y1", "ts": "1"})],
              "npu": [{"k": 1, "v": "p", "ts": None}], "nul": [{"k": 1, "v": "n1", "ts": "a"}],
              "la": "a", "lad": "t;u", "cd": [3, 1, 3]}],
            [{"id": 1, "kt": [("x", {"k": 2, "v": "x2", "ts": "2024-01-01"}), ("y", {"k": 2, "v": "y2", "ts": "2"}),
                              ("z", {"k": 2, "v": "z2", "ts": None})],
              "npu": [{"k": 1, "v": None, "ts": "t1"}, {"k": 2, "v": "q", "ts": None}],
              "nul": [{"k": 2, "v": "n2", "ts": "b"}, {"k": 3, "v": "n3", "ts": "c"}],
              "la": "  ", "lad": "u;v", "cd": [2, 1]},
             {"id": 2, "kt": None, "npu": None, "nul": None, "la": None, "lad": None, "cd": None}],
            [{"id": 1, "kt": None, "npu": None, "nul": None, "la": "b", "lad": "v;w", "cd": None}],
        ],
        "expected": [
            {"id": 1, "kt": [("x", {"k": 1, "v": "x1", "ts": "2024-01-02"}), ("y", {"k": 2, "v": "y2", "ts": "2"})],
             "npu": [{"k": 1, "v": "p", "ts": "t1"}, {"k": 2, "v": "q", "ts": None}],
             "nul": [{"k": 1, "v": "n1", "ts": "a"}, {"k": 2, "v": "n2", "ts": "b"}],
             "la": "a,b", "lad": "t;u;v;w", "cd": [1, 2, 3]},
            {"id": 2, "kt": None, "npu": None, "nul": None, "la": None, "lad": None, "cd": None}],
        "unordered": ("kt", "npu", "cd"),
    },
}


# pypaimon, in one process: create and write each case's table commit by commit, then read every table
PYPAIMON_SCRIPT = '''
import json
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema
PLAN = json.loads(PLAN_JSON)
cat = CatalogFactory.create({"warehouse": PLAN["warehouse"]})
cat.create_database("db", True)
for name, (options, files) in PLAN["writes"].items():
    first = pq.read_table(files[0])
    cat.create_table("db." + name, Schema.from_pyarrow_schema(first.schema, primary_keys=["id"], options=options),
                     True)
    t = cat.get_table("db." + name)
    for f in files:
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        for b in pq.read_table(f).to_batches():
            w.write_arrow_batch(b)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
for name in PLAN["reads"]:
    t = cat.get_table("db." + name)
    rb = t.new_read_builder()
    pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), PLAN["out"] + "/" + name + ".parquet")
'''


@pytest.fixture(scope="module")
def written(oracles_ready, tmp_path_factory) -> Path:
    """Each case written by pypaimon (p_<case>) and by paimon_ds (d_<case>), and pypaimon's reads of all."""
    tmp = tmp_path_factory.mktemp("pypaimon-merge")
    wh, out = tmp / "wh", tmp / "out"
    out.mkdir()
    plan: dict[str, Any] = {"warehouse": str(wh), "out": str(out), "writes": {}, "reads": []}
    for name, case in CASES.items():
        options = {**case["options"], "bucket": "2"}
        files = []
        for i, rows in enumerate(case["commits"]):
            data = pa.Table.from_pylist(rows, schema=case["schema"])
            files.append(str(tmp / f"{name}-{i}.parquet"))
            pq.write_table(data, files[-1])
            table = Table.for_write(str(wh / "db.db" / f"d_{name}"), case["schema"], {**options, "primary-key": "id"})
            tw = table.new_write()
            tw.write_arrow(data)
            table.new_commit().commit(tw.prepare_commit())
        plan["writes"][f"p_{name}"] = [options, files]
        plan["reads"] += [f"p_{name}", f"d_{name}"]
    oracle = Oracle("pypaimon", tmp)
    oracle.exec(str(wh / "db.db" / "d_sort_desc"), PYPAIMON_SCRIPT.replace("PLAN_JSON", repr(json.dumps(plan))))
    return tmp


@pytest.mark.parametrize("name", list(CASES))
def test_both_ways_with_pypaimon(written, name):
    case = CASES[name]
    schema, unordered = case["schema"], case.get("unordered", ())
    expected = canonical(case["expected"], unordered)
    for side in ("p", "d"):
        here = Table.load(str(written / "wh/db.db" / f"{side}_{name}")).to_arrow().cast(schema).to_pylist()
        there = pq.read_table(written / "out" / f"{side}_{name}.parquet").cast(schema).to_pylist()
        assert canonical(here, unordered) == expected, (side, "read here")
        assert canonical(there, unordered) == expected, (side, "read by pypaimon")
