"""The operations the fault enumeration runs, each on a small table built for it (tests/faults/harness.py).

Every scenario is deterministic: the same operation on the same table makes the same I/O calls, so a failing
(scenario, call, fault) replays. Options that would spread a scenario's I/O over threads are set to one thread.
"""

from __future__ import annotations

import pyarrow as pa

from paimon_ds import Table, write_arrow
from paimon_ds import procedures as proc
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import remove_orphan_files
from paimon_ds.operation.snapshot_expiry import expire
from paimon_ds.operation.stream_commit import StreamCommit
from paimon_ds.schema.change import AddColumn, commit_changes
from paimon_ds.snapshot.retention import Retention

from .harness import Scenario, State

# one thread for the I/O of expiry and orphan removal, so that call N is the same call in every run
SERIAL = {"delete-file.thread-num": "1"}
STREAM_USER = "fault-stream"


def rows(ids: range, v: str = "a", day: str = "d1") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{v}{i}" for i in ids], "day": [day] * len(ids)})


def append_table(path: str, commits: int = 2) -> None:
    for c in range(commits):
        write_arrow(path, rows(range(c * 3, c * 3 + 3), day=f"d{c % 2}"), partition_by="day", options=SERIAL)


def pk_table(path: str, commits: int = 3, extra: dict | None = None) -> None:
    options = {"bucket": "2", "num-sorted-run.compaction-trigger": "3", **SERIAL, **(extra or {})}
    for c in range(commits):
        write_arrow(path, rows(range(c * 2, c * 2 + 4), v=f"c{c}"), primary_key="id", options=options)


def dynamic_bucket_table(path: str) -> None:
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": "4", **SERIAL}
    for c in range(2):
        write_arrow(path, rows(range(c * 3, c * 3 + 5), v=f"c{c}"), primary_key="id", options=options)


def tagged_table(path: str) -> None:
    pk_table(path, commits=4)
    proc.create_tag(path, "t1", snapshot=1)
    proc.create_tag(path, "t2", snapshot=2)


def expirable_table(path: str) -> None:
    pk_table(path, commits=5)
    proc.create_tag(path, "kept", snapshot=2)


def stream_batch(path: str) -> None:
    """Batch 7 of a stream: its files written, then committed once with its id (a retry is a replay)."""
    table = Table.load(path)
    write = table.new_write()
    write.write_arrow(rows(range(5, 9), v="s").to_batches()[0])
    StreamCommit(table, STREAM_USER, background=False).commit(write.prepare_commit(), 7)


def stream_table(path: str) -> None:
    pk_table(path, commits=2)
    table = Table.load(path)
    write = table.new_write()
    write.write_arrow(rows(range(0, 2), v="s").to_batches()[0])
    StreamCommit(table, STREAM_USER, background=False).commit(write.prepare_commit(), 6)


def decoupled_table(path: str) -> None:
    """Snapshots expire into `changelog/` (the changelog outlives them): one expiry run makes changelogs, the
    next (the scenario's) expires both."""
    pk_table(path, commits=6, extra={"changelog.num-retained.max": "4", "snapshot.num-retained.max": "3",
                                     "snapshot.num-retained.min": "1", "write-only": "true"})
    proc.expire_snapshots(path)


def expire_decoupled(path: str) -> None:
    write_arrow(path, rows(range(0, 2), v="z"), primary_key="id")
    table = Table.load(path, {"changelog.num-retained.max": "2", "write-only": "false"})
    expire(table.store, Retention.from_options(table.options, retain_min=1, retain_max=2))


def dated_table(path: str) -> None:
    for day in ("2020-01-01", "2020-01-02", "2999-01-01"):
        write_arrow(path, rows(range(3), v=day, day=day), partition_by="day", options=SERIAL)


def retained_tags_table(path: str) -> None:
    pk_table(path, commits=3)
    proc.create_tag(path, "old", snapshot=1)
    proc.create_tag(path, "also-old", snapshot=2)


def branched_table(path: str) -> None:
    pk_table(path, commits=3)
    proc.create_tag(path, "t2", snapshot=2)
    proc.create_branch(path, "b", tag="t2")
    write_arrow(path, rows(range(50, 52), v="b"), primary_key="id", options={"branch": "b"})


def merge(path: str) -> None:
    source = pa.table({"id": pa.array([1, 2, 30], pa.int64()), "v": ["m1", "m2", "m30"], "day": ["d9"] * 3})
    Table.load(path).merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


def clustered_write(path: str) -> None:
    """A writer that owns its buckets (as paimon_ds.write's tasks) compacts inline, before its commit."""
    table = Table.load(path)
    write = table.new_write(clustered=True)
    write.write_arrow(rows(range(1, 6), v="k").to_batches()[0])
    table.new_commit().commit(write.prepare_commit(), base_snapshot_id=table.snapshot_manager.latest_id())


def background_compaction(path: str) -> None:
    """A stream batch whose compaction runs on the query's background thread (waited for: one thread's I/O)."""
    table = Table.load(path)
    write = table.new_write()
    write.write_arrow(rows(range(5, 9), v="s").to_batches()[0])
    stream = StreamCommit(table, STREAM_USER, background=True)
    stream.commit(write.prepare_commit(), 7)
    stream.background.wait()


def dv_table(path: str) -> None:
    options = {"deletion-vectors.enabled": "true", "bucket": "1", "bucket-key": "id", **SERIAL}
    for c in range(2):
        write_arrow(path, rows(range(c * 4, c * 4 + 4)), options=options)


def postpone_table(path: str) -> None:
    options = {"bucket": "-2", **SERIAL}
    for c in range(2):
        write_arrow(path, rows(range(c * 2, c * 2 + 4), v=f"c{c}"), primary_key="id", options=options)


