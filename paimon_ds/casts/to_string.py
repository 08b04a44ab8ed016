"""Values read as CHAR / VARCHAR / STRING (Paimon's to-string cast rules and ``BinaryStringUtils``):

- numbers and BOOLEAN by Java's ``toString``; then cut to the length, a CHAR padded with spaces;
- DATE, TIME and TIMESTAMP only to STRING itself (there is no rule for a shorter target): ``yyyy-MM-dd``,
  ``HH:mm:ss[.fff]`` (TIME's digits as ``formatTimestampMillis`` writes them) and ``yyyy-MM-dd HH:mm:ss[.f...]``
  (nine fraction digits, trailing zeros cut down to the precision; a TIMESTAMP_LTZ in the local time zone);
- BINARY/VARBINARY as their bytes read as UTF-8; ARRAY ``[a, b]``, MAP ``{k -> v}``, ROW ``{a, b}`` (elements as
  their casts to STRING, ``null`` for nulls), without cutting.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..schema.types import MAX_LENGTH, DataType, MapType, RowType
from .arrays import valid_mask
from .java import java_float_str
from .rules import FLOATS
from .temporal import MILLIS_PER_DAY, instant_to_local, timestamp_parts


def _character_string(out: pa.Array, dst: DataType) -> pa.Array:
    """BinaryStringUtils.toCharacterString: cut to the length, a CHAR padded with spaces."""
    length = dst.params[0] if dst.params else MAX_LENGTH
    if length < MAX_LENGTH:
        out = pc.utf8_slice_codeunits(out, 0, length)
        if dst.root == "CHAR":
            out = pc.utf8_rpad(out, length, " ")
    return out


def number_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    if src.root in FLOATS:
        out = pa.array([None if v is None else java_float_str(v, src.root == "FLOAT") for v in col.to_pylist()],
                       pa.string())
    else:
        out = col.cast(pa.string())  # integers; DECIMAL as toPlainString with its scale
    return _character_string(out, dst)


def boolean_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _character_string(pc.if_else(col, "true", "false"), dst)


def string_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return _character_string(col.cast(pa.string()), dst)


def binary_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # BinaryString.fromBytes: the bytes as UTF-8 (malformed sequences read as U+FFFD, as Java decodes them)
    return pa.array([None if v is None else v.decode("utf-8", errors="replace") for v in col.to_pylist()],
                    pa.string())


def date_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
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


def time_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return pa.array([None if t is None else _hms(t, src.precision) for t in col.cast(pa.int32()).to_pylist()],
                    pa.string())


def _hms(time: int, precision: int) -> str:
    """DateTimeUtils.formatTimestampMillis: HH:mm:ss, then fraction digits until the rest is zero."""
    while time < 0:
        time += MILLIS_PER_DAY
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


def timestamp_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, nanos, valid = timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = instant_to_local(millis, valid, zone)
    out = []
    for ms, ns, ok in zip(millis.tolist(), nanos.tolist(), valid.tolist()):
        out.append(_format_timestamp(ms, ns, src.precision) if ok else None)
    return pa.array(out, pa.string())


def _format_timestamp(millis: int, nano_of_milli: int, precision: int) -> str:
    """DateTimeUtils.formatTimestamp: nine fraction digits, trailing zeros cut down to the precision."""
    day, ms_of_day = divmod(millis, MILLIS_PER_DAY)
    fraction = f"{ms_of_day % 1000 * 1_000_000 + nano_of_milli:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    secs = ms_of_day // 1000
    text = f"{_ymd(day)} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + ("." + fraction if fraction else "")


# an element cast: (values, their type) -> the values read as STRING (the read-side cast passes itself)
ElementToString = Callable[[pa.Array, DataType], pa.Array]


def nested_to_string(col: pa.Array, src: DataType, element_to_string: ElementToString) -> pa.Array:
    """ArrayToString / MapToString / RowToString: elements as their casts to STRING, not cut to the length."""
    def text(values: pa.Array, t: DataType) -> list[str | None]:
        as_string = element_to_string(values, t)
        return ["null" if v is None else v for v in as_string.to_pylist()]
    valid = valid_mask(col)
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
