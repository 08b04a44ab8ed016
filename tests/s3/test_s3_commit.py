"""Commits on S3: creating `snapshot-N` with a conditional PUT (If-None-Match: *) is what keeps concurrent
committers from losing each other's commits.

Each guard is shown twice: on a store that honours the condition (the guard holds) and on one that drops it
but is trusted with `paimon_ds.s3.conditional-writes=true`, which is what a plain PUT does (the later writer silently
replaces the earlier one's snapshot). The racing processes run this file as a script (`race_worker` below).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.fs.file_io import FileIO, StorageError
from paimon_ds.manifest.files import ManifestList
from paimon_ds.operation.commit import TableCommit
from paimon_ds.operation.messages import CommitMessage
from paimon_ds.snapshot.manager import Snapshot
from paimon_ds.table import TableNotFound

SCHEMA = pa.schema([("user", pa.string()), ("i", pa.int64()), ("k", pa.int32())])
ROWS_PER_COMMIT = 2
# trust the store's conditional writes without probing: against a store that drops If-None-Match, a plain PUT
TRUST = {"paimon_ds.s3.conditional-writes": "true"}
PROCS, COMMITS = 4, 25
OPTIONS_ENV = "PAIMON_DS_TEST_S3_OPTIONS"  # storage options of the racing processes (kept off their argv)


def commit_rows(user: str, i: int) -> pa.Table:
    n = ROWS_PER_COMMIT
    return pa.table({"user": [user] * n, "i": [i] * n, "k": list(range(n))}, schema=SCHEMA)


def expected_rows(commits: list[tuple[str, int]]) -> pa.Table:
    return sort_rows(pa.concat_tables([commit_rows(u, i) for u, i in commits]))


def sort_rows(t: pa.Table) -> pa.Table:
    return t.select(SCHEMA.names).sort_by([("user", "ascending"), ("i", "ascending"), ("k", "ascending")])


def prepare(table: Table, user: str, i: int) -> list[CommitMessage]:
    w = table.new_write()
    w.write_arrow(commit_rows(user, i))
    return w.prepare_commit()


def write_commit(table: Table, user: str, i: int) -> tuple[TableCommit, Snapshot | None]:
    commit = table.new_commit(commit_user=user)
    return commit, commit.commit(prepare(table, user, i), identifier=i)


def read(path: str, opts: dict[str, str]) -> pa.Table:
    return sort_rows(Table.load(path, None, opts).to_arrow())


def snapshots(path: str, opts: dict[str, str]) -> list[Snapshot]:
    sm = Table.load(path, None, opts).snapshot_manager
    return [sm.snapshot(i) for i in sm.list_ids()]


def keys(s3_server, bucket: str) -> set[str]:
    return {k for k in s3_server.fs().find(bucket) if not k.endswith("/")}


def new_path(server) -> str:
    return f"s3://{server.new_bucket()}/warehouse/db.db/t"


# ---------------------------------------------------------------- the guard itself: one key, created twice
def test_try_create_twice_keeps_the_first(s3_server):
    io = FileIO(new_path(s3_server), s3_server.options())
    key = io.join("snapshot", "snapshot-1")
    assert io.try_create(key, b"first") is True
    assert io.try_create(key, b"second") is False
    assert io.read_bytes(key) == b"first"


def test_try_create_twice_on_a_store_without_conditions(s3_server_without_conditions):
    server = s3_server_without_conditions
    # trusted (what a plain PUT does): both creates "win" and the first content is gone -- a lost commit
    path = new_path(server)
    io = FileIO(path, {**server.options(), **TRUST})
    key = io.join("snapshot", "snapshot-1")
    assert io.try_create(key, b"first") is True
    assert io.try_create(key, b"second") is True
    assert io.read_bytes(key) == b"second"
    # probed (the default): refused before anything is written, and the probe object is gone
    bucket = server.new_bucket()
    io = FileIO(f"s3://{bucket}/t", server.options())
    with pytest.raises(StorageError, match=r"'paimon_ds\.s3\.single-writer'"):
        io.try_create(io.join("snapshot", "snapshot-1"), b"first")
    assert keys(server, bucket) == set()


# ---------------------------------------------------------------- two table commits racing for snapshot-N
def interleaved_commits(path: str, opts: dict[str, str], monkeypatch) -> dict:
    """Writers a and b prepare from the same base (snapshot 1); b commits while a is between building its
    snapshot-2 and creating it: the one interleaving where the guard decides whether b's commit survives."""
    write_commit(Table.for_write(path, SCHEMA, opts), "base", 0)
    a, b = Table.load(path, None, opts), Table.load(path, None, opts)
    msgs_a, msgs_b = prepare(a, "a", 1), prepare(b, "b", 1)
    commit_a, commit_b = a.new_commit("a"), b.new_commit("b")
    create = a.snapshot_manager.try_commit
    out: dict = {"a_tried": []}

    def a_creates(snapshot: Snapshot) -> bool:
        if not out["a_tried"]:
            out["b"] = commit_b.commit(msgs_b, identifier=1)
        out["a_tried"].append(snapshot.id)
        return create(snapshot)

    monkeypatch.setattr(a.snapshot_manager, "try_commit", a_creates)
    out["a"] = commit_a.commit(msgs_a, identifier=1)
    out["a_lost"], out["b_lost"] = commit_a.lost_races, commit_b.lost_races
    return out


