"""Partial-update sequence groups, aggregate functions inside them, their retraction, and the row-removing options,
on key-value tables (no Spark, no oracle).

The sequences are Apache Paimon's own unit tests (master's PartialUpdateMergeFunctionTest: testSequenceGroup,
testMultiSequenceFields, testSequenceGroupPartialDelete, testSequenceGroupDefaultAggFunc,
testPartialUpdateWithAggregation, testMultiSequenceFieldsPartialUpdateWithAggregation, testFirstValue...): Java
adds records one by one to one merge function and checks the row after some of them; here the same records, up
to each checked one, are merged at once.
Where Paimon's versions differ (see paimon_ds/mergetree/partial_update.py) the expected value says which is kept.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import OptionError
from paimon_ds.mergetree.kv import DELETE, INSERT, KIND, UPDATE_AFTER, UPDATE_BEFORE
from paimon_ds.mergetree.merge import merge_engine
from paimon_ds.options.registry import Options
from paimon_ds.schema.checks import check_writable
from paimon_ds.schema.manager import TableSchema

KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


def ints(n: int) -> pa.Schema:
    return pa.schema([pa.field("f0", pa.int32(), nullable=False)] + [(f"f{i}", pa.int32()) for i in range(1, n)])


def engine(options: dict[str, str], schema: pa.Schema, pk: tuple[str, ...] = ("f0",)):
    ts = TableSchema.from_arrow(schema, [], list(pk), {"bucket": "1", "merge-engine": "partial-update", **options})
    return merge_engine(ts, Options(ts.options))


def run(options: dict[str, str], schema: pa.Schema, records: list, drop_retract: bool = False) -> list[tuple]:
    """Merge ``records`` ((kind, values...) or values..., all of one key unless f0 differs) at once:
    [(kind, values...)] per key."""
    eng = engine(options, schema)
    kinds, rows = [], []
    for r in records:
        if isinstance(r[0], str):
            kinds.append(KINDS[r[0]])
            rows.append(r[1:])
        else:
            kinds.append(INSERT)
            rows.append(r)
    data = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
    kv = eng.layout.sort(eng.layout.to_kv(data, np.arange(len(rows), dtype=np.int64), np.array(kinds, np.int8)))
    out = eng.merge(kv, drop_retract)
    names = {v: k for k, v in KINDS.items()}
    return [(names[r[KIND]], *[r[n] for n in schema.names]) for r in out.to_pylist()]


def states(options: dict[str, str], schema: pa.Schema, script: list) -> list[tuple]:
    """Java's `add ... validate` script: the merged row after each checked record ("check": the values)."""
    records, got, want = [], [], []
    for step in script:
        if step[0] == "check":
            [(_, *values)] = run(options, schema, records)
            got.append(tuple(values))
            want.append(tuple(step[1:]))
        else:
            records.append(step)
    assert got == want
    return got


def test_sequence_group():
    states({"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"}, ints(7), [
        (1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None), ("check", 1, 2, 2, 2, 1, 1, 1),
        (1, 3, 3, 1, 3, 3, 3), ("check", 1, 2, 2, 2, 3, 3, 3),
        ("-D", 1, 1, 1, 3, 1, 1, None), ("check", 1, None, None, 3, 3, 3, 3),
        ("-D", 1, 1, 1, 3, 1, 1, 4), ("check", 1, None, None, 3, None, None, 4),
        (1, 4, 4, 4, 5, 5, 5), ("check", 1, 4, 4, 4, 5, 5, 5),
        ("-D", 1, 1, 1, 6, 1, 1, 6), ("check", 1, None, None, 6, None, None, 6),
    ])


