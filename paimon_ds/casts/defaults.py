"""Column default values of Paimon 1.x (``DataField.defaultValue``, set by ``CREATE TABLE ... c T DEFAULT v`` or
``ALTER COLUMN c SET DEFAULT v``): the text is read as the column's type with Paimon's string cast rules
(``DefaultValueUtils.convertDefaultValue``), and a writer writes it in place of a null in that column
(``TableWriteImpl``'s ``DefaultValueRow``; top-level columns only, after the NOT NULL check). Readers do not use
it.

Text forms, as Paimon's rules read them: an atomic value (``1``, ``99.99D``, ``2024-01-01``; one pair of enclosing
single quotes is dropped), ``MAP(k1, v1, ...)`` or ``{k1 -> v1, ...}`` (``NULL``: no default), ``ARRAY(e1, ...)``
or ``[e1, ...]``, ``STRUCT(f1, ...)`` or ``{f1, ...}``; an element ``null`` is a null. Paimon's splitters differ:
the map's drops double quotes and a backslash with the character after it, the array's and struct's keep them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from ..schema.types import ArrayType, DataType, MapType, RowType, SchemaError, to_arrow_type
from .column import cast_column
from .rules import STRING

_OPEN, _CLOSE = "[{(", "]})"
_MAP_BRACKETS = re.compile(r"^\s*\{(.*)\}\s*$", re.S)
_MAP_FUNCTION = re.compile(r"^\s*MAP\s*\((.*)\)\s*$", re.S | re.I)
_MAP_ENTRY = re.compile(r"(.+?)\s*->\s*(.+)", re.S)
_ARRAY_BRACKETS = re.compile(r"^\s*\[(.*)\]\s*$", re.S)
_ARRAY_FUNCTION = re.compile(r"^\s*ARRAY\s*\((.*)\)\s*$", re.S | re.I)
_ROW_BRACKETS = re.compile(r"^\s*\{(.*)\}\s*$", re.S)
_ROW_FUNCTION = re.compile(r"^\s*STRUCT\s*\((.*)\)\s*$", re.S | re.I)


def _split(content: str, keep_quoting: bool) -> list[str]:
    """Split at the commas outside brackets and double quotes. ``keep_quoting``: the array's and struct's
    splitter (quotes and escapes stay in the parts); otherwise the map's (quotes, and a backslash with the
    character after it, are dropped, and each part is trimmed)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    in_quotes = escaped = False

    def flush() -> None:
        if current:
            text = "".join(current)
            parts.append(text if keep_quoting else text.strip())
            current.clear()
    for c in content:
        if escaped:
            escaped = False
            if not keep_quoting:
                continue
        elif c == "\\":
            escaped = True
            if not keep_quoting:
                continue
        elif c == '"':
            in_quotes = not in_quotes
            if not keep_quoting:
                continue
        elif not in_quotes:
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE and depth:
                depth -= 1
            elif c == "," and depth == 0:
                flush()
                continue
        current.append(c)
    flush()
    return parts


def _element(text: str, dtype: DataType) -> Any:
    text = text.strip()
    return None if text == "null" else _value(text, dtype)


def _value(text: str, dtype: DataType) -> Any:
    """``text`` read as ``dtype`` (a Python value for pyarrow), as Paimon's cast from STRING reads it."""
    if isinstance(dtype, MapType):
        return _map(text, dtype)
    if isinstance(dtype, ArrayType):
        return _array(text, dtype)
    if isinstance(dtype, RowType):
        return _row(text, dtype)
    return cast_column(pa.array([text], pa.string()), STRING, dtype).to_pylist()[0]


def _map(text: str, dtype: MapType) -> list[tuple[Any, Any]] | None:
    text = text.strip()
    if text == "{}" or text.upper() == "MAP()":
        return []
    if text.upper() == "NULL":
        return None
    if m := _MAP_BRACKETS.match(text):
        entries = {}
        for entry in _split(m.group(1).strip(), keep_quoting=False):
            e = _MAP_ENTRY.fullmatch(entry)
            if not e:
                raise ValueError(f"invalid map entry {entry!r}")
            entries[_element(e.group(1), dtype.key)] = _element(e.group(2), dtype.value)
        return list(entries.items())
    if m := _MAP_FUNCTION.match(text):
        items = _split(m.group(1).strip(), keep_quoting=False)
        if len(items) % 2:
            raise ValueError("a MAP(...) needs an even number of elements")
        keys = [_element(k, dtype.key) for k in items[0::2]]
        if len(set(keys)) < len(keys):
            raise ValueError("a key appears twice")  # Java's Collectors.toMap refuses a duplicate key
        return list(zip(keys, (_element(v, dtype.value) for v in items[1::2])))
    raise ValueError("expected {k -> v} or MAP(k, v)")


def _array(text: str, dtype: ArrayType) -> list[Any]:
    text = text.strip()
    if text == "[]" or text.upper() == "ARRAY()":
        return []
    m = _ARRAY_BRACKETS.match(text) or _ARRAY_FUNCTION.match(text)
    if not m:
        raise ValueError("expected [a, b] or ARRAY(a, b)")
    return [_element(e, dtype.element) for e in _split(m.group(1).strip(), keep_quoting=True)]


def _row(text: str, dtype: RowType) -> dict[str, Any]:
    text = text.strip()
    nulls = {f.name: None for f in dtype.fields}
    if text == "{}" or text.upper() == "STRUCT()":
        return nulls
    m = _ROW_BRACKETS.match(text) or _ROW_FUNCTION.match(text)
    if not m:
        raise ValueError("expected {f1, f2} or STRUCT(f1, f2)")
    content = m.group(1).strip()
    if not content:
        return nulls
    values = _split(content, keep_quoting=True)
    if len(values) != len(dtype.fields):
        raise ValueError(f"{len(values)} field value(s) for {len(dtype.fields)} field(s)")
    return {f.name: _element(v, f.type) for f, v in zip(dtype.fields, values)}


def default_array(text: str, dtype: DataType) -> pa.Array:
    """The default ``text`` of a ``dtype`` column as a one-value Arrow array (a null when the text reads as
    null); SchemaError with Paimon's words when Paimon's rules cannot read it."""
    unquoted = text[1:-1] if len(text) >= 2 and text.startswith("'") and text.endswith("'") else text
    try:
        return pa.array([_value(unquoted, dtype)], to_arrow_type(dtype))
    except Exception as e:  # any failure of the cast is the text's fault, as in DefaultValueUtils
        raise SchemaError(f"Unsupported default value `{text}` for type {dtype.sql()} ({e})") from None


def fill_defaults(col: pa.Array, default: pa.Array) -> pa.Array:
    """``col`` with each null replaced by the one value of ``default`` (vectorised: one take)."""
    if not col.null_count or default.null_count:
        return col
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
    indices = np.where(valid, np.arange(len(col)), len(col))
    return pa.concat_arrays([col, default.cast(col.type)]).take(pa.array(indices))
