"""The maintenance a commit leaves behind, as Paimon's TableCommitImpl does after every commit.

Java's order (TableCommitImpl.expire): consumers not updated for ``consumer.expiration-time`` go first (so
they do not hold snapshots back), then snapshot and changelog expiry, then partition expiration, then
automatic tags. Each step is one function of the table and the snapshot just committed. A step that fails
never fails or undoes the commit: it is logged, and the next commit runs every step again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..consumer import expire_consumers_after_commit
from ..snapshot import Snapshot
from .auto_tag import automatic_tags
from .partition_expire import expire_partitions

if TYPE_CHECKING:
    from ..table import Table

log = logging.getLogger(__name__)

MaintenanceStep = Callable[["Table", Snapshot], None]

# in the order Java runs them
STEPS: list[tuple[str, MaintenanceStep]] = [
    # first: a consumer gone stale must not hold back this commit's snapshot expiry
    ("consumer expiry", expire_consumers_after_commit),
    ("partition expiration", expire_partitions),
    ("automatic tags", automatic_tags),
]


def maintain(table: Table, snapshot: Snapshot) -> None:
    """Run every maintenance step after ``snapshot`` was committed to ``table``; failures are logged, not raised."""
    for name, step in STEPS:
        try:
            step(table, snapshot)
        except Exception as e:  # noqa: BLE001 - maintenance must not fail a commit that landed
            log.warning("%s after snapshot %s of %s failed (retried after the next commit): %s",
                        name, snapshot.id, table.path, e)
