"""Per-file column statistics (Paimon's SimpleStats), gathered per row group with pyarrow."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..manifest.meta import SimpleStats
from ..schema.types import DataType
from .binary_row import serialize_row

_NO_MINMAX = {"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BINARY", "VARBINARY"}
_MISSING = object()


def _truncate_min(v: Any, n: int) -> Any:
    return v[:n] if isinstance(v, str) and len(v) > n else v


def _truncate_max(v: Any, n: int) -> Any:
    """Truncate a string max to n chars, then raise its last char so it stays an upper bound."""
    if not isinstance(v, str) or len(v) <= n:
        return v
    head = v[:n]
    for i in range(n - 1, -1, -1):
        code = ord(head[i])
        if code < 0x10FFFF and not (0xD7FF <= code < 0xE000):
            return head[:i] + chr(code + 1)
    return None


class StatsCollector:
    """Accumulates min, max and null count of each column over the batches of one file."""

    def __init__(self, types: Sequence[DataType], mode: str) -> None:
        self.types = list(types)
        self.mode = mode
        m = re.fullmatch(r"truncate\((\d+)\)", mode)
        self.truncate = int(m.group(1)) if m else None
        self.mins: list[Any] = [None] * len(types)
        self.maxs: list[Any] = [None] * len(types)
        self.nulls = [0] * len(types)

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        with_minmax = self.mode not in ("none", "counts")
        for i, t in enumerate(self.types):
            col = batch.column(i)
            self.nulls[i] += col.null_count
            if not with_minmax or t.root in _NO_MINMAX or col.null_count == len(col):
                continue
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:
                continue
            if isinstance(lo, float) and lo == lo and pc.any(pc.is_nan(col)).as_py():
                lo = hi = float("nan")
            self.add_bounds(i, lo, hi)

    def add_bounds(self, i: int, lo: Any, hi: Any) -> None:
        """Widen column ``i``'s bounds by a part's min and max (``lo`` None: the part's bounds are unknown, so the
        column has none; ``lo`` a NaN: the part holds a NaN). Null counts are the caller's (``nulls``)."""
        if lo is None:
            self.mins[i] = self.maxs[i] = _MISSING
            return
        if isinstance(lo, float):
            # Arrow's min_max skips NaN and ranks -0.0 as 0.0; Paimon compares as Double.compare (NaN above
            # everything, -0.0 below 0.0). As parquet-mr's stats Paimon keeps: a column holding a NaN has no
            # bounds, and a zero bound covers both zeros.
            if lo != lo or hi != hi:
                self.mins[i] = self.maxs[i] = _MISSING
                return
            lo = -0.0 if lo == 0 else lo
            hi = 0.0 if hi == 0 else hi
        if self.mins[i] is _MISSING:
            return
        if self.mins[i] is None or lo < self.mins[i]:
            self.mins[i] = lo
        if self.maxs[i] is None or hi > self.maxs[i]:
            self.maxs[i] = hi

    def result(self) -> SimpleStats:
        if self.mode == "none":
            return SimpleStats(serialize_row([None] * len(self.types), self.types),
                               serialize_row([None] * len(self.types), self.types), None)
        mins = [None if v is _MISSING else v for v in self.mins]
        maxs = [None if v is _MISSING else v for v in self.maxs]
        if self.truncate is not None:
            mins = [_truncate_min(v, self.truncate) for v in mins]
            maxs = [_truncate_max(v, self.truncate) for v in maxs]
        types = [t if t.root not in _NO_MINMAX else t for t in self.types]
        min_row = serialize_row([None if t.root in _NO_MINMAX else v for v, t in zip(mins, types)],
                                _stat_types(types))
        max_row = serialize_row([None if t.root in _NO_MINMAX else v for v, t in zip(maxs, types)],
                                _stat_types(types))
        return SimpleStats(min_row, max_row, tuple(self.nulls))


def _stat_types(types: Sequence[DataType]) -> list[DataType]:
    # Columns without min/max (nested types) are written as nulls; any atomic type encodes a null.
    return [t if t.root not in ("ARRAY", "MAP", "MULTISET", "ROW", "VARIANT") else DataType("INT") for t in types]
