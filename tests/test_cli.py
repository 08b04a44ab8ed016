"""The `paimon-ds` command line, run as a subprocess on tables the core writes (no Spark): its --json documents
field by field, exit statuses and one-line errors, plain output (no progress, no ANSI codes) off a terminal, rich
output in a pseudo-terminal, the LSM picture (terminal bars and SVG), storage options, and a run without rich or
pyspark importable."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.cli import main
from paimon_ds.cli.storage_args import storage_options
from paimon_ds.format.binary_row import deserialize_row

REPO = Path(__file__).resolve().parent.parent
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
PART_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                         ("v", pa.int64())])
# trigger 2: stop trigger 5 (trigger + 3) and 3 levels (trigger + 1), so few commits show every state of debt
PART_OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "1", "write-only": "true",
                "num-sorted-run.compaction-trigger": "2"}
ANSI = re.compile(r"\x1b\[")
SVG = "{http://www.w3.org/2000/svg}"


def upsert(path: str, ids: range, v: int, **storage) -> None:
    table = Table.for_write(path, SCHEMA, {"primary-key": "id", "bucket": "2", "write-only": "true"},
                            storage or None)
    write = table.new_write()
    write.write_arrow(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def write_partitions(path: str, partitions: list[str], v: int) -> None:
    table = Table.for_write(path, PART_SCHEMA, PART_OPTIONS)
    write = table.new_write()
    ids = [i for i in range(len(partitions) * 10)]
    write.write_arrow(pa.table({"id": ids, "dt": [partitions[i % len(partitions)] for i in ids], "v": [v] * len(ids)},
                               schema=PART_SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def rows(path: str) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in Table.load(path).to_arrow().to_pylist())


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**out, "PYTHONPATH": str(REPO), **extra}


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paimon_ds.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=kwargs.pop("env", None) or env(), timeout=300, **kwargs)


def cli_json(*args: str) -> dict:
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)  # the whole of stdout is one document


def in_terminal(args: list[str], extra_env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run a command with stdout and stderr on a pseudo-terminal; (exit status, what the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=REPO,
                            env=env(TERM="xterm-256color", COLUMNS="200", LINES="50", **(extra_env or {})))
    os.close(slave)
    received = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            raise AssertionError("the command did not finish")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    return proc.wait(timeout=60), received.decode("utf-8", "replace")


def live_files(path: str) -> dict[tuple[str, int], list]:
    """(dt, bucket) -> the live files of the latest snapshot, from the core."""
    scan = Table.load(path).new_scan()
    out: dict[tuple[str, int], list] = defaultdict(list)
    for e in scan.read_entries():
        out[(deserialize_row(e.partition, scan.partition_types)[0], e.bucket)].append(e.file)
    return out


@pytest.fixture
def lsm_table(tmp_path) -> str:
    """Partitions a, b, c of one bucket each: a compacted to the top level then written once more (2 runs: at the
    trigger), b written 6 times (6 runs: over the stop trigger 5), c written 3 times (3 runs: over the trigger 2)."""
    path = str(tmp_path / "lsm")
    for i in range(6):
        write_partitions(path, ["a", "b", "c"] if i < 3 else ["b"], v=i)
    assert main(["compact", path, "--full", "--partitions", "dt=a"]) == 0
    write_partitions(path, ["a"], v=9)
    return path


# ---------------------------------------------------------------------------------------------------- describe
def test_describe_json_field_by_field(lsm_table):
    path = lsm_table
    doc = cli_json("describe", path, "--limit", "3")
    sm = Table.load(path).snapshot_manager
    assert list(doc) == ["path", "branch", "schema_id", "columns", "partition_keys", "primary_keys", "options",
                         "snapshot_count", "snapshots", "latest_snapshot_id", "compaction", "buckets", "lsm_image"]
    assert doc["path"] == path and doc["branch"] == "main" and doc["schema_id"] == 0
    assert doc["columns"] == [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
                              {"name": "v", "type": "BIGINT"}]
    assert doc["partition_keys"] == ["dt"] and doc["primary_keys"] == ["id", "dt"]
    assert doc["options"] == {"bucket": "1", "num-sorted-run.compaction-trigger": "2", "write-only": "true"}
    # 6 writes, the compaction, 1 write: the latest 3 of 8, oldest first
    assert doc["snapshot_count"] == 8 and doc["latest_snapshot_id"] == 8
    assert [s["id"] for s in doc["snapshots"]] == [6, 7, 8]
    assert [s["commit_kind"] for s in doc["snapshots"]] == ["APPEND", "COMPACT", "APPEND"]
    for s in doc["snapshots"]:
        stored = sm.snapshot(s["id"])
        assert s == {"id": stored.id, "schema_id": 0, "commit_kind": stored.commit_kind,
                     "commit_user": stored.commit_user, "commit_identifier": stored.commit_identifier,
                     "time_millis": stored.time_millis, "total_record_count": stored.total_record_count,
                     "delta_record_count": stored.delta_record_count}
    assert doc["compaction"] == {"compaction_trigger": 2, "stop_trigger": 5, "num_levels": 3}
    assert doc["lsm_image"] is None

    files = live_files(path)
    assert [(b["partition"], b["bucket"]) for b in doc["buckets"]] == [({"dt": "a"}, 0), ({"dt": "b"}, 0),
                                                                       ({"dt": "c"}, 0)]
    assert doc["snapshots"][-1]["total_record_count"] == sum(f.row_count for fs in files.values() for f in fs)
    expected_runs = {"a": [0, 2], "b": [0] * 6, "c": [0] * 3}  # newest first: level-0 files, then level 2
    expected_debt = {"a": "ok", "b": "over-stop-trigger", "c": "over-trigger"}
    for b in doc["buckets"]:
        dt = b["partition"]["dt"]
        bucket_files = files[(dt, 0)]
        assert b["files"] == len(bucket_files) == len(expected_runs[dt])
        assert b["rows"] == sum(f.row_count for f in bucket_files)
        assert b["bytes"] == sum(f.file_size for f in bucket_files)
        assert b["sorted_runs"] == len(expected_runs[dt]) and b["debt"] == expected_debt[dt]
        assert [r["level"] for r in b["runs"]] == expected_runs[dt]
        assert all(r["files"] == 1 for r in b["runs"])
        by_level = defaultdict(list)
        for f in bucket_files:
            by_level[f.level].append(f)
        assert b["levels"] == [{"level": lv, "files": len(fs), "rows": sum(f.row_count for f in fs),
                                "bytes": sum(f.file_size for f in fs)} for lv, fs in sorted(by_level.items())]
    # level 0's runs newest first: the bucket of b lists its files by descending sequence number
    b_runs = doc["buckets"][1]["runs"]
    b_files = sorted(files[("b", 0)], key=lambda f: -f.max_sequence_number)
    assert [r["bytes"] for r in b_runs] == [f.file_size for f in b_files]

    assert cli_json("describe", path, "--limit", "0")["snapshots"][0]["id"] == 1
    assert len(cli_json("describe", path)["snapshots"]) == 8  # default limit 20


def test_describe_plain_text(lsm_table):
    done = cli("describe", lsm_table, "--limit", "2")
    assert done.returncode == 0 and done.stderr == ""
    out = done.stdout
    assert not ANSI.search(out) and "\r" not in out
    assert "  primary key: id, dt\n" in out
    assert "\noptions\n  bucket = 1\n  num-sorted-run.compaction-trigger = 2\n  write-only = true\n" in out
    assert "snapshots (latest 2 of 8; --limit 0 shows all)" in out
    assert re.search(r"^\s+7\s+COMPACT\s", out, re.M) and re.search(r"^\s+8\s+APPEND\s", out, re.M)
    assert not re.search(r"^\s+6\s+APPEND\s", out, re.M)
    # one bar per bucket: each run by its level's digit, `|` after the trigger's cell, `!` after the stop trigger's
    bars = re.findall(r"^  dt=(\w)\s.*?(\[[^\]]*\])", out, re.M)
    assert bars == [("a", "[02|...!.]"), ("b", "[00|000!0]"), ("c", "[00|0..!.]")]
    assert "L0: 1 file " in out and "L2: 1 file " in out and "L0: 6 files " in out
    assert f"2 bucket(s) over the compaction trigger: `paimon-ds compact {lsm_table}` compacts them" in out


def test_lsm_image_is_svg_with_a_row_per_bucket(lsm_table, tmp_path):
    image = tmp_path / "lsm.svg"
    doc = cli_json("describe", lsm_table, "--lsm-image", str(image))
    assert doc["lsm_image"] == str(image)
    root = ET.parse(image).getroot()
    assert root.tag == f"{SVG}svg"
    rows = root.findall(f".//{SVG}g[@class='bucket']")
    assert [(g.get("data-partition"), g.get("data-bucket"), g.get("data-sorted-runs"), g.get("data-debt"))
            for g in rows] == [("dt=a", "0", "2", "ok"), ("dt=b", "0", "6", "over-stop-trigger"),
                               ("dt=c", "0", "3", "over-trigger")]
    for g, bucket in zip(rows, doc["buckets"]):
        runs = g.findall(f"{SVG}g[@class='run']")
        assert [(int(r.get("data-level")), int(r.get("data-files")), int(r.get("data-bytes"))) for r in runs] == \
            [(r["level"], r["files"], r["bytes"]) for r in bucket["runs"]]
        # each run: a cell against the triggers and a segment sized by its bytes, both in its level's colour
        for run in runs:
            slot, size = run.find(f"{SVG}rect[@class='slot']"), run.find(f"{SVG}rect[@class='size']")
            assert slot.get("fill") == size.get("fill")
        widths = [float(r.find(f"{SVG}rect[@class='size']").get("width")) for r in runs]
        biggest = max(b["bytes"] for b in doc["buckets"])
        assert sum(widths) == pytest.approx(360 * bucket["bytes"] / biggest, abs=0.05 * len(runs))
    level_fills = {r.get("data-level"): r.find(f"{SVG}rect").get("fill") for r in root.iter(f"{SVG}g")
                   if r.get("class") == "run"}
    assert set(level_fills) == {"0", "2"} and level_fills["0"] != level_fills["2"]
    lines = {ln.get("class"): int(ln.get("data-runs")) for ln in root.iter(f"{SVG}line") if ln.get("class")}
    assert lines == {"compaction-trigger": 2, "stop-trigger": 5}


def test_append_table_describe_has_no_runs(tmp_path):
    path = str(tmp_path / "append")
    schema = pa.schema([("x", pa.int64())])
    table = Table.for_write(path, schema, {"bucket": "-1"})
    write = table.new_write()
    write.write_arrow(pa.table({"x": [1, 2, 3]}, schema=schema))
    table.new_commit().commit(write.prepare_commit())
    doc = cli_json("describe", path)
    assert doc["compaction"] is None and doc["primary_keys"] == []
    [bucket] = doc["buckets"]
    assert bucket["rows"] == 3 and bucket["files"] == 1 and bucket["sorted_runs"] is None and bucket["runs"] is None
    done = cli("describe", path, "--lsm-image", str(tmp_path / "x.svg"))
    assert done.returncode == 2 and not (tmp_path / "x.svg").exists()
    assert done.stderr == f"paimon-ds: error: --lsm-image: {path} is an append table (no primary key): it has no " \
                          "sorted runs\n"


# ---------------------------------------------------------------------------------------------------- --json
def test_json_for_every_command(tmp_path):
    path = str(tmp_path / "t")
    for i in range(4):
        upsert(path, range(i * 2, i * 2 + 10), v=i)
    expected = rows(path)

    assert cli_json("tag", path, "t2", "--snapshot", "2") == {"tag": "t2", "snapshot_id": 2}
    assert cli_json("branch", path, "b1", "--tag", "t2") == {"branch": "b1", "created": True, "from_tag": "t2"}
    assert cli_json("branch", path, "b1", "--tag", "t2", "--ignore-if-exists") == \
        {"branch": "b1", "created": False, "from_tag": "t2"}
    assert cli_json("branch", path, "b2") == {"branch": "b2", "created": True, "from_tag": None}
    assert cli_json("branches", path) == {"branches": ["main", "b1", "b2"]}
    assert cli_json("rename-branch", path, "b2", "b3") == {"from": "b2", "to": "b3"}
    assert cli_json("delete-branch", path, "b3") == {"deleted_branches": ["b3"]}
    # the branch at tag t2 (snapshot 2), described through --branch given after the command
    branch_doc = cli_json("describe", path, "--branch", "b1")
    assert branch_doc["branch"] == "b1" and branch_doc["latest_snapshot_id"] == 2

    compacted = cli_json("compact", path, "--full")
    assert compacted == {"compacted_buckets": 2, "snapshot_id": 5}
    assert cli_json("compact", path, "--full") == {"compacted_buckets": 0, "snapshot_id": None}
    assert rows(path) == expected

    expired = cli_json("expire", path, "--retain-min", "1", "--retain-max", "2")
    assert expired["expired_snapshots"] == [1, 2, 3] and expired["deleted_files"] > 0
    assert cli_json("fast-forward", path, "b1") == {"branch": "main", "from_branch": "b1", "latest_snapshot_id": 2}
    assert cli_json("rollback", path, "--tag", "t2") == {"snapshot_id": 2}
    orphans = cli_json("remove-orphans", path, "--older-than", "0 ms", "--dry-run")
    assert orphans["dry_run"] is True and orphans["files"] and all(isinstance(f, str) for f in orphans["files"])
    deleted = cli_json("remove-orphans", path, "--older-than", "0 ms")
    assert sorted(deleted["files"]) == sorted(orphans["files"])
    assert cli_json("delete-tag", path, "t2")["tag"] == "t2"
    assert rows(path) == sorted((i, 1 if i >= 2 else 0) for i in range(12))  # snapshot 2: ids 0-11


# ---------------------------------------------------------------------------------------------------- errors
def test_errors_are_one_line_with_exit_codes_and_change_nothing(tmp_path):
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    before = sorted((p.name, p.stat().st_size) for p in Path(path).rglob("*"))
    missing = str(tmp_path / "missing")
    cases = [
        (["describe", missing], 3, f"no Paimon table at {missing}"),
        (["rollback", path, "--snapshot", "7"], 3, f"snapshot 7 does not exist in {path}"),
        (["tag", path, "x", "--snapshot", "9"], 3, f"snapshot 9 does not exist in {path}"),
        (["describe", path, "-o", "foo.bar=1"], 2, "--option: 'foo.bar' is not a storage option (keys start with "
                                                   "s3., s3a., fs. or hadoop., or are fsspec arguments without a dot)"),
        (["describe", path, "-o", "s3.endpoint"], 2, "--option: expected KEY=VALUE, got 's3.endpoint'"),
        (["describe", path, "--limit", "-1"], 2, "--limit must be >= 0 (0: every snapshot), got -1"),
        (["expire", path, "--older-than", "3 fortnights"], 2,
         "--older-than: not a duration: '3 fortnights' (unit 'fortnights' is not one of Paimon's: d, h, min, m, s, "
         "ms, µs, ns, day(s), hour(s), minute(s), sec(s), second(s), milli(s), micro(s), nano(s)...)"),
        (["compact", path, "--partitions", "dt=a"], 2, f"--partitions: table {path} is not partitioned; it has no "
                                                       "partitions [{'dt': 'a'}]"),
        (["describe", path, "--options-file", str(tmp_path / "nope.properties")], 2,
         f"--options-file: cannot read {tmp_path / 'nope.properties'}: No such file or directory"),
        (["branch", path, "123"], 2, "branch name cannot be a pure numeric string but is '123'"),
        (["fast-forward", path, "nosuch"], 3, None),
    ]
    for args, code, message in cases:
        done = cli(*args)
        assert done.returncode == code, (args, done.stderr)
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("paimon-ds: error: "), (args, done.stderr)
        if message is not None:
            assert lines[0] == f"paimon-ds: error: {message}"
    # --json: the error as the one document on stdout too
    done = cli("rollback", path, "--snapshot", "7", "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout) == {"error": {"type": "SnapshotNotFound", "exit_code": 3,
                                                 "message": f"snapshot 7 does not exist in {path}"}}
    # argparse's own refusals: status 2, its usage message
    done = cli("rollback", path, "--snapshot", "abc")
    assert done.returncode == 2 and "invalid int value: 'abc'" in done.stderr and done.stdout == ""
    assert cli("frobnicate", path).returncode == 2
    assert sorted((p.name, p.stat().st_size) for p in Path(path).rglob("*")) == before
    # -v adds the traceback of a refused command
    done = cli("-v", "rollback", path, "--snapshot", "7")
    assert done.returncode == 3 and "Traceback" in done.stderr
    assert done.stderr.splitlines()[-1] == f"paimon-ds: error: snapshot 7 does not exist in {path}"


CONFLICT = """
import sys
import paimon_ds.operation.compact as compact
from paimon_ds import Table
from paimon_ds.cli import main
from paimon_ds.cli.storage_args import storage_options
from paimon_ds.format.binary_row import deserialize_row

