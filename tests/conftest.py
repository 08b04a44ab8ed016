"""Shared fixtures: one SparkSession per test run, table paths, and the two Paimon oracles."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

try:
    from suite_scheduling import AFTER_SUITE_PARAM, SuiteScheduling
except ModuleNotFoundError as missing:  # the minimums' venv has no pytest-xdist: runs in one process only
    if missing.name != "xdist":
        raise
    AFTER_SUITE_PARAM, SuiteScheduling = "", None

ROOT = Path(__file__).resolve().parent.parent
ORACLES_DIR = Path(os.environ.get("ORACLES_DIR", ROOT / ".oracles"))


# The seconds each test file took in a recorded run (setup, call and teardown of its tests), slowest first. The
# parallel run hands out whole files (--dist loadfile) in collection order, so the slowest go first: a file of two
# long multi-JVM cases handed out last keeps one worker busy while the other has nothing left to do. Recorded by
# `make test DURATIONS=1` (RECORD_DURATIONS_ENV); a file not listed counts as fast.
FILE_DURATIONS = ROOT / "tests" / "file_durations.txt"
RECORD_DURATIONS_ENV = "PAIMON_DS_RECORD_DURATIONS"


def recorded_file_durations() -> dict[str, float]:
    if not FILE_DURATIONS.exists():
        return {}
    out = {}
    for line in FILE_DURATIONS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, path = line.split(maxsplit=1)
            out[path] = float(seconds)
    return out


# tells a worker (pytest_configure_node) that SuiteScheduling hands it its after_suite case last: a worker's own
# options do not say, xdist sets their --dist to "no"
AFTER_SUITE_LAST = "paimon_ds_after_suite_last"


def pytest_collection_modifyitems(config, items):
    """Slowest files first (FILE_DURATIONS), each file's tests in their own order. Tests marked after_suite run last:
    they check every table the other tests of the run built. In a parallel run (pytest-xdist) each worker checks
    the tables its own tests built, once every file has been handed out (suite_scheduling.py); under another
    --dist mode than loadfile a worker cannot know that its tests are over, and skips them."""
    durations = recorded_file_durations()
    items.sort(key=lambda item: (item.get_closest_marker("after_suite") is not None,
                                 -durations.get(item.nodeid.split("::")[0], 0.0)))
    if hasattr(config, "workerinput") and not config.workerinput.get(AFTER_SUITE_LAST):
        skip = pytest.mark.skip(reason="after_suite checks need --dist loadfile in a parallel run")
        for item in items:
            if item.get_closest_marker("after_suite") is not None:
                item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)  # hooks of pytest-xdist, which the minimums' venv does not install
def pytest_xdist_make_scheduler(config, log):
    return SuiteScheduling(config, log) if config.getoption("dist") == "loadfile" else None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[AFTER_SUITE_LAST] = node.config.getoption("dist") == "loadfile"


def pytest_generate_tests(metafunc):
    """An after_suite test once per worker of a parallel run, each on that worker's tables (suite_tables_root)."""
    if "suite_tables_root" in metafunc.fixturenames:
        workers = getattr(metafunc.config, "workerinput", {}).get("workercount", 0)
        ids = [AFTER_SUITE_PARAM.format(worker=f"gw{i}") for i in range(workers)] or ["all"]
        metafunc.parametrize("suite_tables_root", ids, indirect=True)