def test_multiple_sequence_fields_per_group():
    options = {"fields.f3,f4.sequence-group": "f1,f2", "fields.f7,f8.sequence-group": "f5,f6"}
    # a group whose sequence fields are all null is left alone; (1, null) is older than (1, 3): nulls first
    states(options, ints(9), [
        (1, None, None, None, None, 1, 1, 1, 3), (1, 2, 2, None, None, 2, 2, 1, 3),
        ("check", 1, None, None, None, None, 2, 2, 1, 3)])
    states(options, ints(9), [
        (1, 1, 1, 1, 1, 1, 1, 1, 3), (1, 2, 2, 2, 2, 2, 1, 1, None), ("check", 1, 2, 2, 2, 2, 1, 1, 1, 3),
        (1, 1, 3, 1, 3, 3, 3, 3, 2), ("check", 1, 2, 2, 2, 2, 3, 3, 3, 2),
        ("-D", 1, 1, 1, 3, 3, 1, 1, None, None), ("check", 1, None, None, 3, 3, 3, 3, 3, 2),
        ("-D", 1, 1, 1, 3, 1, 1, 1, 4, 4), ("check", 1, None, None, 3, 3, None, None, 4, 4),
        (1, 4, 4, 4, 4, 5, 5, 5, 5), ("check", 1, 4, 4, 4, 4, 5, 5, 5, 5),
        ("-D", 1, 1, 1, 6, 1, 1, 1, 6, 1), ("check", 1, None, None, 6, 1, None, None, 6, 1),
    ])


def test_default_aggregate_function_in_groups():
    states({"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5",
            "fields.default-aggregate-function": "last_non_null_value"}, ints(7), [
        (1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None), ("check", 1, 2, 2, 2, 1, 1, 1),
        (1, 3, 3, 1, 3, 3, 3), ("check", 1, 2, 2, 2, 3, 3, 3),
        (1, 4, None, 4, 5, None, 5), ("check", 1, 4, 2, 4, 5, 3, 5)])


def test_aggregate_functions_in_groups_with_retraction():
    """testPartialUpdateWithAggregation: f1 orders f2 (sum), f3, f4 (last_value, ignore-retract); f7 orders f6
    (last_non_null_value, ignore-retract); f5 is in no group; an older row aggregates reversed."""
    options = {"fields.f1.sequence-group": "f2,f3,f4", "fields.f7.sequence-group": "f6",
               "fields.f0.aggregate-function": "listagg",  # a primary key: never aggregated
               "fields.f2.aggregate-function": "sum", "fields.f4.aggregate-function": "last_value",
               "fields.f6.aggregate-function": "last_non_null_value",
               "fields.f4.ignore-retract": "true", "fields.f6.ignore-retract": "true"}
    states(options, ints(8), [
        (1, 1, 1, 1, 1, 1, 1, 1), (1, 2, 1, 2, 2, 2, 2, 0), ("check", 1, 2, 2, 2, 2, 2, 1, 1),
        (1, 1, 1, 1, 1, 1, 2, 0), ("check", 1, 2, 3, 2, 2, 1, 1, 1),
        (1, 1, -1, 1, 1, 2, 2, 0),
        (1, 3, None, None, None, None, None, 2), ("check", 1, 3, 2, None, None, 2, 1, 2),
        (1, 3, 1, 1, 1, 1, 1, 3), ("check", 1, 3, 3, 1, 1, 1, 1, 3),
        ("-U", 1, 3, 2, 1, 1, 1, 1, 3), ("check", 1, 3, 1, None, 1, 1, 1, 3),
        ("-D", 1, 3, 2, 1, 1, 1, 1, 3), ("check", 1, 3, -1, None, 1, 1, 1, 3),
        ("-D", 1, 2, 2, 1, 1, 1, 1, 3), ("check", 1, 3, -3, None, 1, 1, 1, 3),  # an older retraction retracts too
    ])


