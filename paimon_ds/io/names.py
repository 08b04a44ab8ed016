"""Names of the files a write makes: `<kind>-<uuid>-<n><suffix>`, one uuid per writer, as Paimon's path factories,
and the job prefix that finds every file of a failed job by name."""

from __future__ import annotations

import threading
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
        self._lock = threading.Lock()  # writers of one write may close (and roll files) in parallel threads

    def sibling(self, kind: str, suffix: str = ".parquet") -> FileNamer:
        """Names of another kind with the same uuid (and job prefix): Paimon's changelog files."""
        namer = FileNamer(kind=kind, suffix=suffix)
        namer.uuid = self.uuid
        return namer

    def next(self, suffix: str | None = None) -> str:
        """The next name; ``suffix`` overrides this namer's (a file of another format)."""
        with self._lock:
            name = f"{self.kind}-{self.uuid}-{self.count}{self.suffix if suffix is None else suffix}"
            self.count += 1
        return name


class DataFileNamer(FileNamer):
    """`data-<uuid>-<n>.parquet`, one uuid per write task as Paimon's DataFilePathFactory (see FileNamer)."""

    def __init__(self, job_prefix: str | None = None) -> None:
        super().__init__(job_prefix, "data", ".parquet")

    def changelog_namer(self) -> FileNamer:
        """`changelog-<uuid>-<n>.parquet`: the same uuid (and job prefix), Paimon's changelog file names."""
        return self.sibling("changelog")


class PostponeFileNamer(FileNamer):
    """Files of a postpone bucket (Paimon's PostponeBucketFileStoreWrite): `data--u-<commit user>-s-<write id>-w-
    <uuid>-<n>.avro`; the part up to `-w-` names the writer, whose files a compaction reads in their order."""

    def __init__(self, commit_user: str, write_id: int, job_prefix: str | None = None, suffix: str = ".avro") -> None:
        super().__init__(job_prefix, f"data--u-{commit_user}-s-{write_id}-w", suffix)


def postpone_writer_prefix(file_name: str) -> str:
    """The writer part of a postpone file's name (PostponeBucketFileStoreWrite.getWriterPrefix): up to `-w-`."""
    cut = file_name.rfind("-w-")
    if cut < 0:
        raise ValueError(f"data file {file_name} of a postpone bucket does not name its writer (`...-w-...`)")
    return file_name[:cut + 3]


def new_job_prefix() -> str:
    """12 random hex digits that name every data file of one job (see DataFileNamer)."""
    return uuid.uuid4().hex[:12]


def job_file_prefix(job_prefix: str) -> tuple[str, ...]:
    """The starts of the names of every data, changelog and index file written with ``job_prefix``."""
    return tuple(f"{kind}-{job_prefix[:8]}-{job_prefix[8:12]}-" for kind in ("data", "changelog", "index"))


def is_job_file(file_name: str, job_prefix: str) -> bool:
    """Whether a file was written with ``job_prefix``: its name starts with it (job_file_prefix), or, a postpone
    bucket's file, its uuid after `-w-` does."""
    if file_name.startswith(job_file_prefix(job_prefix)):
        return True
    return file_name.startswith("data--u-") and f"-w-{job_prefix[:8]}-{job_prefix[8:12]}-" in file_name
