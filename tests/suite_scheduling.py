"""How a parallel run (pytest-xdist, --dist loadfile) hands out the suite: whole files, in collection order
(conftest sorts them slowest first), and to each worker, once no file is left to hand out, the after_suite check
of the tables that worker's tests left (one case per worker, parametrised by its id: AFTER_SUITE_PARAM).

The check thus runs in the worker's own process and Spark session, beside the other worker's last files, instead
of in a pytest process and a Spark session of its own after both workers have stopped."""

from __future__ import annotations

import re

from xdist.scheduler import LoadFileScheduling

# the id of an after_suite case's parameter: the worker whose tables it checks ("gw0", "gw1", ...)
AFTER_SUITE_PARAM = "tables-of-{worker}"
_HELD_CASE = re.compile(r"\[tables-of-(gw\d+)\]$")


def after_suite_worker(nodeid: str) -> str | None:
    """The worker an after_suite case checks the tables of, or None for any other case."""
    found = _HELD_CASE.search(nodeid)
    return found.group(1) if found else None


class SuiteScheduling(LoadFileScheduling):
    """LoadFileScheduling that holds each worker's after_suite case back until every file has been handed out,
    then sends it to that worker as its last case (to another worker only if that one is gone)."""

    def _split_scope(self, nodeid: str) -> str:
        # a held case is a work unit of its own, apart from the other cases of its file
        return nodeid if after_suite_worker(nodeid) else super()._split_scope(nodeid)

    def _files_left(self) -> list[str]:
        return [scope for scope in self.workqueue if not after_suite_worker(scope)]

    def _send(self, node, scope: str) -> None:
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    def _assign_work_unit(self, node) -> None:
        files = self._files_left()
        if files:
            self._send(node, files[0])

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if self._files_left():
            if self._pending_of(self.assigned_work[node]) <= 2:  # as LoadFileScheduling: top up when nearly idle
                self._assign_work_unit(node)
            return
        # this worker's check, and that of any worker no longer running (a crashed one's tables stay on disk)
        running = {other.gateway.id for other in self.nodes if not other.shutting_down}
        for scope in list(self.workqueue):
            worker = after_suite_worker(scope)
            if worker == node.gateway.id or worker not in running:
                self._send(node, scope)
        node.shutdown()
