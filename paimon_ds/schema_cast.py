"""Reading a column written under an older type: the casts Paimon applies when a column's type was changed.

Paimon 0.9 lets ``ALTER TABLE ... ALTER COLUMN ... TYPE`` change a column to any type its explicit-cast
rules reach (`DataTypeCasts.supportsExplicitCast` with a cast rule in `CastExecutors`), and files written
before keep the old type: readers cast each value on read, with Java's semantics. This module holds the
subset paimon_ds reads (``castable``) and the casts themselves (``cast_column``):

- integer and floating-point types to one another, as Java's primitive conversions do: integers wrap
  when narrowed (BIGINT 4294967297 read as INT is 1), floating-point to integer truncates toward zero and
  saturates at the int/long bounds (NaN becomes 0), TINYINT/SMALLINT from floating point go through int;
- integers, floating point and DECIMAL to DECIMAL(p, s): rounded half-up to s digits; a value with more
  than p digits reads as null (floating point goes through Java's shortest decimal string first);
- numbers, BOOLEAN, DATE, TIMESTAMP and strings to CHAR/VARCHAR/STRING: Java's ``toString`` (``1.5`` and
  ``1.0E10`` for floats, ``true``, ``2024-01-31``, ``2024-01-31 10:00:00.120`` with the source precision's
  digits), cut to the target length (CHAR(n) padded with spaces);
- strings to integers (an optional sign, digits and an ignored fraction; anything else fails the read, as
  in Paimon) and to FLOAT/DOUBLE (Java's ``Float.parseFloat`` forms, surrounding blanks ignored);
- TIMESTAMP to a TIMESTAMP of higher precision, BINARY/VARBINARY to a longer VARBINARY.

Other casts Paimon allows (to BOOLEAN, DATE, TIME, BINARY, narrowing timestamps, strings to DECIMAL,
DECIMAL to integers or floating point, ...) are refused by ``castable``, so an ALTER that paimon_ds could
not read back is refused before it is written; a table Java altered so fails its read with a CastError.

Known difference: floating point to string prints the shortest digits that read back as the value (Java
19+'s Double.toString); Java 8-17 print a longer form for a few values (2e23 as 1.9999999999999998E23,
subnormals such as 4.9E-324).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import MAX_LENGTH, DataType, SchemaError, to_arrow_type

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FLOATS = ("FLOAT", "DOUBLE")
NUMBERS = INTEGERS + FLOATS
STRINGS = ("CHAR", "VARCHAR")
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_NUMPY = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64,
          "FLOAT": np.float32, "DOUBLE": np.float64}


class CastError(SchemaError):
    """A value that cannot be read under the column's new type (Paimon fails the read too)."""


def _atomic(t: DataType) -> bool:
    return type(t) is DataType


def castable(src: DataType, dst: DataType) -> bool:
    """Whether files holding ``src`` values can be read as ``dst`` (nullability aside)."""
    if not (_atomic(src) and _atomic(dst)):
        return False
    a, b = src.root, dst.root
    if a == b and src.params == dst.params:
        return True
    if b in STRINGS:
        return a in NUMBERS or a in STRINGS or a in ("DECIMAL", "BOOLEAN", "DATE", "TIMESTAMP")
    if a in NUMBERS and b in NUMBERS:
        return True
    if b == "DECIMAL":
        return a in NUMBERS or a == "DECIMAL"
    if a in STRINGS and b in NUMBERS:
        return True
    if a == b and a in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return dst.precision >= src.precision
    if a in ("BINARY", "VARBINARY") and b == "VARBINARY":
        return dst.params[0] >= src.params[0]
    return False


def cast_column(col: pa.Array, src: DataType | None, dst: DataType, arrow_dst: pa.DataType | None = None) -> pa.Array:
    """``col`` (values of Paimon type ``src``, None: unknown) read as ``dst``, with Paimon's cast semantics."""
    arrow_dst = arrow_dst if arrow_dst is not None else to_arrow_type(dst)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if src is None or not (_atomic(src) and _atomic(dst)) or (src.root == dst.root and src.params == dst.params):
        return col if col.type == arrow_dst else col.cast(arrow_dst)
    a, b = src.root, dst.root
    if b in STRINGS:
        out = _to_string(col, src)
        length = dst.params[0] if dst.params else MAX_LENGTH
        if length < MAX_LENGTH:
            out = pc.utf8_slice_codeunits(out, 0, length)
            if b == "CHAR":
                out = pc.utf8_rpad(out, length, " ")
        return out.cast(arrow_dst)
    if a in NUMBERS and b in NUMBERS:
        return _numeric(col, a, b)
    if b == "DECIMAL":
        if a == "DECIMAL" and dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale:
            return col.cast(arrow_dst)  # a wider decimal holds every value exactly
        return _to_decimal(col, src, dst, arrow_dst)
    if a in STRINGS and b in NUMBERS:
        return _parse_numbers(col, b)
    if castable(src, dst):  # longer timestamps and binaries: Arrow's cast is exact
        return col if col.type == arrow_dst else col.cast(arrow_dst)
    raise CastError(f"a column changed from {src.sql()} to {dst.sql()} (a cast Paimon allows in ALTER TABLE): "
                    "paimon_ds cannot read the files written before the change with Paimon's semantics yet")


