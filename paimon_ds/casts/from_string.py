"""Strings read as other types, as Paimon's string cast rules parse them (``BinaryStringUtils``,
``DateTimeUtils``), and binaries cut or padded to a length:

- strings to BOOLEAN (``t true y yes 1`` / ``f false n no 0``, any case), integers (an optional sign, digits, an
  ignored fraction; anything else, or an overflow, fails the read, as in Paimon), FLOAT/DOUBLE
  (``Double.parseDouble``), DECIMAL (``new BigDecimal(s)``, then rounded as ``casts.numeric`` does), DATE
  (``yyyy-MM-dd`` leniently, or a number of days), TIME (``HH:mm:ss[.fff]``, or milliseconds), TIMESTAMP(p)
  (``yyyy-M-d[ H:m:s[.f]]`` or ``T``, or a number of seconds / millis / micros / nanos for precision 0 / 3 / 6 / 9;
  a TIMESTAMP_LTZ is read in the local zone), BINARY(n) (the UTF-8 bytes, cut or zero-padded to n) and
  VARBINARY(n) (cut);
- BINARY/VARBINARY to BINARY(n) / VARBINARY(n) likewise.
"""

from __future__ import annotations

import calendar
import decimal
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from ..schema.types import MAX_LENGTH, DataType
from .java import INT_BITS, NUMPY_TYPES, java_div, wrap32
from .numeric import to_decimal
from .rules import FLOATS, CastError
from .temporal import MILLIS_PER_DAY, julian_day, local_to_instant, timestamp_array

_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}


def _strings(col: pa.Array) -> list[str | None]:
    return col.cast(pa.string()).to_pylist()


def string_to_boolean(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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


def string_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    b = dst.root
    out: list[int | float | None] = []
    for s in _strings(col):
        if s is None:
            out.append(None)
        elif b in FLOATS:
            out.append(_parse_float(s, b))
        else:  # toByte / toShort go through toInt and refuse what does not fit
            n = _parse_integral(s, 64 if b == "BIGINT" else 32)
            if not -(1 << (INT_BITS[b] - 1)) <= n < (1 << (INT_BITS[b] - 1)):
                raise CastError(f"cannot read {s!r} as {b}: it overflows")
            out.append(n)
    return pa.array(out, pa.from_numpy_dtype(NUMPY_TYPES[b]))


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


def string_to_decimal(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    values = _strings(col)
    for s in values:
        if s is not None and not _BIG_DECIMAL.fullmatch(s):
            raise CastError(f"cannot read {s!r} as {dst.sql()}: not a decimal number")
    return to_decimal(values, dst)


def string_to_binary(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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


def binary_to_binary(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _binary_string(col, dst)


def _is_numeric(s: str) -> bool:
    return bool(s) and all("0" <= c <= "9" for c in s)  # commons' StringUtils.isNumeric (ASCII digits)


def _parse_day_values(col: pa.Array, parse: Callable[[str], int | None], what: str) -> pa.Array:
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


def string_to_date(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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
    return julian_day(y, m, d) - 2440588


def string_to_time(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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
    colon2 = v.find(":", colon1 + 1) if colon1 >= 0 else -1
    dot = v.find(".", colon2) if colon2 >= 0 else -1
    # hour[:minute[:second[.fraction]]], each field up to the next separator present (or the zone)
    ends = [colon1, colon2, dot]
    fields = []
    start = 0
    for stop in ends:
        if stop < 0:
            break
        fields.append(v[start:stop])
        start = stop + 1
    fields.append(v[start:end])
    milli = 0
    if dot >= 0:
        milli = _parse_fraction(fields.pop().strip())
    numbers = [_java_int(f) for f in fields]
    if any(n is None for n in numbers):
        return None
    hour, minute, second = (numbers + [0, 0])[:3]
    hour += operator * zh
    minute += operator * zm
    return wrap32(hour * 3_600_000 + minute * 60_000 + second * 1000 + milli)


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
    d = min(d, calendar.monthrange(y, mo)[1]) if y <= 9999 else d
    step = 10 ** (9 - precision)
    return y, mo, d, h, mi, sec, nanos - nanos % step


def string_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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
                ms = java_div(epoch, unit)  # toward zero, then the nanos made non-negative
                ns = (epoch - ms * unit) * (1_000_000 // unit)
                if ns < 0:
                    ms, ns = ms - 1, ns + 1_000_000
            millis.append(ms)
            nanos.append(ns)
            continue
        y, mo, d, h, mi, sec, ns_of_sec = _parse_timestamp(s, dst.precision)
        local = (julian_day(y, mo, d) - 2440588) * MILLIS_PER_DAY + ((h * 60 + mi) * 60 + sec) * 1000 \
            + ns_of_sec // 1_000_000
        millis.append(local)
        nanos.append(ns_of_sec % 1_000_000)
    ms_arr = np.array(millis, np.int64)
    valid_arr = np.array(valid, bool)
    if dst.root == "TIMESTAMP_LTZ":
        ms_arr = local_to_instant(ms_arr, valid_arr, zone)
    return timestamp_array(ms_arr, np.array(nanos, np.int64), valid_arr, dst)
