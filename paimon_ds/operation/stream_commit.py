"""Exactly-once commits of a stream: Paimon's commitUser + commitIdentifier, and a compaction schedule.

Like Paimon's Flink committer, every micro-batch is committed with ``commitIdentifier`` = the batch
id and a ``commitUser`` that stays the same for the query across restarts. A batch that the engine
replays after a failure is recognised (filterCommitted: some snapshot of this user already carries
an identifier at or above it) and its files are deleted instead of being committed a second time.

Writers of a stream do not own their buckets (the engine does not cluster the input), so the
committer keeps the sorted runs bounded: after committing a batch it compacts the buckets the batch
wrote (TableCommit's compaction), as a COMPACT snapshot of its own commit user (``<user>-compact``),
so that each (commitUser, commitIdentifier) pair names exactly one snapshot.

That compaction runs beside the stream, as Paimon's MergeTreeCompactManager runs it beside its
writer: on one background thread per (table, query) of the committing process, while the next
batches are written and committed. A batch waits for it only when one of its buckets would otherwise
hold more than ``num-sorted-run.stop-trigger`` sorted runs (Paimon's writer stalls there too), and
compactions whose result the commit needs (the lookup changelog producer, first-row and deletion-vector
tables lifting level 0, a due full compaction) run inline, as Paimon's writers wait for them
(``lookup-wait``, the full-compaction sink). Spark runs every commit of a query in one reused Python
worker of the driver, where the thread lives (measured: one process for a 60-batch query; a thread
started in one commit runs on after it returns). An abort cancels it between buckets, deleting what
it wrote. A driver that dies while it runs leaves that compaction undone; the next process to commit
for the query finds the backlog and compacts it before adding its own files.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..mergetree.changelog import lookup_compaction
from ..mergetree.compact import CompactionOptions, sorted_runs
from ..snapshot.manager import Snapshot, SnapshotNotFound
from ..store.row_tracking import data_evolution_enabled
from .compact import CompactionCancelled, compact_in_process, new_commit
from .messages import CommitConflict, CommitMessage
from .scan import TableScan

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

# (table path, commit user) pairs this process has checked for a compaction backlog: the first commit of a
# query in a process (after a restart) checks, and so does the one after a compaction that lost a race.
_backlog_checked: set[tuple[str, str]] = set()


class BackgroundCompaction:
    """The compaction thread of one (table, query) in this process: one compaction at a time, in submission
    order, so no two compactions of one bucket ever run at once here."""

    def __init__(self, name: str) -> None:
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"paimon_ds-compaction-{name}")
        self.pending: Future | None = None
        self.cancel_event = threading.Event()

    def busy(self) -> bool:
        return self.pending is not None and not self.pending.done()

    def submit(self, compaction) -> None:
        self.cancel_event.clear()
        self.pending = self.executor.submit(compaction)

    def wait(self) -> None:
        """Until the submitted compactions ended (their failures are logged where they run)."""
        if self.pending is not None:
            self.pending.exception()

    def cancel(self) -> None:
        """Stop the running compaction between buckets (it deletes what it wrote) and wait for it."""
        self.cancel_event.set()
        self.wait()


# (table path, commit user) -> its background compaction in this process
_background: dict[tuple[str, str], BackgroundCompaction] = {}
_background_lock = threading.Lock()


def background_compaction(table_path: str, commit_user: str) -> BackgroundCompaction:
    with _background_lock:
        key = (table_path, commit_user)
        if key not in _background:
            _background[key] = BackgroundCompaction(commit_user[:16])
        return _background[key]


def latest_committed_identifier(table: FileStore, commit_user: str) -> int | None:
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
    """``background``: compact beside the stream, or inline after each batch's commit (default: the
    `paimon_ds.background-compaction` option, true)."""

    def __init__(self, table: FileStore, commit_user: str, background: bool | None = None) -> None:
        self.table = table
        self.commit_user = commit_user
        if background is None:
            background = table.options.get("paimon_ds.background-compaction")
        self.background = background_compaction(table.path, commit_user) if background else None

    def is_committed(self, identifier: int) -> bool:
        last = latest_committed_identifier(self.table, self.commit_user)
        return last is not None and last >= identifier

    def commit(self, messages: Sequence[CommitMessage], identifier: int, overwrite: bool = False,
               base_snapshot_id: int | None = None) -> Snapshot | None:
        """Commit one micro-batch once. Returns its snapshot, or None (replayed or empty batch)."""
        compacted_first = False

        def compact_after(buckets: set[tuple[bytes, int]], full: bool, _user: str, _identifier: int):
            # as `<user>-compact` with the batch's identifier (see the module docstring), unless the batch had to
            # compact before its commit (that pair is taken: the next batch compacts what is left)
            return None if compacted_first else self._compact(buckets, full, identifier)

        commit = new_commit(self.table, self.commit_user, compact_after, streaming=True)
        if self.is_committed(identifier):
            log.info("batch %s of %s is already committed by %s: dropping the replay's files",
                     identifier, self.table.path, self.commit_user)
            commit.abort(messages)
            return None
        if overwrite:  # complete output mode: the batch is the whole result
            return commit.overwrite(messages, identifier=identifier)
        self._back_pressure(messages)
        self.compact_backlog(messages)
        compacted_first = self._stall_at_stop_trigger(messages, identifier) is not None
        return commit.commit(messages, identifier, base_snapshot_id=base_snapshot_id)

    def _stall_at_stop_trigger(self, messages: Sequence[CommitMessage], identifier: int) -> Snapshot | None:
        """Paimon's writer stalls at `num-sorted-run.stop-trigger`: a bucket the batch would push above it (the last
        compaction picked only some runs, or a driver died before it ran) is compacted before the batch's data
        commit, as `<user>-compact` with the batch's identifier: fully, so that the batch's runs fit under it."""
        if not self.table.table_schema.primary_keys or not self._compacts():
            return None
        over = self._over_stop_trigger(messages)
        if not over:
            return None
        log.info("%s: %s bucket(s) would exceed num-sorted-run.stop-trigger; compacting them before batch %s",
                 self.table.path, len(over), identifier)
        return self._compact_buckets(over, identifier, full=True)

    def cancel(self) -> None:
        """Cancel this query's background compaction (the stream aborted a batch)."""
        if self.background is not None:
            self.background.cancel()

    def _compact(self, buckets: set[tuple[bytes, int]], full: bool, identifier: int) -> Snapshot | None:
        """The compaction TableCommit asks for after a batch: in the background, unless the commit needs its
        result (a full compaction, level 0 lifted for lookup readers or the lookup changelog)."""
        opts = self.table.options
        inline = full or (bool(self.table.table_schema.primary_keys)
                          and lookup_compaction(opts, opts.get("merge-engine") == "first-row"))
        if self.background is None or inline:
            if self.background is not None:
                self.background.wait()  # one compaction of a bucket at a time
            return self._compact_buckets(buckets, identifier, full)
        self.background.submit(lambda: self._compact_buckets(buckets, identifier, full, in_background=True))
        return None

    def _back_pressure(self, messages: Sequence[CommitMessage]) -> None:
        """Wait for the background compaction when a bucket the batch writes would otherwise go above
        ``num-sorted-run.stop-trigger`` sorted runs (Paimon's writer waits at the same point)."""
        if self.background is None or not self.background.busy():
            return
        if self._over_stop_trigger(messages):
            log.info("%s: a bucket reached num-sorted-run.stop-trigger; waiting for its compaction", self.table.path)
            self.background.wait()

    def _over_stop_trigger(self, messages: Sequence[CommitMessage]) -> set[tuple[bytes, int]]:
        """The buckets whose committed sorted runs plus the batch's new level-0 files exceed the stop trigger."""
        new_runs = Counter((m.partition, m.bucket) for m in messages for f in m.new_files if f.level == 0)
        if not new_runs or not self.table.table_schema.primary_keys:
            return set()
        stop = CompactionOptions.from_options(self.table.options).stop_trigger
        committed: dict[tuple[bytes, int], list] = {}
        for e in TableScan(self.table).read_entries(self.table.latest_snapshot()):
            if (e.partition, e.bucket) in new_runs:
                committed.setdefault((e.partition, e.bucket), []).append(e.file)
        return {b for b, files in committed.items() if len(sorted_runs(files)) + new_runs[b] > stop}

    def _compacts(self) -> bool:
        """Whether this table's writers compact at all (not write-only, not data evolution)."""
        opts = self.table.options
        return not opts.get("write-only") and not data_evolution_enabled(opts)

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
        if not self.table.table_schema.primary_keys or not self._compacts():
            return None
        over = self._over_stop_trigger(messages)
        if not over:
            return None
        stop = CompactionOptions.from_options(self.table.options).stop_trigger
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

    def _compact_buckets(self, buckets: set[tuple[bytes, int]], identifier: int, full: bool = False,
                         in_background: bool = False) -> Snapshot | None:
        cancelled = self.background.cancel_event.is_set if self.background is not None else None
        try:
            return compact_in_process(self.table, buckets, full=full, commit_user=f"{self.commit_user}-compact",
                                      identifier=identifier, cancelled=cancelled)
        except CommitConflict as e:
            # Another compaction won: the data is committed; the next batch compacts again, and checks
            # for a backlog first.
            _backlog_checked.discard((self.table.path, self.commit_user))
            log.warning("compaction after batch %s of %s lost a race: %s", identifier, self.table.path, e)
            return None
        except CompactionCancelled as e:
            _backlog_checked.discard((self.table.path, self.commit_user))
            log.info("%s", e)
            return None
        except Exception:
            # a background compaction that failed leaves the data committed and the backlog to the next batch
            _backlog_checked.discard((self.table.path, self.commit_user))
            if not in_background:
                raise
            log.exception("the compaction after batch %s of %s failed", identifier, self.table.path)
            return None
