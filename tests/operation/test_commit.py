"""The commit path without Spark: snapshots, overwrite, time travel, racing writers, crashes, merging, pruning."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_ds.manifest.files import ManifestFile, ManifestList
from paimon_ds.manifest.meta import FileKind
from paimon_ds.operation.commit import TableCommit
from paimon_ds.operation.messages import CommitConflict, CommitMessage
from paimon_ds.operation.scan import TableScan
from paimon_ds.predicate.predicates import And, Leaf, Or
from paimon_ds.snapshot.manager import Snapshot, SnapshotManager, SnapshotNotFound
from paimon_ds.table import Table, TableNotFound

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])


# ------------------------------------------------------------------ helpers

def rows(ids: range | list[int], dt: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"name-{i}" for i in ids]),
        "dt": pa.array([dt or f"2024-01-0{i % 3 + 1}" for i in ids]),
    })


def write(path: str, data: pa.Table, options: dict[str, str] | None = None) -> tuple[Table, list[CommitMessage]]:
    table = Table.for_write(path, SCHEMA, options or {})
    w = table.new_write()
    w.write_arrow(data)
    return table, w.prepare_commit()


def append(path: str, data: pa.Table, options: dict[str, str] | None = None) -> Snapshot | None:
    table, messages = write(path, data, options)
    return table.new_commit().commit(messages)


def read(path: str, options: dict[str, str] | None = None) -> pa.Table:
    return Table.load(path, options).to_arrow().sort_by("id")


def expected(*parts: pa.Table) -> pa.Table:
    return pa.concat_tables(parts).sort_by("id")


def snapshot_json(path: str, sid: int) -> dict[str, Any]:
    return json.loads(Path(path, "snapshot", f"snapshot-{sid}").read_text())


def files_under(path: str) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in Path(path).rglob("*") if p.is_file())


def metadata_files(path: str) -> tuple[set[str], set[str]]:
    """(manifest lists, manifests) every snapshot of the table references."""
    table = Table.load(path)
    sm = table.snapshot_manager
    ml = ManifestList(table.io, table.root)
    lists: set[str] = set()
    manifests: set[str] = set()
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        for name in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
            if name:
                lists.add(name)
                manifests |= {m.file_name for m in ml.read(name)}
    return lists, manifests


def assert_no_leaked_metadata(path: str) -> None:
    lists, manifests = metadata_files(path)
    on_disk = set(os.listdir(Path(path, "manifest")))
    assert on_disk == lists | manifests, f"unreferenced: {on_disk - lists - manifests}"


def manifest_entries(path: str, sid: int | None = None) -> list[Any]:
    """Every entry (ADD and DELETE, not collapsed) of the manifests a snapshot references."""
    table = Table.load(path)
    s = table.snapshot_manager.snapshot(sid) if sid else table.latest_snapshot()
    ml = ManifestList(table.io, table.root)
    schema = table.table_schema
    mf = ManifestFile(table.io, table.root, [f.type for f in schema.partition_fields], schema.id)
    metas = ml.read(s.base_manifest_list) + ml.read(s.delta_manifest_list)
    return [e for m in metas for e in mf.read(m.file_name)]


def live_file_names(path: str) -> list[str]:
    return [e.file.file_name for e in TableScan(Table.load(path)).read_entries()]


def data_files_on_disk(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).rglob("data-*.parquet"))


def planned_files(table: Table, predicate: Any) -> list[str]:
    return sorted(f.file_name for s in table.new_scan(predicate).plan() for f in s.files)


# ------------------------------------------------------------------ appends

def test_appends_make_snapshots_with_counts_and_hints(table_path: str) -> None:
    batches = [rows(range(0, 5)), rows(range(5, 12)), rows(range(12, 13)), rows(range(13, 33))]
    total = 0
    for n, batch in enumerate(batches, start=1):
        s = append(table_path, batch)
        total += batch.num_rows
        assert s is not None and s.id == n
        j = snapshot_json(table_path, n)
        assert j["id"] == n and j["schemaId"] == 0 and j["commitKind"] == "APPEND"
        assert j["totalRecordCount"] == total and j["deltaRecordCount"] == batch.num_rows
        assert Path(table_path, "snapshot", "LATEST").read_text().strip() == str(n)
        assert Path(table_path, "snapshot", "EARLIEST").read_text().strip() == "1"
    assert sorted(os.listdir(Path(table_path, "snapshot"))) == \
        ["EARLIEST", "LATEST"] + sorted(f"snapshot-{i}" for i in range(1, 5))
    assert read(table_path).equals(expected(*batches))
    assert sorted(live_file_names(table_path)) == data_files_on_disk(table_path)
    assert_no_leaked_metadata(table_path)


def test_schema_file_is_written_by_the_first_commit(table_path: str) -> None:
    table, messages = write(table_path, rows(range(3)), {"partition": "dt", "snapshot.num-retained.max": "17"})
    assert not Path(table_path, "schema").exists()  # nothing is visible before the commit
    table.new_commit().commit(messages)
    schema = json.loads(Path(table_path, "schema", "schema-0").read_text())
    assert schema["partitionKeys"] == ["dt"] and schema["primaryKeys"] == []
    assert schema["options"] == {"snapshot.num-retained.max": "17"}
    assert [(f["id"], f["name"], f["type"]) for f in schema["fields"]] == \
        [(0, "id", "BIGINT"), (1, "name", "STRING"), (2, "dt", "STRING")]
    assert schema["highestFieldId"] == 2


def test_empty_commit_creates_no_snapshot(table_path: str) -> None:
    table, messages = write(table_path, rows([]))
    assert messages == []
    assert table.new_commit().commit(messages) is None
    # an empty first write creates the table (its schema) but no snapshot: it reads as 0 rows
    assert files_under(table_path) == ["schema/schema-0"]
    empty = Table.load(table_path).to_arrow()
    assert empty.num_rows == 0 and empty.schema == SCHEMA
    append(table_path, rows(range(4)))
    table, messages = write(table_path, rows([]))
    assert table.new_commit().commit(messages) is None
    assert table.new_commit().commit([]) is None
    assert SnapshotManager(table.io, table.root).list_ids() == [1]
    assert read(table_path).equals(rows(range(4)))


# ------------------------------------------------------------------ overwrite and time travel

def test_overwrite_whole_table_and_time_travel(table_path: str) -> None:
    first = rows(range(10))
    s1 = append(table_path, first)
    time.sleep(0.01)  # distinct commit times for scan.timestamp-millis
    second = rows(range(100, 104))
    table, messages = write(table_path, second)
    s2 = table.new_commit().overwrite(messages)
    assert s2 is not None and s2.id == 2
    j = snapshot_json(table_path, 2)
    assert j["commitKind"] == "OVERWRITE" and j["totalRecordCount"] == 4 and j["deltaRecordCount"] == 4 - 10
    assert read(table_path).equals(second)
    assert read(table_path, {"scan.snapshot-id": "1"}).equals(first)
    assert read(table_path, {"scan.snapshot-id": "2"}).equals(second)
    assert read(table_path, {"scan.timestamp-millis": str(s1.time_millis)}).equals(first)
    assert read(table_path, {"scan.timestamp-millis": str(s2.time_millis - 1)}).equals(first)
    assert read(table_path, {"scan.timestamp-millis": str(s2.time_millis)}).equals(second)
    with pytest.raises(SnapshotNotFound):
        read(table_path, {"scan.timestamp-millis": str(s1.time_millis - 1)})
    with pytest.raises(SnapshotNotFound):
        read(table_path, {"scan.snapshot-id": "3"})
    # a tag is a copy of the snapshot file under tag/tag-<name>
    Path(table_path, "tag").mkdir()
    shutil.copy(Path(table_path, "snapshot", "snapshot-1"), Path(table_path, "tag", "tag-first"))
    assert read(table_path, {"scan.tag-name": "first"}).equals(first)
    with pytest.raises(SnapshotNotFound):
        read(table_path, {"scan.tag-name": "nope"})
    # old files stay on disk for time travel; the latest snapshot lists only the new ones
    assert len(data_files_on_disk(table_path)) == 2 and len(live_file_names(table_path)) == 1
    assert_no_leaked_metadata(table_path)


def test_overwrite_with_no_rows_empties_the_table(table_path: str) -> None:
    append(table_path, rows(range(6)))
    table = Table.load(table_path)
    s = table.new_commit().overwrite([])
    assert s is not None and s.commit_kind == "OVERWRITE" and s.total_record_count == 0
    assert read(table_path).num_rows == 0
    assert read(table_path, {"scan.snapshot-id": "1"}).equals(rows(range(6)))
    # a dynamic overwrite that wrote nothing replaces nothing
    assert Table.load(table_path).new_commit().overwrite([], partitions=set()) is None
    assert Table.load(table_path).snapshot_manager.latest_id() == 2


def test_overwrite_selected_partitions(table_path: str) -> None:
    opts = {"partition": "dt"}
    a = rows(range(0, 4), "2024-01-01")
    b = rows(range(4, 8), "2024-01-02")
    c = rows(range(8, 10), "2024-01-03")
    append(table_path, pa.concat_tables([a, b, c]), opts)
    new_a = rows(range(100, 103), "2024-01-01")
    new_d = rows(range(200, 201), "2024-01-04")
    table, messages = write(table_path, pa.concat_tables([new_a, new_d]), opts)
    partitions = {m.partition for m in messages}
    assert len(partitions) == 2
    s = table.new_commit().overwrite(messages, partitions=partitions)
    assert s is not None and s.id == 2 and s.commit_kind == "OVERWRITE"
    assert s.total_record_count == 4 + 2 + 3 + 1 and s.delta_record_count == 4 - 4
    assert read(table_path).equals(expected(b, c, new_a, new_d))
    assert read(table_path, {"scan.snapshot-id": "1"}).equals(expected(a, b, c))
    assert sorted(os.listdir(table_path)) == \
        ["dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03", "dt=2024-01-04", "manifest", "schema", "snapshot"]
    assert_no_leaked_metadata(table_path)


# ------------------------------------------------------------------ concurrent writers

def _race_worker(path: str, worker: int, commits: int, per_commit: int, barrier: Any) -> list[tuple[int, list[str]]]:
    """Commit ``commits`` times into ``path``; return (snapshot id, data files) of each commit."""
    out = []
    barrier.wait()  # all workers start together, so their commits overlap
    for c in range(commits):
        start = worker * 100_000 + c * per_commit
        table, messages = write(path, rows(range(start, start + per_commit)), {"commit.max-retries": "100"})
        snapshot = table.new_commit(f"worker-{worker}").commit(messages)
        assert snapshot is not None
        out.append((snapshot.id, [f.file_name for m in messages for f in m.new_files]))
    return out


def test_racing_commits_from_processes(table_path: str) -> None:
    workers, commits, per_commit = 4, 10, 3
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(workers) as pool:
        barrier = manager.Barrier(workers)
        results = pool.starmap(_race_worker, [(table_path, w, commits, per_commit, barrier) for w in range(workers)])
    ids = [sid for r in results for sid, _ in r]
    assert sorted(ids) == list(range(1, workers * commits + 1))  # every commit landed, no id twice, no gap
    sm = Table.load(table_path).snapshot_manager
    assert sm.list_ids() == list(range(1, workers * commits + 1))
    users = []
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        assert s.commit_kind == "APPEND" and s.delta_record_count == per_commit
        assert s.total_record_count == sid * per_commit  # each snapshot built on the one before
        users.append(s.commit_user)
    assert Counter(users) == {f"worker-{w}": commits for w in range(workers)}
    committed = [f for r in results for _, files in r for f in files]
    entries = manifest_entries(table_path)
    assert {e.kind for e in entries} == {FileKind.ADD}
    added = Counter(e.file.file_name for e in entries)  # raw entries: a file added twice would show here
    assert set(added.values()) == {1} and set(added) == set(committed) and len(committed) == workers * commits
    assert data_files_on_disk(table_path) == sorted(committed)
    all_ids = [w * 100_000 + i for w in range(workers) for i in range(commits * per_commit)]
    assert read(table_path)["id"].to_pylist() == sorted(all_ids)
    assert_no_leaked_metadata(table_path)


def test_lost_race_is_retried(table_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    append(table_path, rows(range(0, 5)))
    mine = rows(range(10, 13))
    theirs = rows(range(20, 27))
    table, my_messages = write(table_path, mine)
    other_table, their_messages = write(table_path, theirs)
    original = SnapshotManager.try_commit
    calls: list[int] = []

    def other_commit_lands_first(self: SnapshotManager, snapshot: Snapshot) -> bool:
        calls.append(snapshot.id)
        if len(calls) == 1:
            # between our read of the latest snapshot and our create, another writer commits
            monkeypatch.setattr(SnapshotManager, "try_commit", original)
            landed = other_table.new_commit().commit(their_messages)
            assert landed is not None and landed.id == 2
            monkeypatch.setattr(SnapshotManager, "try_commit", other_commit_lands_first)
        return original(self, snapshot)

    monkeypatch.setattr(SnapshotManager, "try_commit", other_commit_lands_first)
    s = table.new_commit().commit(my_messages)
    assert calls == [2, 3]  # lost snapshot-2, then made snapshot-3 on top of the other commit
    assert s is not None and s.id == 3 and s.total_record_count == 5 + 7 + 3
    assert snapshot_json(table_path, 2)["deltaRecordCount"] == 7
    assert read(table_path).equals(expected(rows(range(0, 5)), theirs, mine))
    assert read(table_path, {"scan.snapshot-id": "2"}).equals(expected(rows(range(0, 5)), theirs))
    assert_no_leaked_metadata(table_path)
    assert not [p for p in Path(table_path).rglob("*.tmp")]


def test_lost_race_of_an_overwrite_replaces_what_the_winner_added(table_path: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # an overwrite that loses must re-read: the rows the other writer added are replaced too
    append(table_path, rows(range(0, 5)))
    table, my_messages = write(table_path, rows(range(50, 52)))
    other_table, their_messages = write(table_path, rows(range(20, 27)))
    original = SnapshotManager.try_commit
    state = {"injected": False}

    def inject(self: SnapshotManager, snapshot: Snapshot) -> bool:
        if not state["injected"]:
            state["injected"] = True
            assert other_table.new_commit().commit(their_messages) is not None
        return original(self, snapshot)

    monkeypatch.setattr(SnapshotManager, "try_commit", inject)
    s = table.new_commit().overwrite(my_messages)
    assert s is not None and s.id == 3 and s.total_record_count == 2 and s.delta_record_count == 2 - 12
    assert read(table_path).equals(rows(range(50, 52)))
    assert_no_leaked_metadata(table_path)


def test_commit_gives_up_after_max_retries_and_cleans_up(table_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    append(table_path, rows(range(3)))
    table, messages = write(table_path, rows(range(10, 12)), {"commit.max-retries": "2"})
    attempts: list[int] = []

    def always_lose(self: SnapshotManager, snapshot: Snapshot) -> bool:
        attempts.append(snapshot.id)
        return False

    monkeypatch.setattr(SnapshotManager, "try_commit", always_lose)
    with pytest.raises(CommitConflict, match="gave up committing"):
        table.new_commit().commit(messages)
    monkeypatch.undo()
    assert attempts == [2, 2, 2]
    assert read(table_path).equals(rows(range(3)))
    assert_no_leaked_metadata(table_path)


# ------------------------------------------------------------------ a crash mid-commit

CHILD = """
import os, sys
import pyarrow as pa
from paimon_ds.snapshot.manager import SnapshotManager
from paimon_ds.table import Table