def test_aggregate_functions_in_multi_field_groups():
    """testMultiSequenceFieldsPartialUpdateWithAggregation, from its second record: its first two (an insert
    whose group is empty, then a DELETE of that empty group) merge alike in every version."""
    options = {"fields.f1,f2.sequence-group": "f3,f4,f5", "fields.f7,f8.sequence-group": "f6",
               "fields.f3.aggregate-function": "sum", "fields.f4.aggregate-function": "first_value",
               "fields.f5.aggregate-function": "last_value", "fields.f6.aggregate-function": "last_non_null_value",
               "fields.f4.ignore-retract": "true", "fields.f6.ignore-retract": "true"}
    states(options, ints(9), [
        (1, None, None, 1, 1, 1, 1, 1, 1), ("check", 1, None, None, None, None, None, 1, 1, 1),
        ("-D", 1, None, None, 1, 1, 1, 0, 1, 1), ("check", 1, None, None, None, None, None, 1, 1, 1),
        (1, 1, 1, 1, 1, 1, 1, 1, 1), (1, 1, 2, 1, 2, 2, None, 2, 0), ("check", 1, 1, 2, 2, 1, 2, 1, 2, 0),
        (1, 1, 1, 1, 3, 1, 1, 2, 0), ("check", 1, 1, 2, 3, 3, 2, 1, 2, 0),  # older: first_value takes it
        (1, 1, 3, None, None, None, None, 4, 2), ("check", 1, 1, 3, 3, 3, None, 1, 4, 2),
        (1, 2, 3, 1, 1, 1, 1, 4, 3), ("check", 1, 2, 3, 4, 3, 1, 1, 4, 3),
        ("-U", 1, 2, 3, 2, 1, 2, 1, 4, 3), ("check", 1, 2, 3, 2, 3, None, 1, 4, 3),
        ("-D", 1, 3, 2, 3, 1, 1, 4, 3, None), ("check", 1, 3, 2, -1, 3, None, 1, 4, 3),
        ("-D", 1, 2, 2, 2, 1, 1, 1, 1, 3), ("check", 1, 3, 2, -3, 3, None, 1, 4, 3),
    ])


def test_first_value_in_a_group_takes_older_rows():
    """testFirstValue: f1 orders f2 (first_value) and f3; an older row's value is the first one."""
    options = {"fields.f1.sequence-group": "f2,f3", "fields.f2.aggregate-function": "first_value",
               "fields.f3.aggregate-function": "last_value"}
    states(options, ints(4), [
        (1, 1, 1, 1), (1, 2, 2, 2), ("check", 1, 2, 1, 2),
        (1, 0, 3, 3), ("check", 1, 2, 3, 2)])


def test_remove_record_on_sequence_group():
    """testSequenceGroupPartialDelete (Paimon 1.x): a -D accepted by the f6 group removes the row; a -D of a
    group not named (f3) retracts as usual. The removed row is a DELETE carrying the delete's values."""
    options = {"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5",
               "partial-update.remove-record-on-sequence-group": "f6"}
    script = [
        (1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None), ("check", 1, 2, 2, 2, 1, 1, 1),
        (1, 3, 3, 1, 3, 3, 3), ("check", 1, 2, 2, 2, 3, 3, 3),
        ("-D", 1, 1, 1, 3, 1, 1, None), ("check", 1, None, None, 3, 3, 3, 3),
        ("-D", 1, 1, 1, 3, 1, 1, 4), ("check", 1, 1, 1, 3, 1, 1, 4),
        (1, 4, 4, 4, 5, 5, 5), ("check", 1, 4, 4, 4, 5, 5, 5),
        ("-D", 1, 1, 1, 6, 1, 1, 6), ("check", 1, 1, 1, 6, 1, 1, 6),
    ]
    states(options, ints(7), script)
    records = [s for s in script if s[0] != "check"]
    assert [r[0] for r in run(options, ints(7), records[:5])] == ["-D"]
    assert run(options, ints(7), records[:5], drop_retract=True) == []
    assert [r[0] for r in run(options, ints(7), records[:6])] == ["+I"]
    # after a removal the row starts from nothing: an older row of the group is taken (1.x before 1.4;
    # 1.4+ seeds the row with the delete's values, and would keep f6 = 6)
    assert run(options, ints(7), [*records, (1, None, None, None, 7, 7, 2)]) == [
        ("+I", 1, None, None, None, 7, 7, 2)]
    # a later -D not newer than the group's sequence removes nothing
    assert run(options, ints(7), [*records[:5], (1, 4, 4, 4, 5, 5, 5), ("-D", 1, 1, 1, 1, 1, 1, 2)]) == [
        ("+I", 1, 4, 4, 4, 5, 5, 5)]


