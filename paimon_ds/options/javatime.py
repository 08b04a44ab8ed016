"""java.time as Paimon's commit-time maintenance uses it, value for value.

Partition expiration reads a time out of partition values with java.time's parsers (PartitionTimeExtractor:
`DateTimeFormatter.ofPattern(partition.timestamp-formatter)` with its SMART resolver, or Paimon's own lenient
`yyyy-MM-dd[ HH:mm:ss[.fraction]]` formatters), compares wall times (LocalDateTime), names zones with ZoneId, and
tag files hold a LocalDateTime and a Duration as Jackson writes them. This module reproduces those pieces:

- `JavaFormatter`: a DateTimeFormatter of the pattern letters y, u, M, L, d, H, m, s, S and literals (quoted or
  not), parsed as java.time parses (strict digits, adjacent value parsing: `yyyyMMdd` reserves the widths of the
  fixed fields after a variable one; EXCEEDS_PAD years), resolved SMART (month 1-12, day 1-31 clamped to the
  month, hour 24:00 as the next midnight) or LENIENT (months and days roll over). Other letters are refused when
  the option is set (`check_pattern`), so paimon_ds never reads a time Java reads differently.
- `LocalDateTime`: a wall time of any year java.time holds (an epoch day and a nano of day), comparable.
- `zone_of`: ZoneId.of's forms (region names, `Z`, `+08:00`, `UTC+8`, `GMT-08:00`).
- Jackson's forms of LocalDateTime (`[y, m, d, h, min, s, nanos]`) and Duration (decimal seconds).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

NANOS_PER_DAY = 86_400 * 10**9
_MAX_YEAR = 999_999_999  # java.time's Year.MAX_VALUE
_DIGITS = "0123456789"  # DecimalStyle.STANDARD: ASCII digits only


# ----------------------------------------------------------------- the proleptic Gregorian calendar, any year
def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def month_length(year: int, month: int) -> int:
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def epoch_day(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the date (LocalDate.toEpochDay), for any year."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of an epoch day (LocalDate.ofEpochDay)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def plus_months(year: int, month: int, months: int) -> tuple[int, int]:
    total = year * 12 + (month - 1) + months
    return total // 12, total % 12 + 1


@dataclass(frozen=True, order=True)
class LocalDateTime:
    """java.time.LocalDateTime: a wall time without a zone, of any year java.time holds; ordered as it is."""

    epoch_day: int
    nano_of_day: int = 0

    @staticmethod
    def of(value: dt.datetime) -> LocalDateTime:
        """A naive datetime's wall time."""
        days = epoch_day(value.year, value.month, value.day)
        nanos = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**9 + value.microsecond * 1000
        return LocalDateTime(days, nanos)

    def plus_nanos(self, nanos: int) -> LocalDateTime:
        total = self.nano_of_day + nanos
        return LocalDateTime(self.epoch_day + total // NANOS_PER_DAY, total % NANOS_PER_DAY)

    def to_datetime(self) -> dt.datetime:
        """As a naive datetime (microseconds; raises OverflowError outside years 1-9999)."""
        year, month, day = civil(self.epoch_day)
        if not 1 <= year <= 9999:
            raise OverflowError(f"year {year} is outside Python's datetime")
        return dt.datetime(year, month, day) + dt.timedelta(microseconds=self.nano_of_day // 1000)


def local_datetime_text(value: dt.datetime) -> str:
    """LocalDateTime.toString: `2024-01-01T10:00`, seconds and a fraction only when not zero."""
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
    nanos = value.microsecond * 1000 + (getattr(value, "nanosecond", 0) or 0)
    if value.second or nanos:
        text += f":{value.second:02d}"
        if nanos:
            if nanos % 1_000_000 == 0:
                text += f".{nanos // 1_000_000:03d}"
            elif nanos % 1000 == 0:
                text += f".{nanos // 1000:06d}"
            else:
                text += f".{nanos:09d}"
    return text


# ----------------------------------------------------------------- DateTimeFormatter
YEAR, YEAR_OF_ERA, MONTH, DAY, HOUR, MINUTE, SECOND, NANO = (
    "YEAR", "YEAR_OF_ERA", "MONTH_OF_YEAR", "DAY_OF_MONTH", "HOUR_OF_DAY", "MINUTE_OF_HOUR", "SECOND_OF_MINUTE",
    "NANO_OF_SECOND")
NORMAL, NOT_NEGATIVE, EXCEEDS_PAD = "NORMAL", "NOT_NEGATIVE", "EXCEEDS_PAD"


@dataclass
class _Number:
    """NumberPrinterParser (and ReducedPrinterParser with ``base``); ``subsequent``: the widths of the fixed
    fields right after it that adjacent value parsing reserves (-1 once it is made fixed)."""

    field: str
    min_width: int
    max_width: int
    sign: str
    subsequent: int = 0
    base: int | None = None


_FRACTION = -1  # _Number.base of a fixed-width fraction (`SSS`): its digits are the leading digits of the nanos


@dataclass
class _Fraction:
    min_width: int
    max_width: int
    decimal_point: bool


@dataclass
class _Literal:
    text: str


@dataclass
class _Optional:
    elements: list[Any] = field(default_factory=list)


class _Builder:
    """DateTimeFormatterBuilder's appending rules, adjacent value parsing included."""

    def __init__(self) -> None:
        self.stack: list[tuple[list[Any], int]] = [([], -1)]  # (elements, index of the active value parser)

    def _append(self, element: Any) -> int:
        elements, _ = self.stack[-1]
        elements.append(element)
        self.stack[-1] = (elements, -1)
        return len(elements) - 1

    def value(self, p: _Number) -> None:
        elements, active = self.stack[-1]
        if active >= 0:
            base = elements[active]
            if p.min_width == p.max_width and p.sign == NOT_NEGATIVE:
                base.subsequent = max(base.subsequent, 0) + p.max_width
                p.subsequent = -1
                self._append(p)
                self.stack[-1] = (self.stack[-1][0], active)
            else:
                base.subsequent = -1
                self.stack[-1] = (elements, self._append(p))
        else:
            self.stack[-1] = (elements, self._append(p))

    def fraction(self, min_width: int, max_width: int, decimal_point: bool) -> None:
        if min_width == max_width and not decimal_point:  # a fixed-width value since JDK 9 (adjacent parsing)
            self.value(_Number(NANO, min_width, max_width, NOT_NEGATIVE, base=_FRACTION))
        else:
            self._append(_Fraction(min_width, max_width, decimal_point))

    def literal(self, text: str) -> None:
        self._append(_Literal(text))

    def optional_start(self) -> None:
        self.stack.append(([], -1))

    def optional_end(self) -> None:
        elements, _ = self.stack.pop()
        self._append(_Optional(elements))

    def build(self) -> list[Any]:
        while len(self.stack) > 1:
            self.optional_end()
        return self.stack[0][0]


# Pattern letters paimon_ds parses (DateTimeFormatterBuilder.parsePattern's for them); any other letter is refused
_SUPPORTED_LETTERS = "yuMLdHmsS"


def _compile_pattern(pattern: str) -> list[Any]:
    """DateTimeFormatter.ofPattern(pattern)'s elements; ValueError for what Java refuses or paimon_ds does not
    parse (text fields, zones, week fields, optional sections...)."""
    b = _Builder()
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if "A" <= ch <= "Z" or "a" <= ch <= "z":
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            count = j - i
            if ch not in _SUPPORTED_LETTERS:
                raise ValueError(f"pattern letter {ch!r} is not supported by paimon_ds (it parses y, u, M, d, H, m, "
                                 "s, S and literals)")
            if ch in "yu":
                f = YEAR if ch == "u" else YEAR_OF_ERA
                if count == 2:
                    b.value(_Number(f, 2, 2, NOT_NEGATIVE, base=2000))
                elif count < 4:
                    b.value(_Number(f, count, 19, NORMAL))
                else:
                    b.value(_Number(f, count, 19, EXCEEDS_PAD))
            elif ch in "ML":
                if count > 2:
                    raise ValueError(f"pattern {'M' * count!r} (a month's name) is not supported by paimon_ds")
                b.value(_Number(MONTH, 1, 19, NORMAL) if count == 1 else _Number(MONTH, 2, 2, NOT_NEGATIVE))
            elif ch == "S":
                if count > 9:
                    raise ValueError(f"too many pattern letters: {ch}")
                b.fraction(count, count, False)
            else:
                if count > 2:
                    raise ValueError(f"too many pattern letters: {ch}")
                f = {"d": DAY, "H": HOUR, "m": MINUTE, "s": SECOND}[ch]
                b.value(_Number(f, 1, 19, NORMAL) if count == 1 else _Number(f, 2, 2, NOT_NEGATIVE))
            i = j
        elif ch == "'":
            j = i + 1
            text = []
            while True:
                if j >= n:
                    raise ValueError(f"pattern ends within quoted text: {pattern!r}")
                if pattern[j] == "'":
                    if j + 1 < n and pattern[j + 1] == "'":
                        text.append("'")
                        j += 2
                        continue
                    break
                text.append(pattern[j])
                j += 1
            b.literal("".join(text) if j > i + 1 else "'")
            i = j + 1
        elif ch in "{}#":
            raise ValueError(f"pattern includes reserved character {ch!r}")
        elif ch in "[]":
            raise ValueError("optional sections ([...]) in a pattern are not supported by paimon_ds")
        else:
            b.literal(ch)
            i += 1
    return b.build()


def _sign_allowed(sign: str, positive: bool, fixed: bool) -> bool:
    """SignStyle.parse, strict."""
    if sign == NORMAL:
        return not positive
    if sign == EXCEEDS_PAD:
        return True
    return False


def _parse_number(p: _Number, text: str, pos: int, fields: dict[str, int]) -> int:
    n = len(text)
    if pos == n:
        return -1
    negative = positive = False
    if text[pos] == "+":
        if not _sign_allowed(p.sign, True, p.min_width == p.max_width):
            return -1
        positive, pos = True, pos + 1
    elif text[pos] == "-":
        if not _sign_allowed(p.sign, False, p.min_width == p.max_width):
            return -1
        negative, pos = True, pos + 1
    eff_min, eff_max = p.min_width, p.max_width + max(p.subsequent, 0)
    start = pos
    if start + eff_min > n:
        return -1
    end = start
    for first_pass in (True, False):
        end, stop = start, min(start + eff_max, n)
        while end < stop and text[end] in _DIGITS:
            end += 1
        if end < start + eff_min:
            return -1
        if p.subsequent > 0 and first_pass:
            eff_max = max(eff_min, end - start - p.subsequent)
            continue
        break
    digits = text[start:end]
    if p.base == _FRACTION:
        value = int(digits.ljust(9, "0")[:9])
    else:
        value = int(digits)
        if negative:
            if value == 0:
                return -1  # strict: no minus zero
            value = -value
        elif p.sign == EXCEEDS_PAD and (len(digits) <= p.min_width if positive else len(digits) > p.min_width):
            return -1
        if p.base is not None and len(digits) == p.min_width and value >= 0:
            span = 10 ** p.min_width
            value += p.base - p.base % span
            if value < p.base:
                value += span
    old = fields.setdefault(p.field, value)
    return end if old == value else -1


def _parse_elements(elements: list[Any], text: str, pos: int, fields: dict[str, int]) -> int:
    for e in elements:
        if isinstance(e, _Literal):
            if not text.startswith(e.text, pos):
                return -1
            pos += len(e.text)
        elif isinstance(e, _Number):
            pos = _parse_number(e, text, pos, fields)
        elif isinstance(e, _Fraction):
            if pos < len(text) and e.decimal_point:
                if text[pos] != ".":
                    if e.min_width > 0:
                        return -1
                    continue
                pos += 1
            end, stop = pos, min(pos + e.max_width, len(text))
            while end < stop and text[end] in _DIGITS:
                end += 1
            if end < pos + e.min_width:
                return -1
            value = int(text[pos:end].ljust(9, "0")[:9]) if end > pos else 0
            if fields.setdefault(NANO, value) != value:
                return -1
            pos = end
        else:  # an optional section: skipped, with what it parsed, if it does not match
            trial = dict(fields)
            after = _parse_elements(e.elements, text, pos, trial)
            if after >= 0:
                fields.clear()
                fields.update(trial)
                pos = after
        if pos < 0:
            return -1
    return pos


class JavaFormatter:
    """A DateTimeFormatter: its parse to LocalDateTime / LocalDate as java.time gives them (None where Java
    throws DateTimeParseException)."""

    def __init__(self, elements: list[Any], lenient: bool) -> None:
        self.elements = elements
        self.lenient = lenient

    @staticmethod
    def of_pattern(pattern: str) -> JavaFormatter:
        """DateTimeFormatter.ofPattern(pattern, Locale.ROOT): SMART resolution. ValueError for a pattern Java
        refuses or paimon_ds does not parse."""
        return JavaFormatter(_compile_pattern(pattern), lenient=False)

    def _resolve(self, text: str) -> tuple[int | None, tuple[int, int] | None] | None:
        """(epoch day or None, (nano of day, excess days) or None) of ``text``; None if it does not parse."""
        fields: dict[str, int] = {}
        if _parse_elements(self.elements, text, 0, fields) != len(text):
            return None
        if YEAR_OF_ERA in fields:
            yoe = fields.pop(YEAR_OF_ERA)
            if not self.lenient and not 1 <= yoe <= _MAX_YEAR + 1:
                return None
            year = fields.get(YEAR)
            resolved = yoe if year is None or year > 0 else 1 - yoe
            if fields.setdefault(YEAR, resolved) != resolved:
                return None
        day = None
        if YEAR in fields and MONTH in fields and DAY in fields:
            y, m, d = fields[YEAR], fields[MONTH], fields[DAY]
            if not -_MAX_YEAR <= y <= _MAX_YEAR:
                return None
            if self.lenient:  # LocalDate.of(y, 1, 1).plusMonths(m - 1).plusDays(d - 1)
                yy, mm = plus_months(y, 1, m - 1)
                day = epoch_day(yy, mm, 1) + d - 1
            else:
                if not (1 <= m <= 12 and 1 <= d <= 31):
                    return None
                day = epoch_day(y, m, min(d, month_length(y, m)))  # SMART: the 31st of a short month is its last
        time = None
        hod, moh, som, nos = (fields.get(f) for f in (HOUR, MINUTE, SECOND, NANO))
        if not self.lenient:
            limits = ((hod, 24), (moh, 59), (som, 59), (nos, 999_999_999))
            if any(v is not None and not 0 <= v <= hi for v, hi in limits):
                return None
        if hod is not None and not ((moh is None and (som is not None or nos is not None))
                                    or (moh is not None and som is None and nos is not None)):
            total = ((hod * 60 + (moh or 0)) * 60 + (som or 0)) * 10**9 + (nos or 0)
            if self.lenient:
                time = (total % NANOS_PER_DAY, total // NANOS_PER_DAY)
            elif hod == 24:
                if total != 24 * 3600 * 10**9:
                    return None
                time = (0, 1)  # SMART: 24:00 is the next day's midnight
            else:
                time = (total, 0)
        return day, time

    def parse_local_datetime(self, text: str) -> LocalDateTime | None:
        """LocalDateTime.parse(text, this)."""
        resolved = self._resolve(text)
        if resolved is None or resolved[0] is None or resolved[1] is None:
            return None
        day, (nanos, excess) = resolved
        return LocalDateTime(day + excess, nanos)

    def parse_local_date(self, text: str) -> int | None:
        """LocalDate.parse(text, this), as an epoch day."""
        resolved = self._resolve(text)
        return None if resolved is None else resolved[0]


def check_pattern(pattern: str) -> str:
    """A `partition.timestamp-formatter` paimon_ds parses as Java does (the pattern, unchanged); ValueError
    naming what it does not."""
    _compile_pattern(pattern)
    return pattern


def _lenient_default(with_time: bool) -> JavaFormatter:
    """Paimon's PartitionTimeExtractor formatters: `y-M-d[ H:m:s[.fraction]]`, 1-10 year digits, 1-2 of the rest,
    resolved LENIENT."""
    b = _Builder()
    b.value(_Number(YEAR, 1, 10, NORMAL))
    b.literal("-")
    b.value(_Number(MONTH, 1, 2, NORMAL))
    b.literal("-")
    b.value(_Number(DAY, 1, 2, NORMAL))
    if with_time:
        b.optional_start()
        b.literal(" ")
        b.value(_Number(HOUR, 1, 2, NORMAL))
        b.literal(":")
        b.value(_Number(MINUTE, 1, 2, NORMAL))
        b.literal(":")
        b.value(_Number(SECOND, 1, 2, NORMAL))
        b.optional_start()
        b.fraction(1, 9, True)
        b.optional_end()
        b.optional_end()
    return JavaFormatter(b.build(), lenient=True)


_DEFAULT_TIMESTAMP = _lenient_default(True)
_DEFAULT_DATE = _lenient_default(False)
_FORMATTERS: dict[str, JavaFormatter] = {}


def parse_partition_time(text: str, formatter: str | None) -> LocalDateTime | None:
    """PartitionTimeExtractor.toLocalDateTime: the text as a date-time (a date alone at midnight) by
    ``formatter`` (a DateTimeFormatter pattern) or Paimon's default formatters; None where Java throws
    DateTimeParseException."""
    if formatter is None:
        fmt_time, fmt_date = _DEFAULT_TIMESTAMP, _DEFAULT_DATE
    else:
        if formatter not in _FORMATTERS:
            _FORMATTERS[formatter] = JavaFormatter.of_pattern(formatter)
        fmt_time = fmt_date = _FORMATTERS[formatter]
    parsed = fmt_time.parse_local_datetime(text)
    if parsed is not None:
        return parsed
    day = fmt_date.parse_local_date(text)
    return None if day is None else LocalDateTime(day)


# ----------------------------------------------------------------- ZoneId
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def _offset(text: str) -> dt.tzinfo:
    m = _OFFSET.fullmatch(text)
    if m is None:
        raise ValueError(f"not a zone offset: {text!r}")
    sign, hours, minutes, seconds = m.group(1), int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
    if len(m.group(2)) == 1 and (m.group(3) or m.group(4)):
        raise ValueError(f"not a zone offset: {text!r}")
    if hours > 18 or minutes > 59 or seconds > 59 or hours * 3600 + minutes * 60 + seconds > 18 * 3600:
        raise ValueError(f"zone offset out of range: {text!r}")
    delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
    return dt.timezone(-delta if sign == "-" else delta)


def zone_of(text: str) -> dt.tzinfo:
    """ZoneId.of(text): `Z`, an offset (`+08:00`, `-5`), `UTC`/`GMT`/`UT` with or without an offset, or a region
    name of the tz database (`Asia/Shanghai`). ValueError where Java throws."""
    if text == "Z":
        return dt.timezone.utc
    if text[:1] in "+-" and text:
        return _offset(text)
    for prefix in ("UTC", "GMT", "UT"):
        if text == prefix:
            return dt.timezone.utc
        if text.startswith(prefix) and text[len(prefix):][:1] in ("+", "-"):
            return _offset(text[len(prefix):])
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9~/._+-]+", text):
        raise ValueError(f"not a time zone: {text!r}")
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {text!r} (use a region such as 'Asia/Shanghai' or an offset such as "
                         "'+08:00')") from None


def check_zone(text: str) -> str:
    """A zone option's value, checked as ZoneId.of checks it (the text, unchanged)."""
    zone_of(text)
    return text


def wall_time(epoch_millis: int, zone: dt.tzinfo | None) -> dt.datetime:
    """Instant.ofEpochMilli(millis).atZone(zone).toLocalDateTime(); ``zone`` None: the system's default zone."""
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=epoch_millis)
    return (instant.astimezone(zone) if zone is not None else instant.astimezone()).replace(tzinfo=None)


def epoch_millis_of_wall(wall: dt.datetime) -> int:
    """A wall time in the system's default zone as epoch millis (LocalDateTime.atZone(systemDefault()))."""
    return round(wall.timestamp() * 1000)


# ----------------------------------------------------------------- Jackson's forms (JavaTimeModule)
def local_datetime_json(value: dt.datetime) -> list[int]:
    """LocalDateTime as Jackson writes it: [y, m, d, h, min], then seconds if seconds or nanos, then nanos."""
    out = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        out.append(value.second)
        if nanos:
            out.append(nanos)
    return out


def local_datetime_from_json(value: Any) -> dt.datetime | None:
    """A LocalDateTime Jackson wrote (an array, or ISO text), as a naive datetime (microseconds)."""
    if isinstance(value, list) and len(value) >= 3:
        parts = [int(x) for x in value] + [0] * (7 - len(value))
        return dt.datetime(*parts[:6], parts[6] // 1000)
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    return None


def duration_json(nanos: int) -> str:
    """A Duration as Jackson writes it (decimal seconds with 9 digits: `3600.000000000`), as JSON text."""
    seconds, rest = divmod(nanos, 10**9)
    return f"{seconds}.{rest:09d}"


_ISO_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                           r"(?:([-+]?\d+(?:[.,]\d{0,9})?)S)?)?", re.IGNORECASE)


def duration_from_json(value: Any) -> int | None:
    """A Duration Jackson wrote (decimal seconds, or ISO-8601 text such as `PT1H`), in nanoseconds."""
    if value is None:
        return None
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return int(Decimal(str(value)) * 10**9)
    if isinstance(value, str):
        text = value.strip()
        m = _ISO_DURATION.fullmatch(text)
        if m is None or text.upper() in ("P", "PT"):
            try:
                return int(Decimal(text) * 10**9)
            except ArithmeticError:
                raise ValueError(f"not a duration: {value!r}") from None
        days, hours, minutes = (int(g) if g else 0 for g in m.group(2, 3, 4))
        seconds = Decimal(m.group(5).replace(",", ".")) if m.group(5) else Decimal(0)
        total = int((((Decimal(days) * 24 + hours) * 60 + minutes) * 60 + seconds) * 10**9)
        return -total if m.group(1) == "-" else total
    raise ValueError(f"not a duration: {value!r}")
