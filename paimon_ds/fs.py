"""File I/O over fsspec, with the one operation a commit needs: create a file only if absent.

Local disk creates through a hard link. S3 creates with a conditional PUT (`If-None-Match: *`), so exactly
one of two racing committers gets `snapshot-N` without any lock; a store that ignores the condition is
found by a probe and refused (see `paimon_ds.s3.conditional-writes` and `paimon_ds.s3.single-writer` in
storage.py).
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
import uuid
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from .errors import EXIT_STORAGE, PaimonDsError
from .options import Options
from .storage import CONDITIONAL_WRITES, SINGLE_WRITER, fsspec_options, is_storage_key, protocol_of

log = logging.getLogger(__name__)

# (endpoint, bucket) -> whether that store honours If-None-Match; probed once per process.
_CONDITIONAL_WRITES: dict[tuple[str, str], bool] = {}
_PROBE_LOCK = threading.Lock()
# A full URI (`file:/x`, `s3://b/k`): an external data path (`_EXTERNAL_PATH`), maybe on another filesystem.
# Paths under the table's root are filesystem paths without a scheme (`/x`, `bucket/key`).
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_uri(path: str) -> bool:
    """Whether ``path`` is a full URI (an external data path) rather than a path under the table's root."""
    return bool(_URI.match(path))


class StorageError(PaimonDsError, OSError):
    """The store cannot do what a safe commit needs."""

    exit_code = EXIT_STORAGE


