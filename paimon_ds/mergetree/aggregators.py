"""Paimon's field aggregators (`FieldAggregator` and its factories), folded over key groups at once.

Java folds a column record by record: `agg(acc, v)` for an added row, `aggReversed(acc, v)` (= `agg(v, acc)` unless
the function overrides it) for a row of a partial-update sequence group older than the group's current sequence,
`retract(acc, v)` for a -U / -D row (only functions that define it; `fields.<f>.ignore-retract` makes it a no-op),
starting from null for each key. Here a column's rows of many keys, in sequence order, arrive with one operation per
row (AGG, REV, RETRACT or SKIP) and the start of each key's group, and `fold` gives one value per group, exactly
Java's. Where Java's result depends only on which rows meet (sum, min, max, the first/last families, collect and
merge_map without retraction, listagg) it is computed with numpy / pyarrow kernels; where it is inherently sequential
(integer product with retraction, listagg distinct, collect / merge_map retraction, nested_update,
nested_partial_update, merge_map_with_keytime) a Python loop runs over only the groups and the column that need it.

Semantics are Paimon master's (`paimon-core/.../mergetree/compact/aggregate/`), which extends 0.9's: listagg skips
blank strings and has `distinct`; nested_update drops null rows and has `count-limit`, `nested-sequence-field`,
`nested-key-null-strategy`. Integer sum and product wrap around as Java 0.9 does (master throws on overflow).
Orders Java leaves to a HashSet / HashMap (collect distinct, merge_map, nested_update with a key) are, here, the
order in which a value (key) was first met; the set of elements is Java's.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options.registry import OptionError, Options
from ..schema.types import ArrayType, DataField, MapType, MultisetType, RowType, to_arrow_type
from .sketches import UNIONS

AGG, REV, RETRACT, SKIP = 0, 1, 2, 3

# Java's Character.isWhitespace, for StringUtils.isBlank (listagg skips blank strings)
_BLANK = "^[\t\n\x0b\x0c\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]*$"
_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
_INTEGERS = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64}

# Sketches and bitmaps: their byte-level unions, as Java Paimon folds them (sketches.py); none is retractable.
SKETCH_UNIONS = UNIONS


# ------------------------------------------------------------------------------------- helpers

def group_index(starts: np.ndarray, n: int) -> np.ndarray:
    """The group of each row."""
    return np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n)))


def last_index(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group, the last row where ``mask`` holds (-1: none)."""
    return np.maximum.reduceat(np.where(mask, np.arange(len(mask), dtype=np.int64), -1), starts)


def first_index(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per group, the first row where ``mask`` holds (-1: none)."""
    n = len(mask)
    first = np.minimum.reduceat(np.where(mask, np.arange(n, dtype=np.int64), n), starts)
    return np.where(first == n, -1, first)


def take_or_null(values: pa.Array, index: np.ndarray) -> pa.Array:
    """``values`` at ``index``, null where the index is negative."""
    return values.take(pa.array(index, pa.int64(), mask=index < 0))


def valid_mask(values: pa.Array) -> np.ndarray:
    return values.is_valid().to_numpy(zero_copy_only=False)


def null_where(values: pa.Array, mask: np.ndarray) -> pa.Array:
    """``values`` with nulls where ``mask`` holds."""
    if not mask.any():
        return values
    return pc.if_else(pa.array(mask), pa.nulls(len(values), values.type), values)


def _merge_results(n_groups: int, vectorised: pa.Array | None, fallback: dict[int, Any], type_: pa.DataType
                   ) -> pa.Array:
    """Group results: ``fallback`` (group -> Python value) over ``vectorised`` (None: all groups from fallback)."""
    if vectorised is None:
        return pa.array([fallback.get(g) for g in range(n_groups)], type_)
    if not fallback:
        return vectorised
    groups = np.fromiter(fallback, np.int64, len(fallback))
    extra = pa.array(list(fallback.values()), type_)
    position = np.arange(n_groups, dtype=np.int64)
    position[groups] = n_groups + np.arange(len(groups))
    return pa.concat_arrays([vectorised.cast(type_), extra]).take(pa.array(position))


@dataclass
class Plan:
    """A pyarrow hash aggregate over a column's groups (rows in order: pyarrow folds a group's rows in order), so
    an engine can run those of all its columns in one group_by; ``finish`` turns its result into the column's."""
    values: pa.Array
    function: str
    options: Any
    finish: Callable[[pa.Array], pa.Array]


def run_plans(plans: list[Plan], starts: np.ndarray, n: int) -> list[pa.Array]:
    """The results of ``plans`` (each over the same ``n`` rows and groups), with one group_by."""
    if not plans:
        return []
    columns = {"g": group_index(starts, n)}
    aggs = []
    for i, p in enumerate(plans):
        columns[f"v{i}"] = p.values
        aggs.append((f"v{i}", p.function, p.options))
    out = pa.table(columns).group_by("g", use_threads=False).aggregate(aggs)
    return [p.finish(out.column(f"v{i}_{p.function}").combine_chunks()) for i, p in enumerate(plans)]


# ------------------------------------------------------------------------------------ the base

