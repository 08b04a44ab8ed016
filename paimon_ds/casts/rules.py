"""Which casts Paimon allows, and which of its cast rules reads each: its cast table, with Paimon 1.x's lookup.

``ALTER TABLE ... ALTER COLUMN ... TYPE`` changes a column to any type Paimon's cast table reaches: the source may
be cast to the target (`DataTypeCasts.supportsCast`, explicit casts allowed) *and* a cast rule resolves for the
pair (`CastExecutors.resolve`, which looks rules up by target type, target root, target families, then by input
root and input families, the rule registered last winning). ``castable`` answers the first question exactly as
Paimon 1.x does (it guards ALTER in paimon_ds too) and ``resolve`` names the rule, whose executor
(``casts.column``) reads the values.

Casts Paimon allows in ALTER but cannot read back are refused here too (e.g. ARRAY to STRING when an element
type has no string cast).
"""

from __future__ import annotations

import functools

from ..schema.types import MAX_LENGTH, ArrayType, DataType, MapType, RowType, SchemaError

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FLOATS = ("FLOAT", "DOUBLE")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")


class CastError(SchemaError):
    """A value that cannot be read under the column's new type (Paimon fails the read too)."""


# DataTypeRoot -> its families, in Paimon's declaration order (the order rules are looked up in)
_FAMILIES: dict[str, tuple[str, ...]] = {
    "CHAR": ("PREDEFINED", "CHARACTER_STRING"), "VARCHAR": ("PREDEFINED", "CHARACTER_STRING"),
    "BOOLEAN": ("PREDEFINED",), "BINARY": ("PREDEFINED", "BINARY_STRING"), "VARBINARY": ("PREDEFINED", "BINARY_STRING"),
    "DECIMAL": ("PREDEFINED", "NUMERIC", "EXACT_NUMERIC"),
    **{r: ("PREDEFINED", "NUMERIC", "INTEGER_NUMERIC", "EXACT_NUMERIC") for r in INTEGERS},
    **{r: ("PREDEFINED", "NUMERIC", "APPROXIMATE_NUMERIC") for r in FLOATS},
    "DATE": ("PREDEFINED", "DATETIME"), "TIME": ("PREDEFINED", "DATETIME", "TIME"),
    "TIMESTAMP": ("PREDEFINED", "DATETIME", "TIMESTAMP"),
    "TIMESTAMP_LTZ": ("PREDEFINED", "DATETIME", "TIMESTAMP", "EXTENSION"),
    "VARIANT": ("PREDEFINED",), "BLOB": ("PREDEFINED",),
    "ARRAY": ("CONSTRUCTED", "COLLECTION"), "MULTISET": ("CONSTRUCTED", "COLLECTION"),
    "MAP": ("CONSTRUCTED", "EXTENSION"), "ROW": ("CONSTRUCTED",),
}


# CastExecutors' rules in registration order: (rule, input keys, target keys), a key naming a root ("r:"), a
# family ("f:") or, for a few targets, the exact type STRING ("t:STRING"); a rule registered later for the same
# (target key, input key) replaces an earlier one
_INT_NUM, _APPROX, _CS = "f:INTEGER_NUMERIC", "f:APPROXIMATE_NUMERIC", "f:CHARACTER_STRING"


_TS_ROOTS = ("r:TIMESTAMP", "r:TIMESTAMP_LTZ")


_RULES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("decimal_to_decimal", ("r:DECIMAL",), ("r:DECIMAL",)),
    ("number_to_decimal", (_INT_NUM, _APPROX), ("r:DECIMAL",)),
    ("decimal_to_number", ("r:DECIMAL",), (_INT_NUM, _APPROX)),
    ("number_to_number", (_INT_NUM, _APPROX), (_INT_NUM, _APPROX)),
    ("number_to_timestamp", ("f:NUMERIC",), _TS_ROOTS),
    ("boolean_to_number", ("r:BOOLEAN",), ("f:NUMERIC",)),
    ("number_to_boolean", (_INT_NUM,), ("r:BOOLEAN",)),
    ("number_to_string", ("f:NUMERIC",), (_CS,)),
    ("boolean_to_string", ("r:BOOLEAN",), (_CS,)),
    ("timestamp_to_string", ("f:TIMESTAMP",), ("t:STRING",)),
    ("time_to_string", ("r:TIME",), ("t:STRING",)),
    ("date_to_string", ("r:DATE",), ("t:STRING",)),
    ("string_to_string", (_CS,), (_CS,)),
    ("array_to_string", ("r:ARRAY",), (_CS,)),
    ("map_to_string", ("r:MAP",), (_CS,)),
    ("row_to_string", ("r:ROW",), (_CS,)),
    ("string_to_boolean", (_CS,), ("r:BOOLEAN",)),
    ("string_to_decimal", (_CS,), ("r:DECIMAL",)),
    ("string_to_number", (_CS,), (_INT_NUM, _APPROX)),
    ("string_to_date", (_CS,), ("r:DATE",)),
    ("string_to_time", (_CS,), ("r:TIME",)),
    ("string_to_timestamp", (_CS,), ("f:TIMESTAMP",)),
    ("string_to_binary", (_CS,), ("f:BINARY_STRING",)),
    ("string_to_constructed", (_CS,), ("r:ARRAY", "r:MAP", "r:ROW")),  # ALTER never reaches these
    ("timestamp_to_timestamp", _TS_ROOTS, _TS_ROOTS),
    ("timestamp_to_date", _TS_ROOTS, ("r:DATE",)),
    ("timestamp_to_time", _TS_ROOTS, ("r:TIME",)),
    ("date_to_timestamp", ("r:DATE",), _TS_ROOTS),
    ("time_to_timestamp", ("r:TIME",), _TS_ROOTS),
    ("timestamp_to_number", _TS_ROOTS, ("r:BIGINT", "r:INT")),
    ("binary_to_binary", ("f:BINARY_STRING",), ("f:BINARY_STRING",)),
    ("binary_to_string", ("f:BINARY_STRING",), (_CS,)),
]


