"""Spark's pushed filters (pyspark.sql.datasource, 4.1+) -> core predicates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from ..predicate.predicates import And, Leaf, Or, Predicate
from ..schema.manager import TableSchema

_OPS = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
        "LessThanOrEqual": "<=", "In": "in", "IsNull": "is_null", "IsNotNull": "is_not_null",
        "StringStartsWith": "starts_with"}


def to_predicate(f: Any, schema: TableSchema, extra_columns: Sequence[str] = ()) -> Predicate | None:
    """The predicate for one filter, or None when it cannot prune (nested column, Not, ...).
    ``extra_columns``: columns a read has besides the table's (row tracking's `_ROW_ID`, ...)."""
    op = _OPS.get(type(f).__name__)
    if op is None:
        return None
    attr = f.attribute
    if len(attr) != 1 or (attr[0] not in schema.field_names and attr[0] not in extra_columns):
        return None
    if op in ("is_null", "is_not_null"):
        return Leaf(op, attr[0])
    value = f.value
    t = schema.field(attr[0]).type if attr[0] in schema.field_names else None  # (system columns are BIGINT)
    if t is not None and t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6 and op != "starts_with":
        return _on_truncated(op, attr[0], tuple(value) if op == "in" else (value,))
    if op == "in":
        return Leaf(op, attr[0], tuple(value))
    if value is None:
        return None
    return Leaf(op, attr[0], (value,))


_MICRO = dt.timedelta(microseconds=1)


def _on_truncated(op: str, name: str, values: tuple) -> Predicate | None:
    """A filter on a TIMESTAMP(7..9) column, which Spark sees truncated to microseconds (floor(v) op L), as a
    predicate on the stored nanosecond values: floor(v) = L is L <= v < L + 1us, floor(v) > L is v >= L + 1us,
    floor(v) <= L is v < L + 1us (< and >= keep their literal). Its bounds are whole microseconds, so it holds
    for the truncated values too."""
    if any(v is None or not isinstance(v, dt.datetime) for v in values):
        return None
    low = values[0]
    if op == "=":
        return And((Leaf(">=", name, (low,)), Leaf("<", name, (low + _MICRO,))))
    if op == "in":
        return Or(tuple(And((Leaf(">=", name, (v,)), Leaf("<", name, (v + _MICRO,)))) for v in values))
    if op == ">":
        return Leaf(">=", name, (low + _MICRO,))
    if op == "<=":
        return Leaf("<", name, (low + _MICRO,))
    return Leaf(op, name, (low,))  # >= and < hold as they are