def referenced_manifest_files(path: str, opts: dict[str, str]) -> set[str]:
    table = Table.load(path, None, opts)
    lists = ManifestList(table.io, table.root)
    names = set()
    for s in snapshots(path, opts):
        for name in (s.base_manifest_list, s.delta_manifest_list):
            names |= {name} | {m.file_name for m in lists.read(name)}
    return names


def test_table_commit_that_loses_the_race_is_retried(s3_server, monkeypatch):
    path, opts = new_path(s3_server), s3_server.options()
    out = interleaved_commits(path, opts, monkeypatch)
    assert out["b"].id == 2
    assert out["a_tried"] == [2, 3]  # a built snapshot-2 too, was refused, rebuilt on b's
    assert out["a"].id == 3
    assert (out["a_lost"], out["b_lost"]) == (1, 0)
    assert [(s.id, s.commit_user, s.commit_identifier, s.commit_kind) for s in snapshots(path, opts)] == [
        (1, "base", 0, "APPEND"), (2, "b", 1, "APPEND"), (3, "a", 1, "APPEND")]
    assert read(path, opts).equals(expected_rows([("base", 0), ("a", 1), ("b", 1)]))
    assert out["a"].total_record_count == 3 * ROWS_PER_COMMIT
    # the lost attempt's manifest lists were deleted: every manifest file left is one a snapshot uses
    table = Table.load(path, None, opts)
    assert set(table.io.list_names(f"{table.root}/manifest")) == referenced_manifest_files(path, opts)


def test_table_commit_race_without_the_guard_loses_a_commit(s3_server_without_conditions, monkeypatch):
    server = s3_server_without_conditions
    path, opts = new_path(server), {**server.options(), **TRUST}
    out = interleaved_commits(path, opts, monkeypatch)
    # both believe they created snapshot-2: a's PUT replaced b's, and nobody noticed
    assert out["b"].id == out["a"].id == 2
    assert out["a_tried"] == [2]
    assert (out["a_lost"], out["b_lost"]) == (0, 0)
    assert [(s.id, s.commit_user) for s in snapshots(path, opts)] == [(1, "base"), (2, "a")]
    assert read(path, opts).equals(expected_rows([("base", 0), ("a", 1)]))  # b's rows are lost


# ---------------------------------------------------------------- racing processes
def race_worker(path: str, user: str, commits: int, workdir: Path) -> None:
    """One racing committer: `commits` commits of distinct rows, started together with the others."""
    table = Table.load(path, {"commit.max-retries": "1000"}, json.loads(os.environ[OPTIONS_ENV]))
    (workdir / f"ready-{user}").touch()
    while not (workdir / "start").exists():
        time.sleep(0.001)
    started, lost = time.monotonic(), 0
    for i in range(commits):
        commit, _ = write_commit(table, user, i)
        lost += commit.lost_races
    print(json.dumps({"user": user, "lost_races": lost, "seconds": round(time.monotonic() - started, 2)}))