# ------------------------------------------------------------------------------------ numbers

def _numeric(col: pa.Array, a: str, b: str) -> pa.Array:
    target = _NUMPY[b]
    arrow_dst = pa.from_numpy_dtype(target)
    valid = col.is_valid()
    values = col.fill_null(0).to_numpy(zero_copy_only=False)
    if b in FLOATS or a in INTEGERS:
        with np.errstate(all="ignore"):  # integers wrap when narrowed, as Java's (int) of a long does
            out = values.astype(target)
    else:
        # Java (int)/(long) of a float: NaN -> 0, truncation toward zero, saturated at the bounds;
        # byte and short go through int first
        wide = np.int64 if b == "BIGINT" else np.int32
        info = np.iinfo(wide)
        f = np.nan_to_num(values.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
        f = np.trunc(f)
        out = np.where(f >= float(info.max), info.max, np.where(f <= float(info.min), info.min, 0)).astype(wide)
        inside = (f < float(info.max)) & (f > float(info.min))
        out[inside] = f[inside].astype(wide)
        out = out.astype(target)
    return pa.array(out, arrow_dst, mask=pc.invert(valid).to_numpy(zero_copy_only=False))


def _to_decimal(col: pa.Array, src: DataType, dst: DataType, arrow_dst: pa.DataType) -> pa.Array:
    quantum = decimal.Decimal(1).scaleb(-dst.scale)
    ctx = decimal.Context(prec=80)
    out = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        if src.root in FLOATS:
            if v != v or v in (float("inf"), float("-inf")):
                raise CastError(f"cannot read {v} as {dst.sql()}: it has no decimal value")
            v = decimal.Decimal(java_float_str(float(v), False))  # BigDecimal.valueOf(double)
        d = decimal.Decimal(v).quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=ctx)
        out.append(d if len(d.as_tuple().digits) <= dst.precision else None)  # too many digits: null
    return pa.array(out, arrow_dst)


_INT_TEXT = re.compile(r"^([+-]?)([0-9]*)(?:\.[0-9]*)?$")


def _parse_numbers(col: pa.Array, b: str) -> pa.Array:
    out: list[int | float | None] = []
    for s in col.cast(pa.string()).to_pylist():
        if s is None:
            out.append(None)
        elif b in FLOATS:
            out.append(_parse_float(s, b))
        else:
            m = _INT_TEXT.match(s)
            if m is None or s in ("", "+", "-"):
                raise CastError(f"cannot read {s!r} as {b}: not a number")
            n = int(m.group(2) or "0") * (-1 if m.group(1) == "-" else 1)
            bits = _INT_BITS[b]
            if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
                raise CastError(f"cannot read {s!r} as {b}: out of range")
            out.append(n)
    return pa.array(out, pa.from_numpy_dtype(_NUMPY[b]))


def _parse_float(s: str, b: str) -> float:
    text = s.strip(" \t\n\r\x0b\x0c\x00")
    if text[-1:] in ("f", "F", "d", "D"):
        text = text[:-1]
    if not re.fullmatch(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)", text):
        raise CastError(f"cannot read {s!r} as {b}: not a number")
    v = float(text)
    return float(np.float32(v)) if b == "FLOAT" else v


# ------------------------------------------------------------------------------------ strings

def _to_string(col: pa.Array, src: DataType) -> pa.Array:
    a = src.root
    if a in FLOATS:
        return pa.array([None if v is None else java_float_str(v, a == "FLOAT") for v in col.to_pylist()],
                        pa.string())
    if a == "BOOLEAN":
        return pc.if_else(col, "true", "false")  # nulls stay null
    if a == "TIMESTAMP":
        return pa.array([None if v is None else _timestamp_str(v, src.precision)
                         for v in col.cast(pa.timestamp("us")).to_pylist()], pa.string())
    return col.cast(pa.string())  # integers, DECIMAL (plain, with its scale), DATE (yyyy-MM-dd), strings


def _timestamp_str(v: dt.datetime, precision: int) -> str:
    # Paimon's DateTimeUtils.formatTimestamp: nine fraction digits, trailing zeros cut down to the precision
    fraction = f"{v.microsecond * 1000:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    return text + ("." + fraction if fraction else "")


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
