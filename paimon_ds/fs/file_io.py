"""File I/O over fsspec, with the one operation a commit needs: create a file only if absent.

Local disk creates through a hard link. S3 creates with a conditional PUT (`If-None-Match: *`), so exactly
one of two racing committers gets `snapshot-N` without any lock; a store that ignores the condition is
found by a probe and refused (see `paimon_ds.s3.conditional-writes` and `paimon_ds.s3.single-writer` in
options/storage.py).
"""

from __future__ import annotations

import errno
import logging
import os
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ..errors import EXIT_STORAGE, PaimonDsError
from ..options.registry import Options
from ..options.storage import CONDITIONAL_WRITES, SINGLE_WRITER, fsspec_options, is_storage_key, protocol_of

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
    """The store or the disk failed (the message names the file), or cannot do what a safe commit needs."""

    exit_code = EXIT_STORAGE


class NotSentError(StorageError):
    """A create that failed before its request reached the store: the file was certainly not created."""


class OutcomeUnknown(StorageError):
    """A create whose request went out but whose answer never came, after every retry: the file may exist.
    A commit that meets it deletes nothing it wrote (the snapshot may have landed and need those files)."""


# attempts of a create-if-absent whose answer is lost before its outcome counts as unknown
CREATE_ATTEMPTS = 6


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

    def is_dir(self, path: str) -> bool:
        return self.fs.isdir(path)

    def read_bytes(self, path: str) -> bytes:
        fs, located, _ = self.locate(path)  # a table path, or a full URI (a file at a recorded external location)
        with storage_errors("read", path):
            if self.is_s3 and fs is self.fs:
                return fs.cat_file(located, max_concurrency=1)  # one GET, no HEAD for the size first
            with fs.open(located, "rb") as f:
                return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a whole file; readers never see half of it (a rename locally, one PUT on S3). The
        temporary file is hidden (`.<name>.<uuid>.tmp`): a lister of `consumer-*`, `snapshot-*`... never takes it;
        a write that fails deletes it. Writing the same bytes again is harmless, so a write whose answer was lost
        (it may have landed) is tried again: an error means the file may hold its old content, never that the
        new one landed unreported."""
        _retried(lambda: self._write_once(path, data))

    def _write_once(self, path: str, data: bytes) -> None:
        fs, located, local = self.locate(path)
        with storage_errors("write", path):
            if not local:
                fs.pipe_file(located, data)
                return
            directory, name = located.rsplit("/", 1)
            fs.makedirs(directory, exist_ok=True)
            tmp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
            try:
                with fs.open(tmp, "wb") as f:
                    f.write(data)
                if os.path.isdir(located):  # fsspec's local mv (shutil.move) would move the file into it
                    raise IsADirectoryError(errno.EISDIR, "a directory is in the way", located)
                try:
                    fs.mv(tmp, located)
                except FileNotFoundError:
                    # the temporary file is gone: a rename retried after its answer was lost; it landed if the
                    # file now holds our bytes
                    if self.read_bytes(path) != data:
                        raise
            except BaseException:
                _remove_temporary(fs, tmp)
                raise

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; False if someone else has it.

        Local disk: write a temporary file, then hard-link it to the target (link fails when the target exists, and
        the target appears complete or not at all). S3: a conditional PUT (If-None-Match).

        A create whose answer was lost may have landed: the store applied the PUT and the connection dropped, or a
        retried request met the first one's object (412). So an error after the request went out is not taken for
        a failure, nor an existing file for a rival's: the create is tried again, and a file holding exactly
        ``data`` is ours (callers write bytes no other writer would: a snapshot names its commit user). Raises
        OutcomeUnknown when the store never tells.
        """
        unknown: OSError | None = None
        for attempt in range(CREATE_ATTEMPTS):
            try:
                with storage_errors("create", path):
                    if self._create_once(path, data):
                        return True
            except NotSentError:
                raise
            except (StorageError, OSError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                unknown = e  # the request may have landed: ask again
                _back_off(attempt)
                continue
            try:
                return self.read_bytes(path) == data  # it exists: ours (answer lost), or a rival's
            except FileNotFoundError:
                continue  # removed meanwhile: create it again
            except OSError as e:
                unknown = e
                _back_off(attempt)
        raise OutcomeUnknown(f"creating {path}: the store did not answer whether it was created "
                             f"({CREATE_ATTEMPTS} attempts; last: {unknown})")

    def _create_once(self, path: str, data: bytes) -> bool:
        """One create-if-absent; False if the file exists. A failure before the request goes out raises
        NotSentError (nothing landed); any other error leaves the outcome open."""
        if self.is_local:
            directory = path.rsplit("/", 1)[0]
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                try:
                    self.fs.makedirs(directory, exist_ok=True)
                    with self.fs.open(tmp, "wb") as f:
                        f.write(data)
                        f.flush()
                        os.fsync(f.fileno())
                except OSError as e:
                    raise NotSentError(f"could not write {tmp} (the file to link as {path}): {e}") from e
                try:
                    self.fs.link(tmp, path)
                    return True
                except FileExistsError:
                    return False
            finally:
                _remove_temporary(self.fs, tmp)
        if self.is_s3:
            if self._store_honours_conditions(path):
                return self._conditional_put(path, data)
            if self.single_writer:
                # the user guarantees one committer: nobody can slip in between the check and the PUT
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
                return True
            raise NotSentError(
                f"the S3 store of {path} ignores conditional writes (If-None-Match), so two writers committing "
                f"at once could overwrite each other's snapshot and lose a commit. Use a store that supports "
                f"them (AWS S3, recent MinIO), or set option '{SINGLE_WRITER}' = 'true' if only one job ever "
                f"commits to this table")
        raise NotSentError(f"atomic create-if-absent is not available for {self.protocol}://, so commits to "
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
        """A new file for writing; an error while it is written or closed is a StorageError naming it."""
        fs, located, local = self.locate(path)
        with storage_errors("write", path):
            if local:
                fs.makedirs(located.rsplit("/", 1)[0], exist_ok=True)
            return _NamedOutput(fs.open(located, "wb"), path)

    def open_input(self, path: str, size: int | None = None) -> IO[bytes]:
        """Open for reading; with the size known (from a manifest), remote stores skip the HEAD request. An error
        while it is read (a range GET of a remote file) is a StorageError naming it, as one while it is opened."""
        fs, located, local = self.locate(path)
        with storage_errors("read", path):
            if size is None or local:
                return _NamedInput(fs.open(located, "rb"), path)  # type: ignore[return-value]
            f = fs.open(located, "rb", size=size)
        f.details = {"name": located, "size": size, "type": "file"}  # the first range read would HEAD for it
        return _NamedInput(f, path)  # type: ignore[return-value]

    def list_names(self, path: str) -> list[str]:
        """Names (not paths) of the entries directly under ``path``; empty if it is missing."""
        try:
            with storage_errors("list", path):
                return [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(path, detail=False)]
        except FileNotFoundError:
            return []

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists. An error of the store is raised (StorageError), not taken for absence as
        fsspec's own exists() takes it: a commit or an expiry must not act on a file it could not see."""
        fs, located, _ = self.locate(path)
        try:
            with storage_errors("look up", path):
                fs.info(located)
            return True
        except FileNotFoundError:
            return False

    def delete(self, path: str) -> None:
        """Delete a file; one already gone is fine. An error of the store is raised (StorageError): for deletes whose
        order keeps a table readable (a snapshot file before the files it uses)."""
        fs, located, _ = self.locate(path)

        def remove() -> None:
            with storage_errors("delete", path), suppress(FileNotFoundError):
                fs.rm_file(located)

        _retried(remove)  # a delete whose answer was lost is tried again: then it is gone

    def rename(self, source: str, target: str) -> None:
        """Rename a file or directory on local disk, atomically; ``target`` must not exist (checked first: a
        directory there would take ``source`` inside it). Object stores have no rename: callers copy there."""
        if not self.is_local:
            raise StorageError(f"cannot rename {source}: {self.protocol}:// has no atomic rename")
        if os.path.exists(target):
            raise FileExistsError(errno.EEXIST, "the target of a rename exists", target)

        def move() -> None:
            with storage_errors("rename", source):
                self.fs.mv(source, target, recursive=True)

        try:
            _retried(move)
        except FileNotFoundError:
            if os.path.exists(source) or not os.path.exists(target):
                raise
            # a retried rename: the first one, whose answer was lost, had landed

    def delete_tree(self, path: str) -> None:
        """Delete a directory and everything under it; one already gone is fine."""
        fs, located, _ = self.locate(path)

        def remove() -> None:
            with storage_errors("delete", path), suppress(FileNotFoundError):
                fs.rm(located, recursive=True)

        _retried(remove)

    def find(self, path: str, withdirs: bool = False) -> dict[str, dict[str, Any]]:
        """Every file under ``path`` (and directory, with ``withdirs``) with its details (fsspec's find); empty if
        ``path`` is missing."""
        fs, located, _ = self.locate(path)
        try:
            with storage_errors("list", path):
                return fs.find(located, withdirs=withdirs, detail=True)
        except FileNotFoundError:
            return {}

    def list_details(self, path: str) -> list[dict[str, Any]]:
        """The entries directly under ``path`` with their details (name, type, size, mtime...); empty if missing."""
        try:
            with storage_errors("list", path):
                return self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []

    def modified(self, path: str) -> Any:
        """The file's modification time (a datetime)."""
        fs, located, _ = self.locate(path)
        with storage_errors("look up", path):
            return fs.modified(located)

    def delete_quietly(self, path: str) -> None:
        try:
            fs, located, _ = self.locate(path)
            fs.rm_file(located)
        except FileNotFoundError:
            pass
        except OSError as e:  # a leftover file is harmless to readers; say which, so that it can be removed
            log.warning("could not delete %s (left in place): %s", path, e)

    def delete_empty_dir(self, path: str) -> bool:
        """Delete the directory ``path`` if it is empty (Hadoop's non-recursive delete); whether it went. An object
        store has no directories: a prefix without objects is gone, its `dir/` marker (if any) removed."""
        if self.is_local:
            try:
                self.fs.rmdir(path)
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
        fs, located, _ = self.locate(path)
        with storage_errors("look up", path):
            return int(fs.size(located))

    def mkdirs(self, path: str) -> None:
        with storage_errors("create directory", path):
            if not self.is_s3:
                self.fs.makedirs(path, exist_ok=True)
            else:
                # object stores have no directories: an empty `dir/` marker, as Hadoop's S3A writes, makes it
                # listable
                self.fs.pipe_file(path.rstrip("/") + "/", b"")


def _back_off(attempt: int) -> None:
    """The pause before trying a store's request again: 10 ms doubling, at most half a second."""
    time.sleep(min(0.01 * 2 ** attempt, 0.5))


def _retried(operation: Callable[[], None]) -> None:
    """Run an operation that is harmless to repeat until it answers: one whose answer was lost (it may have
    landed) is tried again, up to CREATE_ATTEMPTS times; the last StorageError is raised."""
    for attempt in range(CREATE_ATTEMPTS):
        try:
            operation()
            return
        except StorageError:
            if attempt == CREATE_ATTEMPTS - 1:
                raise
            _back_off(attempt)


@contextmanager
def storage_errors(action: str, path: str) -> Iterator[None]:
    """An OSError of the store or the disk as a StorageError that names the file and what was done to it. Not
    found / already exists stay what they are: callers act on them."""
    try:
        yield
    except (FileNotFoundError, FileExistsError, StorageError):
        raise
    except OSError as e:
        raise StorageError(f"could not {action} {path}: {e}") from e


def _remove_temporary(fs: Any, tmp: str) -> None:
    """Delete a temporary file on a write's way out (it may never have been created)."""
    try:
        fs.rm_file(tmp)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("could not delete the temporary file %s (remove_orphan_files will): %s", tmp, e)


class _NamedFile:
    """An open file whose I/O errors name it (StorageError); ``action`` says what was being done to it."""

    action = "use"

    def __init__(self, inner: Any, path: str) -> None:
        self._inner, self._path = inner, path

    def close(self) -> None:
        with storage_errors(self.action, self._path):
            self._inner.close()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def __enter__(self) -> _NamedFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _NamedInput(_NamedFile):
    """A file being read: a remote file fetches its ranges as it is read, so the store can fail long after it was
    opened (the decoders, pyarrow's too, pass such errors on as they are)."""

    action = "read"

    def read(self, *args: Any) -> bytes:
        with storage_errors("read", self._path):
            return self._inner.read(*args)

    def readinto(self, buffer: Any) -> int:
        with storage_errors("read", self._path):
            return self._inner.readinto(buffer)

    def seek(self, *args: Any) -> int:
        with storage_errors("read", self._path):
            return self._inner.seek(*args)


class _NamedOutput(_NamedFile):
    """A file being written."""

    action = "write"

    def write(self, data: Any) -> int:
        with storage_errors("write", self._path):
            return self._inner.write(data)

    def flush(self) -> None:
        with storage_errors("write", self._path):
            self._inner.flush()
