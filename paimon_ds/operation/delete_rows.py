"""DELETE on an append table with deletion vectors: the rows go by position, committed as new vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..deletionvectors.index_file import dv_index_files
from ..deletionvectors.maintainer import DeletionVectorsMaintainer
from ..index.paths import index_file_path
from .compact import new_commit
from .messages import CommitConflict, CommitMessage
from .scan import TableScan

if TYPE_CHECKING:
    from ..store.file_store import FileStore


def append_deletions(table: FileStore, snapshot, deleted: dict[str, np.ndarray], commit_user: str | None = None):
    """DELETE on an append table with deletion vectors (as Paimon's Spark DELETE with
    AppendDeletionFileMaintainer): ``deleted`` maps data files of ``snapshot`` to the row positions that
    go; per (partition, bucket) the vectors are merged into the bucket's and written as one index file
    that replaces the bucket's old ones, committed (as Paimon 1.4 does) in an OVERWRITE snapshot. Returns it."""
    scan = TableScan(table)
    by_name = {e.file.file_name: e for e in scan.read_entries(snapshot)}
    buckets: dict[tuple[bytes, int], list[str]] = {}
    for name in deleted:
        e = by_name.get(name)
        if e is None:
            raise CommitConflict(f"data file {name} of {table.path} is not in snapshot {snapshot.id}")
        buckets.setdefault((e.partition, e.bucket), []).append(name)
    base = dv_index_files(table.store, snapshot)
    messages = []
    try:
        for (partition, bucket), names in sorted(buckets.items()):
            m = DeletionVectorsMaintainer(table.store, partition, bucket, base.get((partition, bucket), []))
            for name in names:
                m.delete(name, deleted[name])
            new, old = m.prepare_commit()
            e = by_name[names[0]]
            messages.append(CommitMessage(partition, bucket, e.total_buckets, [], scan.partition_dir(partition),
                                          new_index_files=new, deleted_index_files=old))
        commit = new_commit(table, commit_user)
        return commit.commit_deletion_vectors(messages, list(deleted))
    except BaseException:
        for msg in messages:
            for f in msg.new_index_files:
                table.io.delete_quietly(index_file_path(table.store, msg.partition, msg.bucket, f))
        raise
