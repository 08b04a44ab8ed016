"""What a write task hands the committer: Paimon's CommitMessage."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..manifest.meta import DataFileMeta


@dataclass
class CommitMessage:
    partition: bytes  # serialized BinaryRow of the partition values
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    partition_path: str = ""  # directory of the bucket, relative to the table (for cleanup)

    def file_paths(self, table_root: str) -> list[str]:
        base = f"{table_root}/{self.partition_path}/bucket-{self.bucket}" if self.partition_path \
            else f"{table_root}/bucket-{self.bucket}"
        return [f"{base}/{f.file_name}" for f in self.new_files]
