"""paimon_ds.session() keeps Spark's UI and the user's time zone, and shows Spark's progress bar only where a
person watches (stderr a terminal). Each case is a fresh driver process: a session's conf is fixed at start."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, paimon_ds
spark = paimon_ds.session("paimon_ds-defaults", master="local[1]")
conf = spark.sparkContext.getConf()
print("RESULT " + json.dumps({"progress": conf.get("spark.ui.showConsoleProgress"),
                              "ui": conf.get("spark.ui.enabled", "true"),
                              "zone": spark.conf.get("spark.sql.session.timeZone")}))
spark.stop()
"""


def run_driver(tty: bool) -> dict:
    env = {**os.environ, "TZ": "America/New_York", "PYTHONPATH": str(REPO)}
    if not tty:
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO, capture_output=True, text=True,
                             timeout=300, check=True).stdout
    else:  # stdout and stderr on a pseudo-terminal, as in a person's shell
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(REPO)
            os.execve(sys.executable, [sys.executable, "-c", SCRIPT], env)
        chunks = []
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        os.waitpid(pid, 0)
        out = b"".join(chunks).decode(errors="replace")
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_session_keeps_spark_defaults_and_shows_progress_on_a_terminal():
    assert run_driver(tty=False) == {"progress": "false", "ui": "true", "zone": "America/New_York"}
    assert run_driver(tty=True) == {"progress": "true", "ui": "true", "zone": "America/New_York"}