path, start, count, crash = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "crash"
ids = list(range(start, start + count))
data = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"name-{i}" for i in ids],
                 "dt": [f"2024-01-0{i % 3 + 1}" for i in ids]})
table = Table.for_write(path, data.schema, {})
w = table.new_write()
w.write_arrow(data)
messages = w.prepare_commit()
if crash:
    # die the moment the snapshot would be created: the manifests and lists are written by then
    SnapshotManager.try_commit = lambda self, snapshot: os.kill(os.getpid(), 9)
snapshot = table.new_commit().commit(messages)
print(snapshot.id)
"""


def _run_child(path: str, start: int, count: int, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, path, str(start), str(count), mode],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_crash_between_manifests_and_snapshot(table_path: str) -> None:
    append(table_path, rows(range(0, 6)))
    append(table_path, rows(range(6, 9)))
    before = read(table_path)
    lists_before, manifests_before = metadata_files(table_path)

    crashed = _run_child(table_path, 1000, 5, "crash")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    # the child got as far as writing manifest lists: they exist, unreferenced
    on_disk = set(os.listdir(Path(table_path, "manifest")))
    assert any(n.startswith("manifest-list-") for n in on_disk - lists_before - manifests_before)
    sm = Table.load(table_path).snapshot_manager
    assert sm.latest_id() == 2 and sm.list_ids() == [1, 2]
    assert read(table_path).equals(before)

    fresh = _run_child(table_path, 2000, 4, "commit")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == "3"
    assert read(table_path).equals(expected(before, rows(range(2000, 2004))))
    assert snapshot_json(table_path, 3)["totalRecordCount"] == 9 + 4


# ------------------------------------------------------------------ manifest merging

def test_manifests_are_merged(table_path: str) -> None:
    opts = {"manifest.merge-min-count": "3"}
    batches = [rows(range(i * 10, i * 10 + 10)) for i in range(12)]
    ml = None
    base_sizes = []
    for i, batch in enumerate(batches):
        s = append(table_path, batch, opts if i == 0 else {})
        assert s is not None
        table = Table.load(table_path)
        ml = ManifestList(table.io, table.root)
        base = ml.read(s.base_manifest_list)
        delta = ml.read(s.delta_manifest_list)
        base_sizes.append(len(base))
        assert len(base) <= 3 and len(delta) == 1
    # manifests pile up to the limit, then fold into one (as Paimon's ManifestFileMerger: at 3 base and delta
    # manifests of the previous snapshot, the base holds 2)
    assert base_sizes == [0, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1]
    assert read(table_path).equals(expected(*batches))
    assert len(live_file_names(table_path)) == 12
    # every earlier snapshot still reads its own rows through its own manifests
    for sid in (1, 4, 7, 12):
        assert read(table_path, {"scan.snapshot-id": str(sid)}).equals(expected(*batches[:sid]))
    assert_no_leaked_metadata(table_path)


def test_merging_drops_overwritten_files(table_path: str) -> None:
    opts = {"manifest.merge-min-count": "3", "partition": "dt"}
    append(table_path, rows(range(0, 9)), opts)  # 3 files, one per partition
    append(table_path, rows(range(9, 18)))  # 3 more
    table, messages = write(table_path, rows(range(100, 103), "2024-01-01"))
    s3 = table.new_commit().overwrite(messages, partitions={m.partition for m in messages})
    assert s3 is not None and s3.id == 3
    # snapshot 3 references 3 manifests (2 appends, the overwrite's DELETE and ADD entries in one, as Paimon's)
    assert len(manifest_entries(table_path, 3)) == 3 + 3 + 1 + 2
    s4 = append(table_path, rows(range(200, 203), "2024-01-02"))
    assert s4 is not None
    table = Table.load(table_path)
    ml = ManifestList(table.io, table.root)
    base = ml.read(s4.base_manifest_list)
    # merged into one manifest of the 5 live files: the deleted files and DELETE entries are gone
    assert len(base) == 1 and base[0].num_added_files == 5 and base[0].num_deleted_files == 0
    assert len(ml.read(s4.delta_manifest_list)) == 1
    entries = manifest_entries(table_path, 4)
    assert {e.kind for e in entries} == {FileKind.ADD} and len(entries) == 6
    keep = [r for r in rows(range(0, 18)).to_pylist() if r["dt"] != "2024-01-01"]
    want = expected(pa.Table.from_pylist(keep, schema=SCHEMA), rows(range(100, 103), "2024-01-01"),
                    rows(range(200, 203), "2024-01-02"))
    assert read(table_path).equals(want)
    assert read(table_path, {"scan.snapshot-id": "2"}).equals(rows(range(0, 18)).sort_by("id"))
    assert_no_leaked_metadata(table_path)


# ------------------------------------------------------------------ a failed first write

def test_aborted_first_write_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.mkdir()
    table, messages = write(str(path), rows(range(20)), {"partition": "dt"})
    assert len(messages) == 3 and len(data_files_on_disk(str(path))) == 3
    table.new_commit().abort(messages)
    assert files_under(str(path)) == []
    assert not Path(path, "schema").exists()
    assert not Table.exists(str(path))
    with pytest.raises(TableNotFound):
        Table.load(str(path))
    # the directory can still become a table
    append(str(path), rows(range(5)), {"partition": "dt"})
    assert read(str(path)).equals(rows(range(5)))


def test_aborted_write_before_prepare_leaves_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = Table.for_write(path, SCHEMA, {"target-file-size": "1kb", "parquet.block.size": "1kb"})
    w = table.new_write()
    w.write_arrow(rows(range(5000)))
    assert data_files_on_disk(path)  # rolled files are on disk mid-write
    w.abort()
    assert files_under(path) == []


def test_failed_commit_deletes_its_manifests(table_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    append(table_path, rows(range(3)))
    table, messages = write(table_path, rows(range(10, 12)))

    def broken(self: SnapshotManager, snapshot: Snapshot) -> bool:
        raise OSError("disk on fire")

    monkeypatch.setattr(SnapshotManager, "try_commit", broken)
    with pytest.raises(OSError, match="disk on fire"):
        TableCommit(table).commit(messages)
    monkeypatch.undo()
    assert_no_leaked_metadata(table_path)
    assert read(table_path).equals(rows(range(3)))


# ------------------------------------------------------------------ pruning with predicates

def test_data_predicate_plans_only_files_that_may_match(table_path: str) -> None:
    files_by_range = []
    for start in range(0, 50, 10):
        table, messages = write(table_path, rows(range(start, start + 10)))
        table.new_commit().commit(messages)
        files_by_range.append([f.file_name for m in messages for f in m.new_files])
    table = Table.load(table_path)
    assert len(planned_files(table, None)) == 5
    assert planned_files(table, Leaf("=", "id", (5,))) == sorted(files_by_range[0])
    assert planned_files(table, Leaf("=", "id", (37,))) == sorted(files_by_range[3])
    assert planned_files(table, Leaf("=", "id", (1000,))) == []
    assert planned_files(table, Leaf(">=", "id", (35,))) == sorted(files_by_range[3] + files_by_range[4])
    assert planned_files(table, Leaf("<", "id", (10,))) == sorted(files_by_range[0])
    assert planned_files(table, Leaf("in", "id", (3, 44))) == sorted(files_by_range[0] + files_by_range[4])
    assert planned_files(table, Or((Leaf("=", "id", (15,)), Leaf("=", "id", (25,))))) == \
        sorted(files_by_range[1] + files_by_range[2])
    assert planned_files(table, Leaf("is_null", "id")) == []
    assert table.to_arrow(Leaf("=", "id", (5,))).to_pylist() == rows([5]).to_pylist()
    assert table.to_arrow(Leaf(">=", "id", (47,))).sort_by("id").equals(rows(range(47, 50)))


def test_partition_predicate_prunes_partitions(table_path: str) -> None:
    opts = {"partition": "dt"}
    for start in (0, 30):
        append(table_path, rows(range(start, start + 30)), opts)
    table = Table.load(table_path)
    all_splits = table.new_scan().plan()
    assert len({s.partition for s in all_splits}) == 3
    pred = Leaf("=", "dt", ("2024-01-02",))
    splits = table.new_scan(pred).plan()
    assert {s.directory.rsplit("/", 2)[-2] for s in splits} == {"dt=2024-01-02"}
    assert sum(len(s.files) for s in splits) == 2
    want = [r for r in rows(range(60)).to_pylist() if r["dt"] == "2024-01-02"]
    assert table.to_arrow(pred).sort_by("id").to_pylist() == want
    # partition and data predicates together
    both = And((pred, Leaf("<", "id", (30,))))
    assert sum(len(s.files) for s in table.new_scan(both).plan()) == 1
    assert table.to_arrow(both).sort_by("id").to_pylist() == [r for r in want if r["id"] < 30]
    assert table.new_scan(Leaf("=", "dt", ("2030-01-01",))).plan() == []
    assert table.new_scan(Leaf("in", "dt", ("2024-01-01", "2024-01-03"))).plan() != []
    assert {s.directory.rsplit("/", 2)[-2] for s in table.new_scan(
        Leaf("in", "dt", ("2024-01-01", "2024-01-03"))).plan()} == {"dt=2024-01-01", "dt=2024-01-03"}