_seconds_by_file: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Where RECORD_DURATIONS_ENV names a file: each test file's seconds (in a parallel run, the workers' reports
    reach the controlling process too, which writes the file)."""
    if os.environ.get(RECORD_DURATIONS_ENV) and not os.environ.get("PYTEST_XDIST_WORKER") \
            and "after_suite" not in report.keywords:  # the checks are not their file's: they are handed out last
        path = report.nodeid.split("::")[0]
        _seconds_by_file[path] = _seconds_by_file.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """The after_suite checks' figures: the user properties of their reports (which a parallel run's workers send
    to the controlling process, unlike what the tests print)."""
    for report in terminalreporter.getreports("passed"):
        if "after_suite" in report.keywords:
            for name, value in report.user_properties:
                terminalreporter.write_line(f"{report.nodeid.rsplit('[', 1)[-1].rstrip(']')}: {name} {value}")


def pytest_sessionfinish(session):
    target = os.environ.get(RECORD_DURATIONS_ENV)
    if target and _seconds_by_file and not os.environ.get("PYTEST_XDIST_WORKER"):
        ranked = sorted(_seconds_by_file.items(), key=lambda kv: (-kv[1], kv[0]))
        lines = [f"{seconds:.1f} {path}" for path, seconds in ranked if seconds >= 5]
        Path(target).write_text("# seconds test-file (make test DURATIONS=1; files under 5 s are left out)\n"
                                + "\n".join(lines) + "\n")


@pytest.fixture
def suite_tables_root(request, tmp_path_factory) -> Path:
    """The directory holding the tables the other tests of the run built: the run's base temporary directory, or
    in a parallel run that of the worker the parameter names (each worker has its own, beside the others)."""
    base = tmp_path_factory.getbasetemp()
    if request.param == "all":
        return base
    worker = request.param.removeprefix(AFTER_SUITE_PARAM.format(worker=""))
    return base.parent / f"popen-{worker}"


@pytest.fixture(scope="session")
def spark():
    import paimon_ds
    # Spark's Python workers must import test-only data sources (tests/bench/null_sink.py) by name
    tests_dir = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, os.environ.get("PYTHONPATH")) if p)
    # no UI server for the test session; UTC, so that expected timestamps do not depend on the machine's zone
    spark = paimon_ds.session("paimon_ds-tests", master="local[2]",
                              conf={"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC", **INTERPRETED})
    yield spark
    spark.stop()


# The test session evaluates expressions as Spark's interpreter does: code generation compiles every new query's
# Java with Janino, which on the suite's small tables costs more than running it (20 ported MERGE cases: 86 -> 72
# CPU s). Spark's own suites hold the two equal; the tests of Spark expressions the package builds (bucket_expr,
# the round trips of every type) run with code generation too (with_codegen).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
SPARK_DEFAULTS = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


@pytest.fixture(params=["codegen", "interpreted"])
def with_codegen(request, spark):
    """The test once with Spark's code generation (its default) and once interpreted (the suite's session)."""
    if request.param == "interpreted":
        yield request.param
        return
    for key, value in SPARK_DEFAULTS.items():
        spark.conf.set(key, value)
    try:
        yield request.param
    finally:
        for key, value in INTERPRETED.items():
            spark.conf.set(key, value)


@pytest.fixture
def table_path(tmp_path) -> str:
    """A table path in a catalog layout (WAREHOUSE/DB.db/TABLE), as the Java oracle needs."""
    path = tmp_path / "warehouse" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    return str(path)


def oracle_command(impl: str, *args: str) -> list[str]:
    return ["bash", str(ROOT / "tests/oracles/oracle.sh"), impl, *args]


def oracle_env() -> dict[str, str]:
    env = dict(os.environ, ORACLES_DIR=str(ORACLES_DIR))
    # the Java oracle takes Hadoop's jars from the pyspark that `python3` on PATH imports
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


class OracleServer:
    """One `oracle.sh IMPL serve` process answering many commands: the Java bridge's JVM starts once per
    test run instead of once per read (seconds each). Started on first use; a server that dies or hangs
    is replaced on the next command."""

    def __init__(self, impl: str) -> None:
        self.impl = impl
        self.proc: subprocess.Popen | None = None
        self.answers: queue.Queue | None = None  # the running server's answers
        self.lock = threading.Lock()
        self.log: Path | None = None

    def _start(self) -> subprocess.Popen:
        self.log = self.log or Path(tempfile.mkdtemp(prefix=f"oracle-{self.impl}-")) / "server.log"
        with self.log.open("ab") as log:
            proc = subprocess.Popen(oracle_command(self.impl, "serve", "-"), env=oracle_env(),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                    start_new_session=True)
        answers: queue.Queue = queue.Queue()

        def read_answers() -> None:
            for line in proc.stdout:
                answers.put(json.loads(line))
            answers.put(None)  # the server is gone
        threading.Thread(target=read_answers, daemon=True).start()
        self.proc, self.answers = proc, answers
        return proc

    def run(self, args: list[str], timeout: float = 600) -> tuple[int, str, str]:
        """(exit code, stdout, error) of one command."""
        with self.lock:
            proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
            proc.stdin.write(json.dumps(args) + "\n")
            proc.stdin.flush()
            try:
                answer = self.answers.get(timeout=timeout)
            except queue.Empty:
                answer = None
            if answer is None:
                self.stop()
                log = self.log.read_text(errors="replace")[-4000:]
                return 1, "", f"oracle server {self.impl} died or hung on {args[0]}; its log:\n{log}"
            return answer["code"], answer["out"], answer["error"] or ""

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        self.stop()
        if self.log is not None:
            shutil.rmtree(self.log.parent, ignore_errors=True)


# Each oracle's commands go to one server per test run (see the session fixture below): a process of its own
# costs pypaimon ~1 CPU second of imports a command, and Java seconds of JVM start.
ORACLE_SERVERS = {impl: OracleServer(impl) for impl in ("java", "pypaimon")}


@pytest.fixture(scope="session", autouse=True)
def stop_oracle_servers():
    yield
    for server in ORACLE_SERVERS.values():
        server.close()


class Oracle:
    """Runs tests/oracles/oracle.sh: pypaimon 2.1 or Apache Paimon 0.9 (Java) on a table."""

    def __init__(self, impl: str, workdir: Path) -> None:
        self.impl = impl
        self.workdir = workdir

    def _run(self, *args: str) -> str:
        server = ORACLE_SERVERS.get(self.impl)
        if server is not None:
            code, out, error = server.run(list(args))
            if code != 0:
                raise AssertionError(f"oracle {self.impl} {args[0]} failed:\n{out}\n{error[-4000:]}")
            return out
        proc = subprocess.run(oracle_command(self.impl, *args), env=oracle_env(), capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"oracle {self.impl} {args[0]} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
        return proc.stdout

    def read(self, path: str, snapshot: int | None = None) -> pa.Table:
        out = self.workdir / f"{self.impl}-read-{os.urandom(4).hex()}.parquet"
        args = ["read", path, "--out", str(out)]
        if snapshot is not None:
            args += ["--snapshot", str(snapshot)]
        self._run(*args)
        return pq.read_table(out)

    def stream_read(self, path: str, from_snapshot: int | None = None) -> pa.Table:
        """pypaimon only: the table read as a stream up to its latest snapshot (`_row_kind` first)."""
        assert self.impl == "pypaimon", "only pypaimon 2.1 has a streaming reader"
        out = self.workdir / f"stream-read-{os.urandom(4).hex()}.parquet"
        args = [str(ORACLES_DIR / "pypaimon/bin/python"), str(ROOT / "tests/oracles/pypaimon_stream.py"), path,
                "--out", str(out)] + (["--from", str(from_snapshot)] if from_snapshot is not None else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"pypaimon stream read failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
        return pq.read_table(out)

    def write(self, path: str, data: pa.Table, *, partition: str | None = None, bucket: int | None = None,
              primary_key: str | None = None, options: dict[str, str] | None = None) -> None:
        inp = self.workdir / f"{self.impl}-write-{os.urandom(4).hex()}.parquet"
        pq.write_table(data, inp)
        args = ["write", path, "--input", str(inp)]
        if partition:
            args += ["--partition", partition]
        if bucket is not None:
            args += ["--bucket", str(bucket)]
        if primary_key:
            args += ["--primary-key", primary_key]
        for k, v in (options or {}).items():
            args += ["--option", f"{k}={v}"]
        self._run(*args)

    def exec(self, path: str, script: str, data: pa.Table | None = None) -> str:
        """Run ``script`` (Python source) in the oracle's process on the table at ``path``; its stdout.
        For Java it sees `catalog`, `ident`, `table`, `jvm` (Paimon 0.9 via py4j), `path` and `data`."""
        name = f"{self.impl}-exec-{os.urandom(4).hex()}"
        (self.workdir / f"{name}.py").write_text(script)
        args = ["exec", path, "--script", str(self.workdir / f"{name}.py")]
        if data is not None:
            pq.write_table(data, self.workdir / f"{name}.parquet")
            args += ["--input", str(self.workdir / f"{name}.parquet")]
        return self._run(*args)

    def check_buckets(self, path: str) -> dict:
        return json.loads(self._run("check-buckets", path).strip().splitlines()[-1])


@pytest.fixture(scope="session")
def oracles_ready():
    for impl in ("pypaimon", "java"):
        if not (ORACLES_DIR / impl / "bin" / "python").exists():
            pytest.fail(f"oracle venv {ORACLES_DIR / impl} is missing: run `make oracles`")
    return True


@pytest.fixture
def pypaimon_oracle(oracles_ready, tmp_path) -> Oracle:
    return Oracle("pypaimon", tmp_path)


@pytest.fixture
def java_oracle(oracles_ready, tmp_path) -> Oracle:
    return Oracle("java", tmp_path)


def sort_table(t: pa.Table, by: list[str] | None = None) -> pa.Table:
    by = by or [n for n in t.column_names if pa.types.is_integer(t.schema.field(n).type)
                or pa.types.is_string(t.schema.field(n).type)]
    return t.sort_by([(c, "ascending") for c in by])


# ------------------------------------------------------------------ S3 on loopback
class S3Server:
    """tests/s3/server.py in a subprocess: moto's S3 on a free loopback port, counting requests."""

    ACCESS_KEY, SECRET_KEY = "paimon-ds-test-access", "paimon-ds-test-secret-7f3a"

    def __init__(self, log: Path, conditional_writes: bool = True) -> None:
        args = [sys.executable, str(ROOT / "tests" / "s3" / "server.py")]
        if not conditional_writes:
            args.append("--no-conditional-writes")
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._log)
        line = self.proc.stdout.readline().strip()
        if not line:
            raise RuntimeError(f"the S3 test server did not start; see {log}")
        self.endpoint = f"http://127.0.0.1:{int(line)}"
        self._buckets = 0

    def options(self) -> dict[str, str]:
        """Paimon's S3 option names: what a user passes to a read or write."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": self.ACCESS_KEY, "s3.secret-key": self.SECRET_KEY,
                "s3.path.style.access": "true"}

    def fs(self):
        import s3fs
        return s3fs.S3FileSystem(key=self.ACCESS_KEY, secret=self.SECRET_KEY, endpoint_url=self.endpoint,
                                 use_listings_cache=False, skip_instance_cache=True)

    def new_bucket(self, prefix: str = "t") -> str:
        self._buckets += 1
        name = f"{prefix}-{os.getpid()}-{self._buckets}"
        self.fs().mkdir(name)
        return name

    def requests(self, reset: bool = False) -> list[str]:
        import urllib.request
        req = urllib.request.Request(f"{self.endpoint}/_requests", method="DELETE" if reset else "GET")
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def reset(self) -> None:
        self.requests(reset=True)

    def download(self, s3_path: str, local: Path) -> str:
        """Copy a table from S3 to local disk (for the oracles, whose bundled Hadoop has no S3A)."""
        self.fs().get(s3_path.removeprefix("s3://").rstrip("/") + "/", str(local), recursive=True)
        return str(local)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3") / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_server_without_conditions(tmp_path_factory):
    """A store that ignores If-None-Match, as S3-compatible stores without conditional writes do."""
    server = S3Server(tmp_path_factory.mktemp("s3-plain") / "server.log", conditional_writes=False)
    yield server
    server.stop()


@pytest.fixture
def s3_table(s3_server) -> tuple[str, dict[str, str]]:
    """A table path in a fresh bucket (catalog layout) and the options that reach it."""
    return f"s3://{s3_server.new_bucket()}/warehouse/db.db/t", s3_server.options()
