"""The partial-update merge engine (Paimon's PartialUpdateMergeFunction), over whole key groups at once.

Without sequence groups each column keeps the last non-null value written for the key. With sequence groups
(`fields.<s>.sequence-group = a,b`, or several ordering fields `fields.<s1>,<s2>.sequence-group`) the columns of a
group change only with rows whose group sequence (compared field by field, nulls first) is not older than the
group's current one; a row whose sequence fields are all null leaves the group alone; columns in no group keep their
last non-null value. Retractions (-U / -D) with groups null the group's columns, advance its sequence, and retract
its aggregate functions (`fields.<f>.aggregate-function` on a grouped column: an older row aggregates reversed).
Running those rules row by row amounts to: per group, a row is "accepted" when its sequence (a dense rank) is not
below the running maximum of the rows before it; that is computed for all keys with numpy.

Version notes (Java classes of Paimon master unless said):
- A merge whose rows are all retractions (a commit that retracts a key, merged alone in the write buffer) gives
  an INSERT row of the retracted groups with the key's primary key. Paimon 0.9 and 1.0 give the same row with a
  null primary-key column, which they write into the NOT NULL column (a file no reader can read); 1.1+ gives a
  DELETE row when no insert was met ("meetInsert"), which a later merge with the key's older rows takes as a
  retraction again: a grouped sum retracted in its own commit reads 5 - (-5) = 10 in 1.1-1.3, and 5 - 0 = 5 in
  1.4+ (which also seeds the row with the retraction's values), where the rule kept here reads 0 however the
  rows are grouped into merges (write buffers, spills, compactions). A lone -U with remove-record-on-delete is
  likewise ignored here (1.1+ makes it a DELETE that then removes the row).
- `partial-update.remove-record-on-delete` (no groups) and `partial-update.remove-record-on-sequence-group` (1.x):
  the DELETE empties the row and later rows rebuild it from nothing; the result is a DELETE row (with the delete's
  values) when the delete is the key's last row. -U rows are ignored with remove-record-on-delete. Paimon 0.9 lost
  the delete (and failed on a later insert); 1.4+ seeds later rows with the delete's values.
- Sequence fields never aggregate, and an aggregate function on a column outside every group is refused unless it
  is last_non_null_value (1.x); for tables 0.9 created with one, it folds that column's inserts as 0.9 did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options.registry import OptionError, Options
from ..schema.manager import TableSchema
from .aggregators import AGG, RETRACT, REV, SKIP, Aggregator, create_aggregator, field_option, group_index, last_index
from .engine import MergeEngine, column_array, filter_rows, group_ends, retract_mask
from .kv import DELETE, INSERT, KIND, SEQ, UPDATE_BEFORE, dense_rank, group_starts

SEQUENCE_GROUP = "sequence-group"


@dataclass
class SequenceGroup:
    sequence: list[str]  # the ordering fields (the option key's names)
    columns: list[str]  # the columns it protects (the option value)
    option: str
    removes_on_delete: bool = False  # a -D accepted by this group removes the row (remove-record-on-sequence-group)
    aggregates: dict[str, Aggregator] = field(default_factory=dict)


def _resolve(name: str, names: list[str], option: str) -> str:
    if name in names:
        return name
    lower = [n for n in names if n.lower() == name.lower()]  # Spark lower-cases option keys
    if len(lower) == 1:
        return lower[0]
    raise OptionError(f"Field {name} can not be found in table schema (option {option!r})")


def sequence_groups(schema: TableSchema, options: Options) -> list[SequenceGroup]:
    """The table's sequence groups, checked as Paimon checks them."""
    names = schema.field_names
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key, value in sorted(options.raw.items()):
        if not (key.startswith("fields") and key.endswith(SEQUENCE_GROUP)):
            continue
        inner = key[len("fields."):-len("." + SEQUENCE_GROUP)]
        sequence = [_resolve(n, names, key) for n in inner.split(",")]
        columns = [_resolve(n, names, key) for n in value.split(",")]
        for c in columns:
            if c in owner:
                raise OptionError(f"Field {c} is defined repeatedly by multiple groups: {owner[c]} and {key}")
            owner[c] = key
        groups.append(SequenceGroup(sequence, columns, key))
    for g in groups:
        for s in g.sequence:
            # Paimon lets a sequence field be one of another group's columns only by accident of map order
            if s in owner and owner[s] != g.option:
                raise OptionError(f"sequence field {s} of {g.option!r} is a column of the group {owner[s]!r}")
            if options.get(f"fields.{s}.aggregate-function") is not None:
                raise OptionError(f"Should not defined aggregation function on sequence group: {s} "
                                  f"(option 'fields.{s}.aggregate-function')")
    seq_fields = [s for g in groups for s in g.sequence]
    dup = sorted({s for s in seq_fields if seq_fields.count(s) > 1})
    if dup:
        raise OptionError(f"sequence field(s) {dup} order more than one sequence group")
    return groups


