"""Split: the files of one (partition, bucket) that one reader task reads; what a scan plans and a read reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..deletionvectors.index_file import DeletionFile
from ..manifest.meta import DataFileMeta


@dataclass
class Split:
    """Files of one (partition, bucket) that one reader task reads."""

    partition: bytes
    bucket: int
    directory: str  # absolute directory of the bucket
    files: list[DataFileMeta] = field(default_factory=list)
    snapshot_id: int | None = None
    # deletion-vector tables: data file name -> its deletion vector (Paimon's DataSplit.deletionFiles)
    deletion_files: dict[str, DeletionFile] | None = None
    branch: str | None = None  # set when the split is of the table's scan.fallback-branch (FileStore.fallback_store)
    # incremental diff reads (operation/incremental.py): the bucket's files only the starting snapshot holds, whose
    # merged rows the read compares with those of `files`; None for every other read
    before_files: list[DataFileMeta] | None = None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def file_path(self, f: DataFileMeta) -> str:
        return f.external_path or f"{self.directory}/{f.file_name}"

    def __repr__(self) -> str:
        # the partition as its directory names it (`dt=2024-01-01/hr=1`): the split holds no partition types to
        # decode the BinaryRow with, and the directory is what a user finds on disk; the row's arity (its first
        # 4 bytes, big-endian) says how many directories above bucket-N are the partition's
        arity = int.from_bytes(self.partition[:4], "big") if len(self.partition) >= 4 else 0
        partition = self.directory.rstrip("/").split("/")[-1 - arity:-1] if arity else []
        fields = ([f"partition={'/'.join(partition)}"] if partition else []) + [
            f"bucket={self.bucket}", f"files={len(self.files)}", f"rows={self.row_count}"]
        if self.deletion_files:
            fields.append(f"deletion_vectors={len(self.deletion_files)}")
        if self.snapshot_id is not None:
            fields.append(f"snapshot={self.snapshot_id}")
        if self.branch is not None:
            fields.append(f"branch={self.branch}")
        return f"Split({', '.join(fields)})"
