"""Spark Connect: a thin client process with paimon_ds, a real Connect server without it.

A server on loopback, started from the pyspark wheel's start-connect-server.sh, whose Python workers run a
venv with only pyarrow, pandas and numpy. paimon_ds, fsspec and fastavro reach them as the session artifact
register() ships (batch) and inside the shipped source's pickles (streaming; paimon_ds.spark.connect_shim).
The client (tests/spark/connect_client.py) runs in its own process; Java Paimon 0.9 reads what it wrote.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fastavro
import pyspark
import pytest

from .connect_server import (
    ABSENT_FROM_BARE,
    BARE_PACKAGES,
    SERVER_VENVS,
    ConnectServer,
    importable,
    server_python,
)

CLIENT = Path(__file__).with_name("connect_client.py")


@pytest.fixture(scope="module")
def servers(tmp_path_factory, oracles_ready):
    """The two servers of SERVER_VENVS, their venvs built (unless make test built them already) and JVMs started
    side by side."""
    from conftest import ORACLES_DIR
    base = tmp_path_factory.mktemp("connect")

    def start(name: str) -> ConnectServer:
        return ConnectServer(base / name, server_python(ORACLES_DIR, *SERVER_VENVS[name])).start()

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(start, name) for name in SERVER_VENVS}
    started = {name: f.result() for name, f in futures.items() if f.exception() is None}
    try:
        for f in futures.values():
            f.result()  # a server that could not start fails the tests (after the other is stopped)
        yield {name: s.wait_ready() for name, s in started.items()}
    finally:
        for s in started.values():
            s.stop()


@pytest.fixture(scope="module")
def server(servers) -> ConnectServer:
    return servers["bare"]


@pytest.fixture(scope="module")
def server_with_connect_client(servers) -> ConnectServer:
    return servers["foreach_batch"]


def run_client(server: ConnectServer, base: Path, scenario: str) -> dict:
    proc = subprocess.run([sys.executable, str(CLIENT), server.url, str(base), scenario],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"Connect client {scenario} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}\n"
                             f"server log:\n{server.log()[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["connect"] == "pyspark.sql.connect.session"  # the client really was a Connect client
    return result


def java_rows(oracle, path: Path, columns: list[str]) -> list[list]:
    table = oracle.read(str(path)).select(columns)
    return sorted(list(r.values()) for r in table.to_pylist())


def test_bare_server_has_only_arrow_pandas_numpy(server):
    python = server.python
    assert importable(python, ABSENT_FROM_BARE) == []
    assert importable(python, BARE_PACKAGES) == list(BARE_PACKAGES)


def test_batch_write_and_read_with_nothing_installed_on_server(server, tmp_path, java_oracle):
    result = run_client(server, tmp_path, "batch")
    pk = {i: [i, f"v{i}", float(i)] for i in range(10)}
    pk.update({i: [i, f"w{i}", i * 10.0] for i in range(5, 15)})  # the upsert
    log = [[i, f"2026-11-0{1 + i % 2}", f"e{i}"] for i in range(8)]
    assert result["pk_all"] == sorted(pk.values())
    assert result["pk_filtered"] == [pk[i] for i in range(4, 12)]
    assert result["log_all"] == log
    assert result["log_filtered"] == [r for r in log if r[1] == "2026-11-02"]
    # Java Paimon 0.9 reads exactly the same rows (the append table's files are Avro with snappy blocks)
    assert java_rows(java_oracle, tmp_path / "wh/db.db/pk", ["id", "name", "score"]) == sorted(pk.values())
    assert java_rows(java_oracle, tmp_path / "wh/db.db/log", ["n", "dt", "what"]) == log
    assert all(p.suffix == ".avro" for p in (tmp_path / "wh/db.db/log").rglob("data-*"))


def test_attach_sql_and_table_api_with_nothing_installed_on_server(server, tmp_path, java_oracle):
    result = run_client(server, tmp_path, "api")
    assert result["sql_select"] == [[2, "B"], [3, "c"]]
    assert result["sql_tables"] == [["t"]]
    assert result["sql_snapshots"] == [[1, "APPEND"], [2, "APPEND"]]
    # paimon_ds.sql needs Spark's parser through py4j: refused at once, naming what Connect lacks
    assert result["paimon_sql"]["type"] == "paimon_ds.errors.SqlError"
    assert "Spark Connect client cannot reach" in result["paimon_sql"]["message"]
    assert result["compact"] == "COMPACT"
    latest = [[2, "B"], [3, "merged"], [4, "D"], [5, "E"], [9, "new"]]
    assert result["latest"] == latest
    assert result["at_snapshot_2"] == [[1, "a"], [2, "B"], [3, "c"]]
    snapshots = [r[0] for r in result["snapshots_before_expire"]]
    assert snapshots == list(range(1, len(snapshots) + 1)) and len(snapshots) >= 7
    assert result["expired"] == snapshots[:-2]
    assert result["after_expire"] == latest
    # a second session of the server attaches the same warehouse and writes through the shared table
    assert result["other_session"] == sorted(latest + [[7, "g"]])
    assert java_rows(java_oracle, tmp_path / "wh/db.db/t", ["id", "v"]) == sorted(latest + [[7, "g"]])


def test_streaming_with_nothing_installed_on_server(server, tmp_path, java_oracle):
    result = run_client(server, tmp_path, "stream")
    expected = [[i, 0] for i in range(30)] + [[i, 1] for i in range(30, 50)]
    assert result["rows"] == expected  # every input row once, over two runs of one checkpoint
    assert result["last_batch_ids"] == [0, 1]
    assert java_rows(java_oracle, tmp_path / "wh/db.db/events", ["id", "run"]) == expected + [[50, 2], [51, 2]]
    # the table read as a stream (all of it, then a later commit) into a PK table, complete mode
    assert result["per_run"] == [[0, 29, 30], [1, 49, 20], [2, 51, 2]]
    assert java_rows(java_oracle, tmp_path / "wh/db.db/latest_run", ["run", "max_id", "n"]) == result["per_run"]


def test_foreach_batch_writer_with_nothing_of_ours_on_server(server_with_connect_client, tmp_path, java_oracle):
    assert importable(server_with_connect_client.python, ABSENT_FROM_BARE[:3]) == []  # paimon_ds, fsspec, fastavro
    result = run_client(server_with_connect_client, tmp_path, "foreach_batch")
    expected = [[i, 0] for i in range(10)] + [[i, 1] for i in range(10, 30)]
    assert result["rows"] == expected
    assert result["commits"] == [["connect-test", 0], ["connect-test", 1]]  # one commit per micro-batch
    assert java_rows(java_oracle, tmp_path / "wh/db.db/by_batch", ["id", "run"]) == expected


def test_shipped_source_pickles_without_paimon_ds(server, tmp_path):
    """What register() sends for `paimon` on Connect unpickles, and makes a stream writer, in a Python that
    has only pyspark, pyarrow, pandas and numpy: the package travels inside the pickle."""
    from pyspark import cloudpickle

    from paimon_ds.spark.connect import artifact_zip
    from paimon_ds.spark.connect_shim import shipped
    from paimon_ds.spark.source import PaimonDataSource
    source = shipped(PaimonDataSource)
    (tmp_path / "source.pickle").write_bytes(cloudpickle.dumps(source))
    pyspark_zip = next((Path(pyspark.__file__).parent / "python/lib").glob("pyspark.zip"))
    py4j_zip = next((Path(pyspark.__file__).parent / "python/lib").glob("py4j-*.zip"))
    script = f"""