path = sys.argv[1]
original = compact.run_compaction
raced = []

def run_then_lose_the_race(table, task, full):
    # once the command has compacted a bucket, another writer fully compacts the table and commits first
    result = original(table, task, full)
    if not raced:
        raced.append(True)
        compact.compact_in_process(Table.load(path), None, full=True)
    return result

compact.run_compaction = run_then_lose_the_race
sys.exit(main(["compact", path, "--full"]))
"""


def test_commit_conflict_is_one_line_exit_4(tmp_path):
    path = str(tmp_path / "t")
    for i in range(2):
        upsert(path, range(i * 2, i * 2 + 10), v=i)
    done = subprocess.run([sys.executable, "-c", CONFLICT, path], capture_output=True, text=True, cwd=REPO,
                          env=env(), timeout=300)
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.splitlines()
    assert re.fullmatch(r"paimon-ds: error: files \[.*\] this commit replaces were already removed by another "
                        r"commit; its result is discarded \(run it again\)", line)
    assert Table.load(path).snapshot_manager.latest_id() == 3  # the other writer's compaction only


def test_version():
    done = cli("--version")
    assert done.returncode == 0 and done.stdout == f"paimon-ds {paimon_ds.__version__}\n"


# ---------------------------------------------------------------------------------------------------- output
def test_plain_when_not_a_terminal(lsm_table):
    # stdout and stderr are pipes: results only, no progress display, no ANSI escape, no carriage return
    done = cli("compact", lsm_table)
    assert done.returncode == 0
    # b and c are over the trigger; a's two runs, at the trigger and of one size, are taken by the size ratio
    assert done.stdout == "compacted 3 bucket(s): snapshot 9\n" and done.stderr == ""
    done = cli("describe", lsm_table)
    assert not ANSI.search(done.stdout + done.stderr) and "\r" not in done.stdout + done.stderr


def test_rich_output_in_a_terminal(lsm_table):
    code, screen = in_terminal([sys.executable, "-m", "paimon_ds.cli", "describe", lsm_table])
    assert code == 0, screen
    assert ANSI.search(screen)
    assert "█" in screen and "┃" in screen  # the runs' bars and the trigger marks
    assert "[02|" not in screen  # not the plain bars
    assert "num-sorted-run.compaction-trigger" in screen and "write-only" in screen
    code, screen = in_terminal([sys.executable, "-m", "paimon_ds.cli", "compact", lsm_table, "--full"])
    assert code == 0, screen
    assert "compacting buckets" in screen and "3/3" in screen and "━" in screen  # rich's progress bar
    assert "compacted 3 bucket(s): snapshot 9" in screen
    code, screen = in_terminal([sys.executable, "-m", "paimon_ds.cli", "describe", lsm_table, "--plain"])
    assert code == 0 and not ANSI.search(screen) and "[2.|...!.]" in screen


BLOCKED = """
import importlib.abc
import sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from paimon_ds.cli import main
from paimon_ds.cli.storage_args import storage_options
from paimon_ds.format.binary_row import deserialize_row
code = main(sys.argv[1:])
assert not {blocked!r} & set(sys.modules), sorted({blocked!r} & set(sys.modules))
sys.exit(code)
"""


@pytest.mark.parametrize("blocked", [("rich",), ("pyspark",), ("rich", "pyspark")])
def test_works_without_rich_or_pyspark(lsm_table, blocked):
    script = [sys.executable, "-c", BLOCKED.format(blocked=set(blocked))]
    done = subprocess.run([*script, "describe", lsm_table], capture_output=True, text=True, cwd=REPO, env=env(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[00|000!0]" in done.stdout and not ANSI.search(done.stdout)
    if "rich" in blocked:  # a terminal without rich: plain text, and a plain counter as progress
        code, screen = in_terminal([*script, "describe", lsm_table])
        assert code == 0 and "[00|000!0]" in screen and not ANSI.search(screen)
        code, screen = in_terminal([*script, "compact", lsm_table])
        assert code == 0 and "\rcompacting buckets: 3/3" in screen and not ANSI.search(screen)


# ---------------------------------------------------------------------------------------------------- storage
def test_storage_options_reach_s3(s3_table, tmp_path):
    path, options = s3_table
    upsert(path, range(5), v=1, **options)
    no_aws = env(AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
                 AWS_EC2_METADATA_DISABLED="true")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_S3"):
        no_aws.pop(key, None)
    endpoint = ["-o", f"s3.endpoint={options['s3.endpoint']}", "-o", "s3.path.style.access=true"]

    done = cli("describe", path, *endpoint, "--json", env=no_aws)
    assert done.returncode == 2 and done.stderr.startswith(f"paimon-ds: error: no S3 credentials for {path}: no "
                                                           "access key and secret key. Give -o s3.access-key=")
    # the secrets from a properties file, the endpoint on the command line
    secrets = tmp_path / "s3.properties"
    secrets.write_text(f"# test credentials\ns3.access-key = {options['s3.access-key']}\n"
                       f"s3.secret-key: {options['s3.secret-key']}\n")
    done = cli("describe", path, *endpoint, "--options-file", str(secrets), "--json", env=no_aws)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["path"] == path and doc["latest_snapshot_id"] == 1 and sum(b["rows"] for b in doc["buckets"]) == 5
    # all of them from a JSON file
    as_json = tmp_path / "s3.json"
    as_json.write_text(json.dumps({**options, "s3.path.style.access": True}))
    assert cli_json("branches", path, "--options-file", str(as_json)) == {"branches": ["main"]}


@pytest.mark.parametrize("name, text, message", [
    ("opts.json", "[1, 2]", "expected a JSON object of KEY: VALUE (strings, numbers or booleans)"),
    ("opts", "{bad json", "not valid JSON: "),
    ("opts", "s3.endpoint http://x\njustakey\n", "line 2: expected key=value or key: value"),
    ("opts", "bucket.name=x\n", "'bucket.name' is not a storage option"),
])
def test_bad_options_file(tmp_path, name, text, message):
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    file = tmp_path / name
    file.write_text(text)
    done = cli("describe", path, "--options-file", str(file))
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------------------- in process
def test_maintenance_commands_in_process(tmp_path, capsys):
    path = str(tmp_path / "t")
    for i in range(6):
        upsert(path, range(i * 2, i * 2 + 10), v=i)
    expected = rows(path)

    assert main(["describe", path]) == 0
    out = capsys.readouterr().out
    assert "primary key: id" in out and "APPEND" in out
    assert out.count("L0: 6 files") == 2  # two buckets, level-0 files only (write-only): over the trigger
    assert main(["compact", path, "--full"]) == 0
    assert capsys.readouterr().out == "compacted 2 bucket(s): snapshot 7\n"
    assert rows(path) == expected
    main(["describe", path])
    out = capsys.readouterr().out
    assert out.count("L5: 1 file ") == 2 and "[5....|...!.]" in out  # one run per bucket, at the top level
    assert main(["tag", path, "before", "--snapshot", "3"]) == 0
    assert main(["expire", path, "--retain-min", "1", "--retain-max", "2"]) == 0
    assert "expired 5 snapshot(s) [1, 2, 3, 4, 5]" in capsys.readouterr().out
    assert main(["rollback", path, "--tag", "before"]) == 0
    assert Table.load(path).snapshot_manager.list_ids() == [3]
    assert main(["remove-orphans", path, "--older-than", "0 ms", "--dry-run"]) == 0
    assert "would delete" in capsys.readouterr().out


def test_console_script_is_installed(tmp_path):
    script = shutil.which("paimon-ds", path=str(Path(sys.executable).parent))
    assert script is not None, "reinstall the package (make test does): the paimon-ds entry point is missing"
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    out = subprocess.run([script, "describe", path], capture_output=True, text=True, check=True, cwd=REPO,
                         env=env()).stdout
    assert f"table {path}" in out


def test_compact_given_partitions_only(tmp_path, capsys):
    path = str(tmp_path / "p")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    for i in range(3):
        table = Table.for_write(path, schema, {"primary-key": "id,dt", "partition": "dt", "bucket": "1",
                                               "write-only": "true"})
        write = table.new_write()
        write.write_arrow(pa.table({"id": [i, i, i], "dt": ["a", "b", "c"]}, schema=schema))
        table.new_commit().commit(write.prepare_commit())

    def files_per_partition() -> list[tuple[str, int]]:
        return sorted((d.name, len(list(d.glob("bucket-0/*.parquet")))) for d in Path(path).glob("dt=*"))

    assert main(["compact", path, "--full", "--partitions", "dt=a;dt=c"]) == 0
    assert "compacted 2 bucket(s)" in capsys.readouterr().out
    # compacted partitions keep their old files until expiry: count the live ones through the table
    live = sorted((e.partition, e.file.level) for e in Table.load(path).new_scan().read_entries())
    assert len(live) == 1 + 3 + 1
    assert files_per_partition() == [("dt=a", 4), ("dt=b", 3), ("dt=c", 4)]
    assert main(["compact", path, "--partitions", "nope=1"]) == 2
    assert capsys.readouterr().err == ("paimon-ds: error: --partitions: ['nope'] are not partition keys of the table "
                                       "(partition keys: ['dt'])\n")


def test_options_file_forms(tmp_path):
    props = tmp_path / "a.properties"
    props.write_text("! comment\n# another\n\ns3.endpoint = http://h:9000\ns3.access-key:AK\nfs.s3a.x=a=b\n"
                     "s3.region eu-west-1\n")
    # -o wins over the file
    assert storage_options(["s3.access-key=BK", "anon=true"], str(props)) == \
        {"s3.endpoint": "http://h:9000", "s3.access-key": "BK", "fs.s3a.x": "a=b", "s3.region": "eu-west-1",
         "anon": "true"}
    as_json = tmp_path / "a.json"
    as_json.write_text(json.dumps({"s3.path.style.access": True, "s3.endpoint": "http://h"}))
    assert storage_options([], str(as_json)) == {"s3.path.style.access": "true", "s3.endpoint": "http://h"}
    assert storage_options([], None) is None


LOGGING = """
import logging
import sys
from paimon_ds.cli import main

code = main(sys.argv[1:])
logging.getLogger("paimon_ds.operation.commit").info("an info record")
logging.getLogger("paimon_ds.fs.file_io").debug("a debug record")
logging.getLogger("elsewhere").info("not paimon_ds's")
sys.exit(code)
"""


@pytest.mark.parametrize("flags, expected", [
    ([], []),
    (["-v"], ["paimon-ds: INFO paimon_ds.operation.commit: an info record"]),
    (["-v", "-v"], ["paimon-ds: INFO paimon_ds.operation.commit: an info record",
                    "paimon-ds: DEBUG paimon_ds.fs.file_io: a debug record"]),
])
def test_verbose_logs_paimon_ds_records_on_stderr(tmp_path, flags, expected):
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    # -v before the command and after it count together
    done = subprocess.run([sys.executable, "-c", LOGGING, *flags[:1], "branches", path, *flags[1:]],
                          capture_output=True, text=True, cwd=REPO, env=env(), timeout=300)
    assert done.returncode == 0 and done.stdout == "main\n"
    assert done.stderr.splitlines() == expected
