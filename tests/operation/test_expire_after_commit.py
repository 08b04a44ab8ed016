"""Snapshot and changelog expiry after every commit (operation.after_commit, operation.snapshot_expiry).

Every commit through Table.new_commit expires as Paimon's committer does (tests/interop/test_expire_interop.py
compares the files left with Java Paimon 0.9's twin tables); here: the retention options one by one, what a
tag, a branch and a changelog keep, `write-only`, the async mode, and that a failing expiry never fails the
commit it follows.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, procedures, write_arrow
from paimon_ds.operation import after_commit, snapshot_expiry
from paimon_ds.operation.maintenance import create_tag, expire_snapshots, remove_orphan_files, rollback
from paimon_ds.operation.references import References
from paimon_ds.options.registry import OptionError
from paimon_ds.snapshot.retention import Retention

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64())])


def batch(ids: range, p: str, v: int) -> pa.Table:
    return pa.table({"id": list(ids), "p": [p] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def create(path: str, options: dict[str, str], primary_key: str | None = "id,p") -> None:
    write_arrow(path, batch(range(0), "a", 0), primary_key=primary_key, partition_by="p",
                options={"bucket": "1", **options} if primary_key else options)


def commit(path: str, k: int, options: dict[str, str] | None = None) -> None:
    """Commit ``k``: an upsert of overlapping keys in partition a or b; every third one overwrites partition b."""
    table = Table.load(path, options)
    if k % 3 == 2:
        table.overwrite(batch(range(k, k + 3), "b", k), partition={"p": "b"})
    else:
        table.append(batch(range(k, k + 5), "ab"[k % 2], k))


def snapshot_ids(path: str) -> list[int]:
    return Table.load(path).snapshot_manager.list_ids()


def files(root: str, top: str | None = None) -> set[str]:
    base = Path(root)
    out = {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}
    return {f for f in out if top is None or f.startswith(top)}


def used_by_retained(path: str) -> References:
    """What the table's snapshots, tags and changelogs reference (what expiry must leave, and all it leaves)."""
    table = Table.load(path)
    refs = References(table)
    refs.add_table(table)
    return refs


def rows(path: str, **options: str) -> list[tuple]:
    return sorted((r["id"], r["p"], r["v"]) for r in Table.load(path, options).to_arrow().to_pylist())


def test_the_defaults_keep_an_hour_of_snapshots_and_write_earliest(tmp_path):
    # Paimon's defaults: at least 10, none younger than 1 h, no maximum: twelve quick commits all stay
    path = str(tmp_path / "t")
    create(path, {})
    for k in range(12):
        commit(path, k)
    assert snapshot_ids(path) == list(range(1, 13))
    assert (tmp_path / "t/snapshot/EARLIEST").read_text() == "1"


