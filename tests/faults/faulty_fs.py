"""A file system that fails on purpose: fsspec's own file systems with one fault at the N-th I/O call of a run.

`install()` registers, for the protocols paimon_ds opens (`file`/`local`, `s3`/`s3a`), a subclass of fsspec's
class whose I/O methods first ask the process's `Injector`; paimon_ds's FileIO then runs on it unchanged,
on local disk and on S3 (a loopback S3 server) alike. The injector counts the calls of a run (only the
outermost: `exists` calling `info` is one call) and, at the armed point, does one of the `Fault`s:

| fault | what the caller meets | a real cause |
|---|---|---|
| before | an I/O error; the store never saw the call | a refused connection, a 503, EIO |
| after | the call is applied, then an I/O error | a connection reset after the PUT landed |
| twice | the call is applied twice; the caller gets the second answer | a request retried after a lost answer |
| delay | the answer comes late: `on_delay` runs first (a reader looks at the table meanwhile) | a slow store |
| crash | the process dies before the call: it and every later call of the process fail | a power loss, OOM kill |
| kill | SIGKILL before the call (the real thing, for runs in a subprocess) | the same |

`crash` is simulated in the process: the call raises `SimulatedCrash` (a BaseException, so no `except Exception`
handler swallows it) and from then on every call of any thread raises it too without touching the store, so
no cleanup runs, as after a real death; `kill` shows on a sample that the simulation meets the real thing.

A file opened for writing is two calls: `open` (nothing written yet) and `close` (the bytes land: a local
file's last flush, S3's PUT). Runs are deterministic where the I/O of an operation is sequential: the same
operation on the same table makes the same calls, so (operation, point, fault) replays a failure.
"""

from __future__ import annotations

import enum
import errno
import inspect
import io
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fsspec
import fsspec.asyn


class Fault(str, enum.Enum):
    BEFORE = "before"
    AFTER = "after"
    TWICE = "twice"
    DELAY = "delay"
    CRASH = "crash"
    KILL = "kill"


# every fault a run in the test process can take (kill ends the process: only for runs in a subprocess)
IN_PROCESS_FAULTS = (Fault.BEFORE, Fault.AFTER, Fault.TWICE, Fault.DELAY, Fault.CRASH)


class SimulatedCrash(BaseException):
    """The process died at this call (Fault.CRASH): nothing after it reaches the store."""


class InjectedError(OSError):
    """An I/O error the injector raised (Fault.BEFORE, Fault.AFTER): an OSError, as the store's would be."""


@dataclass(frozen=True)
class Call:
    index: int  # 1-based, in the run
    op: str  # open-read, open-write, close, read, write, create, delete, list, stat, link, rename, mkdir, rmdir
    path: str

    def __str__(self) -> str:
        return f"#{self.index} {self.op} {self.path}"


