"""What a write task hands the committer (Paimon's CommitMessage), and what a commit refuses with (CommitConflict)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import EXIT_CONFLICT, PaimonDsError
from ..format.partition import bucket_path
from ..index.manifest import IndexFileMeta
from ..manifest.meta import DataFileMeta

# the partitions an overwrite replaces: "all", a set of serialized partitions, a predicate on one, or None (no
# overwrite)
OverwriteScope = set[bytes] | Callable[[bytes], bool] | str | None


class CommitConflict(PaimonDsError, RuntimeError):
    """The commit could not be made consistent with concurrent commits."""

    exit_code = EXIT_CONFLICT


def overwritten(scope: OverwriteScope, partition: bytes) -> bool:
    """Whether an overwrite of ``scope`` replaces ``partition``."""
    if scope is None:
        return False
    return scope == "all" or (scope(partition) if callable(scope) else partition in scope)


@dataclass
class CommitMessage:
    partition: bytes  # serialized BinaryRow of the partition values
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    partition_path: str = ""  # directory of the bucket, relative to the table (for cleanup)
    # compaction of the bucket in the same commit (Paimon's CompactIncrement)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    # changelog files (changelog-producer=input): every input record, committed in the changelog manifest list
    # of the APPEND snapshot (Paimon's DataIncrement.changelogFiles)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    # deletion vectors (Paimon's IndexIncrement): the bucket's new deletion-vector index files, and the files
    # of the writer's base snapshot they replace
    new_index_files: list[IndexFileMeta] = field(default_factory=list)
    deleted_index_files: list[IndexFileMeta] = field(default_factory=list)
    # dynamic-bucket tables: hashes (sorted int32) of keys written to the bucket that its hash index file in
    # the writer's base snapshot lacks; the commit merges them into the bucket's current index file
    added_hashes: np.ndarray | None = None
    # changelog files the compaction wrote (changelog-producer lookup or full-compaction): committed in the
    # changelog manifest list of the COMPACT snapshot (Paimon's CompactIncrement.changelogFiles)
    compact_changelog: list[DataFileMeta] = field(default_factory=list)

    def __repr__(self) -> str:
        # counts of each kind of file (DataFileMeta's repr names them one by one); never the partition's bytes
        fields = [f"partition={self.partition_path!r}" if self.partition_path else None, f"bucket={self.bucket}",
                  f"new_files={len(self.new_files)}", f"rows={sum(f.row_count for f in self.new_files)}"]
        for name, files in (("compact_before", self.compact_before), ("compact_after", self.compact_after),
                            ("changelog_files", self.changelog_files), ("compact_changelog", self.compact_changelog),
                            ("new_index_files", self.new_index_files),
                            ("deleted_index_files", self.deleted_index_files)):
            if files:
                fields.append(f"{name}={len(files)}")
        if self.added_hashes is not None and len(self.added_hashes):
            fields.append(f"added_hashes={len(self.added_hashes)}")
        return f"CommitMessage({', '.join(f for f in fields if f)})"

    @property
    def directory_rel(self) -> str:
        return bucket_path(self.partition_path, self.bucket)

    def file_paths(self, table_root: str, index_in_data_dir: bool = False) -> list[str]:
        """Files this message created (deleted when its commit is aborted); ``index_in_data_dir``: the table's
        `index-file-in-data-file-dir` (index files in the bucket's directory, not `index/`)."""
        base = f"{table_root}/{self.directory_rel}"
        before = {f.file_name for f in self.compact_before}
        made = (self.new_files + self.changelog_files + self.compact_changelog
                + [f for f in self.compact_after if f.file_name not in before])
        index_dir = base if index_in_data_dir else f"{table_root}/index"
        # a file under an external root (`data-file.external-paths`) is at its recorded location
        return ([f.external_path or f"{base}/{f.file_name}" for f in made]
                + [f.external_path or f"{index_dir}/{f.file_name}" for f in self.new_index_files])
