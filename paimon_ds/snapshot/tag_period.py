"""The periods of automatically created tags and their names, as Paimon's TagPeriodHandler makes them.

A tag of period P covers the wall times [T, T + P) and is named by T: `2024-01-01` (daily), `2024-01-01 10`
(hourly, two-hours), with the `tag.period-formatter` variants `20240101`, `20240101 10` and `2024010110`, and
`202401011030` for a `tag.creation-period-duration` (Paimon 1.x). A tag name is an automatic tag's if it parses
back with the period's formatter; a daily period reads only the part before the first space, so `2024-01-01 10`
counts as a daily tag too (as in Paimon).

The formats are Paimon 1.x's (4-digit years, resolved STRICT: a valid date and hour 0-23). Paimon 0.9's were lenient
and parsed the years of `without_dashes` greedily, so 0.9 never recognised its own `20240101` tags (its retention by
`tag.num-retained-max` did not count them); names of valid dates and hours are the same in both.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..options.registry import Options

_DAY = dt.timedelta(days=1)
_HOUR = dt.timedelta(hours=1)
_EPOCH = dt.datetime(1970, 1, 1)

# the formats (strftime-like, fixed widths) and their parsing patterns
_FORMATS = {
    "day": ("{y:04d}-{m:02d}-{d:02d}", r"(\d{4})-(\d{2})-(\d{2})"),
    "day-nodash": ("{y:04d}{m:02d}{d:02d}", r"(\d{4})(\d{2})(\d{2})"),
    "hour": ("{y:04d}-{m:02d}-{d:02d} {h:02d}", r"(\d{4})-(\d{2})-(\d{2}) (\d{2})"),
    "hour-nodash": ("{y:04d}{m:02d}{d:02d} {h:02d}", r"(\d{4})(\d{2})(\d{2}) (\d{2})"),
    "hour-compact": ("{y:04d}{m:02d}{d:02d}{h:02d}", r"(\d{4})(\d{2})(\d{2})(\d{2})"),
    "minute": ("{y:04d}{m:02d}{d:02d}{h:02d}{mi:02d}", r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})"),
}


@dataclass(frozen=True)
class TagPeriod:
    """One of Paimon's TagPeriodHandlers: the period's length and its tag names' format."""

    length: dt.timedelta
    format: str
    daily: bool = False  # DailyTagPeriodHandler: only the text before the first space is parsed

    @staticmethod
    def of(options: Options) -> TagPeriod:
        """TagPeriodHandler.create: `tag.creation-period-duration` (Paimon 1.x) if set, else
        `tag.creation-period` with `tag.period-formatter` (two-hours always with dashes)."""
        duration_ms = options.get("tag.creation-period-duration")
        if duration_ms is not None:
            return TagPeriod(dt.timedelta(milliseconds=duration_ms), "minute")
        period = options.get("tag.creation-period")
        formatter = options.get("tag.period-formatter")
        if period == "daily":
            return TagPeriod(_DAY, "day" if formatter == "with_dashes" else "day-nodash", daily=True)
        if period == "hourly":
            return TagPeriod(_HOUR, {"with_dashes": "hour", "without_dashes": "hour-nodash",
                                     "without_dashes_and_spaces": "hour-compact"}[formatter])
        return TagPeriod(2 * _HOUR, "hour")  # two-hours

    def check_delay(self, delay: dt.timedelta) -> None:
        """Paimon refuses (creating the committer, so before a write) a delay not shorter than the period."""
        if delay >= self.length:
            raise ValueError(f"tag.creation-delay ({delay}) must be shorter than the tag period ({self.length}), "
                             "as Paimon requires")

    def tag_to_time(self, name: str) -> dt.datetime | None:
        """The start of the period an automatic tag names; None if ``name`` is not such a tag's."""
        text = name.split(" ")[0] if self.daily else name
        m = re.fullmatch(_FORMATS[self.format][1], text, re.ASCII)
        if m is None:
            return None
        parts = [int(g) for g in m.groups()] + [0, 0]
        try:
            return dt.datetime(*parts[:5])  # STRICT: a valid date, hour 0-23, minute 0-59
        except ValueError:
            return None

    def is_auto_tag(self, name: str) -> bool:
        return self.tag_to_time(name) is not None

    def time_to_tag(self, time: dt.datetime) -> str:
        return _FORMATS[self.format][0].format(y=time.year, m=time.month, d=time.day, h=time.hour, mi=time.minute)

    def normalize_to_previous(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one ``time`` falls in: the wall time's millis (taken as UTC, as
        Paimon's Timestamp takes them) rounded down to the period, less one period."""
        millis = (time - _EPOCH) // dt.timedelta(milliseconds=1)
        period = self.length // dt.timedelta(milliseconds=1)
        whole = abs(millis) // period * period  # Java's division truncates toward zero
        return _EPOCH + dt.timedelta(milliseconds=whole if millis >= 0 else -whole) - self.length

    def next_tag_time(self, time: dt.datetime) -> dt.datetime:
        return time + self.length