class Injector:
    """The process's fault plan: armed for one run with a point and a fault, it counts calls and fires once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.reset()

    def reset(self) -> None:
        self.armed = False
        self.point: int | None = None
        self.fault: Fault | None = None
        self.match: Callable[[str, str], bool] | None = None
        self.on_delay: Callable[[Call], None] | None = None
        self.delay_seconds = 0.0
        self.error_errno = errno.EIO
        self.calls: list[Call] = []
        self.fired: Call | None = None
        self.crashed = False

    def arm(self, point: int | None = None, fault: Fault | None = None, *,
            match: Callable[[str, str], bool] | None = None, on_delay: Callable[[Call], None] | None = None,
            delay_seconds: float = 0.0, error_errno: int = errno.EIO) -> None:
        """Count the calls from now on; at call ``point`` (1-based, counting only calls ``match`` accepts) do
        ``fault``. ``point`` None: only count (a trace run). ``error_errno``: the errno of Fault.BEFORE's error
        (ENOSPC: a full disk)."""
        with self._lock:
            self.reset()
            self.armed = True
            self.point, self.fault, self.match = point, fault, match
            self.on_delay, self.delay_seconds, self.error_errno = on_delay, delay_seconds, error_errno

    def disarm(self) -> list[Call]:
        """Stop counting; returns the calls of the run."""
        with self._lock:
            calls = self.calls
            self.armed = False
            self.crashed = False
            return calls

    @contextmanager
    def bypass(self) -> Iterator[None]:
        """Calls of this thread inside the block pass untouched and uncounted (the checks of a run)."""
        before = getattr(self._local, "bypass", False)
        self._local.bypass = True
        try:
            yield
        finally:
            self._local.bypass = before

    def call(self, op: str, path: str, apply: Callable[[], Any]) -> Any:
        local = self._local
        if getattr(local, "depth", 0) or getattr(local, "bypass", False) or not self.armed:
            return apply()
        local.depth = 1
        try:
            return self._outermost(op, path, apply)
        finally:
            local.depth = 0

    def _outermost(self, op: str, path: str, apply: Callable[[], Any]) -> Any:
        with self._lock:
            if self.crashed:
                raise SimulatedCrash(f"the process died at {self.fired}; {op} {path} never ran")
            if self.match is not None and not self.match(op, path):
                return_now = True
            else:
                return_now = False
                call = Call(len(self.calls) + 1, op, path)
                self.calls.append(call)
                fire = call.index == self.point
                if fire:
                    self.fired = call
                    if self.fault == Fault.CRASH:
                        self.crashed = True
        if return_now or not fire:
            return apply()
        fault = self.fault
        if fault == Fault.CRASH:
            raise SimulatedCrash(f"the process died at {call}")
        if fault == Fault.KILL:
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == Fault.BEFORE:
            raise InjectedError(self.error_errno, f"injected {os.strerror(self.error_errno)} before {call}")
        if fault == Fault.AFTER:
            apply()
            raise InjectedError(errno.ECONNRESET, f"injected: the answer to {call} was lost after it was applied")
        if fault == Fault.TWICE:
            try:
                apply()
            except OSError:
                pass  # the first attempt's answer never reaches the caller
            return apply()
        if fault == Fault.DELAY:
            if self.on_delay is not None:
                local = self._local
                local.depth = 0
                try:
                    with self.bypass():
                        self.on_delay(call)
                finally:
                    local.depth = 1
            if self.delay_seconds:
                time.sleep(self.delay_seconds)
            return apply()
        raise AssertionError(f"unknown fault {fault}")


INJECTOR = Injector()

# fsspec method -> the name of its call in a trace (the first argument is the path; two-path calls name both)
_OPS = {
    "cat_file": "read", "pipe_file": "write", "rm_file": "delete", "rm": "delete", "ls": "list",
    "find": "list", "info": "stat", "exists": "stat", "modified": "stat", "size": "stat", "link": "link",
    "mv": "rename", "cp_file": "copy", "makedirs": "mkdir", "mkdir": "mkdir", "rmdir": "rmdir", "touch": "write",
}


def _describe(args: tuple) -> str:
    paths = [a if isinstance(a, str) else ",".join(map(str, a)) for a in args[:2] if isinstance(a, (str, list))]
    return " -> ".join(paths)


def _method(base: type, name: str, op: str) -> Callable[..., Any]:
    base_method = getattr(base, name)
    coroutine = inspect.iscoroutinefunction(getattr(base, "_" + name, None)) and getattr(base, "async_impl", False)

    def method(self, *args: Any, **kwargs: Any) -> Any:
        if coroutine:
            def apply() -> Any:
                return fsspec.asyn.sync(self.loop, getattr(self, "_" + name), *args, **kwargs)
        else:
            def apply() -> Any:
                return base_method(self, *args, **kwargs)
        kind = "create" if name == "pipe_file" and kwargs.get("mode") == "create" else op
        return INJECTOR.call(kind, _describe(args), apply)

    method.__name__ = name
    return method


def _open(base: type) -> Callable[..., Any]:
    base_open = base.open

    def open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        writing = any(c in mode for c in "wxa")
        f = INJECTOR.call("open-write" if writing else "open-read", str(path),
                          lambda: base_open(self, path, mode, *args, **kwargs))
        return _WriteFile(f, self, str(path), mode) if writing else f

    return open


class _WriteFile:
    """A file open for writing whose close is a call of its own (the bytes land then)."""

    def __init__(self, inner: Any, fs: Any, path: str, mode: str) -> None:
        self._inner, self._fs, self._path, self._mode = inner, fs, path, mode
        self._copy = io.BytesIO() if INJECTOR.armed else None  # for Fault.TWICE at close: the bytes again

    def write(self, data: Any) -> int:
        if self._copy is not None:
            self._copy.write(data)
        return self._inner.write(data)

    def close(self) -> None:
        if self._inner.closed:
            return
        INJECTOR.call("close", self._path, self._land)

    def _land(self) -> None:
        if not self._inner.closed:
            self._inner.close()
        elif self._copy is not None:  # applied again (Fault.TWICE): the retried PUT of the same bytes
            with INJECTOR.bypass(), self._fs.open(self._path, self._mode) as again:
                again.write(self._copy.getvalue())

    def discard(self) -> None:
        """Close without landing the bytes (an upload never finished; locally, what was flushed stays)."""
        if hasattr(self._inner, "discard") and not hasattr(self._inner, "f"):
            self._inner.discard()
            self._inner.closed = True
        else:
            getattr(self._inner, "f", self._inner).close()

    def __enter__(self) -> _WriteFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __del__(self) -> None:
        # a file whose close failed must not land later from the garbage collector (as the inner file's own
        # finalizer would do): the failed PUT did not happen
        inner = self.__dict__.get("_inner")
        if inner is not None and not inner.closed:
            try:
                self.discard()
            except Exception:
                pass


def faulty_class(base: type) -> type:
    """A subclass of fsspec class ``base`` whose I/O methods pass through INJECTOR."""
    namespace: dict[str, Any] = {name: _method(base, name, op) for name, op in _OPS.items() if hasattr(base, name)}
    namespace["open"] = _open(base)
    return type(f"Faulty{base.__name__}", (base,), namespace)


PROTOCOLS = ("file", "local", "s3", "s3a")


def install() -> Callable[[], None]:
    """Register the faulty classes for PROTOCOLS (those whose package is installed); returns the undo."""
    originals: dict[str, type] = {}
    for protocol in PROTOCOLS:
        try:
            cls = fsspec.get_filesystem_class(protocol)
        except (ImportError, ValueError):
            continue
        originals[protocol] = cls
        fsspec.register_implementation(protocol, faulty_class(cls), clobber=True)

    def uninstall() -> None:
        for protocol, cls in originals.items():
            fsspec.register_implementation(protocol, cls, clobber=True)
    return uninstall