class PartialUpdate(MergeEngine):
    def __init__(self, schema: TableSchema, options: Options) -> None:
        super().__init__(schema, options)
        self.remove_on_delete = options.get("partial-update.remove-record-on-delete")
        self.groups = sequence_groups(schema, options)
        names = schema.field_names
        self.value_names = names
        on_group = options.raw.get("partial-update.remove-record-on-sequence-group")
        if self.remove_on_delete and self.ignore_delete:
            raise OptionError("ignore-delete and partial-update.remove-record-on-delete have conflicting behavior "
                              "so should not be enabled at the same time.")
        if self.remove_on_delete and self.groups:
            raise OptionError("sequence-group and partial-update.remove-record-on-delete have conflicting behavior "
                              "so should not be enabled at the same time.")
        if on_group is not None:
            if self.ignore_delete:
                raise OptionError("ignore-delete and partial-update.remove-record-on-sequence-group have conflicting "
                                  "behavior so should not be enabled at the same time.")
            wanted = [_resolve(n, names, "partial-update.remove-record-on-sequence-group")
                      if any(n.lower() == x.lower() for x in names) else n for n in on_group.split(",")]
            seq_fields = {s for g in self.groups for s in g.sequence}
            if not set(wanted) <= seq_fields:
                raise OptionError(f"field '{on_group}' defined in 'partial-update.remove-record-on-sequence-group' "
                                  "option must be part of sequence groups")
            for g in self.groups:
                g.removes_on_delete = any(s in wanted for s in g.sequence)
        # aggregate functions: on grouped columns; elsewhere only last_non_null_value (Paimon 1.x), or what a
        # table Paimon 0.9 created has (0.9 let any column of a table with groups aggregate)
        default = options.get("fields.default-aggregate-function")
        grouped = {c: g for g in self.groups for c in g.columns}
        seq_fields = {s for g in self.groups for s in g.sequence}
        self.ungrouped_aggregates: dict[str, Aggregator] = {}
        self.misplaced: list[str] = []
        for f in schema.fields:
            if f.name in seq_fields or f.name in schema.primary_keys:
                continue
            fn = field_option(options, f.name, "aggregate-function") or default
            if fn is None:
                continue
            agg = create_aggregator(fn, f, options)
            if f.name in grouped:
                grouped[f.name].aggregates[f.name] = agg
            elif fn != "last_non_null_value":
                self.misplaced.append(f.name)
                self.ungrouped_aggregates[f.name] = agg
        if self.misplaced and not self.groups:
            raise OptionError(f"Must use sequence group for aggregation functions but not found for field "
                              f"{self.misplaced[0]} (partial-update)")
        self.ignore_retract = {f.name: field_option(options, f.name, "ignore-retract") for f in schema.fields}

    def strict_problems(self) -> list[str]:
        problems = [f"Must use sequence group for aggregation functions but not found for field {name} "
                    "(partial-update, Paimon 1.x)" for name in self.misplaced]
        for g in self.groups:
            for c in [*g.sequence, *g.columns]:
                if c in self.schema.primary_keys:
                    problems.append(f"The sequence-group '{g.option}' contains primary key field '{c}', which is not "
                                    "allowed. Primary key columns cannot be put in sequence-group.")
            for name, agg in g.aggregates.items():
                if agg.name == "listagg" and self.schema.field(name).type.params != (2147483647,):
                    problems.append(f"Data type for list agg column must be STRING (unbounded VARCHAR) "
                                    f"(column {name!r})")
        return problems

    def check_input(self, kinds: np.ndarray, rows: pa.Table | pa.RecordBatch | None = None) -> None:
        retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.ignore_delete or not retract.any():
            return
        if self.groups:
            # a retraction reaches the aggregate functions of the groups it is not empty in
            for g in self.groups:
                bad = [n for n, a in g.aggregates.items() if not a.retractable and not self.ignore_retract[n]]
                if not bad:
                    continue
                if rows is not None:
                    nonempty = np.zeros(len(kinds), dtype=bool)
                    for s in g.sequence:
                        nonempty |= rows.column(rows.schema.get_field_index(s)).is_valid().to_numpy(
                            zero_copy_only=False)
                    if not (nonempty & retract).any():
                        continue
                raise OptionError(f"aggregate function(s) of column(s) {bad} (sequence group {g.option!r}) cannot "
                                  "retract DELETE/UPDATE_BEFORE rows; set 'fields.<f>.ignore-retract' = 'true'")
            return
        if self.remove_on_delete:
            return  # Paimon takes DELETE rows and ignores UPDATE_BEFORE ones
        raise OptionError("the partial-update merge engine cannot take delete rows; set 'ignore-delete' or "
                          "'partial-update.remove-record-on-delete' = 'true', or use sequence groups "
                          "('fields.<f>.sequence-group') to retract columns")

    # ------------------------------------------------------------------------------- merge

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        kinds = kv.column(KIND).to_numpy()
        if self.ignore_delete:
            kv = self.drop_retracts(kv)
        elif self.remove_on_delete:
            kv = filter_rows(kv, kinds != UPDATE_BEFORE)  # remove-record-on-delete ignores -U rows
        elif not self.groups and ((kinds == UPDATE_BEFORE) | (kinds == DELETE)).any():
            raise OptionError("the partial-update merge engine cannot take delete rows; set 'ignore-delete' or "
                              "'partial-update.remove-record-on-delete' = 'true' (as Paimon refuses them)")
        if kv.num_rows == 0:
            return kv
        out = self._merge_groups(kv) if self.groups else self._merge_plain(kv)
        return self.drop_retracts(out) if drop_retract else out

    def _merge_plain(self, kv: pa.Table) -> pa.Table:
        """No groups: the last non-null value of each column after the key's last DELETE (remove-record-on-delete);
        a key whose last row is a DELETE becomes that DELETE."""
        kinds = kv.column(KIND).to_numpy()
        n = kv.num_rows
        starts = group_starts(kv, self.key_columns)
        ends = group_ends(starts, n)
        is_delete = kinds == DELETE
        idx = np.arange(n)
        if is_delete.any():
            pos = np.where(is_delete, idx, -1)
            last_delete = np.maximum.reduceat(pos, starts)[group_index(starts, n)]
            keep = idx > last_delete
            ends_in_delete = is_delete[ends]
        else:
            keep = None
            ends_in_delete = None
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            col = kv.column(i)
            if name in self.key_columns or name == SEQ:
                out_cols.append(col.take(pa.array(ends)))
                continue
            if name == KIND:
                kind = np.full(len(starts), INSERT, dtype=np.int8) if ends_in_delete is None else \
                    np.where(ends_in_delete, DELETE, INSERT).astype(np.int8)
                out_cols.append(pa.array(kind))
                continue
            valid = col.is_valid().to_numpy(zero_copy_only=False)
            if keep is not None:
                valid &= keep
            pick = np.maximum.reduceat(np.where(valid, idx, -1), starts)
            if ends_in_delete is not None:
                pick = np.where(ends_in_delete, ends, pick)
            out_cols.append(col.take(pa.array(pick, mask=pick < 0)))
        return pa.Table.from_arrays(out_cols, schema=kv.schema)

    def _merge_groups(self, kv: pa.Table) -> pa.Table:
        kv = kv.combine_chunks()
        n = kv.num_rows
        kinds = kv.column(KIND).to_numpy()
        retract = retract_mask(kv)
        insert = ~retract
        starts = group_starts(kv, self.key_columns)
        ends = group_ends(starts, n)
        key_start = np.zeros(n, dtype=bool)
        key_start[starts] = True
        ranks, nonempty = {}, {}
        for g in self.groups:
            seq = kv.select(g.sequence)
            ne = np.zeros(n, dtype=bool)
            for c in seq.columns:
                ne |= c.is_valid().to_numpy(zero_copy_only=False)
            nonempty[g.option] = ne
            ranks[g.option] = np.where(ne, dense_rank(seq) + 1, 0)

        # rows that remove the whole row (remove-record-on-sequence-group): a -D accepted by such a group; whether
        # a later -D is accepted depends on the removals before it, so they are found in rounds, the first new one
        # of each segment per round
        resets = np.zeros(n, dtype=bool)
        removers = [g for g in self.groups if g.removes_on_delete]
        if removers and (kinds == DELETE).any():
            while True:
                segment = _segments(key_start, resets)
                found = np.zeros(n, dtype=bool)
                for g in removers:
                    found |= _accepted(ranks[g.option], nonempty[g.option], segment)
                new = found & (kinds == DELETE) & ~resets
                if not new.any():
                    break
                first = np.minimum.reduceat(np.where(new, np.arange(n), n), np.flatnonzero(
                    np.append(True, segment[1:] != segment[:-1])))
                resets[first[first < n]] = True
        segment = _segments(key_start, resets)
        # only the rows after a key's last removal count
        last_reset = np.maximum.reduceat(np.where(resets, np.arange(n), -1), starts)
        live = np.arange(n) > last_reset[group_index(starts, n)]
        ends_in_reset = resets[ends]

        columns: dict[str, pa.Array] = {}
        for g in self.groups:
            ne = nonempty[g.option] & live
            accepted = _accepted(ranks[g.option], nonempty[g.option], segment) & live
            last = last_index(accepted, starts)
            for s in g.sequence:
                columns[s] = _take(kv.column(s), last)
            last_insert = np.where((last >= 0) & insert[np.maximum(last, 0)], last, -1)
            for c in g.columns:
                agg = g.aggregates.get(c)
                if agg is None:
                    columns[c] = _take(kv.column(c), last_insert)  # an accepted retraction nulls it
                    continue
                ops = np.full(n, SKIP, dtype=np.int8)
                ops[ne & insert & accepted] = AGG
                ops[ne & insert & ~accepted] = REV
                if not self.ignore_retract[c]:
                    ops[ne & retract] = RETRACT
                columns[c] = agg.fold(column_array(kv, c), ops, starts)
        for name in self.value_names:
            if name in columns:
                continue
            col = column_array(kv, name)
            if name in self.schema.primary_keys:
                columns[name] = col.take(pa.array(ends))
                continue
            agg = self.ungrouped_aggregates.get(name)
            if agg is not None:
                ops = np.where(live & insert, AGG, SKIP).astype(np.int8)
                columns[name] = agg.fold(col, ops, starts)
                continue
            valid = col.is_valid().to_numpy(zero_copy_only=False) & live & insert
            columns[name] = _take(col, last_index(valid, starts))
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            if name in self.key_columns or name == SEQ:
                out_cols.append(kv.column(i).take(pa.array(ends)))
            elif name == KIND:
                out_cols.append(pa.array(np.where(ends_in_reset, DELETE, INSERT).astype(np.int8)))
            else:
                col = columns[name]
                if ends_in_reset.any():  # a removed row: the DELETE row itself
                    col = pc.if_else(pa.array(ends_in_reset), kv.column(i).take(pa.array(ends)), col)
                out_cols.append(col.cast(kv.schema.field(i).type) if col.type != kv.schema.field(i).type else col)
        return pa.Table.from_arrays(out_cols, schema=kv.schema)


def _take(col: pa.Array | pa.ChunkedArray, index: np.ndarray) -> pa.Array:
    return col.take(pa.array(index, pa.int64(), mask=index < 0))


def _segments(key_start: np.ndarray, resets: np.ndarray) -> np.ndarray:
    """Segment id of each row: a new one at each key and after each removal."""
    begin = key_start.copy()
    begin[1:] |= resets[:-1]
    return np.cumsum(begin) - 1


def _accepted(rank: np.ndarray, nonempty: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Rows whose group sequence is not below the greatest sequence of the rows before them in their segment
    (Paimon: `seqComparator.compare(row, acc) >= 0`, the accumulator's sequence being that running maximum)."""
    width = int(rank.max()) + 1 if len(rank) else 1
    base = segment.astype(np.int64) * width
    running = np.maximum.accumulate(base + rank)
    before = np.empty_like(running)
    before[0] = -1
    before[1:] = running[:-1]
    previous = np.maximum(before - base, 0)
    return nonempty & (rank >= previous)
