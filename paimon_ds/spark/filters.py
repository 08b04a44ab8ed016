"""Spark's pushed filters (pyspark.sql.datasource, 4.1+) -> core predicates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..predicate import Leaf, Predicate
from ..schema import TableSchema

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
    if op == "in":
        return Leaf(op, attr[0], tuple(value))
    if value is None:
        return None
    return Leaf(op, attr[0], (value,))
