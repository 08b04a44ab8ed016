"""Core predicates: what a scan can prune files with and a reader can filter rows with.

Independent of Spark; spark/filters.py translates Spark's pushed filters into these.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

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

    def expression(self) -> ds.Expression:
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

    def expression(self) -> ds.Expression:
        f = ds.field(self.field)
        if self.op == "is_null":
            return f.is_null()
        if self.op == "is_not_null":
            return f.is_valid()
        if self.op == "in":
            return f.isin(pa.array([_literal(v) for v in self.literals]))
        if self.op == "starts_with":
            return pc.starts_with(f, self.literals[0])
        return {"=": f.__eq__, "<": f.__lt__, "<=": f.__le__, ">": f.__gt__, ">=": f.__ge__}[self.op](
            _literal(self.literals[0]))

    def test(self, value: Any) -> bool | None:
        """Evaluate on one value (partition pruning); None is SQL's unknown."""
        if self.op == "is_null":
            return value is None
        if self.op == "is_not_null":
            return value is not None
        if value is None:
            return None
        if self.op == "in":
            return value in self.literals
        if self.op == "starts_with":
            return isinstance(value, str) and value.startswith(self.literals[0])
        return _COMPARE[self.op](value, self.literals[0])


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

    def expression(self) -> ds.Expression:
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

    def expression(self) -> ds.Expression:
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
