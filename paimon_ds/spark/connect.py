"""Spark Connect: paimon_ds travels with the client, as a session artifact.

A Connect server unpickles the `paimon` source class, and the readers and writers it hands out, in its own
Python workers, which must import paimon_ds. register() therefore ships a zip of the package with
`spark.addArtifacts(..., pyfile=True)`, together with the dependencies a stock PySpark-with-Arrow server
lacks (fsspec, fastavro). Their Python sources go in, not their extension modules: those cannot be imported
from a zip, and these libraries fall back to pure Python without them (fastavro's codecs then come from
pyarrow: paimon_ds.format.avro_codecs). Each source goes with its bytecode for the client's Python (an
unchecked hash-based .pyc, PEP 552): Python cannot cache bytecode inside a zip, so without it every Python
worker of the server compiles the package again when it imports it (a planner worker's import 1.1 -> 0.5 CPU s).
A server of another Python version finds a magic number not its own and imports the sources. Not shipped: s3fs
(botocore alone is ~80 MB of data files and aiohttp is compiled), so S3 tables under Connect need s3fs installed
on the server.

Spark 4.3 does not give streaming tasks a session's artifacts: for them the same zip travels inside the
pickles of the registered source (paimon_ds.spark.connect_shim, which builds on this module; nothing here
imports pyspark).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import os
import tempfile
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ConnectError

# Top-level packages in the artifact: ours, then the pure-Python dependencies servers lack.
SHIPPED_PACKAGES = ("paimon_ds", "fsspec", "fastavro")
_SKIPPED_SUFFIXES = (".so", ".pyd", ".dylib", ".pyc", ".pyx", ".pxd", ".c", ".h")
# Sessions (by id) that already have the artifact, so a second register() sends nothing.
_SHIPPED_TO: set[str] = set()


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect client session (pyspark.sql.connect), not a classic one."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _package_files(package: str) -> list[tuple[str, Path]]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConnectError(f"cannot ship {package!r} to the Spark Connect server: it is not installed here")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):  # paimon_ds/conf is a link
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith(_SKIPPED_SUFFIXES):
                path = Path(dirpath) / name
                files.append((f"{package}/{path.relative_to(root).as_posix()}", path))
    return files


def _bytecode(arcname: str, source: bytes) -> bytes | None:
    """A module's .pyc for this Python, hash-based and unchecked (PEP 552: magic number, flags 0b01, the source's
    hash, the marshalled code), compiled as a plain `python` would (no -O); None for a source this Python cannot
    compile (its import would fail anyway)."""
    try:
        code = compile(source, arcname, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError):
        return None
    return importlib.util.MAGIC_NUMBER + (0b01).to_bytes(4, "little") + importlib.util.source_hash(source) + \
        marshal.dumps(code)


@cache
def artifact_zip() -> Path:
    """A zip of SHIPPED_PACKAGES (Python sources, their bytecode, package data), named by its content's hash: the
    same sources give the same name, which Spark accepts again within a session; changed sources a new one.
    Where paimon_ds itself runs from such a zip (a server process it was shipped to), that zip."""
    loaded_from = Path(__file__).parents[2]  # above paimon_ds/spark/connect.py: a folder, or that zip
    if loaded_from.is_file() and zipfile.is_zipfile(loaded_from):
        return loaded_from
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in SHIPPED_PACKAGES:
            for arcname, path in _package_files(package):
                data = path.read_bytes()
                entries = [(arcname, data)]
                if arcname.endswith(".py"):
                    compiled = _bytecode(arcname, data)
                    entries += [(arcname + "c", compiled)] if compiled is not None else []
                for name, content in entries:
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible bytes
                    info.compress_type = zipfile.ZIP_DEFLATED
                    zf.writestr(info, content)
    data = buf.getvalue()
    folder = Path(tempfile.gettempdir()) / "paimon_ds_artifacts"
    folder.mkdir(exist_ok=True)
    target = folder / f"paimon_ds_{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(target)
    return target


def ship_package(spark: Any) -> None:
    """Add the artifact zip to a Connect session's Python path (once per session)."""
    session_id = spark.session_id
    if session_id in _SHIPPED_TO:
        return
    spark.addArtifacts(str(artifact_zip()), pyfile=True)
    _SHIPPED_TO.add(session_id)
