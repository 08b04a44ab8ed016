"""Errors that say what to do: a duplicated column in appended data names the column (not a bare KeyError), and a
Spark entry point without pyspark says which extra to install (not a bare ModuleNotFoundError)."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from paimon_ds import SchemaError, Table, write_arrow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def duplicated() -> pa.Table:
    return pa.Table.from_arrays([pa.array([2], pa.int64()), pa.array([3], pa.int64()), pa.array(["b"])],
                                names=["id", "id", "v"])


@pytest.mark.parametrize("how", ["write_arrow", "append", "overwrite", "write_arrow_overwrite"])
def test_duplicated_column_into_an_existing_table(tmp_path, how):
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    table = Table.load(path)
    write = {"write_arrow": lambda: write_arrow(path, duplicated()), "append": lambda: table.append(duplicated()),
             "overwrite": lambda: table.overwrite(duplicated()),
             "write_arrow_overwrite": lambda: write_arrow(path, duplicated(), mode="overwrite")}[how]
    with pytest.raises(SchemaError, match=r"column\(s\) \['id'\] appear more than once"):
        write()
    assert Table.load(path).to_arrow().to_pylist() == [{"id": 1, "v": "a"}]


def test_duplicated_column_creating_a_table(tmp_path):
    path = str(tmp_path / "t")
    data = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["ID", "id"])
    with pytest.raises(SchemaError, match=r"column\(s\) \['ID', 'id'\] appear more than once"):
        write_arrow(path, data)
    assert not os.path.exists(path)


SCRIPT = """
import sys
for name in ("pyspark", "py4j"):
    sys.modules[name] = None  # as if pyspark were not installed
import paimon_ds
from paimon_ds import MissingDependencyError
calls = {"session": lambda: paimon_ds.session(), "register": lambda: paimon_ds.register(None),
         "read": lambda: paimon_ds.read(None, "/x"), "sql": lambda: paimon_ds.sql(None, "SELECT 1")}
for name, call in calls.items():
    try:
        call()
    except MissingDependencyError as e:
        assert isinstance(e, ImportError) and isinstance(e, paimon_ds.PaimonDsError), type(e).__mro__
        assert "pip install 'paimon_ds[spark]'" in str(e) and f"paimon_ds.{name}" in str(e), str(e)
        print(name, "ok")
    else:
        raise SystemExit(f"{name}: no error")
# the Spark-free API works without pyspark
import tempfile, pyarrow as pa
path = tempfile.mkdtemp() + "/t"
paimon_ds.write_arrow(path, pa.table({"a": [1]}))
assert paimon_ds.Table.load(path).to_arrow().num_rows == 1
# the MERGE clauses are core objects: the Spark-free merge takes them without pyspark
paimon_ds.Table.load(path).merge(pa.table({"a": [1, 2]}), on=["a"],
                                 clauses=[paimon_ds.Update(), paimon_ds.Insert()]).execute()
assert sorted(paimon_ds.Table.load(path).to_arrow().column("a").to_pylist()) == [1, 2]
print("core ok")
"""


def test_spark_entry_points_without_pyspark():
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == ["session ok", "register ok", "read ok", "sql ok", "core ok"]


def test_duplicated_column_through_for_write(tmp_path):
    """The Spark write paths (paimon_ds.spark.write / cluster / stream) check their input schema with
    Table.for_write: a DataFrame with two columns of one name is refused there, naming it."""
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    with pytest.raises(SchemaError, match=r"column\(s\) \['id'\] appear more than once"):
        Table.for_write(path, duplicated().schema)