def lookup_table(path: str) -> None:
    pk_table(path, commits=2, extra={"changelog-producer": "lookup"})


def expiring_table(path: str) -> None:
    """Every commit expires all but the two newest snapshots (the maintenance after a commit)."""
    pk_table(path, commits=4, extra={"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})


def some_tags_gone(now: State, before: State, after: State) -> bool:
    """Several tags expire one by one: stopped half-way, some went (each whole), the rest stayed."""
    return (now.latest_rows == before.latest_rows and set(after.tags) <= set(now.tags) <= set(before.tags)
            and all(now.tags[t] == before.tags[t] for t in now.tags))


def fast_forward_under_way(now: State, before: State, after: State) -> bool:
    """Paimon's fast-forward (and so this one) replaces the branch's snapshots one by one: stopped half-way, main
    reads an older snapshot of its own or of the branch (every listed one whole; run it again to finish)."""
    return now.branches == before.branches and now.latest_rows in set(before.snapshots.values()) | set(
        after.snapshots.values())


SCENARIOS: list[Scenario] = [
    Scenario("append", append_table, lambda p: Table.load(p).append(rows(range(20, 23), day="d1"))),
    Scenario("overwrite", append_table, lambda p: Table.load(p).overwrite(rows(range(30, 32), day="d0"))),
    Scenario("overwrite-partition", append_table,
             lambda p: Table.load(p).overwrite(rows(range(40, 42), day="d1"), partition={"day": "d1"})),
    Scenario("pk-upsert-and-compaction", pk_table,
             lambda p: write_arrow(p, rows(range(3, 7), v="u"), primary_key="id")),
    Scenario("dynamic-bucket-upsert", dynamic_bucket_table,
             lambda p: write_arrow(p, rows(range(4, 12), v="u"), primary_key="id")),
    Scenario("full-compaction", pk_table, lambda p: compact_in_process(Table.load(p), None, full=True)),
    Scenario("expire-snapshots", expirable_table, lambda p: proc.expire_snapshots(p, retain_max=2, retain_min=1),
             atomic=False),
    Scenario("create-tag", pk_table, lambda p: proc.create_tag(p, "new", snapshot=2)),
    Scenario("delete-tag", tagged_table, lambda p: proc.delete_tag(p, "t1")),
    Scenario("replace-tag", tagged_table, lambda p: proc.replace_tag(p, "t1", snapshot=3)),
    Scenario("rollback", tagged_table, lambda p: proc.rollback(p, 2)),
    Scenario("add-column", pk_table, lambda p: commit_changes(p, [AddColumn("extra", pa.int32())])),
    Scenario("reset-consumer", pk_table, lambda p: proc.reset_consumer(p, "c1", 2)),
    Scenario("remove-orphans", pk_table, lambda p: remove_orphan_files(Table.load(p), older_than_ms=0),
             atomic=False),
    Scenario("delete-rows", pk_table, lambda p: Table.load(p).delete("id < 3")),
    Scenario("update-rows", append_table, lambda p: Table.load(p).update({"v": "'x'"}, "id = 4")),
    Scenario("stream-commit", stream_table, stream_batch, idempotent=True),
    Scenario("background-compaction", stream_table, background_compaction, idempotent=True),
    Scenario("clustered-write-compaction", pk_table, clustered_write),
    Scenario("lookup-changelog-upsert", lookup_table,
             lambda p: write_arrow(p, rows(range(1, 5), v="l"), primary_key="id")),
    Scenario("merge-rows", pk_table, merge),
    Scenario("upsert-append-table", append_table,
             lambda p: Table.load(p).upsert(rows(range(2, 5), v="up", day="d0"), on="id")),
    Scenario("dv-delete", dv_table, lambda p: Table.load(p).delete("id IN (1, 6)")),
    # bucket -2 is Paimon 1.x's: Java 0.9 does not read it
    Scenario("postpone-write", postpone_table,
             lambda p: write_arrow(p, rows(range(3, 6), v="p"), primary_key="id"), java_reads=False),
    Scenario("postpone-compaction", postpone_table, lambda p: compact_in_process(Table.load(p), None, full=True),
             java_reads=False),
    Scenario("changelog-expiry", decoupled_table, expire_decoupled, atomic=False),
    Scenario("commit-then-expiry", expiring_table,
             lambda p: write_arrow(p, rows(range(2, 6), v="e"), primary_key="id")),
    Scenario("partition-expiry", dated_table,
             lambda p: proc.expire_partitions(p, "1 d", timestamp_formatter="yyyy-MM-dd")),
    Scenario("tag-expiry", retained_tags_table, lambda p: proc.expire_tags(p, older_than="2999-01-01 00:00:00"),
             atomic=False, between=some_tags_gone),
    Scenario("rename-tag", tagged_table, lambda p: proc.rename_tag(p, "t1", "t9")),
    Scenario("drop-partition", append_table, lambda p: proc.drop_partitions(p, "day=d0")),
    Scenario("compact-manifest", pk_table, lambda p: proc.compact_manifest(p)),
    Scenario("create-branch", tagged_table, lambda p: proc.create_branch(p, "nb", tag="t2")),
    Scenario("write-branch", branched_table,
             lambda p: write_arrow(p, rows(range(60, 62), v="w"), primary_key="id", options={"branch": "b"})),
    Scenario("fast-forward", branched_table, lambda p: proc.fast_forward(p, "b"), atomic=False,
             between=fast_forward_under_way),
    Scenario("delete-branch", branched_table, lambda p: proc.delete_branch(p, "b")),
]

BY_NAME = {s.name: s for s in SCENARIOS}
