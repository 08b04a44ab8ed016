"""Faults in every Python process of a test job: Spark's driver-side workers (planning, commit, abort) and its task
workers. Python imports this module at start-up when its directory is on PYTHONPATH, which
tests/spark/write_fault_job.py sets for its own Spark job only (Spark hands PYTHONPATH to its Python workers).

It installs the faulty file system of tests/faults (whose directory must be on PYTHONPATH too) and fires the
faults the PAIMON_DS_TEST_FAULTS environment variable lists, a JSON list of plans:
`{"op": "link", "path": REGEX, "fault": "kill-after", "nth": 1, "once": FILE}` fires ``fault`` at the ``nth`` I/O
call of this process whose op is ``op`` and whose path matches ``REGEX``; with ``once``, only in the first process
that gets there (it creates FILE). ``fault`` is one of tests/faults' Fault values, or `kill-after`: the call is
applied, then the process is SIGKILLed (a worker that dies right after it created a file).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Callable
from typing import Any

_PLANS = os.environ.get("PAIMON_DS_TEST_FAULTS")


def _take_once(path: str | None) -> bool:
    """True in the one process that first claims ``path`` (no path: always)."""
    if path is None:
        return True
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def _install(plans: list[dict[str, Any]]) -> None:
    import fsspec
    from faults import faulty_fs
    from faults.faulty_fs import INJECTOR, Fault, InjectedError

    faulty_fs.install()
    # Spark pickles the writer (and the file system in it) in one process and loads it in another: the faulty
    # classes must be found by name there, as this module makes them in every process of the job
    for protocol in faulty_fs.PROTOCOLS:
        try:
            cls = fsspec.get_filesystem_class(protocol)
        except (ImportError, ValueError):
            continue
        cls.__qualname__ = cls.__name__ = f"Faulty_{protocol}"
        setattr(faulty_fs, cls.__qualname__, cls)

    counts = [0] * len(plans)
    lock = threading.Lock()
    patterns = [re.compile(p["path"]) for p in plans]
    original: Callable[[str, str, Callable[[], Any]], Any] = INJECTOR.call

    def due(op: str, path: str) -> dict[str, Any] | None:
        with lock:
            for i, plan in enumerate(plans):
                if plan["op"] == op and patterns[i].search(path):
                    counts[i] += 1
                    if counts[i] == plan.get("nth", 1) and _take_once(plan.get("once")):
                        return plan
        return None

    def call(op: str, path: str, apply: Callable[[], Any]) -> Any:
        plan = due(op, path)
        if plan is None:
            return original(op, path, apply)
        kill_after = plan["fault"] == "kill-after"
        INJECTOR.arm(1, Fault.AFTER if kill_after else Fault(plan["fault"]))  # fires at this very call
        try:
            return original(op, path, apply)
        except InjectedError:
            if kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            raise
        finally:
            INJECTOR.disarm()

    INJECTOR.call = call


if _PLANS:
    _install(json.loads(_PLANS))