@functools.lru_cache(maxsize=1)
def _rule_table() -> dict[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for rule, inputs, targets in _RULES:
        for target in targets:
            for inp in inputs:
                table[(target, inp)] = rule
    return table


def _keys(t: DataType, target: bool) -> list[str]:
    """A type's lookup keys in CastExecutors' order: (the exact type STRING), its root, its families."""
    keys = ["t:STRING"] if target and t.root == "VARCHAR" and t.params == (MAX_LENGTH,) and t.nullable else []
    return keys + [f"r:{t.root}"] + [f"f:{f}" for f in _FAMILIES.get(t.root, ())]


def resolve(src: DataType, dst: DataType) -> str | None:
    """The name of the cast rule CastExecutors resolves for (src, dst), or None."""
    table = _rule_table()
    for tk in _keys(dst, True):
        for ik in _keys(src, False):
            rule = table.get((tk, ik))
            if rule is not None:
                return rule
    return None


# DataTypeCasts: target root -> roots it may be cast from (implicit and explicit casts together)
def _family(*names: str) -> set[str]:
    return {r for r, fams in _FAMILIES.items() if any(n in fams for n in names)}


_CASTS_FROM: dict[str, set[str]] = {
    "CHAR": {"CHAR"} | _family("PREDEFINED", "CONSTRUCTED"),
    "VARCHAR": _family("CHARACTER_STRING", "PREDEFINED", "CONSTRUCTED"),
    "BOOLEAN": {"BOOLEAN"} | _family("CHARACTER_STRING", "INTEGER_NUMERIC"),
    "BINARY": {"BINARY", "VARBINARY"} | _family("CHARACTER_STRING"),
    "VARBINARY": _family("BINARY_STRING", "CHARACTER_STRING"),
    "DECIMAL": _family("NUMERIC", "CHARACTER_STRING") | {"BOOLEAN", *TIMESTAMPS},
    **{r: _family("NUMERIC", "CHARACTER_STRING") | {r, "BOOLEAN", *TIMESTAMPS} for r in (*INTEGERS, *FLOATS)},
    "DATE": {"DATE"} | _family("TIMESTAMP", "CHARACTER_STRING"),
    "TIME": {"TIME"} | _family("TIME", "TIMESTAMP", "CHARACTER_STRING"),
    "TIMESTAMP": set(TIMESTAMPS) | _family("DATETIME", "CHARACTER_STRING", "NUMERIC"),
    "TIMESTAMP_LTZ": set(TIMESTAMPS) | _family("DATETIME", "CHARACTER_STRING", "NUMERIC"),
}


def castable(src: DataType, dst: DataType) -> bool:
    """Whether Paimon's ALTER COLUMN TYPE allows ``src`` -> ``dst`` and paimon_ds reads the files written before
    as ``dst`` (nullability aside)."""
    if src.copy(True) == dst.copy(True):
        return True
    if src.root not in _CASTS_FROM.get(dst.root, {dst.root}):
        return False
    rule = resolve(src, dst)
    if rule is None or rule == "string_to_constructed":
        return False
    if rule == "number_to_timestamp":
        return src.root in ("INT", "BIGINT")  # the rule has no executor for other numbers
    if rule in ("array_to_string", "map_to_string", "row_to_string"):
        return all(castable(e, STRING) for e in _elements(src))
    return True


# Paimon's STRING (a nullable VARCHAR of the largest length): what nested values cast their elements to
STRING = DataType("VARCHAR", (MAX_LENGTH,), True)


def _elements(t: DataType) -> list[DataType]:
    if isinstance(t, ArrayType):
        return [t.element]
    if isinstance(t, MapType):
        return [t.key, t.value]
    if isinstance(t, RowType):
        return [f.type for f in t.fields]
    return []
