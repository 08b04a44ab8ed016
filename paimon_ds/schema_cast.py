"""Reading a column written under an older type: Paimon's whole cast table, with Java's semantics.

``ALTER TABLE ... ALTER COLUMN ... TYPE`` changes a column to any type Paimon's cast table reaches: the
source may be cast to the target (`DataTypeCasts.supportsCast`, explicit casts allowed) *and* a cast rule
resolves for the pair (`CastExecutors.resolve`, which looks rules up by target type, target root, target
families, then by input root and input families, the rule registered last winning). Files written before
keep the old type and readers cast each value, with the rule's Java semantics. ``castable`` answers the
first question exactly as Paimon 1.x does (it guards ALTER in paimon_ds too) and ``cast_column`` applies
the rule. The rules, and what their values become (Paimon's ``casting`` package and the
``BinaryStringUtils`` / ``DecimalUtils`` / ``DateTimeUtils`` helpers they use):

- numbers among themselves: Java's primitive conversions (integers wrap when narrowed, floating point to
  integer truncates toward zero and saturates, NaN is 0; TINYINT/SMALLINT through int); DECIMAL to an integer
  truncates toward zero and wraps as ``BigDecimal.longValue`` does; DECIMAL to FLOAT/DOUBLE as
  ``DecimalUtils.doubleValue`` (a compact decimal divides its unscaled long by a power of ten);
- integers, floating point, DECIMAL, BOOLEAN (1 / 0) to DECIMAL(p, s): rounded half-up to s digits, null when
  more than p digits remain (floating point through ``BigDecimal.valueOf(double)``, its shortest digits);
- BOOLEAN to numbers (1 / 0); integers to BOOLEAN (not 0);
- to CHAR / VARCHAR / STRING: numbers and BOOLEAN by Java's ``toString``; then cut to the length, a CHAR
  padded with spaces. DATE, TIME and TIMESTAMP only to STRING itself (there is no rule for a shorter target):
  ``yyyy-MM-dd``, ``HH:mm:ss[.fff]`` (TIME's digits as ``formatTimestampMillis`` writes them) and
  ``yyyy-MM-dd HH:mm:ss[.f...]`` (nine fraction digits, trailing zeros cut down to the precision; a
  TIMESTAMP_LTZ in the local time zone). BINARY/VARBINARY as their bytes read as UTF-8, ARRAY ``[a, b]``,
  MAP ``{k -> v}``, ROW ``{a, b}`` (elements as their casts to STRING, ``null`` for nulls), without cutting;
- strings to BOOLEAN (``t true y yes 1`` / ``f false n no 0``, any case), integers (an optional sign, digits, an
  ignored fraction; anything else, or an overflow, fails the read, as in Paimon), FLOAT/DOUBLE
  (``Double.parseDouble``), DECIMAL (``new BigDecimal(s)``, then as above), DATE (``yyyy-MM-dd`` leniently, or a
  number of days), TIME (``HH:mm:ss[.fff]``, or milliseconds), TIMESTAMP(p) (``yyyy-M-d[ H:m:s[.f]]`` or ``T``, or
  a number of seconds / millis / micros / nanos for precision 0 / 3 / 6 / 9; a TIMESTAMP_LTZ is read in the
  local zone), BINARY(n) (the UTF-8 bytes, cut or zero-padded to n) and VARBINARY(n) (cut);
- BINARY/VARBINARY to BINARY(n) / VARBINARY(n) likewise;
- TIMESTAMP / TIMESTAMP_LTZ to one another (through the local zone between the two kinds) and to a lower
  precision (``DateTimeUtils.truncate``, which rounds millis toward zero up to precision 3); to DATE and TIME
  (floor division / modulo of the day, a TIMESTAMP_LTZ in the local zone); to INT / BIGINT (seconds, ``millis /
  1000`` rounded toward zero; INT wraps);
- DATE and TIME to TIMESTAMP / TIMESTAMP_LTZ (midnight / 1970-01-01 plus the time; an LTZ from local midnight);
  INT / BIGINT to TIMESTAMP (seconds since the epoch; an LTZ keeps the local wall clock of that instant, as
  Paimon's rule does).

The local time zone is the process's (``TZ``, else ``/etc/localtime``), as Java's rules use the JVM's default.

Casts Paimon allows in ALTER but cannot read back are refused here too (e.g. ARRAY to STRING when an element
type has no string cast). Known difference: floating point to string prints the shortest digits that read back
as the value (Java 19+'s Double.toString); Java 8-17 print a longer form for a few values (2e23 as
1.9999999999999998E23, subnormals such as 4.9E-324).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import MAX_LENGTH, ArrayType, DataType, MapType, RowType, SchemaError, conform_array, to_arrow_type

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FLOATS = ("FLOAT", "DOUBLE")
NUMBERS = INTEGERS + FLOATS
STRINGS = ("CHAR", "VARCHAR")
BINARIES = ("BINARY", "VARBINARY")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_NUMPY = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64,
          "FLOAT": np.float32, "DOUBLE": np.float64}
_MILLIS_PER_DAY = 86_400_000


class CastError(SchemaError):
    """A value that cannot be read under the column's new type (Paimon fails the read too)."""


