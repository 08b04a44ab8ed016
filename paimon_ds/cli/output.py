"""Where `paimon-ds` writes: rich tables and progress bars on a terminal, plain text elsewhere, or one JSON document.

rich is the optional extra `[cli]` and is imported here only: without it every terminal gets the plain form. Plain
output (a pipe, a file, CI) has no ANSI codes and no progress display at all, so what a script reads is the result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

try:
    import rich.box
    import rich.console
    import rich.progress
    import rich.table
    import rich.text
    HAVE_RICH = True
except ImportError:  # the base install: plain output everywhere
    HAVE_RICH = False

# A styled piece of text: (text, style); the style is a rich style ("bold", "#e4572e", "dim") or "" for none.
Segment = tuple[str, str]
# A table cell: plain text, or styled segments (rendered as rich Text, or joined as plain text).
Cell = str | Sequence[Segment]
# A progress callback: (done, total).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Column:
    name: str
    right: bool = False  # right-aligned (numbers)


def _plain(cell: Cell) -> str:
    return cell if isinstance(cell, str) else "".join(text for text, _ in cell)


class Output:
    """The results of one command, in one of three forms: "rich" (a terminal, rich importable), "plain" or "json"."""

    def __init__(self, form: str, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> None:
        self.form = form
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.console = rich.console.Console(file=self.stdout, highlight=False) if form == "rich" else None
        # progress only where a person watches: both streams on a terminal, never with --json
        self.shows_progress = form != "json" and _is_terminal(self.stdout) and _is_terminal(self.stderr)

    @staticmethod
    def choose(as_json: bool, plain: bool) -> Output:
        if as_json:
            return Output("json")
        if plain or not HAVE_RICH or not _is_terminal(sys.stdout):
            return Output("plain")
        return Output("rich")

    @property
    def is_json(self) -> bool:
        return self.form == "json"

    def document(self, doc: Any) -> None:
        """The JSON form's one document."""
        self.stdout.write(json.dumps(doc, indent=2, default=str, ensure_ascii=False) + "\n")

    def line(self, text: str = "", style: str = "") -> None:
        if self.console is not None:
            self.console.print(rich.text.Text(text, style=style))
        else:
            self.stdout.write(text + "\n")

    def heading(self, text: str) -> None:
        self.line()
        self.line(text, "bold")

    def pairs(self, items: Sequence[tuple[str, str]]) -> None:
        """Key/value lines: a two-column table on a terminal, `  key = value` lines in plain text."""
        if self.console is not None:
            grid = rich.table.Table(show_header=False, box=None, padding=(0, 1, 0, 2))
            grid.add_column(style="cyan")
            grid.add_column()
            for key, value in items:
                grid.add_row(key, value)
            self.console.print(grid)
        else:
            for key, value in items:
                self.stdout.write(f"  {key} = {value}\n")

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> None:
        if self.console is not None:
            grid = rich.table.Table(box=rich.box.SIMPLE_HEAD, padding=(0, 1), pad_edge=True)
            for c in columns:
                grid.add_column(c.name, justify="right" if c.right else "left", no_wrap=True)
            for row in rows:
                grid.add_row(*(cell if isinstance(cell, str) else rich.text.Text.assemble(*cell) for cell in row))
            self.console.print(grid)
            return
        texts = [[_plain(cell) for cell in row] for row in rows]
        widths = [max([len(c.name), *(len(r[i]) for r in texts)]) for i, c in enumerate(columns)]

        def fmt(cells: Sequence[str]) -> str:
            parts = [t.rjust(w) if c.right else t.ljust(w) for c, t, w in zip(columns, cells, widths)]
            return ("  " + "  ".join(parts)).rstrip()

        self.stdout.write("\n".join([fmt([c.name for c in columns]), *(fmt(r) for r in texts)]) + "\n")

    @contextmanager
    def progress(self, what: str) -> Iterator[Progress]:
        """A callback (done, total) that moves a progress bar on stderr, or does nothing off a terminal."""
        if not self.shows_progress:
            yield lambda done, total: None
        elif self.form == "rich":
            console = rich.console.Console(file=self.stderr)
            with rich.progress.Progress(rich.progress.TextColumn("{task.description}"), rich.progress.BarColumn(),
                                        rich.progress.MofNCompleteColumn(), rich.progress.TimeElapsedColumn(),
                                        console=console) as bar:
                task = bar.add_task(what, total=None)
                yield lambda done, total: bar.update(task, completed=done, total=total)
        else:  # plain output on a terminal (no rich, or --plain): a counter redrawn in place
            def counter(done: int, total: int) -> None:
                self.stderr.write(f"\r{what}: {done}/{total}" + ("\n" if done >= total else ""))
                self.stderr.flush()

            yield counter

    @contextmanager
    def busy(self, what: str) -> Iterator[None]:
        """A spinner on stderr while a step with no measure of progress runs (rich output only)."""
        if self.shows_progress and self.form == "rich":
            with rich.console.Console(file=self.stderr).status(what):
                yield
        else:
            yield


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
