"""A real Spark Connect server on loopback, from the pyspark wheel's sbin/start-connect-server.sh.

Its Python workers run the interpreter they are given: a bare venv (only pyarrow, pandas and numpy, as a
stock PySpark-with-Arrow server has; pyspark itself comes from the wheel's python/lib zips) or one with
paimon_ds installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pyspark

# What a stock PySpark-with-Arrow server's Python has, at the client's versions.
BARE_PACKAGES = ("pyarrow", "pandas", "numpy")
# pyspark's Connect client packages: a server's foreachBatch worker is itself a Connect client and needs them.
CONNECT_CLIENT_PACKAGES = ("grpcio", "grpcio-status", "googleapis-common-protos", "protobuf", "zstandard")
# The servers' venvs under the oracles' folder, by name: "bare" workers with only pyarrow, pandas and numpy;
# "foreach_batch" the same plus pyspark's Connect client packages, which Spark's foreachBatch worker needs on a
# server whatever the function does (it is itself a Connect client); nothing of ours.
SERVER_VENVS = {"bare": ("connect-server", BARE_PACKAGES),
                "foreach_batch": ("connect-server-foreach-batch", BARE_PACKAGES + CONNECT_CLIENT_PACKAGES)}
# Nothing of ours, nor any dependency of ours that pyarrow / pandas / numpy do not bring.
ABSENT_FROM_BARE = ("paimon_ds", "fsspec", "fastavro", "s3fs", "cramjam", "backports.zstd", "zstandard")


def server_python(root: Path, name: str, packages: tuple[str, ...]) -> str:
    """A venv with only ``packages`` at the client's versions (built once, kept under ``root``); its
    interpreter."""
    venv = root / name
    python = venv / "bin" / "python"
    stamp = venv / ".ready"
    wanted = " ".join(f"{p}=={metadata.version(p)}" for p in packages)
    if stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *wanted.split()],
                   check=True, capture_output=True)
    stamp.write_text(wanted)
    return str(python)


def importable(python: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` the interpreter can import (without any PYTHONPATH)."""
    code = ("import importlib.util as u, sys\n"
            "def ok(m):\n"
            "    try:\n"
            "        return u.find_spec(m) is not None\n"
            "    except ModuleNotFoundError:\n"
            "        return False\n"
            "print(' '.join(m for m in sys.argv[1:] if ok(m)))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([python, "-c", code, *modules], env=env, cwd="/", capture_output=True, text=True,
                         check=True)  # cwd: not the repository, whose paimon_ds/ would be found
    return out.stdout.split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """start-connect-server.sh with its own log, pid and conf folders under ``workdir``; ``stop()`` ends it."""

    def __init__(self, workdir: Path, python: str) -> None:
        self.workdir = workdir
        self.python = python
        self.port = free_port()
        self.home = Path(pyspark.__file__).parent
        for sub in ("log", "pid", "conf"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)
        # nothing of the test process's Python path or Spark mode leaks into the server
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
        self.env.update(SPARK_HOME=str(self.home), SPARK_LOG_DIR=str(workdir / "log"),
                        SPARK_PID_DIR=str(workdir / "pid"), SPARK_CONF_DIR=str(workdir / "conf"),
                        SPARK_IDENT_STRING=f"paimon-ds-test-{self.port}", PYSPARK_PYTHON=python)

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> ConnectServer:
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": self.port,
                "spark.pyspark.python": self.python, "spark.pyspark.driver.python": self.python,
                "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "1g",
                "spark.sql.session.timeZone": "UTC", "spark.local.dir": str(self.workdir / "local")}
        args = ["bash", str(self.home / "sbin" / "start-connect-server.sh"), "--master", "local[2]"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        subprocess.run(args, env=self.env, cwd=self.workdir, check=True, capture_output=True)
        return self

    def wait_ready(self, timeout: float = 240) -> ConnectServer:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if "Spark Connect server started" in self.log():
                return self
            if self.pid() is None or not _alive(self.pid()):
                raise AssertionError(f"the Connect server exited:\n{self.log()[-4000:]}")
            time.sleep(0.5)
        raise AssertionError(f"the Connect server did not start in {timeout} s:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted((self.workdir / "log").glob("*.out")))

    def pid(self) -> int | None:
        files = list((self.workdir / "pid").glob("*.pid"))
        return int(files[0].read_text().strip()) if files else None

    def stop(self) -> None:
        pid = self.pid()
        subprocess.run(["bash", str(self.home / "sbin" / "stop-connect-server.sh")], env=self.env,
                       cwd=self.workdir, capture_output=True)
        deadline = time.time() + 60
        while pid is not None and _alive(pid) and time.time() < deadline:
            time.sleep(0.5)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":
    # make test builds the servers' venvs beside the oracles (python tests/spark/connect_server.py .oracles)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(SERVER_VENVS)) as pool:
        list(pool.map(lambda venv: server_python(Path(sys.argv[1]), *venv), SERVER_VENVS.values()))
