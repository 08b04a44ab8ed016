"""Packaging: `pip install paimon_ds` with no extras gives the core and the CLI without pyspark or s3fs; the
wheel carries LICENSE, py.typed and one version; extras name what each part needs.

The install runs in a fresh virtualenv from a copy of the sources (so no build files land in the work tree);
pip fetches the base dependencies from the package index (its cache makes a second run quick)."""

from __future__ import annotations

import email
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table

REPO = Path(__file__).resolve().parents[1]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "paimon_ds", src / "paimon_ds", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True, timeout=600)
    return next(out.glob("paimon_ds-*.whl"))


def test_wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(meta_name))
    assert "paimon_ds/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["Version"] == paimon_ds.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    requires = meta.get_all("Requires-Dist")
    base = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith(("pyspark", "s3fs", "pandas", "rich")) for r in base), base
    extras = set(meta.get_all("Provides-Extra"))
    assert {"spark", "s3", "cli", "test"} <= extras
    assert 's3fs>=2026.3.0; extra == "s3"' in requires
    # the version is written once: pyproject reads it from the package
    text = (REPO / "pyproject.toml").read_text()
    project = text[text.index("[project]\n"):text.index("\n[", text.index("[project]\n") + 1)].splitlines()
    assert 'dynamic = ["version"]' in project and not any(line.startswith("version") for line in project)


def test_install_without_extras_runs_the_core_and_cli_without_pyspark(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True,
                   text=True, timeout=900)
    missing = subprocess.run([str(python), "-c", "import pyspark"], capture_output=True, text=True)
    assert missing.returncode != 0 and "No module named 'pyspark'" in missing.stderr
    path = tmp_path / "t"
    table = Table.for_write(str(path), SCHEMA, {"primary-key": "id", "bucket": "1"})
    write = table.new_write()
    write.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())
    # the installed console script, in a process that has no pyspark
    described = subprocess.run([str(venv / "bin" / "paimon-ds"), "describe", str(path)], capture_output=True,
                               text=True, timeout=300)
    assert described.returncode == 0, described.stderr
    assert f"table {path}" in described.stdout
    # the package imports, reads and exports its errors without pyspark; s3 without s3fs names the extra
    script = f"""
import json, sys, paimon_ds
t = paimon_ds.Table.load({str(path)!r})
try:
    paimon_ds.Table.load("s3://bucket/t")
except paimon_ds.StorageError as e:
    s3 = str(e)
print(json.dumps({{"rows": sorted(t.to_arrow().column("id").to_pylist()), "s3": s3,
                  "pyspark": "pyspark" in sys.modules, "version": paimon_ds.__version__}}))
"""
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["rows"] == [1, 2, 3] and got["pyspark"] is False and got["version"] == paimon_ds.__version__
    assert "pip install 'paimon_ds[s3]'" in got["s3"]


def test_minimums_file_pins_the_lower_bounds_pyproject_admits():
    """`make minimums` installs tests/minimums.txt: each pin is the `>=` bound of the same package in pyproject."""
    text = (REPO / "pyproject.toml").read_text()
    bounds = dict(re.findall(r'"([A-Za-z0-9_.]+)(?:\[[a-z,]+\])?>=([0-9][0-9.]*)', text))
    pins = dict(re.findall(r"^([A-Za-z0-9_.]+)(?:\[[a-z,]+\])?==([0-9.]+)$",
                           (REPO / "tests" / "minimums.txt").read_text(), re.M))
    runtime = {"pyarrow", "numpy", "pandas", "fastavro", "cramjam", "backports.zstd", "fsspec", "s3fs", "pyspark",
               "rich", "datasketches"}
    assert set(pins) == runtime
    def release(version: str) -> tuple[int, ...]:  # 18 == 18.0.0
        parts = [int(p) for p in version.split(".")]
        while parts and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    assert {n: release(pins[n]) for n in runtime} == {n: release(bounds[n]) for n in runtime}