def test_num_retained_max_leaves_only_what_the_retained_snapshots_use(tmp_path):
    path = str(tmp_path / "t")
    create(path, {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"})
    expected = {}
    for k in range(9):
        commit(path, k)
        latest = Table.load(path).snapshot_manager.latest_id()
        expected[latest] = rows(path)
        assert snapshot_ids(path) == list(range(max(1, latest - 2), latest + 1))
    assert (tmp_path / "t/snapshot/EARLIEST").read_text() == "7"
    for sid in (7, 8, 9):
        assert rows(path, **{"scan.snapshot-id": str(sid)}) == expected[sid]
    # exactly the files of snapshots 7-9 are left: the overwritten ones went with the snapshots that held them
    used = used_by_retained(path)
    assert files(path, "p=") == used.data
    assert {f[len("manifest/"):] for f in files(path, "manifest/")} == used.manifests


def test_time_retained_above_num_retained_min(tmp_path):
    path = str(tmp_path / "t")
    create(path, {"snapshot.time-retained": "2 s", "snapshot.num-retained.min": "2"})
    for k in range(5):
        commit(path, k)
    assert snapshot_ids(path) == [1, 2, 3, 4, 5]  # all young
    time.sleep(2.2)
    commit(path, 5)
    assert snapshot_ids(path) == [5, 6]  # all old but min 2: the commit's and the one before
    assert (tmp_path / "t/snapshot/EARLIEST").read_text() == "5"


def test_expire_limit_spreads_a_large_expiry_over_commits(tmp_path):
    # `snapshot.expire.limit`: how many one run may expire (Paimon's maxExclusive <= earliest + limit)
    path = str(tmp_path / "t")
    create(path, {})
    for k in range(6):
        commit(path, k)
    tight = {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1", "snapshot.expire.limit": "2"}
    kept = []
    for k in range(6, 10):
        commit(path, k, tight)
        kept.append(snapshot_ids(path))
    assert kept == [[3, 4, 5, 6, 7], [5, 6, 7, 8], [7, 8, 9], [9, 10]]


def test_write_only_tables_do_not_expire(tmp_path):
    # Paimon's newCommit builds no expiry for write-only tables
    path = str(tmp_path / "t")
    create(path, {"write-only": "true", "snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    for k in range(4):
        commit(path, k)
    assert snapshot_ids(path) == [1, 2, 3, 4]
    commit(path, 4, {"write-only": "false"})  # a job without it expires them
    assert snapshot_ids(path) == [4, 5]


def test_retention_options_paimon_refuses_are_refused_before_anything_is_written(tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(OptionError, match=r"snapshot.num-retained.min \(10\) should not be larger than "
                                          r"snapshot.num-retained.max \(3\)"):
        create(path, {"snapshot.num-retained.max": "3"})
    assert not (tmp_path / "t").exists()
    create(path, {})
    commit(path, 0)
    before = files(path)
    with pytest.raises(OptionError, match=r"changelog.num-retained.min \(5\) should not be larger than "
                                          r"changelog.num-retained.max \(4\)"):
        commit(path, 1, {"changelog.num-retained.min": "5", "changelog.num-retained.max": "4"})
    assert files(path) == before


def test_time_travel_to_a_tag_reads_after_its_snapshot_expired(tmp_path):
    path = str(tmp_path / "t")
    create(path, {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    for k in range(3):
        commit(path, k)
    create_tag(Table.load(path), "t3", snapshot_id=3)
    tagged = rows(path, **{"scan.tag-name": "t3"})
    for k in range(3, 9):  # overwrites and upserts: the tag's files are gone from every retained snapshot
        commit(path, k)
    assert snapshot_ids(path) == [8, 9]
    assert rows(path, **{"scan.tag-name": "t3"}) == tagged
    used = used_by_retained(path)
    assert files(path, "p=") == used.data  # the tag's files, and nothing only expired snapshots held


def test_expiry_never_breaks_a_branch(tmp_path):
    path = str(tmp_path / "t")
    create(path, {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    for k in range(3):
        commit(path, k)
    procedures.create_tag(path, "t3")
    procedures.create_branch(path, "b1", tag="t3")
    procedures.delete_tag(path, "t3")  # only the branch holds snapshot 3's files now (Paimon 0.9 would lose them)
    at_branch = rows(path, branch="b1")
    commit(path, 3, {"branch": "b1"})  # the branch's own files
    branch_rows = rows(path, branch="b1")
    assert branch_rows != at_branch
    for k in range(4, 10):
        commit(path, k)  # main overwrites and expires
    assert snapshot_ids(path) == [8, 9]
    assert rows(path, branch="b1") == branch_rows
    for k in range(10, 13):  # the branch expires its own snapshots, keeping main's
        commit(path, k, {"branch": "b1", "snapshot.num-retained.max": "1"})
    assert Table.load(path, {"branch": "b1"}).snapshot_manager.list_ids() == [7]
    assert rows(path, **{"scan.snapshot-id": "9"}) == rows(path)
    assert remove_orphan_files(Table.load(path), older_than_ms=0) == []  # every file is someone's


def test_a_failing_expiry_leaves_the_commit_landed_and_is_retried(tmp_path, caplog):
    # a branch directory without a schema: which files it uses is unknown, so expiry refuses to delete anything
    path = str(tmp_path / "t")
    create(path, {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    commit(path, 0)
    commit(path, 1)
    (tmp_path / "t/branch/branch-broken").mkdir(parents=True)
    before = files(path)
    with caplog.at_level(logging.WARNING, logger="paimon_ds.operation.after_commit"):
        commit(path, 2)
    assert snapshot_ids(path) == [1, 2, 3]  # the commit landed; nothing expired
    assert files(path) - before and before <= files(path)  # nothing was deleted
    assert rows(path) == sorted([(i, "a", 0) for i in range(5)] + [(i, "b", 2) for i in range(2, 5)])
    [record] = [r for r in caplog.records if "snapshot and changelog expiry after snapshot 3" in r.getMessage()]
    assert "branch 'broken'" in record.getMessage() and "retried after the next commit" in record.getMessage()
    shutil.rmtree(tmp_path / "t/branch/branch-broken")
    commit(path, 3)  # the next commit's expiry catches up
    assert snapshot_ids(path) == [3, 4]


def test_async_execution_mode_expires_in_the_background(tmp_path, caplog):
    path = str(tmp_path / "t")
    create(path, {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1",
                  "snapshot.expire.execution-mode": "async"})
    for k in range(6):
        commit(path, k)
    after_commit.wait_for_maintenance(timeout=60)
    assert snapshot_ids(path) == [5, 6]
    # a failure there is logged, never raised: not by the commit, not by the next one (unlike Paimon's)
    (tmp_path / "t/branch/branch-broken").mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger="paimon_ds.operation.after_commit"):
        commit(path, 6)
        after_commit.wait_for_maintenance(timeout=60)
        commit(path, 7)
        after_commit.wait_for_maintenance(timeout=60)
    assert snapshot_ids(path) == [5, 6, 7, 8]
    assert len([r for r in caplog.records if "branch 'broken'" in r.getMessage()]) == 2


def test_decoupled_changelog_outlives_snapshots_and_orphan_removal_keeps_it(tmp_path):
    """`changelog.num-retained.max` above the snapshots': expired snapshots leave changelog-<id> and their
    changelog files; streams start at a changelog-only id; orphan removal and rollback respect them."""
    path = str(tmp_path / "t")
    create(path, {"changelog-producer": "input", "snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1",
                  "changelog.num-retained.max": "4"})
    for k in range(8):  # upserts only (Paimon's overwrite commits no changelog: its changelog files are orphans)
        Table.load(path).append(batch(range(k, k + 5), "ab"[k % 2], k))
    sm = Table.load(path).snapshot_manager
    # 4 ids readable: snapshots 7, 8 and the changelogs of 5, 6
    assert sm.list_ids() == [7, 8]
    assert (sm.changelog_ids(), sm.earliest_changelog_id(), sm.latest_changelog_id()) == ([5, 6], 5, 6)
    assert json.loads((tmp_path / "t/changelog/changelog-5").read_text())["id"] == 5
    assert sm.snapshot_or_changelog(5).id == 5
    used = used_by_retained(path)
    changelog_files = {f for f in files(path, "p=") if "/changelog-" in f}
    assert changelog_files and changelog_files <= used.data
    assert remove_orphan_files(Table.load(path), older_than_ms=0) == []
    assert files(path, "p=") == used.data

    # a rollback to snapshot 7 drops nothing of the changelog; expiring by time (an hour later) drops it all but
    # its latest, which Paimon's changelog expiry always keeps
    rollback(Table.load(path), snapshot_id=7)
    assert Table.load(path).snapshot_manager.changelog_ids() == [5, 6]
    later = int(time.time() * 1000) + 7_200_000
    result = snapshot_expiry.expire(Table.load(path), Retention.from_options(Table.load(path).options), later)
    assert result.expired == [] and result.expired_changelogs == [5]
    assert Table.load(path).snapshot_manager.changelog_ids() == [6]
    assert (tmp_path / "t/changelog/EARLIEST").read_text() == "6"


def test_the_procedure_and_the_commits_share_one_expiry(tmp_path):
    path = str(tmp_path / "t")
    create(path, {})
    for k in range(8):
        commit(path, k)
    result = procedures.expire_snapshots(path, retain_max=5, retain_min=1, max_deletes=2)
    assert result.expired == [1, 2]
    assert expire_snapshots(Table.load(path), retain_max=2, retain_min=1).expired == [3, 4, 5, 6]
    assert snapshot_ids(path) == [7, 8]
    used = used_by_retained(path)
    assert files(path, "p=") == used.data
