"""`paimon-ds list | schema | options | files | history`: exact plain output and --json documents, exit statuses,
on tables the core writes (no Spark). Most runs go through main() in this process; one runs the entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog, Table
from paimon_ds.cli import main
from paimon_ds.cli.lsm import human_bytes
from paimon_ds.procedures import create_tag
from paimon_ds.schema.change import UpdateColumnComment

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> str:
    """db.events (partitioned, primary key; snapshots 1, 2; tag t1 on 1; a column comment), db.plain (no snapshot),
    other (an empty database)."""
    root = str(tmp_path_factory.mktemp("cli") / "wh")
    catalog = Catalog(root)
    for db in ("db", "other"):
        catalog.create_database(db)
    catalog.create_table("db.events", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                 pa.field("dt", pa.string(), nullable=False), ("v", pa.float64())]),
                         partition_keys=["dt"], primary_keys=["id", "dt"], options={"bucket": "1"})
    catalog.alter_table("db.events", [UpdateColumnComment("v", "the value")])
    catalog.create_table("db.plain", pa.schema([("x", pa.int32())]))
    path = catalog.table_path("db.events")
    paimon_ds.write_arrow(path, pa.table({"id": [1, 2, 1], "dt": ["a", "a", "b"], "v": [0.5, None, 2.0]}))
    create_tag(path, "t1")
    paimon_ds.write_arrow(path, pa.table({"id": [3], "dt": ["b"], "v": [3.0]}))
    return root


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)  # the whole of stdout is one document


def test_list(warehouse, capsys):
    events, plain = f"{warehouse}/db.db/events", f"{warehouse}/db.db/plain"
    assert run(capsys, "list", warehouse) == (0, (
        "  database  table   path\n"
        f"  db        events  {events}\n"
        f"  db        plain   {plain}\n"), "")
    assert run_json(capsys, "list", warehouse) == {
        "warehouse": warehouse, "databases": ["db", "other"],
        "tables": [{"database": "db", "table": "events", "path": events},
                   {"database": "db", "table": "plain", "path": plain}]}
    assert run(capsys, "list", warehouse, "--database", "other") == (0, f"no tables in {warehouse} "
                                                                        "(databases: other)\n", "")
    code, _, err = run(capsys, "list", warehouse, "--database", "nope")
    assert (code, err) == (3, f"paimon-ds: error: database 'nope' does not exist in {warehouse} "
                              "(databases: db, other)\n")
    code, _, err = run(capsys, "list", f"{warehouse}/missing")
    assert (code, err) == (3, f"paimon-ds: error: no warehouse at {warehouse}/missing: the directory does not exist\n")
    code, _, err = run(capsys, "list", events)
    assert code == 2 and err.startswith(f"paimon-ds: error: {events} is a Paimon table, not a warehouse")
    code, _, err = run(capsys, "list", warehouse, "--branch", "b")
    assert code == 2 and "`list` lists a warehouse's tables" in err


def test_schema(warehouse, capsys):
    path = f"{warehouse}/db.db/events"
    assert run(capsys, "schema", path) == (0, (
        f"table {path}: schema 1\n"
        "  id  column  type             key                comment\n"
        "   0  id      BIGINT NOT NULL  primary\n"
        "   1  dt      STRING NOT NULL  primary partition\n"
        "   2  v       DOUBLE                              the value\n"
        "  primary key: id, dt\n"
        "  partition keys: dt\n"), "")
    assert run_json(capsys, "schema", path) == {
        "path": path, "branch": "main", "schema_id": 1,
        "columns": [{"id": 0, "name": "id", "type": "BIGINT NOT NULL", "nullable": False, "description": None},
                    {"id": 1, "name": "dt", "type": "STRING NOT NULL", "nullable": False, "description": None},
                    {"id": 2, "name": "v", "type": "DOUBLE", "nullable": True, "description": "the value"}],
        "partition_keys": ["dt"], "primary_keys": ["id", "dt"], "comment": None}


def test_options(warehouse, capsys):
    path, plain = f"{warehouse}/db.db/events", f"{warehouse}/db.db/plain"
    assert run(capsys, "options", path) == (0, "  key     value\n  bucket  1\n", "")
    assert run_json(capsys, "options", path) == {"path": path, "branch": "main", "options": {"bucket": "1"}}
    assert run(capsys, "options", plain) == (0, f"no options stored in {plain} (every option has Paimon's "
                                                "default)\n", "")


def test_files(warehouse, capsys):
    path = f"{warehouse}/db.db/events"
    table = Table.load(path)
    expected = table.inspect.files().to_pylist()
    assert [(f["partition"], f["record_count"]) for f in expected] == [("[a]", 2), ("[b]", 1), ("[b]", 1)]
    doc = run_json(capsys, "files", path)
    assert doc == {"path": path, "branch": "main", "snapshot_id": 2, "files": [
        {**f, "creation_time": f["creation_time"].isoformat(sep=" ", timespec="milliseconds")} for f in expected]}
    names = [f["file_path"][len(path) + 1:] for f in expected]
    sizes = [human_bytes(f["file_size_in_bytes"]) for f in expected]
    total = human_bytes(sum(f["file_size_in_bytes"] for f in expected))
    width = max(len(s) for s in sizes)
    assert run(capsys, "files", path) == (0, "\n".join([
        f"3 data file(s) of snapshot 2: 4 rows, {total}",
        f"  partition  bucket  level  rows  {'size'.rjust(width)}  file",
        f"  [a]             0      0     2  {sizes[0].rjust(width)}  {names[0]}",
        f"  [b]             0      0     1  {sizes[1].rjust(width)}  {names[1]}",
        f"  [b]             0      0     1  {sizes[2].rjust(width)}  {names[2]}"]) + "\n", "")
    assert names[0].startswith("dt=a/bucket-0/data-") and names[1].startswith("dt=b/bucket-0/data-")
    # time travel: the files of snapshot 1, by id or by its tag
    old = [f["file_path"] for f in expected[:2]]
    assert [f["file_path"] for f in run_json(capsys, "files", path, "--snapshot", "1")["files"]] == old
    assert [f["file_path"] for f in run_json(capsys, "files", path, "--tag", "t1")["files"]] == old
    code, _, err = run(capsys, "files", path, "--snapshot", "9")
    assert (code, err) == (3, f"paimon-ds: error: snapshot 9 does not exist in {path}: The specified scan snapshotId 9 "
                              "is out of available snapshotId range [1, 2].\n")
    plain = f"{warehouse}/db.db/plain"
    assert run(capsys, "files", plain) == (0, f"no data files in {plain}\n", "")
    assert run_json(capsys, "files", plain) == {"path": plain, "branch": "main", "snapshot_id": None, "files": []}


def test_history(warehouse, capsys):
    path = f"{warehouse}/db.db/events"
    commits = Table.load(path).history()
    assert run_json(capsys, "history", path) == {"path": path, "branch": "main", "history": [
        {**c, "commit_time": c["commit_time"].isoformat(timespec="milliseconds")} for c in commits]}
    assert [(c["snapshot_id"], c["commit_kind"], c["total_record_count"], c["delta_record_count"])
            for c in commits] == [(2, "APPEND", 4, 1), (1, "APPEND", 3, 3)]
    times = [c["commit_time"].strftime("%Y-%m-%d %H:%M:%S.%f")[:23] for c in commits]
    users = [c["commit_user"] for c in commits]
    assert run(capsys, "history", path) == (0, (
        "  snapshot  committed (UTC)          kind    records  delta  schema  commit user\n"
        f"         2  {times[0]}  APPEND        4     +1       1  {users[0]}\n"
        f"         1  {times[1]}  APPEND        3     +3       1  {users[1]}\n"), "")
    assert [c["snapshot_id"] for c in run_json(capsys, "history", path, "--limit", "1")["history"]] == [2]
    assert len(run_json(capsys, "history", path, "--limit", "0")["history"]) == 2
    code, _, err = run(capsys, "history", path, "--limit", "-1")
    assert (code, err) == (2, "paimon-ds: error: --limit must be >= 0 (0: every commit), got -1\n")
    plain = f"{warehouse}/db.db/plain"
    assert run(capsys, "history", plain) == (0, f"no commits in {plain}\n", "")


def test_the_entry_point_runs_them(warehouse):
    """Through `python -m paimon_ds.cli`, as the `paimon-ds` script runs (one run: test_cli covers the rest)."""
    path = f"{warehouse}/db.db/events"
    done = subprocess.run([sys.executable, "-m", "paimon_ds.cli", "--json", "history", path, "--limit", "1"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert [c["snapshot_id"] for c in json.loads(done.stdout)["history"]] == [2]
