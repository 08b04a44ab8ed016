"""Shared fixtures: one SparkSession per test run, table paths, and the two Paimon oracles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
ORACLES_DIR = Path(os.environ.get("ORACLES_DIR", ROOT / ".oracles"))


@pytest.fixture(scope="session")
def spark():
    import paimon_ds
    # Spark's Python workers must import test-only data sources (tests/bench/null_sink.py) by name
    tests_dir = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests_dir, os.environ.get("PYTHONPATH")) if p)
    spark = paimon_ds.session("paimon_ds-tests", master="local[2]")
    yield spark
    spark.stop()


@pytest.fixture
def table_path(tmp_path) -> str:
    """A table path in a catalog layout (WAREHOUSE/DB.db/TABLE), as the Java oracle needs."""
    path = tmp_path / "warehouse" / "db.db" / "t"
    path.parent.mkdir(parents=True)
    return str(path)


class Oracle:
    """Runs tests/oracles/oracle.sh: pypaimon 2.1 or Apache Paimon 0.9 (Java) on a table."""

    def __init__(self, impl: str, workdir: Path) -> None:
        self.impl = impl
        self.workdir = workdir

    def _run(self, *args: str) -> str:
        env = dict(os.environ, ORACLES_DIR=str(ORACLES_DIR))
        # the Java oracle takes Hadoop's jars from the pyspark that `python3` on PATH imports
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        proc = subprocess.run(["bash", str(ROOT / "tests/oracles/oracle.sh"), self.impl, *args],
                              env=env, capture_output=True, text=True, timeout=600)
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
