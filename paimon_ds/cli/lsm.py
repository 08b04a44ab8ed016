"""The LSM picture of `paimon-ds describe`: each bucket's sorted runs and levels against the compaction triggers.

A primary-key bucket's sorted runs (every level-0 file is one, each non-empty level above 0 is one) are what a read
merges and what universal compaction counts: above `num-sorted-run.compaction-trigger` a compaction is due, above
`num-sorted-run.stop-trigger` writers wait for it. The picture shows that debt per bucket as a terminal bar and, on
request, as an SVG image written here as text (no plotting library).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ..format.binary_row import deserialize_row
from ..manifest.meta import DataFileMeta
from ..mergetree.compact import CompactionOptions, sorted_runs
from ..snapshot.manager import Snapshot
from ..table import Table
from .output import Segment

# One colour per level (level 0 first, hot to cool); deeper levels reuse the last. The SVG's, and the terminal's as
# named colours (a terminal of 8 or 16 colours turns hex colours into near neighbours that look alike).
LEVEL_COLOURS = ("#e4572e", "#f3a712", "#76b041", "#17bebb", "#2e86ab", "#3d5a80", "#5e4b8b", "#293241")
TERMINAL_LEVEL_COLOURS = ("bright_red", "yellow", "green", "cyan", "blue", "magenta", "bright_blue", "white")
TRIGGER_COLOUR = "#d4a000"
STOP_COLOUR = "#c0392b"
TERMINAL_TRIGGER = "bold yellow"
TERMINAL_STOP = "bold red"
# terminal bars grow with the busiest bucket up to this many cells past the stop trigger (then "+N")
MAX_EXTRA_CELLS = 40


def level_colour(level: int) -> str:
    return LEVEL_COLOURS[min(level, len(LEVEL_COLOURS) - 1)]


def terminal_level_colour(level: int) -> str:
    return TERMINAL_LEVEL_COLOURS[min(level, len(TERMINAL_LEVEL_COLOURS) - 1)]


@dataclass(frozen=True)
class Triggers:
    compaction: int  # num-sorted-run.compaction-trigger: more runs than this and a compaction is due
    stop: int  # num-sorted-run.stop-trigger: more runs than this and writers wait for compaction
    num_levels: int

    @staticmethod
    def of(table: Table) -> Triggers:
        opts = CompactionOptions.from_options(table.options)
        return Triggers(opts.trigger, opts.stop_trigger, opts.num_levels)

    def debt(self, runs: int) -> str:
        if runs > self.stop:
            return "over-stop-trigger"
        return "over-trigger" if runs > self.compaction else "ok"

    def to_json(self) -> dict[str, int]:
        return {"compaction_trigger": self.compaction, "stop_trigger": self.stop, "num_levels": self.num_levels}


@dataclass(frozen=True)
class Group:
    """Files of one level, or of one sorted run."""

    level: int
    files: int
    rows: int
    bytes: int

    @staticmethod
    def of(level: int, files: Sequence[DataFileMeta]) -> Group:
        return Group(level, len(files), sum(f.row_count for f in files), sum(f.file_size for f in files))

    def to_json(self) -> dict[str, int]:
        return {"level": self.level, "files": self.files, "rows": self.rows, "bytes": self.bytes}


@dataclass(frozen=True)
class BucketState:
    partition: dict[str, Any]  # partition key -> value (empty: unpartitioned)
    bucket: int
    levels: list[Group]  # non-empty levels, ascending
    runs: list[Group] | None  # sorted runs, newest first (level-0 files, then levels); None: append table

    @property
    def files(self) -> int:
        return sum(g.files for g in self.levels)

    @property
    def rows(self) -> int:
        return sum(g.rows for g in self.levels)

    @property
    def bytes(self) -> int:
        return sum(g.bytes for g in self.levels)

    @property
    def partition_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.partition.items()) or "-"

    def to_json(self, triggers: Triggers) -> dict[str, Any]:
        return {"partition": self.partition, "bucket": self.bucket, "files": self.files, "rows": self.rows,
                "bytes": self.bytes, "sorted_runs": None if self.runs is None else len(self.runs),
                "debt": None if self.runs is None else triggers.debt(len(self.runs)),
                "levels": [g.to_json() for g in self.levels],
                "runs": None if self.runs is None else [g.to_json() for g in self.runs]}


def _json_value(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def bucket_states(table: Table, snapshot: Snapshot | None) -> list[BucketState]:
    """Every (partition, bucket) of the snapshot with its levels and (primary-key tables) sorted runs, in partition
    value order (nulls last), then bucket."""
    if snapshot is None:
        return []
    scan = table.new_scan()
    files: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for e in scan.read_entries(snapshot):
        files[(e.partition, e.bucket)].append(e.file)
    keys = list(table.table_schema.partition_keys)
    values = {p: deserialize_row(p, scan.partition_types) if keys else [] for p, _ in files}
    has_runs = bool(table.table_schema.primary_keys)
    states = []
    for (partition, bucket), bucket_files in files.items():
        by_level: dict[int, list[DataFileMeta]] = defaultdict(list)
        for f in bucket_files:
            by_level[f.level].append(f)
        state = BucketState(
            partition={k: _json_value(v) for k, v in zip(keys, values[partition])}, bucket=bucket,
            levels=[Group.of(level, by_level[level]) for level in sorted(by_level)],
            runs=[Group.of(r.level, r.files) for r in sorted_runs(bucket_files)] if has_runs else None)
        # partition values in order, nulls last (the encoded bytes do not sort as the values do)
        order = tuple((v is None, v if v is not None else 0) for v in values[partition])
        states.append((order, bucket, state))
    return [state for _, _, state in sorted(states, key=lambda t: t[:2])]


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # not reached


def levels_text(state: BucketState) -> str:
    return "; ".join(f"L{g.level}: {g.files} file{'s' if g.files != 1 else ''} {human_bytes(g.bytes)}"
                     for g in state.levels)


def bar_width(states: Sequence[BucketState], triggers: Triggers) -> int:
    """Cells of every bucket's bar: past the stop trigger, and as many as the busiest bucket's runs (capped)."""
    busiest = max((len(s.runs) for s in states if s.runs is not None), default=0)
    return max(triggers.stop + 1, min(busiest, triggers.stop + 1 + MAX_EXTRA_CELLS))


def run_bar(state: BucketState, triggers: Triggers, width: int, glyphs: bool) -> list[Segment]:
    """A bucket's sorted runs as cells, newest first, with a mark after the compaction trigger's cell and one after
    the stop trigger's. ``glyphs``: coloured blocks for a terminal; else ASCII, each run shown by its level's digit
    (`[0005.|...!.]`: three level-0 runs and level 5, against triggers 5 and 8)."""
    runs = state.runs or []
    segments: list[Segment] = [("[", "")]
    for i in range(width):
        if i < len(runs):
            level = runs[i].level
            segments.append(("█" if glyphs else (str(level) if level < 10 else "+"), terminal_level_colour(level)))
        else:
            segments.append(("·" if glyphs else ".", "dim"))
        if i + 1 == triggers.compaction:
            segments.append(("┃" if glyphs else "|", TERMINAL_TRIGGER))
        if i + 1 == triggers.stop:
            segments.append(("┃" if glyphs else "!", TERMINAL_STOP))
    segments.append(("]", ""))
    if len(runs) > width:
        segments.append((f" +{len(runs) - width}", TERMINAL_STOP))
    return segments


def runs_cell(state: BucketState, triggers: Triggers) -> list[Segment]:
    runs = len(state.runs or [])
    style = {"ok": "green", "over-trigger": TERMINAL_TRIGGER, "over-stop-trigger": TERMINAL_STOP}
    return [(str(runs), style[triggers.debt(runs)])]


# ---------------------------------------------------------------------------------------------------- SVG image
ROW = 26  # px per bucket row
BAR = 16  # px height of a run's rectangle
CELL = 14  # px per sorted run in the count panel
SIZE_PANEL = 360  # px of the bytes panel (the bucket with the most bytes fills it)
GAP = 28
TOP = 44
CHAR = 7  # px per character of the labels (12 px sans-serif, roughly)


def _attrs(**values: Any) -> str:
    return " ".join(f"{k.rstrip('_').replace('_', '-')}={quoteattr(str(v))}" for k, v in values.items())


def svg(title: str, states: Sequence[BucketState], triggers: Triggers) -> str:
    """One row per bucket: its sorted runs, newest first, as equal cells against the two trigger lines (left), and
    as segments sized by bytes (right), each coloured by its level; hover a run for its files, rows and bytes."""
    label_w = min(360, max([len("partition, bucket"), *(len(_label(s)) for s in states)]) * CHAR + 16)
    cells = bar_width(states, triggers)
    count_x = label_w
    size_x = count_x + cells * CELL + GAP
    width = size_x + SIZE_PANEL + 16
    rows_h = max(1, len(states)) * ROW
    legend_y = TOP + rows_h + 20
    height = legend_y + 30
    biggest = max((s.bytes for s in states), default=0) or 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" {_attrs(width=width, height=height)} '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f"<title>{escape(title)}</title>",
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="8" y="18" font-weight="bold">{escape(title)}</text>',
           f'<text x="{count_x}" y="{TOP - 8}">sorted runs, newest first</text>',
           f'<text x="{size_x}" y="{TOP - 8}">bytes per sorted run (widest: {escape(human_bytes(biggest))})</text>']
    if not states:
        out.append(f'<text x="8" y="{TOP + 16}">no data files</text>')
    for row, state in enumerate(states):
        y = TOP + row * ROW
        runs = state.runs or []
        out.append(f'<g class="bucket" {_attrs(data_partition=state.partition_text, data_bucket=state.bucket)} '
                   f'{_attrs(data_sorted_runs=len(runs), data_debt=triggers.debt(len(runs)))}>')
        out.append(f'<text x="8" y="{y + BAR - 3}">{escape(_label(state))}</text>')
        for i in range(cells):
            out.append(f'<rect class="cell" x="{count_x + i * CELL}" y="{y}" width="{CELL - 2}" height="{BAR}" '
                       'fill="#eeeeee"/>')
        offset = 0.0
        for i, run in enumerate(runs):
            share = SIZE_PANEL * run.bytes / biggest
            tip = f"L{run.level}: {run.files} file(s), {run.rows} rows, {human_bytes(run.bytes)}"
            out.append(f'<g class="run" {_attrs(data_level=run.level, data_files=run.files, data_rows=run.rows)} '
                       f'{_attrs(data_bytes=run.bytes)}><title>{escape(tip)}</title>')
            if i < cells:
                out.append(f'<rect class="slot" x="{count_x + i * CELL}" y="{y}" width="{CELL - 2}" '
                           f'height="{BAR}" fill="{level_colour(run.level)}"/>')
            out.append(f'<rect class="size" x="{size_x + offset:.2f}" y="{y}" width="{max(share, 1.0):.2f}" '
                       f'height="{BAR}" fill="{level_colour(run.level)}" stroke="#ffffff" stroke-width="0.5"/>')
            out.append("</g>")
            offset += share
        out.append("</g>")
    for css, n, colour, name in (("compaction-trigger", triggers.compaction, TRIGGER_COLOUR, "compaction trigger"),
                                 ("stop-trigger", triggers.stop, STOP_COLOUR, "stop trigger")):
        x = count_x + n * CELL - 1
        out.append(f'<line class="{css}" {_attrs(data_runs=n)} x1="{x}" y1="{TOP - 4}" x2="{x}" '
                   f'y2="{TOP + rows_h}" stroke="{colour}" stroke-width="2" stroke-dasharray="4 2">'
                   f"<title>{name}: {n} sorted runs</title></line>")
    out.append(_legend(states, triggers, legend_y))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _label(state: BucketState) -> str:
    return f"{state.partition_text}, bucket {state.bucket}" if state.partition else f"bucket {state.bucket}"


def _legend(states: Sequence[BucketState], triggers: Triggers, y: int) -> str:
    levels = sorted({r.level for s in states for r in (s.runs or [])})
    parts = ['<g class="legend">']
    x = 8
    for level in levels:
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{level_colour(level)}"/>'
                     f'<text x="{x + 16}" y="{y + 10}">L{level}</text>')
        x += 48
    for colour, text in ((TRIGGER_COLOUR, f"compaction trigger ({triggers.compaction})"),
                         (STOP_COLOUR, f"stop trigger ({triggers.stop})")):
        parts.append(f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + 12}" stroke="{colour}" stroke-width="2" '
                     f'stroke-dasharray="4 2"/><text x="{x + 6}" y="{y + 10}">{escape(text)}</text>')
        x += 16 + len(text) * CHAR
    parts.append("</g>")
    return "".join(parts)
