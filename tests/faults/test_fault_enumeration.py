"""Every operation that writes, under one fault at its I/O calls: nothing lost, nothing doubled, every snapshot
readable (tests/faults/harness.py says what is checked after each run).

`make test` runs a seeded sample: for each scenario, every fault kind at SAMPLE_POINTS of its calls (the seed is
PAIMON_DS_FAULT_SEED, default 45), a few real SIGKILLs in a subprocess beside the simulated crash at the same
call, and Java Paimon 0.9 reads a sample of the tables the runs left. `make soak` runs every call of every
scenario with every fault. A failure names the scenario, call and fault; replay one with

    PAIMON_DS_FAULT_REPLAY='<scenario>:<call>:<fault>' .venv/bin/python -m pytest tests/faults -k replay -s
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table

from .faulty_fs import IN_PROCESS_FAULTS, Fault, install
from .harness import Prepared, RunResult, prepare, rows_of, run_killed, run_with_fault, table_state
from .scenarios import BY_NAME, SCENARIOS

SEED = int(os.environ.get("PAIMON_DS_FAULT_SEED", "45"))
SAMPLE_POINTS = 3  # calls per scenario in make test, each with every in-process fault
KILLS = 8  # real SIGKILL runs in make test (scenario and call drawn by the seed)
JAVA_SAMPLE = 12  # tables of make test's runs that Java Paimon 0.9 reads

# the tables the runs left, for Java to read at the end: (scenario, run directory, paimon_ds's rows)
LEFT: list[tuple[str, str, tuple]] = []


@pytest.fixture(scope="module", autouse=True)
def faulty_filesystem() -> Iterator[None]:
    uninstall = install()
    level = logging.getLogger("paimon_ds").level
    logging.getLogger("paimon_ds").setLevel(logging.CRITICAL)  # every run logs its fault; the checks say enough
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    logging.getLogger("paimon_ds").setLevel(level)
    uninstall()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("faults")
    yield path
    shutil.rmtree(path, ignore_errors=True)  # checked run by run (see conftest.py)


_prepared: dict[str, Prepared] = {}


def prepared(name: str, workdir: Path) -> Prepared:
    if name not in _prepared:
        _prepared[name] = prepare(BY_NAME[name], workdir)
    return _prepared[name]


def report(results: list[RunResult]) -> str:
    bad = [r for r in results if r.problems]
    lines = [f"{len(bad)} of {len(results)} runs failed (seed {SEED}):"] + [str(r) for r in bad[:12]]
    lines += [f"replay: PAIMON_DS_FAULT_REPLAY='{r.scenario}:{r.call.index if r.call else 0}:{r.fault.value}'"
              for r in bad[:3] if r.fault is not None]
    return "\n".join(lines)


MUTATIONS = ("open-write", "close", "write", "create", "link", "rename", "delete", "mkdir", "rmdir")


def sample_points(prep: Prepared, rng: random.Random, count: int = SAMPLE_POINTS) -> list[int]:
    """``count`` calls of the trace: a write, a read, then any (a trace is mostly reads: a plain draw would
    rarely fail a write)."""
    writes = [c.index for c in prep.calls if c.op in MUTATIONS]
    reads = [c.index for c in prep.calls if c.op not in MUTATIONS]
    chosen: list[int] = []
    for pool in (writes, reads, [c.index for c in prep.calls]):
        left = [i for i in pool if i not in chosen]
        if left and len(chosen) < count:
            chosen.append(rng.choice(left))
    return sorted(chosen)


def sample(prep: Prepared, rng: random.Random) -> list[tuple[int, Fault]]:
    return [(point, fault) for point in sample_points(prep, rng) for fault in IN_PROCESS_FAULTS]


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_sampled_faults(name: str, workdir: Path) -> None:
    """Each fault kind at SAMPLE_POINTS seeded calls of the scenario."""
    prep = prepared(name, workdir)
    rng = random.Random(f"{SEED}-{name}")
    results = [run_with_fault(prep, point, fault, workdir) for point, fault in sample(prep, rng)]
    LEFT.extend((name, r.path, None) for r in results if r.outcome != "crash" and BY_NAME[name].java_reads)
    assert not any(r.problems for r in results), report(results)


@pytest.mark.soak
@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_every_fault_at_every_call(name: str, workdir: Path) -> None:
    """The whole enumeration: every call of the scenario, every in-process fault."""
    prep = prepared(name, workdir)
    results = [run_with_fault(prep, call.index, fault, workdir) for call in prep.calls for fault in IN_PROCESS_FAULTS]
    LEFT.extend((name, r.path, None) for r in results if r.outcome != "crash" and BY_NAME[name].java_reads)
    print(f"{name}: {len(prep.calls)} calls x {len(IN_PROCESS_FAULTS)} faults = {len(results)} runs, "
          f"{sum(r.outcome == 'ok' for r in results)} ok, {sum(r.outcome == 'error' for r in results)} errors, "
          f"{sum(r.outcome == 'crash' for r in results)} crashes")
    assert not any(r.problems for r in results), report(results)


def test_replay() -> None:
    """PAIMON_DS_FAULT_REPLAY='scenario:call:fault' runs that one case (skipped without it)."""
    spec = os.environ.get("PAIMON_DS_FAULT_REPLAY")
    if not spec:
        pytest.skip("set PAIMON_DS_FAULT_REPLAY='<scenario>:<call>:<fault>' to replay one run")
    name, point, fault = spec.split(":")
    workdir = Path(os.environ.get("PAIMON_DS_FAULT_WORKDIR") or tempfile.mkdtemp(prefix="fault-replay-"))
    prep = prepared(name, workdir)
    for call in prep.calls:
        print(call)
    result = run_with_fault(prep, int(point), Fault(fault), workdir)
    print(result)
    assert not result.problems, str(result)


# ------------------------------------------------------------------ real SIGKILLs
def test_sigkill_matches_the_simulated_crash(workdir: Path) -> None:
    """KILLS real SIGKILLs (seeded scenario and call): the table is as a simulated crash at the same call leaves
    it, and passes the same checks."""
    rng = random.Random(f"{SEED}-kill")
    results = []
    for name in rng.sample([s.name for s in SCENARIOS], KILLS):
        prep = prepared(name, workdir)
        point = rng.choice([c.index for c in prep.calls])
        killed = run_killed(prep, point, workdir)
        simulated = run_with_fault(prep, point, Fault.CRASH, workdir)
        results += [killed, simulated]
        if not killed.problems and not simulated.problems:
            seen_killed = prep.scenario.observe(table_state(killed.path))
            seen_simulated = prep.scenario.observe(table_state(simulated.path))
            if seen_killed != seen_simulated:
                killed.problems.append(f"a SIGKILL at call {point} left another state than a simulated crash there")
    assert not any(r.problems for r in results), report(results)


# ------------------------------------------------------------------ Java reads what the runs left
@pytest.mark.skipif(os.environ.get("PAIMON_DS_SKIP_JAVA") == "1", reason="PAIMON_DS_SKIP_JAVA=1")
def test_java_reads_the_tables_the_runs_left(java_oracle) -> None:
    """Java Paimon 0.9 reads the latest snapshot of a seeded sample of the tables the runs above left, row for row
    as paimon_ds reads it."""
    if not LEFT:
        pytest.skip("no fault run left a table in this process (run the module whole)")
    rng = random.Random(f"{SEED}-java")
    by_scenario: dict[str, list[str]] = {}
    for name, path, _ in LEFT:
        by_scenario.setdefault(name, []).append(path)
    names = rng.sample(sorted(by_scenario), min(JAVA_SAMPLE, len(by_scenario)))
    for name in names:
        path = rng.choice(by_scenario[name])
        ours = rows_of(_read(path))
        java = rows_of(java_oracle.read(path))
        assert java == ours, f"{name}: Java Paimon 0.9 reads other rows than paimon_ds from {path}"


def _read(path: str) -> pa.Table:
    return Table.load(path).scan().to_arrow()


@pytest.mark.soak
def test_java_reads_the_tables_of_the_whole_enumeration(java_oracle) -> None:
    """As above, after `make soak`'s full enumeration: one table of every scenario's runs."""
    test_java_reads_the_tables_the_runs_left(java_oracle)