# ------------------------------------------------------------------------------------ Paimon's cast table

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
        return all(castable(e, _STRING) for e in _elements(src))
    return True


_STRING = DataType("VARCHAR", (MAX_LENGTH,), True)


def _elements(t: DataType) -> list[DataType]:
    if isinstance(t, ArrayType):
        return [t.element]
    if isinstance(t, MapType):
        return [t.key, t.value]
    if isinstance(t, RowType):
        return [f.type for f in t.fields]
    return []


# ------------------------------------------------------------------------------------ casting

def cast_column(col: pa.Array | pa.ChunkedArray, src: DataType | None, dst: DataType,
                arrow_dst: pa.DataType | None = None, zone: str | None = None) -> pa.Array:
    """``col`` (values of Paimon type ``src``, None: unknown) read as ``dst``, with Paimon's cast semantics, in
    the Arrow type ``arrow_dst`` (default: ``dst``'s). ``zone``: the local time zone (default: the process's)."""
    arrow_dst = arrow_dst if arrow_dst is not None else to_arrow_type(dst)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if src is None or src.copy(True) == dst.copy(True):
        return conform_array(col, arrow_dst)
    rule = resolve(src, dst) if castable(src, dst) else None
    if rule is None:
        raise CastError(f"a column changed from {src.sql()} to {dst.sql()}: Paimon has no cast that reads the "
                        "files written before the change")
    col = conform_array(col, to_arrow_type(src))
    out = _CASTS[rule](col, src, dst, zone or local_zone())
    return conform_array(out, arrow_dst)


def local_zone() -> str:
    """The process's time zone name (Java's default time zone): ``TZ``, else ``/etc/localtime``, else UTC."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        return name
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


def _valid(col: pa.Array) -> np.ndarray:
    return col.is_valid().to_numpy(zero_copy_only=False)


def _with_nulls(values: np.ndarray | list, arrow_type: pa.DataType, valid: np.ndarray) -> pa.Array:
    if isinstance(values, list):
        return pa.array([v if ok else None for v, ok in zip(values, valid)], arrow_type)
    return pa.array(values, arrow_type, mask=~valid)


# ---------------------------------------------------------------- numbers

def _java_narrow(values: np.ndarray, target: str) -> np.ndarray:
    """Java's (byte)/(short)/(int) of a long: wraps."""
    with np.errstate(all="ignore"):
        return values.astype(np.int64).astype(_NUMPY[target])


def _float_to_integral(values: np.ndarray, target: str) -> np.ndarray:
    """Java (int)/(long) of a double (NaN 0, toward zero, saturated); byte and short through int."""
    wide = np.int64 if target == "BIGINT" else np.int32
    info = np.iinfo(wide)
    f = np.trunc(np.nan_to_num(values.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min))
    out = np.where(f >= float(info.max), info.max, np.where(f <= float(info.min), info.min, 0)).astype(wide)
    inside = (f < float(info.max)) & (f > float(info.min))
    out[inside] = f[inside].astype(wide)
    return _java_narrow(out, target) if target in ("TINYINT", "SMALLINT") else out


def _number_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    a, b = src.root, dst.root
    valid = _valid(col)
    values = col.fill_null(0).to_numpy(zero_copy_only=False)
    if b in FLOATS:
        with np.errstate(all="ignore"):
            out = values.astype(_NUMPY[b])
    elif a in INTEGERS:
        out = _java_narrow(values, b)
    else:
        out = _float_to_integral(values, b)
    return _with_nulls(out, pa.from_numpy_dtype(_NUMPY[b]), valid)


def _decimal_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    b = dst.root
    valid = _valid(col)
    if b in FLOATS:
        if src.precision <= 18:  # DecimalUtils.doubleValue: the unscaled long divided by 10^scale
            unscaled = col.cast(pa.decimal128(38, src.scale)).fill_null(0)
            ints = np.array([int(v.scaleb(src.scale)) for v in unscaled.to_pylist()], np.int64)
            out = ints.astype(np.float64) / (10.0 ** src.scale)
        else:
            out = np.array([0.0 if v is None else float(v) for v in col.to_pylist()], np.float64)
        return _with_nulls(out.astype(_NUMPY[b]), pa.from_numpy_dtype(_NUMPY[b]), valid)
    # castToIntegral: toward zero, then BigDecimal.longValue (the low 64 bits), then Java's narrowing
    longs = [0 if v is None else _wrap64(int(v)) for v in col.to_pylist()]
    return _with_nulls(_java_narrow(np.array(longs, np.int64), b), pa.from_numpy_dtype(_NUMPY[b]), valid)


