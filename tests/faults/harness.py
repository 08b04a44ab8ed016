"""Runs an operation under a fault at each of its I/O calls and checks the table after every run.

A scenario builds a table (without faults), then runs one operation on it. The harness first runs the operation
cleanly on a copy, counting its I/O calls (the trace) and recording the table's state after it; then, for each
(call, fault) of the plan, it runs the operation on a fresh copy with that one fault and checks:

1. every snapshot and tag the table lists reads, and every one that existed before reads the rows it had;
2. the operation happened once or not at all: what the scenario observes (by default the latest snapshot's rows,
   the schema, tags, branches and consumers) is the state before or the state after the clean run; if the
   operation returned, the state after; if it raised an error (not a crash), the state before, unless the
   error says the outcome is unknown (OutcomeUnknown);
3. an error is the library's (a PaimonDsError naming the file), never a bare OSError;
4. a retry of an operation that did not happen succeeds and gives the state after; an idempotent one (a stream's
   batch) is retried whatever happened, and gives the state after once;
5. remove_orphan_files runs (margin 0), every snapshot still reads the same rows after it, and no temporary
   file is left anywhere in the table;
6. (Fault.DELAY) while the call is held, a reader finds every listed snapshot readable and the state before or
   after.
Java Paimon 0.9 reads the latest snapshot of a sample of the runs' tables (the test module does that).
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.errors import PaimonDsError
from paimon_ds.fs.file_io import OutcomeUnknown
from paimon_ds.operation.maintenance import remove_orphan_files
from paimon_ds.procedures import list_branches, list_consumers

from .faulty_fs import INJECTOR, Call, Fault, SimulatedCrash

TABLE = "warehouse/db.db/t"
TESTS_DIR = Path(__file__).resolve().parent.parent


def rows_of(data: pa.Table) -> tuple:
    """A table's rows as a sorted tuple (a multiset: duplicates kept)."""
    return tuple(sorted((tuple(r.values()) for r in data.to_pylist()), key=repr))


@dataclass(frozen=True)
class State:
    latest: int | None
    latest_rows: tuple
    snapshots: dict[int, tuple]  # every listed snapshot's rows
    tags: dict[str, tuple]
    schema: str  # the fields' JSON
    branches: tuple  # (name, latest rows) of each branch
    consumers: tuple

    def observed(self) -> tuple:
        return (self.latest_rows, self.schema, tuple(sorted(self.tags.items())), self.branches, self.consumers)


def table_state(path: str) -> State:
    """Everything a reader can see of the table; raises if any of it cannot be read."""
    table = Table.load(path)
    sm = table.snapshot_manager
    snapshots = {s.id: rows_of(table.scan(snapshot_id=s.id).to_arrow()) for s in table.snapshots()}
    latest = sm.latest_id()
    latest_rows = snapshots[latest] if latest in snapshots else rows_of(table.scan().to_arrow())
    tags = {name: rows_of(table.scan(tag=name).to_arrow()) for name in sm.tag_names()}
    schema = str([f.to_json() for f in table.table_schema.fields])
    branches = tuple((name, rows_of(Table.load(path, {"branch": name}).scan().to_arrow()))
                     for name in list_branches(table))
    consumers = tuple(sorted(list_consumers(table).items()))
    return State(latest, latest_rows, snapshots, tags, schema, branches, consumers)


@dataclass
class Scenario:
    """One operation on one table: ``setup(path)`` builds the table (no faults), ``run(path)`` is the operation.
    ``observe(state)`` is what must be before or after (default: State.observed). ``idempotent``: the operation
    may be run again whatever happened (a stream batch with its id): the retry always runs and must give the
    state after. ``atomic``: an operation that failed must have changed nothing (False for maintenance that may
    stop half-way, as an expiry: it must leave a readable table, not an unchanged one)."""
    name: str
    setup: Callable[[str], None]
    run: Callable[[str], Any]
    observe: Callable[[State], Any] = State.observed
    idempotent: bool = False
    atomic: bool = True
    java_reads: bool = True  # whether Java Paimon 0.9 can read the table (features it knows)
    # a state between before and after that a stopped run may leave (an operation of several independent steps,
    # as expiring several tags): (now, before, after) -> whether ``now`` is one of them
    between: Callable[[State, State, State], bool] | None = None

    def acceptable(self, now: State, before: State, after: State) -> bool:
        """Whether a stopped run may leave ``now``: the state before, after, or (``between``) one in between."""
        return self.observe(now) in (self.observe(before), self.observe(after)) or (
            self.between is not None and self.between(now, before, after))


