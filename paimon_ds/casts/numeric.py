"""Numbers, DECIMAL and BOOLEAN read as one another (Paimon's numeric cast rules and ``DecimalUtils``):

- numbers among themselves: Java's primitive conversions (integers wrap when narrowed, floating point to
  integer truncates toward zero and saturates, NaN is 0; TINYINT/SMALLINT through int); DECIMAL to an integer
  truncates toward zero and wraps as ``BigDecimal.longValue`` does; DECIMAL to FLOAT/DOUBLE as
  ``DecimalUtils.doubleValue`` (a compact decimal divides its unscaled long by a power of ten);
- integers, floating point, DECIMAL, BOOLEAN (1 / 0) to DECIMAL(p, s): rounded half-up to s digits, null when
  more than p digits remain (floating point through ``BigDecimal.valueOf(double)``, its shortest digits);
- BOOLEAN to numbers (1 / 0); integers to BOOLEAN (not 0).
"""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import DataType
from .arrays import valid_mask, with_nulls
from .java import NUMPY_TYPES, java_float_str, java_narrow, wrap64
from .rules import FLOATS, INTEGERS, CastError


def _float_to_integral(values: np.ndarray, target: str) -> np.ndarray:
    """Java (int)/(long) of a double (NaN 0, toward zero, saturated); byte and short through int."""
    wide = np.int64 if target == "BIGINT" else np.int32
    info = np.iinfo(wide)
    f = np.trunc(np.nan_to_num(values.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min))
    out = np.where(f >= float(info.max), info.max, np.where(f <= float(info.min), info.min, 0)).astype(wide)
    inside = (f < float(info.max)) & (f > float(info.min))
    out[inside] = f[inside].astype(wide)
    return java_narrow(out, target) if target in ("TINYINT", "SMALLINT") else out


def number_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    a, b = src.root, dst.root
    valid = valid_mask(col)
    values = col.fill_null(0).to_numpy(zero_copy_only=False)
    if b in FLOATS:
        with np.errstate(all="ignore"):
            out = values.astype(NUMPY_TYPES[b])
    elif a in INTEGERS:
        out = java_narrow(values, b)
    else:
        out = _float_to_integral(values, b)
    return with_nulls(out, pa.from_numpy_dtype(NUMPY_TYPES[b]), valid)


def decimal_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    b = dst.root
    valid = valid_mask(col)
    if b in FLOATS:
        if src.precision <= 18:  # DecimalUtils.doubleValue: the unscaled long divided by 10^scale
            unscaled = col.cast(pa.decimal128(38, src.scale)).fill_null(0)
            ints = np.array([int(v.scaleb(src.scale)) for v in unscaled.to_pylist()], np.int64)
            out = ints.astype(np.float64) / (10.0 ** src.scale)
        else:
            out = np.array([0.0 if v is None else float(v) for v in col.to_pylist()], np.float64)
        return with_nulls(out.astype(NUMPY_TYPES[b]), pa.from_numpy_dtype(NUMPY_TYPES[b]), valid)
    # castToIntegral: toward zero, then BigDecimal.longValue (the low 64 bits), then Java's narrowing
    longs = [0 if v is None else wrap64(int(v)) for v in col.to_pylist()]
    return with_nulls(java_narrow(np.array(longs, np.int64), b), pa.from_numpy_dtype(NUMPY_TYPES[b]), valid)


def to_decimal(values: list[Any], dst: DataType) -> pa.Array:
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


def number_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    values: list[Any] = col.to_pylist()
    if src.root in FLOATS:  # BigDecimal.valueOf(double): Double.toString's digits (of the float's double value)
        for v in values:
            if v is not None and (v != v or v in (float("inf"), float("-inf"))):
                raise CastError(f"cannot read {v} as {dst.sql()}: it has no decimal value")
        values = [None if v is None else java_float_str(float(v), False) for v in values]
    return to_decimal(values, dst)


def decimal_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    if dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale:
        return col.cast(pa.decimal128(dst.precision, dst.scale))  # every value fits exactly
    return to_decimal(col.to_pylist(), dst)


def boolean_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    ints = col.cast(pa.int8())
    if dst.root == "DECIMAL":
        return to_decimal(ints.to_pylist(), dst)
    return ints.cast(pa.from_numpy_dtype(NUMPY_TYPES[dst.root]))


def number_to_boolean(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return pc.not_equal(col, pa.scalar(0, col.type))