def _wrap64(n: int) -> int:
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >= 1 << 63 else n


def _to_decimal(values: list[Any], dst: DataType) -> pa.Array:
    """Decimal.fromBigDecimal of each value: half-up to the scale, null when the precision overflows."""
    quantum = decimal.Decimal(1).scaleb(-dst.scale)
    ctx = decimal.Context(prec=100)
    out = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        d = decimal.Decimal(v).quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=ctx)
        out.append(d if len(d.as_tuple().digits) <= dst.precision else None)
    return pa.array(out, pa.decimal128(dst.precision, dst.scale))


def _number_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    values: list[Any] = col.to_pylist()
    if src.root in FLOATS:  # BigDecimal.valueOf(double): Double.toString's digits (of the float's double value)
        for v in values:
            if v is not None and (v != v or v in (float("inf"), float("-inf"))):
                raise CastError(f"cannot read {v} as {dst.sql()}: it has no decimal value")
        values = [None if v is None else java_float_str(float(v), False) for v in values]
    return _to_decimal(values, dst)


def _decimal_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    if dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale:
        return col.cast(pa.decimal128(dst.precision, dst.scale))  # every value fits exactly
    return _to_decimal(col.to_pylist(), dst)


def _boolean_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    ints = col.cast(pa.int8())
    if dst.root == "DECIMAL":
        return _to_decimal(ints.to_pylist(), dst)
    return ints.cast(pa.from_numpy_dtype(_NUMPY[dst.root]))


