"""Streaming over Spark Connect with nothing installed on the server: the package inside the pickles.

Spark 4.3 gives a Connect session's artifacts to batch tasks only: the workers that plan a streaming
source, run micro-batch tasks and commit a streaming write cannot import paimon_ds from them. So on
Connect, register() registers a shim instead of PaimonDataSource: a DataSource whose class carries the
package zip (paimon_ds.spark.connect.artifact_zip) as bytes, and whose stream reader and writer are shims
of the same kind. Every shim class and function is pickled by value (their module name exists nowhere,
so cloudpickle cannot pickle them by reference), so unpickling one needs nothing of ours. Each shim
unpacks the zip onto sys.path (once per process; the file is named by its hash) before it unpickles
the real object it wraps. Spark unpickles the data source (or the shim writer/reader) before anything
else of ours in every worker, so commit messages and input partitions find paimon_ds importable.

Batch readers and writers are the real ones: batch tasks get the session artifact. A `foreachBatch`
function (paimon_ds.foreach_batch_writer) is a ShippedFunction, which travels the same way.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
)
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from .connect import artifact_zip

# A module name that exists nowhere: cloudpickle pickles what claims to live there by value.
SHIPPED_MODULE = "_paimon_ds_shipped"


def _boot(zip_name: str, zip_bytes: bytes) -> None:
    """Put the package zip on this process's sys.path: written once per machine and user, into a folder only
    this user can write, and reused only if its bytes hash to the name (``paimon_ds_<sha256[:16]>.zip``)."""
    uid = getattr(os, "getuid", lambda: 0)()
    folder = os.path.join(tempfile.gettempdir(), f"paimon_ds_shipped_{uid}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.stat(folder)
    if info.st_uid != uid or info.st_mode & 0o022:  # someone else's, or writable by others: not trusted
        folder = tempfile.mkdtemp(prefix="paimon_ds_shipped_")
    path = os.path.join(folder, zip_name)
    if path in sys.path:
        return
    digest = zip_name.rsplit("_", 1)[-1].split(".", 1)[0]

    def intact() -> bool:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest().startswith(digest)
    if not (os.path.exists(path) and intact()):
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as f:
            f.write(zip_bytes)
        os.replace(partial, path)
    sys.path.insert(0, path)


def _revive(cls: type, state: bytes) -> Any:
    """Unpickle a shim: first the package (the class carries it), then the real object it wraps."""
    _boot(cls._zip_name, cls._zip_bytes)
    shim = cls.__new__(cls)
    shim._real = pickle.loads(state)
    return shim


def _reduce(self: Any) -> tuple:
    return _revive, (type(self), cloudpickle.dumps(self._real))


class _ShippedSource(DataSource):
    """The registered `paimon` source on Connect; a subclass binds _real_class, _zip_name and _zip_bytes."""

    _real_class_pickle: bytes = b""
    _source_name = "paimon"
    _zip_name = ""
    _zip_bytes = b""

    @classmethod
    def name(cls) -> str:
        return cls._source_name

    def __init__(self, options: Any) -> None:
        _boot(self._zip_name, self._zip_bytes)
        super().__init__(options)
        self._real = pickle.loads(self._real_class_pickle)(options)

    __reduce__ = _reduce

    def schema(self) -> Any:
        return self._real.schema()

    def reader(self, schema: Any) -> Any:
        return self._real.reader(schema)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        return self._real.writer(schema, overwrite)

    def streamReader(self, schema: Any) -> Any:
        real = self._real.streamReader(schema)
        bases = tuple(b for b in (DataSourceStreamReader, SupportsTriggerAvailableNow) if isinstance(real, b))
        shim = _shim_class("ShippedStreamReader", bases, _STREAM_READER_METHODS, self._zip_name, self._zip_bytes)
        obj = shim.__new__(shim)
        obj._real = real
        return obj

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        real = self._real.streamWriter(schema, overwrite)
        arrow = isinstance(real, DataSourceStreamArrowWriter)
        shim = _shim_class("ShippedStreamWriter", (DataSourceStreamArrowWriter if arrow else DataSourceStreamWriter,),
                           _STREAM_WRITER_METHODS, self._zip_name, self._zip_bytes)
        obj = shim.__new__(shim)
        obj._real = real
        return obj


def _delegate(method: str) -> Any:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._real, method)(*args, **kwargs)
    call.__name__ = method
    return call


def _stream_reader_latest_offset(self: Any, start: Any = None, limit: Any = None) -> Any:
    # Spark reads this signature to tell whether the reader takes admission control (start, limit)
    return self._real.latestOffset(start, limit)


_STREAM_READER_METHODS = {
    **{m: _delegate(m) for m in ("initialOffset", "getDefaultReadLimit", "reportLatestOffset",
                                 "prepareForTriggerAvailableNow", "partitions", "read", "commit", "stop")},
    "latestOffset": _stream_reader_latest_offset,
}
_STREAM_WRITER_METHODS = {m: _delegate(m) for m in ("write", "commit", "abort")}


def _shim_class(name: str, bases: tuple, methods: dict, zip_name: str, zip_bytes: bytes) -> type:
    namespace = {**methods, "__reduce__": _reduce, "__module__": SHIPPED_MODULE, "__qualname__": name,
                 "_zip_name": zip_name, "_zip_bytes": zip_bytes}
    return type(name, bases, namespace)


def shipped_source(real_class: type, zip_name: str, zip_bytes: bytes) -> type:
    """A DataSource class that carries the package and runs ``real_class`` wherever Spark unpickles it."""
    return type(f"Shipped_{real_class.__name__}", (_ShippedSource,), {
        "__module__": SHIPPED_MODULE, "_source_name": real_class.name(),
        "_real_class_pickle": cloudpickle.dumps(real_class), "_zip_name": zip_name, "_zip_bytes": zip_bytes})


def shipped(source: type) -> type:
    """``source`` wrapped so that it carries the package (paimon_ds.spark.connect.artifact_zip) to workers
    without the session artifact."""
    zip_path = artifact_zip()
    return shipped_source(source, zip_path.name, zip_path.read_bytes())


class ShippedFunction:
    """A function for the server to run (a `foreachBatch` function): called as the function it wraps; pickled
    (on Connect only), it takes the package along, and ships it to the session its DataFrame belongs to."""

    def __init__(self, function: Any) -> None:
        self._real = function

    def __call__(self, df: Any, batch_id: int) -> Any:
        # imported when called, not by name at module level: this class is pickled by value, and a global
        # would be pickled by reference, making the server import paimon_ds before _revive_function boots it
        from paimon_ds.spark.connect import is_connect, ship_package
        if is_connect(df.sparkSession):
            ship_package(df.sparkSession)  # the jobs it starts run in the query's session
        return self._real(df, batch_id)

    def __reduce__(self) -> tuple:
        from paimon_ds.spark.connect import artifact_zip  # a local import, as in __call__
        path = artifact_zip()
        return _revive_function, (type(self), path.name, path.read_bytes(), cloudpickle.dumps(self._real))


def _revive_function(cls: type, zip_name: str, zip_bytes: bytes, state: bytes) -> Any:
    _boot(zip_name, zip_bytes)
    return cls(pickle.loads(state))


def _by_value(*objects: Any) -> None:
    # Claim the shipped module for every function and class here, methods included, so that cloudpickle
    # copies them (by reference it would make the server import paimon_ds, the very thing it lacks).
    for obj in objects:
        obj.__module__ = SHIPPED_MODULE
        for value in vars(obj).values() if isinstance(obj, type) else ():
            function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            if callable(function) and hasattr(function, "__module__"):
                function.__module__ = SHIPPED_MODULE
    for method in (*_STREAM_READER_METHODS.values(), *_STREAM_WRITER_METHODS.values()):
        method.__module__ = SHIPPED_MODULE


_by_value(_boot, _revive, _reduce, _delegate, _stream_reader_latest_offset, _shim_class, _ShippedSource,
          ShippedFunction, _revive_function)
