"""Exactly-once commits of a stream: Paimon's commitUser + commitIdentifier, and a compaction schedule.

Like Paimon's Flink committer, every micro-batch is committed with ``commitIdentifier`` = the batch
id and a ``commitUser`` that stays the same for the query across restarts. A batch that the engine
replays after a failure is recognised (filterCommitted: some snapshot of this user already carries
an identifier at or above it) and its files are deleted instead of being committed a second time.

Writers of a stream do not own their buckets (the engine does not cluster the input), so the
committer keeps the sorted runs bounded: after committing a batch it runs universal compaction on
the buckets the batch wrote, as a COMPACT snapshot of its own commit user (``<user>-compact``), so
that each (commitUser, commitIdentifier) pair names exactly one snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..snapshot import Snapshot, SnapshotNotFound
from .commit import CommitConflict
from .messages import CommitMessage

if TYPE_CHECKING:
    from ..table import Table

log = logging.getLogger(__name__)


def latest_committed_identifier(table: Table, commit_user: str) -> int | None:
    """The newest commitIdentifier ``commit_user`` has committed (Paimon scans snapshots newest first)."""
    sm = table.snapshot_manager
    latest, earliest = sm.latest_id(), sm.earliest_id()
    if latest is None:
        return None
    for sid in range(latest, (earliest or 1) - 1, -1):
        try:
            snapshot = sm.snapshot(sid)
        except SnapshotNotFound:
            continue  # expired while we looked
        if snapshot.commit_user == commit_user:
            return snapshot.commit_identifier
    return None


class StreamCommit:
    def __init__(self, table: Table, commit_user: str) -> None:
        self.table = table
        self.commit_user = commit_user

    def is_committed(self, identifier: int) -> bool:
        last = latest_committed_identifier(self.table, self.commit_user)
        return last is not None and last >= identifier

    def commit(self, messages: Sequence[CommitMessage], identifier: int, overwrite: bool = False,
               base_snapshot_id: int | None = None) -> Snapshot | None:
        """Commit one micro-batch once. Returns its snapshot, or None (replayed or empty batch)."""
        commit = self.table.new_commit(self.commit_user)
        if self.is_committed(identifier):
            log.info("batch %s of %s is already committed by %s: dropping the replay's files",
                     identifier, self.table.path, self.commit_user)
            commit.abort(messages)
            return None
        if overwrite:  # complete output mode: the batch is the whole result
            snapshot = commit.overwrite(messages, identifier=identifier)
        else:
            snapshot = commit.commit(messages, identifier, base_snapshot_id=base_snapshot_id)
        if snapshot is not None:
            self.compact(messages, identifier)
        return snapshot

    def compact(self, messages: Sequence[CommitMessage], identifier: int) -> Snapshot | None:
        """Compaction of the buckets this batch wrote: universal compaction of primary-key buckets,
        small-file compaction of append buckets (none for write-only tables)."""
        opts = self.table.options.raw
        if opts.get("write-only", "false").lower() == "true" or (
                self.table.schema.primary_keys and opts.get("merge-engine") == "first-row"):
            return None  # first-row: commit() has compacted already
        buckets = {(m.partition, m.bucket) for m in messages if m.new_files}
        if not buckets:
            return None
        from .compact import compact_in_process
        try:
            return compact_in_process(self.table, buckets, full=self._full_compaction_due(),
                                      commit_user=f"{self.commit_user}-compact", identifier=identifier)
        except CommitConflict as e:
            # Another compaction won: the data is committed, the next batch compacts again.
            log.warning("compaction after batch %s of %s lost a race: %s", identifier, self.table.path, e)
            return None

    def _full_compaction_due(self) -> bool:
        """`full-compaction.delta-commits`: every N-th data commit of the table compacts fully."""
        every = self.table.options.raw.get("full-compaction.delta-commits")
        if not every:
            return False
        sm = self.table.snapshot_manager
        commits = sum(1 for i in sm.list_ids() if sm.snapshot(i).commit_kind != "COMPACT")
        return commits % int(every) == 0