def _number_to_boolean(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return pc.not_equal(col, pa.scalar(0, col.type))


# ---------------------------------------------------------------- to strings

def _character_string(out: pa.Array, dst: DataType) -> pa.Array:
    """BinaryStringUtils.toCharacterString: cut to the length, a CHAR padded with spaces."""
    length = dst.params[0] if dst.params else MAX_LENGTH
    if length < MAX_LENGTH:
        out = pc.utf8_slice_codeunits(out, 0, length)
        if dst.root == "CHAR":
            out = pc.utf8_rpad(out, length, " ")
    return out


def _number_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    if src.root in FLOATS:
        out = pa.array([None if v is None else java_float_str(v, src.root == "FLOAT") for v in col.to_pylist()],
                       pa.string())
    else:
        out = col.cast(pa.string())  # integers; DECIMAL as toPlainString with its scale
    return _character_string(out, dst)


def _boolean_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _character_string(pc.if_else(col, "true", "false"), dst)


def _string_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _character_string(col.cast(pa.string()), dst)


def _binary_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # BinaryString.fromBytes: the bytes as UTF-8 (malformed sequences read as U+FFFD, as Java decodes them)
    return pa.array([None if v is None else v.decode("utf-8", errors="replace") for v in col.to_pylist()],
                    pa.string())


def _date_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return pa.array([None if d is None else _ymd(d) for d in col.cast(pa.int32()).to_pylist()], pa.string())


def _ymd(days: int) -> str:
    """DateTimeUtils.formatDate of epoch days (its Julian day arithmetic, four-digit years)."""
    j = days + 2440588 + 32044
    g, dg = j // 146097, j % 146097
    c = (dg // 36524 + 1) * 3 // 4
    dc = dg - c * 36524
    b, db = dc // 1461, dc % 1461
    a = (db // 365 + 1) * 3 // 4
    da = db - a * 365
    y = g * 400 + c * 100 + b * 4 + a
    m = (da * 5 + 308) // 153 - 2
    d = da - (m + 4) * 153 // 5 + 122
    year, month, day = y - 4800 + (m + 2) // 12, (m + 2) % 12 + 1, d + 1
    return f"{_int4(year)}-{month:02d}-{day:02d}"


def _int4(i: int) -> str:
    return f"{i % 10000:04d}"  # Java's int4: the last four digits


def _time_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return pa.array([None if t is None else _hms(t, src.precision) for t in col.cast(pa.int32()).to_pylist()],
                    pa.string())


def _hms(time: int, precision: int) -> str:
    """DateTimeUtils.formatTimestampMillis: HH:mm:ss, then fraction digits until the rest is zero."""
    while time < 0:
        time += _MILLIS_PER_DAY
    h, rest = divmod(time, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    text = f"{h:02d}:{m:02d}:{s:02d}"
    if precision > 0:
        text += "."
        while precision > 0:
            text += str(ms // 100)
            ms = ms % 100 * 10
            if ms == 0:
                break
            precision -= 1
    return text


def _timestamp_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, nanos, valid = _timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = _instant_to_local(millis, valid, zone)
    out = []
    for ms, ns, ok in zip(millis.tolist(), nanos.tolist(), valid.tolist()):
        out.append(_format_timestamp(ms, ns, src.precision) if ok else None)
    return pa.array(out, pa.string())


def _format_timestamp(millis: int, nano_of_milli: int, precision: int) -> str:
    """DateTimeUtils.formatTimestamp: nine fraction digits, trailing zeros cut down to the precision."""
    day, ms_of_day = divmod(millis, _MILLIS_PER_DAY)
    fraction = f"{ms_of_day % 1000 * 1_000_000 + nano_of_milli:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    secs = ms_of_day // 1000
    text = f"{_ymd(day)} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + ("." + fraction if fraction else "")


def _nested_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    """ArrayToString / MapToString / RowToString: elements as their casts to STRING, not cut to the length."""
    def text(values: pa.Array, t: DataType) -> list[str | None]:
        as_string = cast_column(values, t, _STRING, pa.string(), zone)
        return ["null" if v is None else v for v in as_string.to_pylist()]
    valid = _valid(col)
    out: list[str | None] = []
    if isinstance(src, RowType):
        fields = [text(col.field(i), f.type) for i, f in enumerate(src.fields)]
        for i in range(len(col)):
            out.append("{" + ", ".join(f[i] for f in fields) + "}" if valid[i] else None)
        return pa.array(out, pa.string())
    col = col.take(pa.array(range(len(col)), pa.int64())) if col.offset else col
    offsets = col.offsets.to_pylist()
    if isinstance(src, MapType):
        keys, items = text(col.keys, src.key), text(col.items, src.value)
        for i in range(len(col)):
            pairs = [f"{keys[j]} -> {items[j]}" for j in range(offsets[i], offsets[i + 1])]
            out.append("{" + ", ".join(pairs) + "}" if valid[i] else None)
    else:
        elements = text(col.values, src.element)  # type: ignore[attr-defined]
        for i in range(len(col)):
            out.append("[" + ", ".join(elements[offsets[i]:offsets[i + 1]]) + "]" if valid[i] else None)
    return pa.array(out, pa.string())


# ---------------------------------------------------------------- from strings

_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}


def _strings(col: pa.Array) -> list[str | None]:
    return col.cast(pa.string()).to_pylist()


def _string_to_boolean(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    out = []
    for s in _strings(col):
        if s is None:
            out.append(None)
        elif s.lower() in _TRUE:
            out.append(True)
        elif s.lower() in _FALSE:
            out.append(False)
        else:
            raise CastError(f"cannot read {s!r} as BOOLEAN (Paimon reads t, true, y, yes, 1, f, false, n, no, 0)")
    return pa.array(out, pa.bool_())


_INT_TEXT = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")


def _parse_integral(s: str, bits: int) -> int:
    """BinaryStringUtils.toLong / toInt: a sign, digits, an ignored fraction; nothing else; no overflow."""
    m = _INT_TEXT.fullmatch(s)
    if m is None or s in ("", "+", "-"):
        raise CastError(f"cannot read {s!r} as an integer: not a number")
    n = int(m.group(2) or "0") * (-1 if m.group(1) == "-" else 1)
    if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
        raise CastError(f"cannot read {s!r} as a {bits}-bit integer: it overflows")
    return n


def _string_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    b = dst.root
    out: list[int | float | None] = []
    for s in _strings(col):
        if s is None:
            out.append(None)
        elif b in FLOATS:
            out.append(_parse_float(s, b))
        else:  # toByte / toShort go through toInt and refuse what does not fit
            n = _parse_integral(s, 64 if b == "BIGINT" else 32)
            if not -(1 << (_INT_BITS[b] - 1)) <= n < (1 << (_INT_BITS[b] - 1)):
                raise CastError(f"cannot read {s!r} as {b}: it overflows")
            out.append(n)
    return pa.array(out, pa.from_numpy_dtype(_NUMPY[b]))


_JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?")


def _parse_float(s: str, b: str) -> float:
    """Double.parseDouble / Float.parseFloat (decimal forms; blanks around are ignored)."""
    text = s.strip("".join(chr(c) for c in range(33)))
    if not _JAVA_FLOAT.fullmatch(text):
        raise CastError(f"cannot read {s!r} as {b}: not a number")
    if text[-1:] in ("f", "F", "d", "D"):
        text = text[:-1]
    if b == "FLOAT" and "N" not in text and "I" not in text:
        return _to_float32(decimal.Decimal(text))  # Float.parseFloat rounds the decimal once, to float
    return float(np.float32(float(text))) if b == "FLOAT" else float(text)


def _to_float32(d: decimal.Decimal) -> float:
    """The float nearest to ``d`` (ties to even), rounding once as Float.parseFloat does."""
    top = np.finfo(np.float32).max
    if abs(d) >= decimal.Decimal(float(top)) + decimal.Decimal(2) ** 103:  # the largest float plus half its ulp
        return float("inf") if d > 0 else float("-inf")  # past the largest float by half a step: infinity
    f = np.float32(min(max(float(d), -float(top)), float(top)))  # within one float of the answer
    best = f
    for cand in (np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        gap_best, gap_cand = abs(decimal.Decimal(float(best)) - d), abs(decimal.Decimal(float(cand)) - d)
        if gap_cand < gap_best or (gap_cand == gap_best and int(cand.view(np.int32)) % 2 == 0):
            best = cand
    return float(best)


_BIG_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _string_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    values = _strings(col)
    for s in values:
        if s is not None and not _BIG_DECIMAL.fullmatch(s):
            raise CastError(f"cannot read {s!r} as {dst.sql()}: not a decimal number")
    return _to_decimal(values, dst)


def _string_to_binary(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _binary_string(col.cast(pa.binary()), dst)


def _binary_string(col: pa.Array, dst: DataType) -> pa.Array:
    """BinaryStringUtils.toBinaryString: BINARY(n) cut or zero-padded to n bytes, VARBINARY(n) cut."""
    n = dst.params[0]
    if n >= MAX_LENGTH:
        return col
    out = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
        elif dst.root == "BINARY":
            out.append(v[:n].ljust(n, b"\0"))
        else:
            out.append(v[:n])
    return pa.array(out, pa.binary())


def _binary_to_binary(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _binary_string(col, dst)


def _java_div(a: int, b: int) -> int:
    return -(-a // b) if a < 0 else a // b


def _java_div_np(a: np.ndarray, b: int) -> np.ndarray:
    """Java's long division (toward zero), vectorised."""
    return np.where(a < 0, -np.floor_divide(-a, b), np.floor_divide(a, b))


def _is_numeric(s: str) -> bool:
    return bool(s) and all("0" <= c <= "9" for c in s)  # commons' StringUtils.isNumeric (ASCII digits)


def _parse_day_values(col: pa.Array, parse: Any, what: str) -> pa.Array:
    """Strings read as DATE or TIME (int32 days or milliseconds): a plain number is the value itself, as Paimon's
    string casts take it; anything ``parse`` cannot read fails the read."""
    out = []
    for s in _strings(col):
        if s is None:
            out.append(None)
        elif _is_numeric(s):
            out.append(_parse_integral(s, 32))
        else:
            value = parse(s)
            if value is None:
                raise CastError(f"cannot read {s!r} as {what}")
            out.append(value)
    return pa.array(out, pa.int32())


def _string_to_date(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _parse_day_values(col, _parse_date, "DATE").cast(pa.date32())


def _parse_date(s: str) -> int | None:
    """DateTimeUtils.parseDate: `y[-m[-d]]` before the first space, each part trimmed; a valid date."""
    ws = s.find(" ")
    if ws > 0:
        s = s[:ws]
    parts = s.split("-", 2) if "-" in s else [s]
    if len(parts) == 3 and "-" in parts[2]:
        return None
    if not all(_is_numeric(p.strip()) for p in parts):
        return None
    y, m, d = (int(p.strip()) for p in parts + ["1"] * (3 - len(parts)))
    month_days = [31, 29 if (y % 400 == 0 or (y % 4 == 0 and y % 100 != 0)) else 28, 31, 30, 31, 30, 31, 31, 30,
                  31, 30, 31]
    if not (0 <= y <= 9999 and 1 <= m <= 12 and 1 <= d <= month_days[m - 1]):
        return None
    return _julian(y, m, d) - 2440588


def _julian(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045


def _string_to_time(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _parse_day_values(col, _parse_time, "TIME").cast(pa.time32("ms"))


def _java_int(text: str) -> int | None:
    text = text.strip()
    return int(text) if _is_numeric(text) and int(text) < 1 << 31 else None


def _parse_time(v: str) -> int | None:
    """DateTimeUtils.parseTime: `h[:m[:s[.fff]]]`, an optional `[+-]hh[:mm]` offset added, parts trimmed."""
    end = len(v)
    operator = -1
    zone_at = v.find("-")
    if zone_at < 0:
        zone_at = v.find("+")
        operator = 1
    zh = zm = 0
    if zone_at >= 0:
        end = zone_at
        colon3 = v.find(":", zone_at)
        if colon3 < 0:
            zh_ = _java_int(v[zone_at + 1:])
            if zh_ is None:
                return None
            zh = zh_
        else:
            zh_, zm_ = _java_int(v[zone_at + 1:colon3]), _java_int(v[colon3 + 1:])
            if zh_ is None or zm_ is None:
                return None
            zh, zm = zh_, zm_
    colon1 = v.find(":")
    minute = second = milli = 0
    if colon1 < 0:
        hour_ = _java_int(v[:end])
        if hour_ is None:
            return None
        hour = hour_
    else:
        hour_ = _java_int(v[:colon1])
        if hour_ is None:
            return None
        hour = hour_
        colon2 = v.find(":", colon1 + 1)
        if colon2 < 0:
            minute_ = _java_int(v[colon1 + 1:end])
            if minute_ is None:
                return None
            minute = minute_
        else:
            minute_ = _java_int(v[colon1 + 1:colon2])
            if minute_ is None:
                return None
            minute = minute_
            dot = v.find(".", colon2)
            if dot < 0:
                second_ = _java_int(v[colon2 + 1:end])
                if second_ is None:
                    return None
                second = second_
            else:
                second_ = _java_int(v[colon2 + 1:dot])
                if second_ is None:
                    return None
                second = second_
                milli = _parse_fraction(v[dot + 1:end].strip())
    hour += operator * zh
    minute += operator * zm
    return _wrap32(hour * 3_600_000 + minute * 60_000 + second * 1000 + milli)


def _wrap32(n: int) -> int:
    n &= (1 << 32) - 1
    return n - (1 << 32) if n >= 1 << 31 else n


def _parse_fraction(v: str) -> int:
    """DateTimeUtils.parseFraction: milliseconds from the first three digits, the fourth rounding."""
    multiplier, r = 100, 0
    for i, c in enumerate(v):
        r += multiplier * (ord(c) - 48 if "0" <= c <= "9" else 0)
        if multiplier < 10:
            if i + 1 < len(v) and v[i + 1] >= "5":
                r += 1
            break
        multiplier //= 10
    return r


_TIMESTAMP_TEXT = re.compile(
    r"(?P<y>[0-9]{4,9})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?: (?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2}):(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]{0,9}))?)"
    r"|(?:T(?P<h2>[0-9]{1,2}):(?P<mi2>[0-9]{1,2})(?::(?P<s2>[0-9]{1,2})(?:\.(?P<f2>[0-9]{0,9}))?)?))?")


def _parse_timestamp(s: str, precision: int) -> tuple[int, int, int, int, int, int, int]:
    """DateTimeUtils.parseTimestampData's fields (its DEFAULT_TIMESTAMP_FORMATTER, resolved leniently as
    java.time's SMART resolver does: a day past the month's end is its last day), nanos floored to the
    precision."""
    m = _TIMESTAMP_TEXT.fullmatch(s)
    if m is None:
        raise CastError(f"cannot read {s!r} as a timestamp (yyyy-MM-dd[ HH:mm:ss[.fffffffff]] or with 'T')")
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    h = int(m["h"] or m["h2"] or 0)
    mi = int(m["mi"] or m["mi2"] or 0)
    sec = int(m["s"] or m["s2"] or 0)
    frac = m["f"] if m["f"] is not None else m["f2"]
    nanos = int((frac or "").ljust(9, "0") or 0)
    end_of_day = h == 24 and mi == 0 and sec == 0 and nanos == 0  # java.time's smart 24:00: the next midnight
    if not (1 <= mo <= 12 and 1 <= d <= 31 and (h <= 23 or end_of_day) and mi <= 59 and sec <= 59 and 1 <= y):
        raise CastError(f"cannot read {s!r} as a timestamp: a field is out of range")
    import calendar
    d = min(d, calendar.monthrange(y, mo)[1]) if y <= 9999 else d
    step = 10 ** (9 - precision)
    return y, mo, d, h, mi, sec, nanos - nanos % step


def _string_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, nanos, valid = [], [], []
    for s in _strings(col):
        if s is None:
            millis.append(0)
            nanos.append(0)
            valid.append(False)
            continue
        valid.append(True)
        if dst.root == "TIMESTAMP" and _is_numeric(s):  # an epoch in the precision's unit
            unit = {0: 1000, 3: 1, 6: 1000, 9: 1_000_000}.get(dst.precision)
            if unit is None:
                raise CastError(f"cannot read {s!r} as {dst.sql()}: Paimon reads numbers as TIMESTAMP(0/3/6/9) only")
            epoch = _parse_integral(s, 64)
            if dst.precision == 0:
                ms, ns = epoch * 1000, 0
            elif dst.precision == 3:
                ms, ns = epoch, 0
            else:
                ms = _java_div(epoch, unit)  # toward zero, then the nanos made non-negative
                ns = (epoch - ms * unit) * (1_000_000 // unit)
                if ns < 0:
                    ms, ns = ms - 1, ns + 1_000_000
            millis.append(ms)
            nanos.append(ns)
            continue
        y, mo, d, h, mi, sec, ns_of_sec = _parse_timestamp(s, dst.precision)
        local = (_julian(y, mo, d) - 2440588) * _MILLIS_PER_DAY + ((h * 60 + mi) * 60 + sec) * 1000 \
            + ns_of_sec // 1_000_000
        millis.append(local)
        nanos.append(ns_of_sec % 1_000_000)
    ms_arr = np.array(millis, np.int64)
    valid_arr = np.array(valid, bool)
    if dst.root == "TIMESTAMP_LTZ":
        ms_arr = _local_to_instant(ms_arr, valid_arr, zone)
    return _timestamp_array(ms_arr, np.array(nanos, np.int64), valid_arr, dst)


# ---------------------------------------------------------------- dates, times, timestamps

def _timestamp_parts(col: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epoch millis, nano-of-millisecond, valid) of a timestamp array, floored as Paimon's Timestamp holds it."""
    unit = col.type.unit
    v = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if unit == "s":
        return v * 1000, np.zeros_like(v), _valid(col)
    per = {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    millis = np.floor_divide(v, per)
    return millis, (v - millis * per) * (1_000_000 // per), _valid(col)


def _timestamp_array(millis: np.ndarray, nanos: np.ndarray, valid: np.ndarray, dst: DataType) -> pa.Array:
    """Paimon Timestamps (millis, nano-of-millisecond) as an array of ``dst``'s Arrow type."""
    t = to_arrow_type(dst)
    millis = np.where(valid, millis, 0)
    nanos = np.where(valid, nanos, 0)
    if t.unit == "ns":
        limit = np.iinfo(np.int64).max // 1_000_000 - 1
        if (np.abs(millis[valid]) > limit).any():
            raise CastError(f"a value read as {dst.sql()} is outside 1677-09-21..2262-04-11, the range of Arrow's "
                            "nanosecond timestamps, which paimon_ds reads TIMESTAMP(7..9) into")
        ints = millis * 1_000_000 + nanos
    elif t.unit == "us":
        ints = millis * 1000 + nanos // 1000
    elif t.unit == "ms":
        ints = millis
    else:
        ints = np.floor_divide(millis, 1000)
    return pa.array(ints, pa.int64(), mask=~valid).cast(t)


def _zone_offsets(instants_ms: np.ndarray, zone: str) -> np.ndarray:
    """The zone's offset (millis) at each instant (java.time's rules, as Python's zoneinfo has them)."""
    if zone in ("UTC", "Etc/UTC", "GMT", "Z"):
        return np.zeros(len(instants_ms), np.int64)
    from zoneinfo import ZoneInfo
    tz = ZoneInfo(zone)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    out = np.zeros(len(instants_ms), np.int64)
    for i, ms in enumerate(instants_ms.tolist()):
        try:
            moment = epoch + dt.timedelta(milliseconds=ms)
        except OverflowError:
            continue
        out[i] = int(moment.astimezone(tz).utcoffset().total_seconds() * 1000)  # type: ignore[union-attr]
    return out


def _instant_to_local(millis: np.ndarray, valid: np.ndarray, zone: str) -> np.ndarray:
    """An instant's wall clock in ``zone`` (LocalDateTime.ofInstant), as epoch millis of that wall clock."""
    return millis + np.where(valid, _zone_offsets(millis, zone), 0)


def _local_to_instant(millis: np.ndarray, valid: np.ndarray, zone: str) -> np.ndarray:
    """A wall clock in ``zone`` as an instant (LocalDateTime.atZone: a gap moves later, an overlap takes the
    earlier offset), for wall clocks given as epoch millis."""
    if zone in ("UTC", "Etc/UTC", "GMT", "Z"):
        return millis
    from zoneinfo import ZoneInfo
    tz = ZoneInfo(zone)
    epoch = dt.datetime(1970, 1, 1)
    out = millis.copy()
    for i, (ms, ok) in enumerate(zip(millis.tolist(), valid.tolist())):
        if not ok:
            continue
        try:
            local = (epoch + dt.timedelta(milliseconds=ms)).replace(tzinfo=tz, fold=0)
        except OverflowError:
            continue
        out[i] = ms - int(local.utcoffset().total_seconds() * 1000)  # type: ignore[union-attr]
    return out


def _truncate(millis: np.ndarray, nanos: np.ndarray, precision: int) -> tuple[np.ndarray, np.ndarray]:
    """DateTimeUtils.truncate: up to precision 3 the millis lose digits toward zero (Java's division), above
    it the nano-of-millisecond loses digits."""
    if precision <= 3:
        step = 10 ** (3 - precision)
        return _java_div_np(millis, step) * step, np.zeros_like(nanos)
    step = 10 ** (9 - precision)
    return millis, nanos - nanos % step


def _timestamp_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, nanos, valid = _timestamp_parts(col)
    if src.root == "TIMESTAMP" and dst.root == "TIMESTAMP_LTZ":
        millis = _local_to_instant(millis, valid, zone)
    elif src.root == "TIMESTAMP_LTZ" and dst.root == "TIMESTAMP":
        millis = _instant_to_local(millis, valid, zone)
    if src.precision > dst.precision:
        # truncate() keeps a value whose significant fraction digits fit the precision
        second_nanos = np.mod(millis, 1000) * 1_000_000 + nanos
        step = 10 ** (9 - dst.precision)
        fits = second_nanos % step == 0
        t_millis, t_nanos = _truncate(millis, nanos, dst.precision)
        millis, nanos = np.where(fits, millis, t_millis), np.where(fits, nanos, t_nanos)
    return _timestamp_array(millis, nanos, valid, dst)


def _timestamp_to_date(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = _timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = _instant_to_local(millis, valid, zone)
    return _with_nulls(np.floor_divide(millis, _MILLIS_PER_DAY).astype(np.int32), pa.int32(), valid).cast(pa.date32())


def _timestamp_to_time(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = _timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = _instant_to_local(millis, valid, zone)
    return _with_nulls(np.mod(millis, _MILLIS_PER_DAY).astype(np.int32), pa.int32(), valid).cast(pa.time32("ms"))


def _date_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    valid = _valid(col)
    millis = col.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * _MILLIS_PER_DAY
    if dst.root == "TIMESTAMP_LTZ":
        millis = _local_to_instant(millis, valid, zone)
    return _timestamp_array(millis, np.zeros_like(millis), valid, dst)


def _time_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # TIMESTAMP: 1970-01-01 plus the time; LTZ: that instant's local wall clock put back into the zone (the same
    # instant but for a gap or overlap at 1970-01-01)
    valid = _valid(col)
    millis = col.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if dst.root == "TIMESTAMP_LTZ":
        millis = _local_to_instant(_instant_to_local(millis, valid, zone), valid, zone)
    return _timestamp_array(millis, np.zeros_like(millis), valid, dst)


def _number_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # seconds since the epoch; an LTZ keeps that instant's wall clock in the zone (Timestamp.fromLocalDateTime)
    valid = _valid(col)
    millis = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * 1000
    if dst.root == "TIMESTAMP_LTZ":
        millis = _instant_to_local(millis, valid, zone)
    return _timestamp_array(millis, np.zeros_like(millis), valid, dst)


def _timestamp_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = _timestamp_parts(col)
    seconds = _java_div_np(millis, 1000)  # DateTimeUtils.unixTimestamp: Java's division
    out = seconds if dst.root == "BIGINT" else _java_narrow(seconds, "INT")
    return _with_nulls(out, pa.from_numpy_dtype(_NUMPY[dst.root]), valid)


_CASTS: dict[str, Callable[[pa.Array, DataType, DataType, str], pa.Array]] = {
    "decimal_to_decimal": _decimal_to_decimal, "number_to_decimal": _number_to_decimal,
    "decimal_to_number": _decimal_to_number, "number_to_number": _number_to_number,
    "number_to_timestamp": _number_to_timestamp, "boolean_to_number": _boolean_to_number,
    "number_to_boolean": _number_to_boolean, "number_to_string": _number_to_string,
    "boolean_to_string": _boolean_to_string, "timestamp_to_string": _timestamp_to_string,
    "time_to_string": _time_to_string, "date_to_string": _date_to_string, "string_to_string": _string_to_string,
    "array_to_string": _nested_to_string, "map_to_string": _nested_to_string, "row_to_string": _nested_to_string,
    "string_to_boolean": _string_to_boolean, "string_to_decimal": _string_to_decimal,
    "string_to_number": _string_to_number, "string_to_date": _string_to_date, "string_to_time": _string_to_time,
    "string_to_timestamp": _string_to_timestamp, "string_to_binary": _string_to_binary,
    "timestamp_to_timestamp": _timestamp_to_timestamp, "timestamp_to_date": _timestamp_to_date,
    "timestamp_to_time": _timestamp_to_time, "date_to_timestamp": _date_to_timestamp,
    "time_to_timestamp": _time_to_timestamp, "timestamp_to_number": _timestamp_to_number,
    "binary_to_binary": _binary_to_binary, "binary_to_string": _binary_to_string,
}


# ------------------------------------------------------------------------------------ Java's float printing

def java_float_str(v: float, single: bool) -> str:
    """Java's Float.toString / Double.toString: the shortest digits that read back as the same value,
    plain between 1e-3 and 1e7, else computerized scientific notation ("1.0E7", "1.5E-4")."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if np.signbit(v) else "0.0"
    x = np.float32(v) if single else np.float64(v)
    mantissa, exp_text = np.format_float_scientific(x, unique=True, trim="-").split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    exponent = int(exp_text)
    if 1e-3 <= abs(float(x)) < 1e7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1:] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"