def race(workdir: Path, path: str, opts: dict[str, str]) -> list[dict]:
    """PROCS processes x COMMITS commits into one table, released together once all are ready."""
    workdir.mkdir()
    # PYTHONPATH: the processes import the paimon_ds under test (this checkout), not whichever one is installed
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, **{OPTIONS_ENV: json.dumps(opts)},
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    procs = [subprocess.Popen([sys.executable, __file__, path, f"proc{j}", str(COMMITS), str(workdir)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for j in range(PROCS)]
    try:
        deadline = time.monotonic() + 120
        while not all((workdir / f"ready-proc{j}").exists() for j in range(PROCS)):
            assert all(p.poll() is None for p in procs), "a racing process died before the start"
            assert time.monotonic() < deadline, "racing processes did not get ready"
            time.sleep(0.01)
        (workdir / "start").touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-4000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def new_race_table(path: str, opts: dict[str, str]) -> None:
    # schema only (an empty commit creates it, no snapshot): every snapshot after is one racing commit
    Table.for_write(path, SCHEMA, opts).new_commit("setup").commit([])
    assert snapshots(path, opts) == []


ALL_COMMITS = [(f"proc{j}", i) for j in range(PROCS) for i in range(COMMITS)]


def test_racing_processes_lose_no_commit(s3_server, tmp_path):
    path, opts = new_path(s3_server), s3_server.options()
    new_race_table(path, opts)
    t0 = time.monotonic()
    results = race(tmp_path / "race", path, opts)
    lost_races = sum(r["lost_races"] for r in results)
    print(f"\nguarded race: {PROCS} procs x {COMMITS} commits in {time.monotonic() - t0:.1f}s, "
          f"lost races (retried) {lost_races}: {results}")
    snaps = snapshots(path, opts)
    assert [s.id for s in snaps] == list(range(1, PROCS * COMMITS + 1))
    assert Counter(s.commit_kind for s in snaps) == {"APPEND": PROCS * COMMITS}
    assert Counter((s.commit_user, s.commit_identifier) for s in snaps) == Counter(ALL_COMMITS)
    assert read(path, opts).equals(expected_rows(ALL_COMMITS))  # every commit's rows, each exactly once
    assert snaps[-1].total_record_count == PROCS * COMMITS * ROWS_PER_COMMIT
    assert lost_races > 0  # they did race, and every lost race was retried


def test_racing_processes_without_the_guard_lose_commits(s3_server_without_conditions, tmp_path):
    server = s3_server_without_conditions
    path, opts = new_path(server), {**server.options(), **TRUST}
    new_race_table(path, opts)
    t0 = time.monotonic()
    results = race(tmp_path / "race", path, opts)
    rows = read(path, opts)
    present = Counter(zip(rows["user"].to_pylist(), rows["i"].to_pylist()))
    snaps = snapshots(path, opts)
    print(f"\nunguarded race: {PROCS} procs x {COMMITS} commits in {time.monotonic() - t0:.1f}s: "
          f"{len(present)} commits' rows present, {PROCS * COMMITS - len(present)} commits LOST, "
          f"{len(snaps)} snapshot files")
    # every committer believes all its commits landed...
    assert [r["lost_races"] for r in results] == [0] * PROCS
    # ...but later PUTs of snapshot-N replaced earlier ones: commits are gone, none duplicated
    assert len(present) < PROCS * COMMITS
    assert len(snaps) < PROCS * COMMITS
    assert set(present) <= set(ALL_COMMITS)
    assert rows.equals(expected_rows(sorted(present)))


# ---------------------------------------------------------------- refusal on a store without conditional writes
def test_commit_to_a_store_without_conditions_is_refused(s3_server_without_conditions):
    server = s3_server_without_conditions
    bucket = server.new_bucket()
    path, opts = f"s3://{bucket}/warehouse/db.db/t", server.options()
    # a new table: nothing of it is created, and commit_or_abort removes the data files written
    table = Table.for_write(path, SCHEMA, opts)
    msgs = prepare(table, "u", 1)
    with pytest.raises(StorageError) as refused:
        table.new_commit("u").commit_or_abort(msgs, identifier=1)
    assert "option 'paimon_ds.s3.single-writer' = 'true'" in str(refused.value)
    assert keys(server, bucket) == set()
    assert not Table.exists(path, opts)
    with pytest.raises(TableNotFound):
        Table.load(path, None, opts)

    # the user vouches for a single committer: the commit lands and reads back exactly
    single = {**opts, "paimon_ds.s3.single-writer": "true"}
    snap = write_commit(Table.for_write(path, SCHEMA, single), "u", 1)[1]
    assert snap.id == 1
    assert read(path, opts).equals(expected_rows([("u", 1)]))
    before = keys(server, bucket)

    # an existing table, default options: refused with the table unchanged; plain commit() (no abort)
    # leaves only the data files it wrote, which no snapshot references
    table = Table.load(path, None, opts)
    msgs = prepare(table, "v", 2)
    with pytest.raises(StorageError, match=r"'paimon_ds\.s3\.single-writer'"):
        table.new_commit("v").commit(msgs, identifier=2)
    left = keys(server, bucket) - before
    assert keys(server, bucket) >= before
    assert left == {p for m in msgs for p in m.file_paths(table.root)}
    assert all(p.endswith(".parquet") for p in left) and len(left) == 1
    assert [s.id for s in snapshots(path, opts)] == [1]
    assert read(path, opts).equals(expected_rows([("u", 1)]))

    # and with paimon_ds.s3.single-writer=true the next commit lands on top
    snap = write_commit(Table.load(path, None, single), "v", 2)[1]
    assert snap.id == 2
    assert read(path, opts).equals(expected_rows([("u", 1), ("v", 2)]))


# ---------------------------------------------------------------- credentials
def test_credentials_never_reach_table_files(s3_server):
    bucket = s3_server.new_bucket()
    path, opts = f"s3://{bucket}/warehouse/db.db/t", s3_server.options()
    pk_schema = pa.schema([pa.field("user", pa.string(), nullable=False), ("i", pa.int64()), ("k", pa.int32())])
    # Paimon's option names, given as table options (with the table's own)
    table = Table.for_write(path, pk_schema, {"primary-key": "user", "bucket": "2", **opts})
    w = table.new_write()
    w.write_arrow(pa.table({"user": ["a", "b"], "i": [1, 2], "k": [0, 0]}, schema=pk_schema))
    table.new_commit("u").commit(w.prepare_commit(), identifier=1)
    # Hadoop's S3A names
    hadoop = {"fs.s3a.endpoint": s3_server.endpoint, "fs.s3a.access.key": s3_server.ACCESS_KEY,
              "fs.s3a.secret.key": s3_server.SECRET_KEY, "fs.s3a.path.style.access": "true"}
    table = Table.for_write(path, pk_schema, hadoop)
    w = table.new_write()
    w.write_arrow(pa.table({"user": ["b", "c"], "i": [3, 4], "k": [0, 0]}, schema=pk_schema))
    table.new_commit("u").commit(w.prepare_commit(), identifier=2)

    loaded = Table.load(path, None, opts)
    assert loaded.to_arrow().sort_by("user").to_pydict() == {"user": ["a", "b", "c"], "i": [1, 3, 4],
                                                             "k": [0, 0, 0]}
    assert loaded.table_schema.options == {"bucket": "2"}
    fs = s3_server.fs()
    files = sorted(keys(s3_server, bucket))
    kinds = Counter(k.split("/warehouse/db.db/t/", 1)[1].split("/", 1)[0] for k in files)
    assert kinds["schema"] == 1 and kinds["snapshot"] == 4 and kinds["manifest"] >= 4
    assert sum(n for d, n in kinds.items() if d.startswith("bucket-")) >= 2
    secrets = (s3_server.ACCESS_KEY.encode(), s3_server.SECRET_KEY.encode())
    holding = [k for k in files for s in secrets if s in fs.cat_file(k)]
    assert holding == []


if __name__ == "__main__":
    race_worker(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
