"""Names of the files a write makes: `<kind>-<uuid>-<n><suffix>`, one uuid per writer, as Paimon's path factories."""

from __future__ import annotations

import uuid


class FileNamer:
    """``job_prefix`` (12 hex digits) replaces the uuid's first two groups, so that every file of one job
    (data, changelog and index files alike) can be found, and deleted, by name when the job fails."""

    def __init__(self, job_prefix: str | None = None, kind: str = "data", suffix: str = ".parquet") -> None:
        u = uuid.uuid4().hex
        if job_prefix:
            u = job_prefix + u[12:]
        self.uuid = f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
        self.kind = kind
        self.suffix = suffix
        self.count = 0

    def sibling(self, kind: str, suffix: str = ".parquet") -> FileNamer:
        """Names of another kind with the same uuid (and job prefix): Paimon's changelog files."""
        namer = FileNamer(kind=kind, suffix=suffix)
        namer.uuid = self.uuid
        return namer

    def next(self, suffix: str | None = None) -> str:
        """The next name; ``suffix`` overrides this namer's (a file of another format)."""
        name = f"{self.kind}-{self.uuid}-{self.count}{self.suffix if suffix is None else suffix}"
        self.count += 1
        return name