def open_filesystem(path: str, options: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's filesystem and path for ``path``; a scheme whose package is not installed (s3fs is an extra)
    is a StorageError that names the package."""
    try:
        return fsspec.core.url_to_fs(path, **options)
    except ImportError as e:
        extra = " (pip install 'paimon_ds[s3]')" if protocol_of(path) in ("s3", "s3a", "s3n") else ""
        raise StorageError(f"cannot open {path}: {e}{extra}") from e


class FileIO:
    """Reads and writes table files under one root, on any fsspec filesystem."""

    def __init__(self, path: str, storage_options: dict[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self.fs, root = open_filesystem(path, fsspec_options(path, self.storage_options))
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.is_local = self.protocol in ("file", "local")
        self.is_s3 = protocol_of(path) in ("s3", "s3a", "s3n")
        self.root = root.rstrip("/") if root != "/" else root
        commit_settings = Options(self.storage_options)
        self.conditional_writes = commit_settings.get(CONDITIONAL_WRITES)  # auto | true | false
        self.single_writer = commit_settings.get(SINGLE_WRITER)
        self._other_fs: dict[str, Any] = {}

    def locate(self, path: str) -> tuple[Any, str, bool]:
        """(filesystem, its path, is local disk) of ``path``: a table path, or a full URI such as an
        external data path, which may live on another filesystem than the table (opened with the table's
        storage options when it is the table's scheme, else with the scheme's own Paimon/Hadoop keys)."""
        if not is_uri(path):
            return self.fs, path, self.is_local
        protocol = protocol_of(path)
        own = (self.fs.protocol,) if isinstance(self.fs.protocol, str) else tuple(self.fs.protocol)
        fs = self.fs if protocol in own else self._other_fs.get(protocol)
        if fs is None:
            opts = {k: v for k, v in self.storage_options.items() if is_storage_key(k)}
            fs = self._other_fs[protocol] = open_filesystem(path, fsspec_options(path, opts))[0]
        return fs, fs._strip_protocol(path), isinstance(fs, LocalFileSystem)

    def join(self, *parts: str) -> str:
        return "/".join([self.root, *[p.strip("/") for p in parts if p]])

    def exists(self, path: str) -> bool:
        fs, path, _ = self.locate(path)
        return fs.exists(path)

    def is_dir(self, path: str) -> bool:
        return self.fs.isdir(path)

    def read_bytes(self, path: str) -> bytes:
        fs, path, _ = self.locate(path)  # a table path, or a full URI (a file at a recorded external location)
        if self.is_s3 and fs is self.fs:
            return fs.cat_file(path, max_concurrency=1)  # one GET, no HEAD for the size first
        with fs.open(path, "rb") as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a whole file; readers never see half of it (a rename locally, one PUT on S3). The
        temporary file is hidden (`.<name>.<uuid>.tmp`): a lister of `consumer-*`, `snapshot-*`... never takes it."""
        fs, path, local = self.locate(path)
        if local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            directory, name = os.path.split(path)
            tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        else:
            fs.pipe_file(path, data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; False if someone else has it.

        Local disk: write a temporary file, then hard-link it to the target (link fails when the
        target exists, and the target appears complete or not at all). S3: a conditional PUT.
        """
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        if self.is_s3:
            if self._store_honours_conditions(path):
                return self._conditional_put(path, data)
            if self.single_writer:
                # the user guarantees one committer: nobody can slip in between the check and the PUT
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
                return True
            raise StorageError(
                f"the S3 store of {path} ignores conditional writes (If-None-Match), so two writers committing "
                f"at once could overwrite each other's snapshot and lose a commit. Use a store that supports "
                f"them (AWS S3, recent MinIO), or set option '{SINGLE_WRITER}' = 'true' if only one job ever "
                f"commits to this table")
        raise StorageError(f"atomic create-if-absent is not available for {self.protocol}://, so commits to "
                           f"{path} cannot be made safe against concurrent writers")

    def _conditional_put(self, path: str, data: bytes) -> bool:
        for attempt in range(10):
            try:
                self.fs.pipe_file(path, data, mode="create")
                return True
            except FileExistsError:  # 412 Precondition Failed: another writer created it
                return False
            except OSError as e:
                # 409 ConditionalRequestConflict: a concurrent conditional PUT on the same key is in flight
                if "ConditionalRequestConflict" not in f"{e} {e.__cause__}":
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
        raise StorageError(f"creating {path} kept conflicting with concurrent conditional writes")

    def _store_honours_conditions(self, path: str) -> bool:
        if self.conditional_writes != "auto":
            return self.conditional_writes == "true"
        endpoint = str(getattr(self.fs, "client_kwargs", {}).get("endpoint_url")
                       or getattr(self.fs, "endpoint_url", None) or "aws")
        store = (endpoint, path.split("/", 1)[0])
        with _PROBE_LOCK:
            if store not in _CONDITIONAL_WRITES:
                _CONDITIONAL_WRITES[store] = honoured = self._probe_conditional_writes(path)
                log.info("S3 store %s, bucket %s: conditional writes (If-None-Match) %s", store[0], store[1],
                         "honoured" if honoured else "NOT honoured: commits need the single-writer setting")
            return _CONDITIONAL_WRITES[store]

    def _probe_conditional_writes(self, path: str) -> bool:
        """Create one object twice with If-None-Match: a store that honours it refuses the second."""
        probe = f"{path.rsplit('/', 1)[0]}/.paimon_ds-conditional-write-probe-{uuid.uuid4().hex}"
        try:
            self.fs.pipe_file(probe, b"1", mode="create")
            try:
                self.fs.pipe_file(probe, b"2", mode="create")
                return False
            except FileExistsError:
                return True
        except (NotImplementedError, PermissionError):
            return False
        finally:
            self.delete_quietly(probe)

    def open_output(self, path: str) -> IO[bytes]:
        fs, path, local = self.locate(path)
        if local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return fs.open(path, "wb")

    def open_input(self, path: str, size: int | None = None) -> IO[bytes]:
        """Open for reading; with the size known (from a manifest), remote stores skip the HEAD request."""
        fs, path, local = self.locate(path)
        if size is None or local:
            return fs.open(path, "rb")
        f = fs.open(path, "rb", size=size)
        f.details = {"name": path, "size": size, "type": "file"}  # the first range read would HEAD for it
        return f

    def list_names(self, path: str) -> list[str]:
        """Names (not paths) of the entries directly under ``path``; empty if it is missing."""
        if self.is_local:
            try:
                return os.listdir(path)
            except FileNotFoundError:
                return []
        try:
            return [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(path, detail=False)]
        except FileNotFoundError:
            return []

    def delete_quietly(self, path: str) -> None:
        try:
            fs, located, _ = self.locate(path)
            fs.rm(located)
        except FileNotFoundError:
            pass
        except OSError as e:  # a leftover file is harmless to readers; say which, so that it can be removed
            log.warning("could not delete %s (left in place): %s", path, e)

    def delete_empty_dir(self, path: str) -> bool:
        """Delete the directory ``path`` if it is empty (Hadoop's non-recursive delete); whether it went. An object
        store has no directories: a prefix without objects is gone, its `dir/` marker (if any) removed."""
        if self.is_local:
            try:
                os.rmdir(path)
                return True
            except OSError:
                return False
        if self.list_names(path):
            return False
        try:
            self.fs.rm_file(path.rstrip("/") + "/")
        except (FileNotFoundError, OSError):
            pass
        return True

    def size(self, path: str) -> int:
        fs, path, _ = self.locate(path)
        return int(fs.size(path))

    def mkdirs(self, path: str) -> None:
        if not self.is_s3:
            self.fs.makedirs(path, exist_ok=True)
        else:
            # object stores have no directories: an empty `dir/` marker, as Hadoop's S3A writes, makes it listable
            self.fs.pipe_file(path.rstrip("/") + "/", b"")
