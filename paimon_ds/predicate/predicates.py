"""Core predicates: what a scan can prune files with and a reader can filter rows with.

Independent of Spark; spark/filters.py translates Spark's pushed filters into these.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import total_order_value

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


class Predicate:
    def fields(self) -> set[str]:
        raise NotImplementedError

    def may_match(self, stats: Callable[[str], tuple[Any, Any, int | None, int]]) -> bool:
        """False only if no row can match, given ``stats(field) -> (min, max, null_count, row_count)``.

        A missing statistic is (None, None, None, row_count): then every row may match.
        """
        raise NotImplementedError

    def expression(self) -> pc.Expression:
        raise NotImplementedError


@dataclass(frozen=True)
class Leaf(Predicate):
    op: str  # one of = < <= > >= in is_null is_not_null starts_with
    field: str
    literals: tuple[Any, ...] = ()

    def fields(self) -> set[str]:
        return {self.field}

    def may_match(self, stats: Callable[[str], tuple[Any, Any, int | None, int]]) -> bool:
        lo, hi, nulls, rows = stats(self.field)
        try:
            if self.op == "is_null":
                return nulls is None or nulls > 0
            if self.op == "is_not_null":
                return nulls is None or nulls < rows
            if nulls is not None and nulls >= rows:
                return False  # all null: no comparison can be true
            if lo is None or hi is None:
                return True
            if isinstance(lo, float) or isinstance(hi, float):
                return self._may_match_floats(lo, hi)
            if self.op == "=":
                return lo <= self.literals[0] <= hi
            if self.op == "in":
                return any(v is not None and lo <= v <= hi for v in self.literals)
            if self.op == "<":
                return lo < self.literals[0]
            if self.op == "<=":
                return lo <= self.literals[0]
            if self.op == ">":
                return hi > self.literals[0]
            if self.op == ">=":
                return hi >= self.literals[0]
            if self.op == "starts_with":
                prefix = self.literals[0]
                # truncated string stats: compare on the prefix length only
                return lo[:len(prefix)] <= prefix <= hi[:len(prefix)]
        except TypeError:
            return True  # incomparable literal/statistic types: cannot prune
        return True

    def _may_match_floats(self, lo: Any, hi: Any) -> bool:
        """Stats of a FLOAT / DOUBLE column, compared as Paimon's predicates compare (Double.compareTo: NaN above
        +Infinity, -0.0 below 0.0); a zero bound is taken to cover both zeros (as parquet-mr's stats are read), so
        that a file is kept whenever IEEE's comparison (Spark's, Arrow's) could match too."""
        lo = -0.0 if lo == 0 else lo
        hi = 0.0 if hi == 0 else hi
        lo_r, hi_r = _ranked(lo, lo), _ranked(hi, hi)
        if self.op == "in":
            return any(v is not None and lo_r <= _ranked(v, lo) <= hi_r for v in self.literals)
        lit = _ranked(self.literals[0], lo)
        if self.op == "=":
            return lo_r <= lit <= hi_r
        if self.op in ("<", "<="):
            return _COMPARE[self.op](lo_r, lit)
        if self.op in (">", ">="):
            return _COMPARE[self.op](hi_r, lit)
        return True

    def expression(self) -> pc.Expression:
        f = pc.field(self.field)
        if self.op == "is_null":
            return f.is_null()
        if self.op == "is_not_null":
            return f.is_valid()
        if any(isinstance(v, float) for v in self.literals):
            return self._float_expression(f)
        if self.op == "in":
            return f.isin(pa.array([_literal(v) for v in self.literals]))
        if self.op == "starts_with":
            return pc.starts_with(f, self.literals[0])
        return {"=": f.__eq__, "<": f.__lt__, "<=": f.__le__, ">": f.__gt__, ">=": f.__ge__}[self.op](
            _literal(self.literals[0]))

    def _float_expression(self, f: pc.Expression) -> pc.Expression:
        """A comparison with a float literal where NaN is a value (float_comparison). A row is kept where the
        comparison holds with -0.0 below 0.0 (Paimon's order, that of the core API's exact filters) or with the two
        zeros equal (IEEE, Spark's SQL, which evaluates every pushed filter again): it drops no row either keeps."""
        if self.op == "in":  # NaN and the zeros as `=` compares them; the other values by Arrow's isin
            special = [v for v in self.literals if isinstance(v, float) and (v != v or v == 0)]
            plain = [v for v in self.literals if v is not None and not any(v is x for x in special)]
            expr = f.isin(pa.array(plain)) if plain else pc.scalar(False)
            for v in special:
                expr = expr | Leaf("=", self.field, (v,))._float_expression(f)
            return expr
        lit = self.literals[0]
        ieee = float_comparison(f, self.op, lit, signed_zeros=False)
        return ieee | float_comparison(f, self.op, lit) if lit == 0 else ieee

    def test(self, value: Any) -> bool | None:
        """Evaluate on one value (partition pruning); None is SQL's unknown. Floats compare as Paimon's partition
        predicates compare them (CompareUtils: Double.compareTo, so NaN equals NaN and -0.0 is not 0.0)."""
        if self.op == "is_null":
            return value is None
        if self.op == "is_not_null":
            return value is not None
        if value is None:
            return None
        if self.op == "in":
            return any(v is not None and _ranked(value, v) == _ranked(v, value) for v in self.literals)
        if self.op == "starts_with":
            return isinstance(value, str) and value.startswith(self.literals[0])
        return _COMPARE[self.op](_ranked(value, self.literals[0]), _ranked(self.literals[0], value))


def float_comparison(f: pc.Expression, op: str, literal: float, signed_zeros: bool = True) -> pc.Expression:
    """``f op literal`` for a FLOAT / DOUBLE column ``f`` as Java's Double.compare orders values (Paimon's predicates,
    CompareUtils): every NaN equal to NaN and above +Infinity; with ``signed_zeros``, -0.0 below 0.0 (without, the
    zeros equal, as IEEE). Null rows give null. ``op``: = != < <= > >=."""
    nan = pc.is_nan(f)
    if literal != literal:  # NaN
        out = {"=": nan, "!=": ~nan, ">=": nan, ">": pc.scalar(False) & f.is_valid(), "<": ~nan,
               "<=": f.is_valid()}[op]
        return out
    if signed_zeros and literal == 0:
        negative_zero = (f == 0) & (pc.divide(pc.scalar(1.0), f) < 0)
        minus = math.copysign(1.0, literal) < 0
        if op in ("=", "!="):
            equal = negative_zero if minus else (f == 0) & ~negative_zero
            return equal if op == "=" else ~equal
        below = (f < 0) | negative_zero if not minus else f < 0   # values below the literal
        if op == "<":
            return below
        if op == "<=":
            return (f < 0) | negative_zero if minus else f <= 0
        if op == ">=":
            return ~below
        return ((f > 0) | nan) if not minus else ~((f < 0) | negative_zero)  # ">"
    compare = {"=": f.__eq__, "!=": f.__ne__, "<": f.__lt__, "<=": f.__le__, ">": f.__gt__, ">=": f.__ge__}[op](
        literal)
    return compare | nan if op in (">", ">=", "!=") else compare


def _ranked(value: Any, other: Any) -> Any:
    """``value`` for a comparison with ``other``: when either is a float and both are numbers, the float's rank in
    Java's Double.compare order (types.total_order_value); else as it is."""
    numbers = (int, float)
    if (isinstance(value, float) or isinstance(other, float)) and isinstance(value, numbers) \
            and isinstance(other, numbers) and not isinstance(value, bool) and not isinstance(other, bool):
        return total_order_value(float(value))
    return value


def _literal(v: Any) -> Any:
    """A literal for an Arrow expression: a nanosecond timestamp (pandas.Timestamp, as TIMESTAMP(7..9) stats and
    partition values decode) as a timestamp[ns] scalar, which Arrow would otherwise take at microseconds."""
    if hasattr(v, "nanosecond") and hasattr(v, "value") and getattr(v, "nanosecond", 0):
        return pa.scalar(v.value, pa.timestamp("ns", tz="UTC" if v.tzinfo is not None else None))
    return v


@dataclass(frozen=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def may_match(self, stats: Callable[[str], tuple[Any, Any, int | None, int]]) -> bool:
        return all(c.may_match(stats) for c in self.children)

    def expression(self) -> pc.Expression:
        expr = self.children[0].expression()
        for c in self.children[1:]:
            expr = expr & c.expression()
        return expr


@dataclass(frozen=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        return set().union(*(c.fields() for c in self.children))

    def may_match(self, stats: Callable[[str], tuple[Any, Any, int | None, int]]) -> bool:
        return any(c.may_match(stats) for c in self.children)

    def expression(self) -> pc.Expression:
        expr = self.children[0].expression()
        for c in self.children[1:]:
            expr = expr | c.expression()
        return expr


def and_all(preds: Sequence[Predicate]) -> Predicate | None:
    preds = [p for p in preds if p is not None]
    if not preds:
        return None
    return preds[0] if len(preds) == 1 else And(tuple(preds))


def split_and(pred: Predicate | None) -> list[Predicate]:
    if pred is None:
        return []
    if isinstance(pred, And):
        return [x for c in pred.children for x in split_and(c)]
    return [pred]


def test_values(pred: Predicate, values: dict[str, Any]) -> bool:
    """Evaluate a predicate on known values (partition pruning); unknown counts as no match."""
    if isinstance(pred, Leaf):
        return bool(pred.test(values[pred.field]))
    if isinstance(pred, And):
        return all(test_values(c, values) for c in pred.children)
    if isinstance(pred, Or):
        return any(test_values(c, values) for c in pred.children)
    raise TypeError(pred)


def rename_fields(pred: Predicate | None, names: dict[str, str]) -> Predicate | None:
    """The same predicate over other column names (``names``: old -> new; others kept)."""
    if pred is None:
        return None
    if isinstance(pred, Leaf):
        return Leaf(pred.op, names.get(pred.field, pred.field), pred.literals)
    if isinstance(pred, (And, Or)):
        return type(pred)(tuple(rename_fields(c, names) for c in pred.children))
    raise TypeError(pred)