class Aggregator:
    """One column's aggregate function. Subclasses: ``name``, Java's ``agg`` / ``agg_reversed`` / ``retract`` on
    Python values (the sequential definition), and a vectorised ``fold`` where they can."""

    name: ClassVar[str]
    retractable: ClassVar[bool] = False  # Java defines retract()
    # agg(null, v) == v for one row: a key met once keeps its row as it is (collect distinct and the nested
    # functions rework even one row)
    single_identity: ClassVar[bool] = True

    def __init__(self, field: DataField, options: Options) -> None:
        self.field = field
        self.type = field.type
        self.arrow_type = to_arrow_type(field.type)
        self.options = options

    @classmethod
    def check_type(cls, field: DataField) -> None:
        """Refuse a column type the function does not take (Paimon's factory checks)."""

    def opt(self, suffix: str) -> Any:
        """The value of option `fields.<this column>.<suffix>`."""
        return field_option(self.options, self.field.name, suffix)

    # -- Java's definition, one record at a time (Python values as pyarrow's to_pylist gives them)
    def reset(self) -> None:
        """Per-key state (first_value's `initialized`)."""

    def agg(self, acc: Any, v: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, v: Any) -> Any:
        return self.agg(v, acc)

    def retract(self, acc: Any, v: Any) -> Any:
        raise OptionError(f"aggregate function {self.name!r} of column {self.field.name!r} does not support "
                          f"retraction (DELETE/UPDATE_BEFORE rows); set 'fields.{self.field.name}.ignore-retract' = "
                          "'true' to ignore them")

    def check_ops(self, ops: np.ndarray) -> None:
        if not self.retractable and (ops == RETRACT).any():
            self.retract(None, None)

    # -- over groups
    def plan(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> Plan | None:
        """The fold as a pyarrow hash aggregate, where it is one (None: use ``fold``)."""
        return None

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        """One value per group (``starts``: each group's first row; every group has rows)."""
        plan = self.plan(values, ops, starts)
        if plan is not None:
            return run_plans([plan], starts, len(values))[0]
        self.check_ops(ops)
        return self.fold_python(values, ops, starts)

    def fold_python(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray,
                    groups: np.ndarray | None = None, vectorised: pa.Array | None = None) -> pa.Array:
        """Java's record-by-record fold over ``groups`` (None: all), the others from ``vectorised``."""
        n = len(values)
        ends = np.append(starts[1:], n)
        groups = np.arange(len(starts)) if groups is None else groups
        results: dict[int, Any] = {}
        if len(groups):
            rows = np.concatenate([np.arange(starts[g], ends[g]) for g in groups])
            py = values.take(pa.array(rows, pa.int64())).to_pylist()
            pos = 0
            for g in groups.tolist():
                self.reset()
                acc = None
                for op in ops[starts[g]:ends[g]].tolist():
                    v = py[pos]
                    pos += 1
                    if op == AGG:
                        acc = self.agg(acc, v)
                    elif op == REV:
                        acc = self.agg_reversed(acc, v)
                    elif op == RETRACT:
                        acc = self.retract(acc, v)
                results[g] = acc
        return _merge_results(len(starts), vectorised, results, self.arrow_type)


def field_option(options: Options, name: str, suffix: str) -> Any:
    """`fields.<name>.<suffix>` (Spark lower-cases keys: a lower-cased column name is read too)."""
    for key in (f"fields.{name}.{suffix}", f"fields.{name.lower()}.{suffix}"):
        if key in options.raw:
            return options.get(key)
    return options.get(f"fields.{name}.{suffix}")


# ------------------------------------------------------------------------------- last / first

class PrimaryKey(Aggregator):
    """A primary-key column: the value of the last row (Java's FieldPrimaryKeyAgg; retract takes it too)."""
    name = "primary-key"
    retractable = True

    def agg(self, acc: Any, v: Any) -> Any:
        return v

    def retract(self, acc: Any, v: Any) -> Any:
        return v

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        if not (ops == SKIP).any():  # every row sets it: the last row's
            return values.take(pa.array(np.append(starts[1:], len(values)) - 1))
        return take_or_null(values, last_index((ops == AGG) | (ops == RETRACT), starts))


class LastValue(Aggregator):
    name = "last_value"
    retractable = True

    def agg(self, acc: Any, v: Any) -> Any:
        return v

    def retract(self, acc: Any, v: Any) -> Any:
        return None

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        # an added row sets its value, a retraction null, an older row (REV: agg(v, acc) = acc) nothing
        last = last_index((ops == AGG) | (ops == RETRACT), starts)
        return take_or_null(values, np.where((last >= 0) & (ops[np.maximum(last, 0)] == AGG), last, -1))


class LastNonNullValue(Aggregator):
    name = "last_non_null_value"
    retractable = True

    def agg(self, acc: Any, v: Any) -> Any:
        return acc if v is None else v

    def retract(self, acc: Any, v: Any) -> Any:
        return None if v is not None else acc

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        valid = valid_mask(values)
        if not ops.any():  # all added: the last non-null value
            return take_or_null(values, last_index(valid, starts))
        # decisive rows: an added value sets it, a retracted value clears it; rows with null change nothing
        decisive = valid & ((ops == AGG) | (ops == RETRACT))
        last = last_index(decisive, starts)
        pick = np.where((last >= 0) & (ops[np.maximum(last, 0)] == AGG), last, -1)
        rev = valid & (ops == REV)
        if rev.any():
            # an older row (agg(v, acc)) fills the value only while it is null: the first such row after the
            # last decisive one, where that one left null
            after = np.arange(len(ops)) > np.repeat(last, np.diff(np.append(starts, len(ops))))
            fill = first_index(rev & after, starts)
            pick = np.where(pick < 0, fill, pick)
        return take_or_null(values, pick)


class FirstValue(Aggregator):
    name = "first_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, v: Any) -> Any:
        if not self.initialized:
            self.initialized = True
            return v
        return acc

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        self.check_ops(ops)
        # the first added or older row initialises: an added one with its value, an older one (agg(v, acc))
        # leaving the value null; afterwards each older row (agg(v, acc) = v once initialised) takes over
        event = (ops == AGG) | (ops == REV)
        first = first_index(event, starts)
        pick = np.where((first >= 0) & (ops[np.maximum(first, 0)] == AGG), first, -1)
        rev = ops == REV
        if rev.any():
            after = np.arange(len(ops)) > np.repeat(first, np.diff(np.append(starts, len(ops))))
            later = last_index(rev & after, starts)
            pick = np.where(later >= 0, later, pick)
        return take_or_null(values, pick)


class FirstNonNullValue(Aggregator):
    name = "first_non_null_value"

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, v: Any) -> Any:
        if not self.initialized and v is not None:
            self.initialized = True
            return v
        return acc

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        self.check_ops(ops)
        pick = first_index(valid_mask(values) & (ops == AGG), starts)
        if not (ops == REV).any():
            return take_or_null(values, pick)
        # older rows of a sequence group (agg(v, acc): Java's state machine on `initialized`): sequential, on the
        # groups that have such rows, over row indices
        n = len(ops)
        ends = np.append(starts[1:], n)
        valid = valid_mask(values)
        groups = np.flatnonzero(np.logical_or.reduceat(ops == REV, starts))
        for g in groups.tolist():
            initialized, acc = False, -1
            for i in range(int(starts[g]), int(ends[g])):
                if ops[i] == AGG:
                    if not initialized and valid[i]:
                        initialized, acc = True, i
                elif ops[i] == REV:
                    if not initialized and acc >= 0 and valid[acc]:
                        initialized = True
                    else:
                        acc = i
            pick[g] = acc if acc >= 0 and valid[acc] else -1
        return take_or_null(values, pick)


