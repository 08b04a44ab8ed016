"""DATE, TIME and TIMESTAMP / TIMESTAMP_LTZ read as one another and as or from numbers (Paimon's temporal cast
rules and ``DateTimeUtils``), and the local time zone they use:

- TIMESTAMP / TIMESTAMP_LTZ to one another (through the local zone between the two kinds) and to a lower
  precision (``DateTimeUtils.truncate``, which rounds millis toward zero up to precision 3); to DATE and TIME
  (floor division / modulo of the day, a TIMESTAMP_LTZ in the local zone); to INT / BIGINT (seconds, ``millis /
  1000`` rounded toward zero; INT wraps);
- DATE and TIME to TIMESTAMP / TIMESTAMP_LTZ (midnight / 1970-01-01 plus the time; an LTZ from local midnight);
  INT / BIGINT to TIMESTAMP (seconds since the epoch; an LTZ keeps the local wall clock of that instant, as
  Paimon's rule does).

The local time zone is the process's (``TZ``, else ``/etc/localtime``), as Java's rules use the JVM's default.
Values are handled as Paimon's Timestamp holds them: epoch milliseconds and a nano-of-millisecond.
"""

from __future__ import annotations

import datetime as dt
import os
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa

from ..schema.types import DataType, to_arrow_type
from .arrays import valid_mask, with_nulls
from .java import NUMPY_TYPES, java_div_np, java_narrow
from .rules import CastError

MILLIS_PER_DAY = 86_400_000


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


def julian_day(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045


def timestamp_parts(col: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epoch millis, nano-of-millisecond, valid) of a timestamp array, floored as Paimon's Timestamp holds it."""
    unit = col.type.unit
    v = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if unit == "s":
        return v * 1000, np.zeros_like(v), valid_mask(col)
    per = {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    millis = np.floor_divide(v, per)
    return millis, (v - millis * per) * (1_000_000 // per), valid_mask(col)


def timestamp_array(millis: np.ndarray, nanos: np.ndarray, valid: np.ndarray, dst: DataType) -> pa.Array:
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


def instant_to_local(millis: np.ndarray, valid: np.ndarray, zone: str) -> np.ndarray:
    """An instant's wall clock in ``zone`` (LocalDateTime.ofInstant), as epoch millis of that wall clock."""
    return millis + np.where(valid, _zone_offsets(millis, zone), 0)


def local_to_instant(millis: np.ndarray, valid: np.ndarray, zone: str) -> np.ndarray:
    """A wall clock in ``zone`` as an instant (LocalDateTime.atZone: a gap moves later, an overlap takes the
    earlier offset), for wall clocks given as epoch millis."""
    if zone in ("UTC", "Etc/UTC", "GMT", "Z"):
        return millis
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
        return java_div_np(millis, step) * step, np.zeros_like(nanos)
    step = 10 ** (9 - precision)
    return millis, nanos - nanos % step


def timestamp_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, nanos, valid = timestamp_parts(col)
    if src.root == "TIMESTAMP" and dst.root == "TIMESTAMP_LTZ":
        millis = local_to_instant(millis, valid, zone)
    elif src.root == "TIMESTAMP_LTZ" and dst.root == "TIMESTAMP":
        millis = instant_to_local(millis, valid, zone)
    if src.precision > dst.precision:
        # truncate() keeps a value whose significant fraction digits fit the precision
        second_nanos = np.mod(millis, 1000) * 1_000_000 + nanos
        step = 10 ** (9 - dst.precision)
        fits = second_nanos % step == 0
        t_millis, t_nanos = _truncate(millis, nanos, dst.precision)
        millis, nanos = np.where(fits, millis, t_millis), np.where(fits, nanos, t_nanos)
    return timestamp_array(millis, nanos, valid, dst)


def timestamp_to_date(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = instant_to_local(millis, valid, zone)
    return with_nulls(np.floor_divide(millis, MILLIS_PER_DAY).astype(np.int32), pa.int32(), valid).cast(pa.date32())


def timestamp_to_time(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = timestamp_parts(col)
    if src.root == "TIMESTAMP_LTZ":
        millis = instant_to_local(millis, valid, zone)
    return with_nulls(np.mod(millis, MILLIS_PER_DAY).astype(np.int32), pa.int32(), valid).cast(pa.time32("ms"))


def date_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    valid = valid_mask(col)
    millis = col.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * MILLIS_PER_DAY
    if dst.root == "TIMESTAMP_LTZ":
        millis = local_to_instant(millis, valid, zone)
    return timestamp_array(millis, np.zeros_like(millis), valid, dst)


def time_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # TIMESTAMP: 1970-01-01 plus the time; LTZ: that instant's local wall clock put back into the zone (the same
    # instant but for a gap or overlap at 1970-01-01)
    valid = valid_mask(col)
    millis = col.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if dst.root == "TIMESTAMP_LTZ":
        millis = local_to_instant(instant_to_local(millis, valid, zone), valid, zone)
    return timestamp_array(millis, np.zeros_like(millis), valid, dst)


def number_to_timestamp(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    # seconds since the epoch; an LTZ keeps that instant's wall clock in the zone (Timestamp.fromLocalDateTime)
    valid = valid_mask(col)
    millis = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * 1000
    if dst.root == "TIMESTAMP_LTZ":
        millis = instant_to_local(millis, valid, zone)
    return timestamp_array(millis, np.zeros_like(millis), valid, dst)


def timestamp_to_number(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    millis, _, valid = timestamp_parts(col)
    seconds = java_div_np(millis, 1000)  # DateTimeUtils.unixTimestamp: Java's division
    out = seconds if dst.root == "BIGINT" else java_narrow(seconds, "INT")
    return with_nulls(out, pa.from_numpy_dtype(NUMPY_TYPES[dst.root]), valid)