@dataclass
class RunResult:
    scenario: str
    call: Call | None
    fault: Fault | None
    outcome: str  # ok | error | crash
    error: str = ""
    path: str = ""
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        where = f"{self.fault.value} at {self.call}" if self.call is not None else "clean"
        text = f"{self.scenario}: {where} -> {self.outcome}"
        if self.error:
            text += f" ({self.error})"
        return text + "".join(f"\n    - {p}" for p in self.problems)


@dataclass
class Prepared:
    scenario: Scenario
    template: str  # the table's directory before the operation
    before: State
    after: State
    calls: list[Call]
    storage: Storage


class Storage:
    """Where the runs' tables live: a local directory, or (S3Storage) a prefix of a loopback S3 server."""

    def __init__(self, root: Path | str) -> None:
        self.root = str(root)

    def url(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def copy(self, source: str, target: str) -> None:
        shutil.copytree(source, target)

    def make_table_dir(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True)  # the catalog layout Java's oracle reads

    def temporary_files(self, path: str) -> list[str]:
        return [str(p) for p in Path(path).rglob("*.tmp")]


def as_storage(where: Storage | Path) -> Storage:
    return where if isinstance(where, Storage) else Storage(where)


def prepare(scenario: Scenario, where: Storage | Path) -> Prepared:
    """Build the scenario's table, then run the operation once cleanly on a copy, tracing its calls."""
    storage = as_storage(where)
    template = storage.url(scenario.name, "template")
    path = f"{template}/{TABLE}"
    storage.make_table_dir(path)
    scenario.setup(path)
    before = table_state(path)
    clean = storage.url(scenario.name, "clean")
    storage.copy(template, clean)
    INJECTOR.arm()
    try:
        scenario.run(f"{clean}/{TABLE}")
    finally:
        calls = INJECTOR.disarm()
    after = table_state(f"{clean}/{TABLE}")
    return Prepared(scenario, template, before, after, calls, storage)


def run_with_fault(prepared: Prepared, point: int, fault: Fault, workdir: Path | None = None) -> RunResult:
    """One run of the operation with ``fault`` at call ``point``, and the checks (problems are listed)."""
    scenario = prepared.scenario
    run_dir = prepared.storage.url(f"{scenario.name}-{point}-{fault.value}")
    prepared.storage.copy(prepared.template, run_dir)
    path = f"{run_dir}/{TABLE}"
    problems: list[str] = []
    seen_meanwhile: list[str] = []

    def reader(call: Call) -> None:  # Fault.DELAY: a reader looks at the table while the call is held
        try:
            state = table_state(path)
        except Exception as e:  # noqa: BLE001 - a finding, reported
            seen_meanwhile.append(f"a reader while {call} was held failed: {_describe(e)}")
            return
        if not scenario.acceptable(state, prepared.before, prepared.after):
            seen_meanwhile.append(f"a reader while {call} was held saw a state neither before nor after")

    INJECTOR.arm(point, fault, on_delay=reader)
    outcome, error, exc = "ok", "", None
    try:
        scenario.run(path)
    except SimulatedCrash:
        outcome = "crash"
    except Exception as e:  # noqa: BLE001 - every outcome is checked below
        outcome, error, exc = "error", _describe(e), e
    finally:
        calls = INJECTOR.disarm()
    fired = INJECTOR.fired
    result = RunResult(scenario.name, fired, fault, outcome, error, path, problems)
    problems += seen_meanwhile
    if fired is None:
        problems.append(f"the fault never fired: the run made {len(calls)} calls, the trace {len(prepared.calls)}")
    if exc is not None and not isinstance(exc, PaimonDsError):
        problems.append(f"the error is not the library's: {type(exc).__name__}")
    with INJECTOR.bypass():
        check_run(prepared, path, outcome, exc, problems)
    return result


def check_run(prepared: Prepared, path: str, outcome: str, exc: BaseException | None, problems: list[str]) -> None:
    """The checks after a run (the module docstring's 1-5), appending what fails to ``problems``."""
    scenario = prepared.scenario
    before, after = scenario.observe(prepared.before), scenario.observe(prepared.after)
    try:
        state = table_state(path)
    except Exception as e:  # noqa: BLE001
        problems.append(f"the table cannot be read after the run: {_describe(e)}")
        return
    _check_unchanged(prepared.before, prepared.after, state, problems)
    seen = scenario.observe(state)
    happened = seen == after and seen != before
    if not scenario.acceptable(state, prepared.before, prepared.after):
        problems.append("the table is neither as before nor as after the operation")
    elif outcome == "ok" and seen != after:
        problems.append("the operation returned but its effect is not there")
    elif outcome == "error" and scenario.atomic and seen != before and not isinstance(exc, OutcomeUnknown):
        problems.append("the operation raised but its effect is there")
    if scenario.idempotent or (not happened and outcome != "ok"):
        try:
            scenario.run(path)
        except Exception as e:  # noqa: BLE001
            problems.append(f"a retry failed: {_describe(e)}")
            return
        try:
            state = table_state(path)
        except Exception as e:  # noqa: BLE001
            problems.append(f"the table cannot be read after the retry: {_describe(e)}")
            return
        if scenario.observe(state) != after:
            problems.append("after the retry the table is not as after the operation")
    try:
        remove_orphan_files(Table.load(path), older_than_ms=0, now_ms=int(time.time() * 1000) + 1000)
    except Exception as e:  # noqa: BLE001
        problems.append(f"remove_orphan_files failed: {_describe(e)}")
        return
    try:
        cleaned = table_state(path)
    except Exception as e:  # noqa: BLE001
        problems.append(f"the table cannot be read after remove_orphan_files: {_describe(e)}")
        return
    if cleaned != state:
        problems.append("remove_orphan_files changed what the table shows")
    leftovers = prepared.storage.temporary_files(path)
    if leftovers:
        problems.append(f"temporary files left after remove_orphan_files: {leftovers[:3]}")


def _check_unchanged(before: State, after: State, now: State, problems: list[str]) -> None:
    """A snapshot reads as before (or, replaced by the operation, as after: a fast-forward); so does a tag."""
    for sid, rows in now.snapshots.items():
        if sid in before.snapshots and rows not in (before.snapshots[sid], after.snapshots.get(sid)):
            problems.append(f"snapshot {sid} reads other rows than before or after the run")
    for name, rows in now.tags.items():
        if name in before.tags and rows not in (before.tags[name], after.tags.get(name)):
            problems.append(f"tag {name} reads other rows than before or after the run")


def _describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()[0][:300]
    if not isinstance(e, PaimonDsError):
        frames = traceback.extract_tb(e.__traceback__)
        ours = [f for f in frames if "paimon_ds" in f.filename]
        if ours:
            text += f" [at {Path(ours[-1].filename).name}:{ours[-1].lineno}]"
    return text


# a run in a subprocess, SIGKILLed before call `point` (Fault.KILL): the real death the in-process crash simulates
KILL_RUNNER = """
import sys
sys.path.insert(0, {tests!r})
from faults.faulty_fs import INJECTOR, Fault, install
from faults.scenarios import BY_NAME
install()
INJECTOR.arm({point}, Fault.KILL)
BY_NAME[{name!r}].run({path!r})
"""


def run_killed(prepared: Prepared, point: int, workdir: Path | None = None) -> RunResult:
    """The operation in a subprocess SIGKILLed before call ``point``, then the same checks as an in-process run."""
    name = prepared.scenario.name
    run_dir = prepared.storage.url(f"{name}-{point}-kill")
    prepared.storage.copy(prepared.template, run_dir)
    path = f"{run_dir}/{TABLE}"
    code = KILL_RUNNER.format(tests=str(TESTS_DIR), point=point, name=name, path=path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    outcome = "crash" if proc.returncode == -signal.SIGKILL else "ok" if proc.returncode == 0 else "error"
    result = RunResult(name, None, Fault.KILL, outcome, "", path)
    if outcome != "crash":
        result.problems.append(f"the subprocess was not killed at call {point}: exit {proc.returncode} "
                               f"{proc.stderr[-500:]}")
        return result
    check_run(prepared, path, outcome, None, result.problems)
    return result


def points(prepared: Prepared, faults: tuple[Fault, ...]) -> list[tuple[int, Fault]]:
    return [(call.index, fault) for call in prepared.calls for fault in faults]


def replace(scenario: Scenario, **changes: Any) -> Scenario:
    return dataclasses.replace(scenario, **changes)