# ---------------------------------------------------------------------------------- arithmetic

def _check_numeric(cls: type[Aggregator], field: DataField) -> None:
    if field.type.root not in _NUMERIC:
        raise OptionError(f"Data type for {cls.name} column '{field.name}' must be 'NumericType' but was "
                          f"'{field.type.sql()}'")


def _wrap_int(result: pa.Array, target: pa.DataType) -> pa.Array:
    """An int64 result wrapped to a narrower integer type, as Java's casts of int arithmetic do."""
    if result.type == target:
        return result
    arr = result.to_numpy(zero_copy_only=False) if result.null_count == 0 else \
        result.fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(arr.astype(target.to_pandas_dtype()), target, mask=~valid_mask(result))


def _wrap(v: int, root: str) -> int:
    """A Python int in the column's width, wrapped around as Java's integer arithmetic does."""
    bits = np.iinfo(_INTEGERS[root]).bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _decimal_fit(values: list, precision: int, scale: int) -> list:
    """Java's Decimal.fromBigDecimal: HALF_UP to the scale, null beyond the precision."""
    out = []
    q = decimal.Decimal(1).scaleb(-scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        for v in values:
            if v is None:
                out.append(None)
                continue
            v = v.quantize(q, rounding=decimal.ROUND_HALF_UP)
            out.append(None if len(v.as_tuple().digits) > precision and v != 0 else v)
    return out


class _Stepwise:
    """A numeric fold done row position by row position across all groups at once (numpy), for folds whose
    result depends on the order (float32 arithmetic, integer division): as many numpy steps as the longest group."""

    @staticmethod
    def fold(values: np.ndarray, valid: np.ndarray, ops: np.ndarray, starts: np.ndarray,
             agg: Callable[[np.ndarray, np.ndarray], np.ndarray],
             retract: Callable[[np.ndarray, np.ndarray], np.ndarray],
             negate: Callable[[np.ndarray], np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
        n = len(values)
        lengths = np.diff(np.append(starts, n))
        acc = np.zeros(len(starts), dtype=values.dtype)
        has = np.zeros(len(starts), dtype=bool)
        for j in range(int(lengths.max()) if len(lengths) else 0):
            groups = np.flatnonzero(lengths > j)
            rows = starts[groups] + j
            op, ok, v = ops[rows], valid[rows], values[rows]
            for kind in (AGG, REV, RETRACT):
                sel = (op == kind) & ok
                if not sel.any():
                    continue
                g, x = groups[sel], v[sel]
                fresh = ~has[g]
                if kind == RETRACT:
                    # retract(null, v): sum negates v, product keeps null
                    if negate is not None:
                        acc[g[fresh]] = negate(x[fresh])
                        has[g[fresh]] = True
                    old = ~fresh
                    acc[g[old]] = retract(acc[g[old]], x[old])
                else:
                    acc[g[fresh]] = x[fresh]
                    has[g[fresh]] = True
                    old = ~fresh
                    acc[g[old]] = agg(acc[g[old]], x[old])
        return acc, has


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Java's integer division (truncates toward zero); division by zero raises as Java does."""
    if (b == 0).any():
        raise ArithmeticError("/ by zero (product retraction)")
    with np.errstate(over="ignore"):
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) ^ (b < 0), -q, q).astype(a.dtype)


class Sum(Aggregator):
    name = "sum"
    retractable = True

    @classmethod
    def check_type(cls, field: DataField) -> None:
        _check_numeric(cls, field)

    def agg(self, acc: Any, v: Any) -> Any:
        out = v if acc is None else acc if v is None else acc + v
        return _wrap(out, self.type.root) if out is not None and self.type.root in _INTEGERS else out

    def retract(self, acc: Any, v: Any) -> Any:
        out = (None if v is None else -v) if acc is None else acc if v is None else acc - v
        return _wrap(out, self.type.root) if out is not None and self.type.root in _INTEGERS else out

    def plan(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> Plan | None:
        root = self.type.root
        if root in _INTEGERS or root == "FLOAT":
            return None
        retract = ops == RETRACT
        work = pc.if_else(pa.array(retract), pc.negate(values), values) if retract.any() else values
        work = null_where(work, ops == SKIP)
        return Plan(work, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1), self._finish)

    def _finish(self, summed: pa.Array) -> pa.Array:
        if self.type.root == "DECIMAL":
            try:
                return summed.cast(self.arrow_type)
            except pa.ArrowInvalid:  # beyond the precision: null (Decimal.fromBigDecimal)
                return pa.array(_decimal_fit(summed.to_pylist(), self.type.precision, self.type.scale),
                                self.arrow_type)
        return summed.cast(self.arrow_type)

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        root = self.type.root
        valid = valid_mask(values) & (ops != SKIP)
        if root == "FLOAT":  # Java adds in float32, in order
            acc, has = _Stepwise.fold(values.fill_null(0).to_numpy(zero_copy_only=False), valid, ops, starts,
                                      np.add, np.subtract, np.negative)
            return pa.array(acc, pa.float32(), mask=~has)
        if root in _INTEGERS:
            # int64 sums wrap around: the same result, in each width, as Java 0.9 adding in that width in order
            arr = values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            if ops.any():  # not all added: retractions subtract, skipped rows count nothing
                arr = np.where(valid, np.where(ops == RETRACT, -arr, arr), 0)
            total = np.add.reduceat(arr, starts)
            if values.null_count == 0 and not ops.any():
                return pa.array(total.astype(_INTEGERS[root], copy=False), self.arrow_type)
            has = np.logical_or.reduceat(valid, starts)
            return pa.array(total.astype(_INTEGERS[root], copy=False), self.arrow_type, mask=~has)
        return super().fold(values, ops, starts)


class Product(Aggregator):
    name = "product"
    retractable = True

    @classmethod
    def check_type(cls, field: DataField) -> None:
        _check_numeric(cls, field)

    def agg(self, acc: Any, v: Any) -> Any:
        if acc is None or v is None:
            return v if acc is None else acc
        if self.type.root in _INTEGERS:
            return _wrap(acc * v, self.type.root)
        if self.type.root == "DECIMAL":
            with decimal.localcontext() as ctx:
                ctx.prec = 100
                return _decimal_fit([acc * v], self.type.precision, self.type.scale)[0]
        return acc * v

    def retract(self, acc: Any, v: Any) -> Any:
        if acc is None or v is None:
            return acc
        root = self.type.root
        if root in _INTEGERS:
            if v == 0:
                raise ArithmeticError("/ by zero (product retraction)")
            q = abs(acc) // abs(v)
            return _wrap(-q if (acc < 0) != (v < 0) else q, root)
        if root in ("FLOAT", "DOUBLE"):
            with np.errstate(divide="ignore", invalid="ignore"):  # IEEE division, as Java's
                return float(np.float64(acc) / np.float64(v))
        with decimal.localcontext() as ctx:
            ctx.prec = 100
            ctx.traps[decimal.Inexact] = True  # BigDecimal.divide refuses a non-terminating quotient
            try:
                q = acc / v
            except decimal.Inexact:
                raise ArithmeticError(f"Non-terminating decimal expansion; no exact representable decimal result "
                                      f"(product retraction {acc} / {v})") from None
        return _decimal_fit([q], self.type.precision, self.type.scale)[0]

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        root = self.type.root
        if root == "DECIMAL":  # HALF_UP to the scale after each step: sequential
            return self.fold_python(values, ops, starts)
        retract = (ops == RETRACT).any()
        if root == "FLOAT" or retract:
            # float32 arithmetic, or division: in order
            np_type = np.float32 if root == "FLOAT" else np.float64 if root == "DOUBLE" else _INTEGERS[root]
            arr = values.fill_null(0).to_numpy(zero_copy_only=False).astype(np_type)
            valid = valid_mask(values) & (ops != SKIP)
            div = np.divide if root in ("FLOAT", "DOUBLE") else _trunc_div
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                acc, has = _Stepwise.fold(arr, valid, ops, starts, np.multiply, div, None)
            return pa.array(acc, self.arrow_type, mask=~has)
        return super().fold(values, ops, starts)

    def plan(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> Plan | None:
        root = self.type.root
        if root in ("DECIMAL", "FLOAT") or (ops == RETRACT).any():
            return None
        work = values.cast(pa.int64()) if root in _INTEGERS else values
        work = null_where(work, ops == SKIP)

        def finish(out: pa.Array) -> pa.Array:
            # int64 products wrap around: Java 0.9 multiplying in the column's width gives the same low bits
            return _wrap_int(out, self.arrow_type) if root in _INTEGERS else out.cast(self.arrow_type)
        return Plan(work, "product", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1), finish)


# --------------------------------------------------------------------------------- comparisons

def _comparable(field: DataField) -> bool:
    t = field.type
    return not isinstance(t, (ArrayType, MapType, MultisetType, RowType)) and t.root not in ("VARIANT", "BLOB")


def _float_keys(values: np.ndarray) -> np.ndarray:
    """Integers ordered as Java's Float.compare / Double.compare orders the floats: -0.0 < 0.0, NaN greatest."""
    bits_type = np.int32 if values.dtype == np.float32 else np.int64
    canonical = np.where(np.isnan(values), np.array(np.nan, values.dtype), values)
    bits = canonical.view(bits_type)
    return np.where(bits < 0, bits ^ np.iinfo(bits_type).max, bits)


class _Extreme(Aggregator):
    """min / max: the smallest / greatest non-null value of the rows added (older rows too: it commutes)."""
    largest: ClassVar[bool]

    @classmethod
    def check_type(cls, field: DataField) -> None:
        if not _comparable(field):
            raise OptionError(f"Data type for {cls.name} column '{field.name}' must be comparable but was "
                              f"'{field.type.sql()}'")

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        self.check_ops(ops)
        use = valid_mask(values) & ((ops == AGG) | (ops == REV))
        if self.type.root in ("FLOAT", "DOUBLE"):
            keys = _float_keys(values.fill_null(0).to_numpy(zero_copy_only=False))
            lo, hi = np.iinfo(keys.dtype).min, np.iinfo(keys.dtype).max
            if self.largest:
                best = np.maximum.reduceat(np.where(use, keys, lo), starts)
            else:
                best = np.minimum.reduceat(np.where(use, keys, hi), starts)
            hit = use & (keys == best[group_index(starts, len(ops))])
            return take_or_null(values, first_index(hit, starts))
        return super().fold(values, ops, starts)

    def plan(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> Plan | None:
        if self.type.root in ("FLOAT", "DOUBLE"):
            return None
        self.check_ops(ops)
        work = null_where(values, ~(valid_mask(values) & ((ops == AGG) | (ops == REV))))
        return Plan(work, "max" if self.largest else "min", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
                    lambda out: out.cast(self.arrow_type))

    def agg(self, acc: Any, v: Any) -> Any:
        if acc is None or v is None:
            return v if acc is None else acc
        return (v if acc < v else acc) if self.largest else (acc if acc < v else v)


class Max(_Extreme):
    name = "max"
    largest = True


class Min(_Extreme):
    name = "min"
    largest = False


class _Bool(Aggregator):
    function: ClassVar[str]

    @classmethod
    def check_type(cls, field: DataField) -> None:
        if field.type.root != "BOOLEAN":
            raise OptionError(f"Data type for {cls.name.replace('_', ' ')} column '{field.name}' must be "
                              f"'BooleanType' but was '{field.type.sql()}'")

    def plan(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> Plan | None:
        self.check_ops(ops)
        work = null_where(values, ~((ops == AGG) | (ops == REV)))
        return Plan(work, self.function, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1), lambda out: out)


class BoolAnd(_Bool):
    name = "bool_and"
    function = "all"

    def agg(self, acc: Any, v: Any) -> Any:
        return v if acc is None else acc if v is None else acc and v


class BoolOr(_Bool):
    name = "bool_or"
    function = "any"

    def agg(self, acc: Any, v: Any) -> Any:
        return v if acc is None else acc if v is None else acc or v


# ------------------------------------------------------------------------------------- strings

def _blank(s: str | None) -> bool:
    return s is None or all(c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                                 "\u2008\u2009\u200a\u2028\u2029\u205f\u3000" for c in s)


def _split_all(s: str, delimiter: str) -> list[str]:
    """BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens: empty string -> no token."""
    if s == "":
        return []
    return s.split(delimiter if delimiter else " ")


class ListAgg(Aggregator):
    name = "listagg"

    def __init__(self, field: DataField, options: Options) -> None:
        super().__init__(field, options)
        self.delimiter = self.opt("list-agg-delimiter")
        self.distinct = self.opt("distinct")

    @classmethod
    def check_type(cls, field: DataField) -> None:
        if field.type.root != "VARCHAR":
            raise OptionError(f"Data type for list agg column '{field.name}' must be 'VarCharType' but was "
                              f"'{field.type.sql()}'")

    def agg(self, acc: Any, v: Any) -> Any:
        if _blank(v):
            return acc
        if _blank(acc):
            return v
        if not self.distinct:
            return acc + self.delimiter + v
        seen = set(_split_all(acc, self.delimiter))
        out = [acc]
        for token in _split_all(v, self.delimiter):
            if _blank(token) or token in seen:
                continue
            seen.add(token)
            out += [self.delimiter, token]
        return "".join(out)

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        self.check_ops(ops)
        if self.distinct or (ops == REV).any():
            return self.fold_python(values, ops, starts)
        blank = pc.fill_null(pc.match_substring_regex(values, _BLANK), True).to_numpy(zero_copy_only=False)
        use = ~blank & (ops == AGG)
        counts = np.add.reduceat(use.astype(np.int64), starts)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        lists = pa.ListArray.from_arrays(pa.array(offsets), values.filter(pa.array(use)), mask=pa.array(counts == 0))
        return pc.binary_join(lists, self.delimiter).cast(self.arrow_type)


# ------------------------------------------------------------------------------- lists and maps

def _flat_groups(values: pa.Array, use: np.ndarray, starts: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The elements of the lists (or map entries) of the rows in ``use``, in row order, and each one's group."""
    chosen = values.filter(pa.array(use))  # rows in ``use`` are never null
    offsets = chosen.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.diff(offsets)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if isinstance(chosen, pa.MapArray):  # (.keys / .items ignore a slice: cut them by the offsets)
        flat = pa.StructArray.from_arrays([chosen.keys.slice(lo, hi - lo), chosen.items.slice(lo, hi - lo)],
                                          names=["key", "value"])
    else:
        flat = chosen.values.slice(lo, hi - lo)
    groups = group_index(starts, len(use))[use]
    return flat, np.repeat(groups, lengths)


def _hashable(t: pa.DataType) -> bool:
    """Whether pyarrow's group_by takes values of this type as keys (no nested or binary types: Java compares
    those with its equaliser, which the Python path follows)."""
    return not (pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
                or pa.types.is_fixed_size_binary(t) or pa.types.is_floating(t) or pa.types.is_dictionary(t))


def _first_occurrences(groups: np.ndarray, keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """For each distinct (group, key), in the order of first occurrence: (first position, last position)."""
    table = pa.table({"g": groups, "k": keys, "p": np.arange(len(groups), dtype=np.int64)})
    out = table.group_by(["g", "k"], use_threads=False).aggregate([("p", "min"), ("p", "max")])
    first = out.column("p_min").to_numpy()
    last = out.column("p_max").to_numpy()
    order = np.argsort(first, kind="stable")
    return first[order], last[order]


def _list_result(groups_of: np.ndarray, elements: pa.Array, n_groups: int, valid: np.ndarray,
                 list_type: pa.DataType) -> pa.Array:
    counts = np.bincount(groups_of, minlength=n_groups)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    out = pa.ListArray.from_arrays(offsets, elements, mask=pa.array(~valid))
    return out.cast(list_type)


class Collect(Aggregator):
    name = "collect"
    retractable = True

    def __init__(self, field: DataField, options: Options) -> None:
        super().__init__(field, options)
        self.distinct = self.opt("distinct")
        self.single_identity = not self.distinct  # type: ignore[misc]

    @classmethod
    def check_type(cls, field: DataField) -> None:
        if not isinstance(field.type, ArrayType):
            raise OptionError(f"Data type for collect column '{field.name}' must be 'Array' but was "
                              f"'{field.type.sql()}'")

    def agg(self, acc: Any, v: Any) -> Any:
        if acc is None and v is None:
            return None
        if (acc is None or v is None) and not self.distinct:
            return v if acc is None else acc
        out = list(acc or [])
        for e in v or []:  # distinct: the accumulator already is; agg(null, v) makes v distinct too
            if not self.distinct or e not in out:
                out.append(e)
        return out

    def agg_reversed(self, acc: Any, v: Any) -> Any:
        return self.agg(acc, v)  # Java: the accumulator is already distinct, no need to reverse

    def retract(self, acc: Any, v: Any) -> Any:
        if acc is None:
            return None
        if not v:
            return acc
        remaining = list(v)
        out = []
        for e in acc:
            if e in remaining:
                remaining.remove(e)  # one occurrence per retracted element
            else:
                out.append(e)
        return out

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        n_groups = len(starts)
        retracting = ops == RETRACT
        element = values.type.value_type
        if self.distinct and not _hashable(element):
            return self.fold_python(values, ops, starts)
        use = valid_mask(values) & ((ops == AGG) | (ops == REV))
        has = np.logical_or.reduceat(use, starts)
        flat, groups_of = _flat_groups(values, use, starts)
        if self.distinct and len(flat):
            first, _ = _first_occurrences(groups_of, flat)
            flat, groups_of = flat.take(pa.array(first)), groups_of[first]
        out = _list_result(groups_of, flat, n_groups, has, self.arrow_type)
        if retracting.any():
            groups = np.flatnonzero(np.logical_or.reduceat(retracting, starts))
            return self.fold_python(values, ops, starts, groups, out)
        return out


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return ("__row__", tuple((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("__list__", tuple(_freeze(x) for x in v))
    return v


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "__row__":
        return {k: _thaw(x) for k, x in v[1]}
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "__list__":
        return [_thaw(x) for x in v[1]]
    return v


class MergeMap(Aggregator):
    name = "merge_map"
    retractable = True

    @classmethod
    def check_type(cls, field: DataField) -> None:
        if not isinstance(field.type, MapType) or isinstance(field.type, MultisetType):
            raise OptionError(f"Data type for merge map column '{field.name}' must be 'MAP' but was "
                              f"'{field.type.sql()}'")

    def agg(self, acc: Any, v: Any) -> Any:
        if acc is None or v is None:
            return v if acc is None else acc
        merged = {_freeze(k): x for k, x in acc}
        merged.update({_freeze(k): x for k, x in v})
        return [(_thaw(k), x) for k, x in merged.items()]

    def retract(self, acc: Any, v: Any) -> Any:
        if acc is None:
            return None
        if not v:
            return acc
        gone = {_freeze(k) for k, _ in v}
        return [(k, x) for k, x in acc if _freeze(k) not in gone]

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        key_type = values.type.key_type
        special = (ops == REV) | (ops == RETRACT)
        if not _hashable(key_type):
            return self.fold_python(values, ops, starts)
        use = valid_mask(values) & (ops == AGG)
        has = np.logical_or.reduceat(use, starts)
        flat, groups_of = _flat_groups(values, use, starts)
        if len(flat):
            first, last = _first_occurrences(groups_of, flat.field("key"))
            keys, items, groups_of = flat.field("key").take(pa.array(first)), flat.field("value").take(
                pa.array(last)), groups_of[first]
        else:
            keys, items = flat.field("key"), flat.field("value")
        counts = np.bincount(groups_of, minlength=len(starts))
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        out = pa.MapArray.from_arrays(offsets, keys, items, type=self.arrow_type, mask=pa.array(~has))
        if special.any():
            groups = np.flatnonzero(np.logical_or.reduceat(special, starts))
            return self.fold_python(values, ops, starts, groups, out)
        return out


class MergeMapWithKeyTime(Aggregator):
    """Map values are rows with a string time field: per key the row with the greatest time wins; a null row
    removes the key, a row with a null time is skipped (Paimon 1.4's FieldMergeMapWithKeyTimeAgg)."""
    name = "merge_map_with_keytime"

    def __init__(self, field: DataField, options: Options) -> None:
        super().__init__(field, options)
        value = field.type.value
        ts = self.opt("ts-field")
        names = [f.name for f in value.fields]
        if ts is not None and ts not in names:
            raise OptionError(f"Timestamp field '{ts}' not found in ROW type for field '{field.name}'. "
                              f"Available fields: {names}")
        self.ts = ts if ts is not None else names[-1]

    @classmethod
    def check_type(cls, field: DataField) -> None:
        t = field.type
        if not isinstance(t, MapType) or isinstance(t, MultisetType):
            raise OptionError(f"Data type for field '{field.name}' must be 'MAP' but was '{t.sql()}'")
        if not isinstance(t.value, RowType):
            raise OptionError(f"Value type of MAP for field '{field.name}' must be ROW but was '{t.value.sql()}'")
        if len(t.value.fields) < 2:
            raise OptionError(f"ROW type for field '{field.name}' must have at least 2 fields, but found "
                              f"{len(t.value.fields)}")

    def agg(self, acc: Any, v: Any) -> Any:
        if acc is None:
            return v
        if v is None:
            return acc
        merged = {_freeze(k): x for k, x in acc}
        for k, row in v:
            key = _freeze(k)
            if row is None:
                merged.pop(key, None)
                continue
            if row.get(self.ts) is None:
                continue
            old = merged.get(key)
            if old is None or old.get(self.ts) is None or str(row[self.ts]) > str(old[self.ts]):
                merged[key] = row
        return [(_thaw(k), x) for k, x in merged.items()]


class NestedUpdate(Aggregator):
    """Rows of an ARRAY<ROW>: appended, or with `nested-key` updated by key (later wins, or the greater
    `nested-sequence-field`); `count-limit` caps the rows."""
    name = "nested_update"
    retractable = True
    single_identity = False

    def __init__(self, field: DataField, options: Options) -> None:
        super().__init__(field, options)
        names = [f.name for f in field.type.element.fields]
        self.key = self.opt("nested-key") or []
        self.seq = self.opt("nested-sequence-field") or []
        self.limit = self.opt("count-limit")
        self.null_strategy = self.opt("nested-key-null-strategy")
        for name in [*self.key, *self.seq]:
            if name not in names:
                raise OptionError(f"nested field {name!r} of option 'fields.{field.name}.nested-key' / "
                                  f"'nested-sequence-field' is not a field of {field.type.sql()}")
        if self.seq and not self.key:
            raise OptionError("Option 'fields.<field-name>.nested-sequence-field' requires "
                              "'fields.<field-name>.nested-key' to be configured.")
        if options.is_set(f"fields.{field.name}.nested-key-null-strategy") and not self.key:
            raise OptionError("Option 'fields.<field-name>.nested-key-null-strategy' requires "
                              "'fields.<field-name>.nested-key' to be configured.")

    @classmethod
    def check_type(cls, field: DataField) -> None:
        t = field.type
        if not isinstance(t, ArrayType) or not isinstance(t.element, RowType):
            raise OptionError(f"Data type for nested table column '{field.name}' must be 'Array<Row>' but was "
                              f"'{t.sql()}'.")

    def _key_of(self, row: dict) -> Any:
        return tuple(_freeze(row[k]) for k in self.key)

    def _keep(self, key: tuple) -> bool:
        if not any(k is None for k in key) or self.null_strategy == "merge":
            return True
        if self.null_strategy == "ignore":
            return False
        raise ValueError("Nested key contains null values. Primary key fields must not be null.")

    def _newer(self, row: dict, old: dict) -> bool:
        if not self.seq:
            return True
        a, b = [row[f] for f in self.seq], [old[f] for f in self.seq]
        for x, y in zip(a, b):  # nulls first
            if x is None and y is None:
                continue
            if x is None or y is None:
                return x is not None
            if x != y:
                return x > y
        return True

    def agg(self, acc: Any, v: Any) -> Any:
        if v is None:
            return acc
        if not self.key:
            if acc is None:
                return [r for r in v if r is not None][:self.limit]
            if len(acc) >= self.limit:
                return acc
            return [r for r in acc if r is not None] + [r for r in v if r is not None][:self.limit - len(acc)]
        rows: dict = {}
        for source, limited in ((acc or [], False), (v, True)):
            for r in source:
                if r is None:
                    continue
                key = self._key_of(r)
                if not self._keep(key):
                    continue
                if key in rows:
                    if self._newer(r, rows[key]):
                        rows[key] = r
                elif not limited or len(rows) < self.limit:
                    rows[key] = r
        return list(rows.values())

    def retract(self, acc: Any, v: Any) -> Any:
        if acc is None or v is None:
            return acc
        if not self.key:
            gone = [r for r in v if r is not None]
            return [r for r in acc if r is not None and r not in gone]
        rows = {}
        for r in acc:
            if r is not None and self._keep(key := self._key_of(r)):
                rows[key] = r
        for r in v:
            if r is not None and self._keep(key := self._key_of(r)):
                rows.pop(key, None)
        return list(rows.values())


class NestedPartialUpdate(Aggregator):
    """Rows of an ARRAY<ROW> merged by `nested-key`, each field keeping its last non-null value (Paimon 1.4)."""
    name = "nested_partial_update"
    single_identity = False

    def __init__(self, field: DataField, options: Options) -> None:
        super().__init__(field, options)
        self.fields = [f.name for f in field.type.element.fields]
        self.key = self.opt("nested-key") or []
        self.null_strategy = self.opt("nested-key-null-strategy")
        if not self.key:
            raise OptionError(f"nested_partial_update column '{field.name}' needs "
                              f"'fields.{field.name}.nested-key'")
        for name in self.key:
            if name not in self.fields:
                raise OptionError(f"nested key field {name!r} is not a field of {field.type.sql()}")

    check_type = NestedUpdate.check_type

    def agg(self, acc: Any, v: Any) -> Any:
        if v is None:
            return acc
        rows: dict = {}
        for r in [*(acc or []), *v]:
            if r is None:
                continue
            key = tuple(_freeze(r[k]) for k in self.key)
            if any(k is None for k in key) and self.null_strategy != "merge":
                if self.null_strategy == "ignore":
                    continue
                raise ValueError("Nested key contains null values. Primary key fields must not be null.")
            merged = rows.setdefault(key, dict.fromkeys(self.fields))
            merged.update({k: x for k, x in r.items() if x is not None})
        return list(rows.values())


class SketchUnion(Aggregator):
    """hll_sketch, theta_sketch, rbm32, rbm64: the union of the bytes of the rows added (not retractable)."""

    def __init__(self, name: str, field: DataField, options: Options) -> None:
        self.name = name  # type: ignore[misc]
        super().__init__(field, options)
        self.union = SKETCH_UNIONS[name]

    @staticmethod
    def check_sketch_type(name: str, field: DataField) -> None:
        if field.type.root != "VARBINARY":
            what = {"hll_sketch": "hll sketch", "theta_sketch": "theta sketch"}.get(name, "roaring bitmap")
            raise OptionError(f"Data type for {what} column '{field.name}' must be 'VarBinaryType' but was "
                              f"'{field.type.sql()}'.")

    def fold(self, values: pa.Array, ops: np.ndarray, starts: np.ndarray) -> pa.Array:
        self.check_ops(ops)
        return self.union(null_where(values, ~((ops == AGG) | (ops == REV))), starts)


# ------------------------------------------------------------------------------------ registry

FUNCTIONS: dict[str, type[Aggregator]] = {c.name: c for c in (
    Sum, Product, Min, Max, LastValue, LastNonNullValue, FirstValue, FirstNonNullValue, BoolAnd, BoolOr, ListAgg,
    Collect, MergeMap, MergeMapWithKeyTime, NestedUpdate, NestedPartialUpdate, PrimaryKey)}
FUNCTIONS["first_not_null_value"] = FirstNonNullValue  # Paimon's legacy name
SKETCHES = tuple(SKETCH_UNIONS)
FUNCTION_NAMES = tuple(n for n in [*FUNCTIONS, *SKETCHES] if n != "primary-key")


def create_aggregator(name: str, field: DataField, options: Options) -> Aggregator:
    """Paimon's FieldAggregatorFactory.create: the function ``name`` for ``field`` (type checked)."""
    if name == "count":
        raise OptionError("'count' is not an aggregate function of Paimon's aggregation engine "
                          "(use sum over a column of 1s)")
    if name in SKETCHES:
        SketchUnion.check_sketch_type(name, field)
        return SketchUnion(name, field, options)
    cls = FUNCTIONS.get(name)
    if cls is None:
        raise OptionError(f"unknown aggregate function {name!r} for column {field.name!r} (Paimon: Use unsupported "
                          f"aggregation or spell aggregate function incorrectly); supported: "
                          f"{', '.join(FUNCTION_NAMES)}")
    cls.check_type(field)
    return cls(field, options)
