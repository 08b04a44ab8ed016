"""Exactly-once commits of a stream: Paimon's commitUser + commitIdentifier, and a compaction schedule.

Like Paimon's Flink committer, every micro-batch is committed with ``commitIdentifier`` = the batch
id and a ``commitUser`` that stays the same for the query across restarts. A batch that the engine
replays after a failure is recognised (filterCommitted: some snapshot of this user already carries
an identifier at or above it) and its files are deleted instead of being committed a second time.

Writers of a stream do not own their buckets (the engine does not cluster the input), so the
committer keeps the sorted runs bounded: after committing a batch it runs universal compaction on
the buckets the batch wrote, as a COMPACT snapshot of its own commit user (``<user>-compact``), so
that each (commitUser, commitIdentifier) pair names exactly one snapshot. A driver that dies between
the two commits leaves that compaction undone; the next process to commit for the query finds the
backlog and compacts it before adding its own files (Paimon's writers stall at
``num-sorted-run.stop-trigger`` for the same reason: the runs a reader merges stay bounded).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..mergetree.compact import CompactionOptions, sorted_runs
from ..row_tracking import data_evolution_enabled
from ..snapshot import Snapshot, SnapshotNotFound
from .commit import commits_due_full_compaction
from .compact import compact_in_process
from .messages import CommitConflict, CommitMessage
from .scan import TableScan

if TYPE_CHECKING:
    from ..table import Table

log = logging.getLogger(__name__)

# (table path, commit user) pairs this process has checked for a compaction backlog: the first commit of a
# query in a process (after a restart) checks, and so does the one after a compaction that lost a race.
_backlog_checked: set[tuple[str, str]] = set()


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
            self.compact_backlog(messages)
            snapshot = commit.commit(messages, identifier, base_snapshot_id=base_snapshot_id)
        if snapshot is not None:
            self.compact(messages, identifier)
        return snapshot

    def _compacts(self) -> bool:
        """Whether this committer compacts after a batch (not write-only; first-row compacts in commit())."""
        opts = self.table.options
        if data_evolution_enabled(opts):
            return False  # paimon_ds does not compact data-evolution tables (see compact.plan_compaction)
        return not opts.get("write-only") and not (
            self.table.schema.primary_keys and opts.get("merge-engine") == "first-row")

    def compact_backlog(self, messages: Sequence[CommitMessage]) -> Snapshot | None:
        """Before the first commit of this query in this process: compact the buckets that the batch's new
        level-0 files would push above ``num-sorted-run.stop-trigger`` sorted runs. Such a backlog is left
        by a driver that died between a batch's data commit and its compaction, and by a lost compaction
        race. The compaction is the one the last committed batch owed: it carries that batch's identifier
        (under ``<user>-compact``), so each (commitUser, commitIdentifier) pair still names one snapshot."""
        key = (self.table.path, self.commit_user)
        if key in _backlog_checked:
            return None
        _backlog_checked.add(key)
        if not self.table.schema.primary_keys or not self._compacts():
            return None
        new_runs = Counter((m.partition, m.bucket) for m in messages for f in m.new_files if f.level == 0)
        if not new_runs:
            return None
        stop = CompactionOptions.from_options(self.table.options).stop_trigger
        committed: dict[tuple[bytes, int], list] = {}
        for e in TableScan(self.table).read_entries(self.table.latest_snapshot()):
            if (e.partition, e.bucket) in new_runs:
                committed.setdefault((e.partition, e.bucket), []).append(e.file)
        over = {b for b, files in committed.items() if len(sorted_runs(files)) + new_runs[b] > stop}
        if not over:
            return None
        owed = latest_committed_identifier(self.table, self.commit_user)
        compact_user = f"{self.commit_user}-compact"
        if owed is None or latest_committed_identifier(self.table, compact_user) == owed:
            # not a compaction this query owes (its identifier is taken): the batch's own one follows it
            log.warning("%s: buckets %s hold more than %s sorted runs; compacting after the batch",
                        self.table.path, sorted(b for _, b in over), stop)
            return None
        log.info("%s: compacting the backlog of batch %s in %s bucket(s) before the next batch",
                 self.table.path, owed, len(over))
        return self._compact_buckets(over, owed)

    def compact(self, messages: Sequence[CommitMessage], identifier: int) -> Snapshot | None:
        """Compaction of the buckets this batch wrote: universal compaction of primary-key buckets,
        small-file compaction of append buckets (none for write-only tables)."""
        if not self._compacts():
            return None
        buckets = {(m.partition, m.bucket) for m in messages if m.new_files}
        if not buckets:
            return None
        return self._compact_buckets(buckets, identifier, full=self._full_compaction_due())

    def _compact_buckets(self, buckets: set[tuple[bytes, int]], identifier: int, full: bool = False
                         ) -> Snapshot | None:
        try:
            return compact_in_process(self.table, buckets, full=full,
                                      commit_user=f"{self.commit_user}-compact", identifier=identifier)
        except CommitConflict as e:
            # Another compaction won: the data is committed; the next batch compacts again, and checks
            # for a backlog first.
            _backlog_checked.discard((self.table.path, self.commit_user))
            log.warning("compaction after batch %s of %s lost a race: %s", identifier, self.table.path, e)
            return None

    def _full_compaction_due(self) -> bool:
        """`full-compaction.delta-commits` (see full_compaction_interval): every N-th data commit of the table
        compacts fully."""
        return commits_due_full_compaction(self.table)
