"""The maintenance a commit leaves behind, as Paimon's TableCommitImpl does after every commit.

Java's order (TableCommitImpl.expire): consumers not updated for ``consumer.expiration-time`` go first (so
they do not hold snapshots back), then snapshot and changelog expiry, then partition expiration, then
automatic tags. Each step is one function of the table and the snapshot just committed. A step that fails
never fails or undoes the commit: it is logged, and the next commit runs every step again.

`snapshot.expire.execution-mode` = async runs the steps in a background thread of the committing process (one
thread for the process: runs queue in commit order), as Paimon's single-thread expire executor. Paimon keeps a
failure of that thread and throws it from the next commit of the same committer; here a maintenance failure
never fails a commit (this project's rule), so it is logged and the next commit's maintenance tries again. At
interpreter exit the queued runs finish first (Python joins the executor's thread); a process killed meanwhile
leaves at worst unreferenced files (remove_orphan_files), never a broken snapshot.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..snapshot.manager import Snapshot
from ..snapshot.retention import Retention
from ..store.consumer import expire_consumers_after_commit
from .auto_tag import automatic_tags
from .partition_expire import expire_partitions
from .snapshot_expiry import expire

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

MaintenanceStep = Callable[["FileStore", Snapshot], None]


def expire_after_commit(table: FileStore, snapshot: Snapshot) -> None:
    """Snapshot expiry, then changelog expiry when the changelog outlives the snapshots, with the table's
    `snapshot.*` and `changelog.*` options (Paimon's expire runnable of AbstractFileStoreTable.newCommit); not
    for `write-only` tables, as in Paimon."""
    if table.options.get("write-only"):
        return
    expire(table, Retention.from_options(table.options))


# in the order Java runs them
STEPS: list[tuple[str, MaintenanceStep]] = [
    # first: a consumer gone stale must not hold back this commit's snapshot expiry
    ("consumer expiry", lambda table, snapshot: expire_consumers_after_commit(table.store, snapshot)),
    ("snapshot and changelog expiry", expire_after_commit),
    ("partition expiration", expire_partitions),
    ("automatic tags", automatic_tags),
]


_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def maintain(table: FileStore, snapshot: Snapshot) -> None:
    """Run every maintenance step after ``snapshot`` was committed to ``table``, now or (async mode) in the
    background thread; failures are logged, not raised."""
    if table.options.get("snapshot.expire.execution-mode") == "async":
        _executor().submit(_run_steps, table, snapshot)
    else:
        _run_steps(table, snapshot)


def wait_for_maintenance(timeout: float | None = None) -> None:
    """Wait until the background maintenance queued so far (async mode) has run."""
    done: Future = _executor().submit(lambda: None)
    done.result(timeout)


def _executor() -> ThreadPoolExecutor:
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paimon_ds-maintenance")
        return _background


def _run_steps(table: FileStore, snapshot: Snapshot) -> None:
    for name, step in STEPS:
        try:
            step(table, snapshot)
        except Exception as e:  # noqa: BLE001 - maintenance must not fail a commit that landed
            log.warning("%s after snapshot %s of %s failed (retried after the next commit): %s",
                        name, snapshot.id, table.path, e)