def test_removals_chain_one_after_another():
    """Whether a -D removes the row depends on the removals before it: after one, the group starts from nothing."""
    options = {"fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "g"}
    schema = pa.schema([pa.field("f0", pa.int32(), nullable=False), ("g", pa.int32()), ("a", pa.int32())])
    records = [(1, 5, 1), ("-D", 1, 6, None), (1, 2, 2), ("-D", 1, 3, None), (1, 1, 7)]
    assert run(options, schema, records) == [("+I", 1, 1, 7)]
    assert run(options, schema, records[:4]) == [("-D", 1, 3, None)]
    # without the first removal the second -D (3 < 5) would be older than the group and remove nothing
    assert run(options, schema, [records[0], records[3]]) == [("+I", 1, 5, 1)]


def test_a_key_of_retractions_only_is_an_insert_row_as_in_paimon_0_9():
    """A merge that meets no insert (a -U / -D merged alone, as the writer's buffer does) gives an INSERT row
    with the group retracted and its primary key (Paimon 0.9; 1.1+ makes it a DELETE, which then retracts
    the group's aggregates a second time when merged with the older rows)."""
    options = {"fields.g.sequence-group": "a,s", "fields.s.aggregate-function": "sum"}
    schema = pa.schema([pa.field("f0", pa.int32(), nullable=False), ("g", pa.int32()), ("a", pa.int32()),
                        ("s", pa.int64()), ("u", pa.int32())])
    alone = run(options, schema, [("-U", 1, 2, 9, 5, 9)])
    assert alone == [("+I", 1, 2, None, -5, None)]
    # merged again with the older row: the sum is retracted once
    assert run(options, schema, [(1, 1, 3, 5, 4), ("+I", *alone[0][1:])]) == [("+I", 1, 2, None, 0, 4)]
    assert run(options, schema, [(1, 1, 3, 5, 4), ("-U", 1, 2, 9, 5, 9)]) == [("+I", 1, 2, None, 0, 4)]


def test_groups_and_ignore_delete():
    options = {"fields.g.sequence-group": "a", "ignore-delete": "true"}
    schema = pa.schema([pa.field("f0", pa.int32(), nullable=False), ("g", pa.int32()), ("a", pa.int32())])
    assert run(options, schema, [(1, 1, 1), ("-D", 1, 2, 2), (1, 0, 5)]) == [("+I", 1, 1, 1)]


def test_ungrouped_columns_keep_the_last_non_null_insert():
    options = {"fields.g.sequence-group": "a"}
    schema = pa.schema([pa.field("f0", pa.int32(), nullable=False), ("g", pa.int32()), ("a", pa.int32()),
                        ("u", pa.string())])
    assert run(options, schema, [(1, 2, 1, "x"), (1, 1, 9, None), ("-D", 1, 3, 1, "gone?"), (1, None, 7, "y")]) == [
        ("+I", 1, 3, None, "y")]


def test_many_keys_at_once_match_key_by_key():
    """The vectorised merge of many keys equals merging each key alone."""
    options = {"fields.g1.sequence-group": "a,s", "fields.g2,g3.sequence-group": "b,c",
               "fields.s.aggregate-function": "sum", "fields.c.aggregate-function": "max",
               "fields.c.ignore-retract": "true"}
    schema = pa.schema([pa.field("f0", pa.int32(), nullable=False), ("g1", pa.int32()), ("a", pa.int32()),
                        ("s", pa.int64()), ("g2", pa.int32()), ("g3", pa.int32()), ("b", pa.string()),
                        ("c", pa.int32()), ("u", pa.int32())])
    rng = np.random.default_rng(5)
    records = []
    for _ in range(400):
        def maybe(v):
            return None if rng.random() < 0.25 else v
        kind = ["+I", "+U", "-U", "-D"][rng.choice(4, p=[0.5, 0.2, 0.15, 0.15])]
        records.append((kind, int(rng.integers(0, 30)), maybe(int(rng.integers(0, 6))), maybe(int(rng.integers(9))),
                        maybe(int(rng.integers(-5, 5))), maybe(int(rng.integers(0, 3))), maybe(int(rng.integers(3))),
                        maybe(f"b{rng.integers(9)}"), maybe(int(rng.integers(9))), maybe(int(rng.integers(9)))))
    together = run(options, schema, records)
    alone = [row for k in sorted({r[1] for r in records}) for row in run(options, schema,
                                                                          [r for r in records if r[1] == k])]
    assert together == alone and len(together) == 30


# ------------------------------------------------------------------------------------------ checks

def check(options: dict[str, str], schema: pa.Schema, pk: tuple[str, ...] = ("f0",)) -> None:
    ts = TableSchema.from_arrow(schema, [], list(pk), {"bucket": "1", "merge-engine": "partial-update", **options})
    check_writable("memory://t", ts, Options(ts.options))


@pytest.mark.parametrize("options, message", [
    ({"fields.f1.sequence-group": "f2,nope"}, "Field nope can not be found in table schema"),
    ({"fields.nope.sequence-group": "f2"}, "Field nope can not be found in table schema"),
    ({"fields.f1.sequence-group": "f2", "fields.f3.sequence-group": "f2"},
     "Field f2 is defined repeatedly by multiple groups"),
    ({"fields.f1.sequence-group": "f2", "fields.f1.aggregate-function": "max"},
     "Should not defined aggregation function on sequence group: f1"),
    ({"fields.f2.aggregate-function": "sum"}, "Must use sequence group for aggregation functions but not found "
                                             "for field f2"),
    ({"fields.f1.sequence-group": "f2", "fields.f3.aggregate-function": "sum"},
     "Must use sequence group for aggregation functions but not found for field f3"),
    ({"fields.f1.sequence-group": "f2", "fields.default-aggregate-function": "sum"},
     "Must use sequence group for aggregation functions but not found for field f3"),
    ({"fields.f1.sequence-group": "f0,f2"}, "contains primary key field 'f0'"),
    ({"fields.f1.sequence-group": "f2", "partial-update.remove-record-on-delete": "true"},
     "sequence-group and partial-update.remove-record-on-delete have conflicting behavior"),
    ({"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"},
     "ignore-delete and partial-update.remove-record-on-delete have conflicting behavior"),
    ({"fields.f1.sequence-group": "f2", "ignore-delete": "true",
      "partial-update.remove-record-on-sequence-group": "f1"},
     "ignore-delete and partial-update.remove-record-on-sequence-group have conflicting behavior"),
    ({"fields.f1.sequence-group": "f2", "partial-update.remove-record-on-sequence-group": "f2"},
     "field 'f2' defined in 'partial-update.remove-record-on-sequence-group' option must be part of sequence"),
    ({"fields.f1.sequence-group": "f2", "fields.f2.aggregate-function": "median"},
     "unknown aggregate function 'median'"),
    ({"fields.f1.sequence-group": "f2", "fields.f2.aggregate-function": "bool_and"},
     "Data type for bool and column 'f2' must be 'BooleanType'"),
])
def test_refused_as_paimon_refuses(options, message):
    with pytest.raises(OptionError, match=message):
        check(options, ints(4))


def test_accepted_configurations():
    check({"fields.f1.sequence-group": "f2", "fields.f3.aggregate-function": "last_non_null_value"}, ints(4))
    check({"fields.f1,f3.sequence-group": "f2", "fields.f2.aggregate-function": "sum",
           "partial-update.remove-record-on-sequence-group": "f3"}, ints(4))
    check({"fields.default-aggregate-function": "last_non_null_value"}, ints(4))


def test_a_table_paimon_0_9_created_with_an_ungrouped_aggregate_reads_as_0_9_merged_it():
    """Paimon 0.9 let any column of a table with sequence groups aggregate; 1.x refuses such a table (a write
    here does too), but its files read as 0.9 merges them: the ungrouped column folds the inserts."""
    options = {"fields.f1.sequence-group": "f2", "fields.f3.aggregate-function": "sum"}
    assert run(options, ints(4), [(1, 1, 1, 5), (1, 0, 2, 7), ("-D", 1, 2, 0, 9)]) == [("+I", 1, 2, None, 12)]
    with pytest.raises(OptionError, match="Must use sequence group"):
        check(options, ints(4))


def test_retraction_of_a_function_that_cannot_is_refused_where_it_would_reach_it():
    eng = engine({"fields.f1.sequence-group": "f2", "fields.f2.aggregate-function": "max",
                  "fields.f3.sequence-group": "f4"}, ints(5))
    rows = pa.Table.from_pylist([{"f0": 1, "f1": None, "f2": 1, "f3": 1, "f4": 1}], schema=ints(5))
    eng.check_input(np.array([DELETE], np.int8), rows)  # its group is empty in the row: nothing retracted
    rows = pa.Table.from_pylist([{"f0": 1, "f1": 1, "f2": 1, "f3": 1, "f4": 1}], schema=ints(5))
    with pytest.raises(OptionError, match=r"column\(s\) \['f2'\].*cannot retract.*ignore-retract"):
        eng.check_input(np.array([DELETE], np.int8), rows)
    eng.check_input(np.array([INSERT], np.int8), rows)


def test_deletes_without_groups_or_options_are_refused():
    eng = engine({}, ints(3))
    with pytest.raises(OptionError, match="cannot take delete rows.*sequence-group"):
        eng.check_input(np.array([INSERT, DELETE], np.int8))



def test_a_grouped_sum_retracted_in_a_later_commit_through_table_writes(tmp_path):
    """The retraction, merged alone in its commit's write buffer, then with the older rows at read and by a
    full compaction, is applied once (see partial_update.py for what Paimon 1.1+ reads here)."""
    from paimon_ds import Table
    from paimon_ds.operation.compact import compact_in_process
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("op", pa.string()), ("g", pa.int32()),
                        ("a", pa.string()), ("s", pa.int64()), ("u", pa.string())])
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
            "fields.g.sequence-group": "a,s", "fields.s.aggregate-function": "sum"}

    def write(rows):
        table = Table.for_write(path, schema, opts)
        tw = table.new_write()
        tw.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        table.new_commit().commit(tw.prepare_commit())

    def read():
        return sorted(Table.load(path).to_arrow().to_pylist(), key=lambda r: r["id"])
    write([{"id": 1, "op": "+I", "g": 1, "a": "x", "s": 5, "u": "kept"}])
    write([{"id": 1, "op": "-U", "g": 2, "a": "x", "s": 5, "u": None},
           {"id": 2, "op": "-D", "g": 1, "a": "never inserted", "s": 3, "u": None}])
    expected = [{"id": 1, "op": "+I", "g": 2, "a": None, "s": 0, "u": "kept"},
                {"id": 2, "op": None, "g": 1, "a": None, "s": -3, "u": None}]
    assert read() == expected
    compact_in_process(Table.load(path), None, full=True)
    assert read() == expected