import pickle, sys
sys.path[:0] = [{str(pyspark_zip)!r}, {str(py4j_zip)!r}]
from pyspark.sql.types import StructType, StructField, LongType
assert "paimon_ds" not in sys.modules
source = pickle.load(open({str(tmp_path / "source.pickle")!r}, "rb"))({{"path": {str(tmp_path / "t")!r}}})
writer = source.streamWriter(StructType([StructField("id", LongType())]), False)
from pyspark import cloudpickle  # as Spark pickles: by value what claims an unknown module
again = pickle.loads(cloudpickle.dumps(writer))
print(type(again).__name__, type(again._real).__name__, sys.modules["paimon_ds"].__file__.split("/")[-3])
"""
    out = subprocess.run([server.python, "-c", script], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ShippedStreamWriter", "PaimonStreamWriter", artifact_zip().name]


# ------------------------------------------------------------------ no Spark needed

def test_artifact_holds_python_sources_and_their_bytecode_and_is_reproducible():
    import importlib.util

    from paimon_ds.spark.connect import SHIPPED_PACKAGES, artifact_zip
    path = artifact_zip()
    archive = zipfile.ZipFile(path)
    names = archive.namelist()
    assert {n.split("/", 1)[0] for n in names} == set(SHIPPED_PACKAGES)
    for needed in ("paimon_ds/__init__.py", "paimon_ds/options/paimon_option_keys.txt",
                   "paimon_ds/conf/spark-defaults.conf", "paimon_ds/spark/source.py", "fsspec/implementations/local.py",
                   "fastavro/_read_py.py", "fastavro/_write_py.py"):
        assert needed in names
    assert not [n for n in names if n.endswith(".so") or "__pycache__" in n]
    # every source with its bytecode beside it, for this Python, hash-based and unchecked (PEP 552)
    sources = [n for n in names if n.endswith(".py")]
    assert sorted(n for n in names if n.endswith(".pyc")) == sorted(n + "c" for n in sources)
    source = archive.read("paimon_ds/table.py")
    header = archive.read("paimon_ds/table.pyc")[:16]
    assert header == importlib.util.MAGIC_NUMBER + b"\x01\x00\x00\x00" + importlib.util.source_hash(source)
    assert artifact_zip.__wrapped__() == path  # same sources, same bytes, same name


def _imported_from(zip_path: Path) -> str:
    """Where a fresh interpreter with only ``zip_path`` ahead of its path imports paimon_ds and its modules from."""
    code = (f"import sys; sys.path.insert(0, {str(zip_path)!r}); import paimon_ds, paimon_ds.table; "
            "print(paimon_ds.__file__, paimon_ds.table.__file__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_a_server_imports_the_bytecode_or_with_another_python_the_sources(tmp_path):
    """The shipped bytecode is what a server of the client's Python imports; one of another version (a magic
    number not its own) imports the sources of the same zip."""
    from paimon_ds.spark.connect import artifact_zip
    path = artifact_zip()
    assert _imported_from(path).split() == [f"{path}/paimon_ds/__init__.pyc", f"{path}/paimon_ds/table.pyc"]

    other = tmp_path / "other-python.zip"  # the same zip, its bytecode stamped by a Python that does not exist
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(other, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"\xff\xff\r\n" + data[4:] if info.filename.endswith(".pyc") else data)
    assert _imported_from(other).split() == [f"{other}/paimon_ds/__init__.py", f"{other}/paimon_ds/table.py"]


@pytest.mark.parametrize("codec", ["zstandard", "snappy"])
def test_pyarrow_avro_codecs_agree_with_fastavros_own(codec, monkeypatch):
    """The pure-Python fastavro a Connect server runs, with our pyarrow codecs, reads and writes the same
    blocks as compiled fastavro with its own codec libraries."""
    from fastavro import _read_py, _write_py

    from paimon_ds.format import avro_codecs
    ours = {"zstandard": (avro_codecs.zstd_read_block, avro_codecs.zstd_write_block),
            "snappy": (avro_codecs.snappy_read_block, avro_codecs.snappy_write_block)}[codec]
    monkeypatch.setitem(_read_py.BLOCK_READERS, codec, ours[0])
    monkeypatch.setitem(_write_py.BLOCK_WRITERS, codec, ours[1])
    schema = fastavro.parse_schema({"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "s", "type": ["null", "string"]}]})
    records = [{"id": i, "s": None if i % 7 == 0 else f"value-{i % 13}" * (i % 5)} for i in range(5000)]

    written_by_ours = io.BytesIO()
    _write_py.writer(written_by_ours, schema, records, codec=codec, sync_interval=4000)
    assert list(fastavro.reader(io.BytesIO(written_by_ours.getvalue()))) == records  # compiled reads ours

    written_by_fastavro = io.BytesIO()
    fastavro.writer(written_by_fastavro, schema, records, codec=codec, sync_interval=4000)
    assert list(_read_py.reader(io.BytesIO(written_by_fastavro.getvalue()))) == records  # ours reads compiled


def test_boot_trusts_no_zip_whose_bytes_do_not_match_its_name(tmp_path, monkeypatch):
    """A zip already in the shipped folder is used only if its bytes hash to its name; a folder that others
    can write to is not used at all."""
    import os
    import tempfile

    from paimon_ds.spark import connect_shim
    from paimon_ds.spark.connect import artifact_zip
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    shipped = artifact_zip()
    folder = tmp_path / f"paimon_ds_shipped_{os.getuid()}"
    folder.mkdir(mode=0o700)
    (folder / shipped.name).write_bytes(b"planted")
    connect_shim._boot(shipped.name, shipped.read_bytes())
    assert (folder / shipped.name).read_bytes() == shipped.read_bytes()
    assert sys.path[0] == str(folder / shipped.name)

    folder.chmod(0o777)  # writable by anyone: a private folder of its own is made instead
    connect_shim._boot(shipped.name, shipped.read_bytes())
    assert Path(sys.path[0]).parent != folder and Path(sys.path[0]).read_bytes() == shipped.read_bytes()
