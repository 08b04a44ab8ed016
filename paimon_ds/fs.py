"""File I/O over fsspec, with the one operation a commit needs: create a file only if absent."""

from __future__ import annotations

import os
import uuid
from typing import IO, Any

import fsspec


class FileIO:
    """Reads and writes table files under one root, on any fsspec filesystem."""

    def __init__(self, path: str, storage_options: dict[str, Any] | None = None) -> None:
        self.fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.is_local = self.protocol in ("file", "local")
        self.root = root.rstrip("/") if root != "/" else root

    def join(self, *parts: str) -> str:
        return "/".join([self.root, *[p.strip("/") for p in parts if p]])

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def is_dir(self, path: str) -> bool:
        return self.fs.isdir(path)

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open(path, "rb") as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a whole file; on local disk through a rename so readers never see half."""
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        else:
            with self.fs.open(path, "wb") as f:
                f.write(data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist; False if someone else has it.

        Local disk: write a temporary file, then hard-link it to the target (link fails when the
        target exists, and the target appears complete or not at all).
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
        raise NotImplementedError(
            f"atomic create-if-absent is not available for {self.protocol}:// in this version")

    def open_output(self, path: str) -> IO[bytes]:
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return self.fs.open(path, "wb")

    def open_input(self, path: str) -> IO[bytes]:
        return self.fs.open(path, "rb")

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
            self.fs.rm(path)
        except (FileNotFoundError, OSError):
            pass

    def size(self, path: str) -> int:
        return int(self.fs.size(path))

    def mkdirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)
