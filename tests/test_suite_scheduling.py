"""The suite's own scheduling (tests/suite_scheduling.py): in a parallel run each worker's after_suite case comes
last on that worker, after every file it was handed, and checks that worker's tables."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.after_suite
def test_after_suite_case_sees_its_workers_tables(suite_tables_root, tmp_path_factory):
    """The folder an after_suite case checks is its own worker's (or, in one process, the run's)."""
    assert suite_tables_root.is_dir()
    base = tmp_path_factory.getbasetemp()
    assert suite_tables_root == base or suite_tables_root.parent == base.parent


def test_each_worker_ends_with_the_after_suite_check_of_its_own_tables(tmp_path):
    files = ["tests/format/test_bucket.py", "tests/format/test_binary_row.py", "tests/test_suite_scheduling.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # not a worker of this run's
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
                          "-v", f"--basetemp={tmp_path / 'run'}", "-k", "not each_worker_ends", *files],
                         cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    done: dict[str, list[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d)\] \[ *\d+%\] PASSED (\S+)", run.stdout, re.M):
        done.setdefault(worker, []).append(nodeid)
    assert sorted(done) == ["gw0", "gw1"] and sum(map(len, done.values())) == run.stdout.count(" PASSED ")
    for worker, nodeids in done.items():
        checks = [n for n in nodeids if "after_suite_case" in n]
        # once on each worker, for that worker's tables, after all the worker's other cases
        assert checks == [f"tests/test_suite_scheduling.py::test_after_suite_case_sees_its_workers_tables"
                          f"[tables-of-{worker}]"]
        assert nodeids[-1] == checks[0] and len(nodeids) > 1
