"""Java's primitive arithmetic and number printing, which Paimon's cast rules inherit: the primitive each integer
and floating-point root is held in, narrowing that wraps, division toward zero, and Float/Double.toString.

Known difference: floating point prints the shortest digits that read back as the value (Java 19+'s
Double.toString); Java 8-17 print a longer form for a few values (2e23 as 1.9999999999999998E23, subnormals such
as 4.9E-324).
"""

from __future__ import annotations

import numpy as np

# Paimon's integer and floating-point roots: the Java primitive holding each (its width)
NUMPY_TYPES = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64,
               "FLOAT": np.float32, "DOUBLE": np.float64}
INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def java_narrow(values: np.ndarray, target: str) -> np.ndarray:
    """Java's (byte)/(short)/(int) of a long: wraps."""
    with np.errstate(all="ignore"):
        return values.astype(np.int64).astype(NUMPY_TYPES[target])


def wrap32(n: int) -> int:
    """An int's overflow: the low 32 bits, signed."""
    n &= (1 << 32) - 1
    return n - (1 << 32) if n >= 1 << 31 else n


def wrap64(n: int) -> int:
    """A long's overflow: the low 64 bits, signed."""
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >= 1 << 63 else n


def java_div(a: int, b: int) -> int:
    """Java's long division: toward zero."""
    return -(-a // b) if a < 0 else a // b


def java_div_np(a: np.ndarray, b: int) -> np.ndarray:
    """Java's long division (toward zero), vectorised."""
    return np.where(a < 0, -np.floor_divide(-a, b), np.floor_divide(a, b))


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
