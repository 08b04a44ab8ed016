"""Exactly-once streaming writes under driver crashes (SIGKILL at random points, then restart).

The driver (tests/spark/stream_job.py) runs two queries over one file source of numbered events:
one into an append table, one into a primary-key table (CDC). It is killed with SIGKILL several
times while batches are in flight, restarted from the same checkpoints each time, and finally run
to the end. Every event must then be in the append table exactly once, the primary-key table must
equal the model, every micro-batch must have exactly one data snapshot, and both oracles must read
what paimon_ds reads.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ds import Table
from paimon_ds.mergetree.compact import sorted_runs
from paimon_ds.operation.scan import TableScan

JOB = Path(__file__).with_name("stream_job.py")
KEYS = 300


def make_input(directory: Path, files: int, per_file: int, seed: int) -> dict[int, tuple[int, str]]:
    """Event files, oldest first (the file source reads them in modification-time order); the model
    of the primary-key table afterwards: key -> (value, op)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    model: dict[int, tuple[int, str]] = {}
    event = 0
    start = time.time() - files - 10
    for f in range(files):
        keys = rng.sample(range(KEYS), per_file)  # a key at most once per file: one order per batch
        ops = ["-D" if rng.random() < 0.15 else ("+U" if k in model else "+I") for k in keys]
        events = list(range(event, event + per_file))
        event += per_file
        for k, e, op in zip(keys, events, ops):
            if op == "-D":
                model.pop(k, None)
            else:
                model[k] = (e, op)
        path = directory / f"events-{f:04d}.parquet"
        pq.write_table(pa.table({"event": pa.array(events, pa.int64()), "key": pa.array(keys, pa.int64()),
                                 "value": pa.array(events, pa.int64()), "op": ops,
                                 "file": pa.array([f] * per_file, pa.int32())}), path)
        os.utime(path, (start + f, start + f))
    return model


class Warehouse:
    """Where the job's tables live: BASE/warehouse on local disk, or a warehouse on the S3 test server."""

    def __init__(self, base: Path, s3=None) -> None:
        self.s3 = s3
        self.root = f"s3://{s3.new_bucket('stream')}/warehouse" if s3 else str(base / "warehouse")
        self.storage = s3.options() if s3 else None

    def table(self, name: str) -> str:
        return f"{self.root}/db.db/{name}"

    def local_copy(self, name: str, tmp: Path) -> str:
        """The table on local disk, for the oracles (their bundled Hadoop has no S3A)."""
        if self.s3 is None:
            return self.table(name)
        return self.s3.download(self.table(name), tmp / "copy" / "warehouse" / "db.db" / name)

    def job_args(self) -> list[str]:
        return [self.root, json.dumps(self.storage)] if self.s3 else []


def start_job(mode: str, base: Path, warehouse: Warehouse) -> subprocess.Popen:
    repo = str(JOB.parent.parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, str(JOB), mode, str(base), *warehouse.job_args()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def kill_at_random_points(base: Path, warehouse: Warehouse, kills: int, rng: random.Random) -> list[int]:
    """Run the job ``kills`` times, each killed (whole process group: driver JVM and Python) at a random
    moment once it has committed a batch in this run (so kills land while batches are in flight);
    returns the data snapshots of the append table after each kill."""
    progress = []
    table = warehouse.table("append")
    for _ in range(kills):
        before = len(data_snapshots(table, warehouse.storage))
        proc = start_job("run", base, warehouse)
        try:
            line = proc.stdout.readline()
            assert line.strip() == "started", f"job did not start: {line!r}\n{proc.stderr.read()[-3000:]}"
            deadline = time.time() + 180
            while len(data_snapshots(table, warehouse.storage)) == before and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(rng.uniform(0.0, 2.0))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        progress.append(len(data_snapshots(table, warehouse.storage)))
    return progress


def data_snapshots(path: str, storage: dict[str, str] | None = None) -> list:
    if not Table.exists(path, storage):
        return []
    sm = Table.load(path, None, storage).snapshot_manager
    return [s for s in (sm.snapshot(i) for i in sm.list_ids()) if s.commit_kind != "COMPACT"]


def max_runs_per_snapshot(path: str, storage: dict[str, str] | None) -> int:
    table = Table.load(path, None, storage)
    sm = table.snapshot_manager
    worst = 0
    for sid in sm.list_ids():
        runs: dict[tuple[bytes, int], list] = {}
        for e in TableScan(table).read_entries(sm.snapshot(sid)):
            runs.setdefault((e.partition, e.bucket), []).append(e.file)
        worst = max([worst] + [len(sorted_runs(files)) for files in runs.values()])
    return worst


def check_exactly_once(base: Path, warehouse: Warehouse, files: int, per_file: int,
                       model: dict[int, tuple[int, str]], java_oracle=None, pypaimon_oracle=None) -> None:
    append_path, pk_path, storage = warehouse.table("append"), warehouse.table("pk"), warehouse.storage
    append = Table.load(append_path, None, storage).to_arrow()
    events = sorted(append.column("event").to_pylist())
    assert len(events) == files * per_file and events == list(range(files * per_file)), \
        f"{len(events)} rows, {len(set(events))} distinct events of {files * per_file}"

    pk = Table.load(pk_path, None, storage).to_arrow()
    got = {r["key"]: (r["value"], r["op"]) for r in pk.to_pylist()}
    assert pk.num_rows == len(got)
    assert got == model

    for name, path in (("append", append_path), ("pk", pk_path)):
        sm = Table.load(path, None, storage).snapshot_manager
        snaps = [sm.snapshot(i) for i in sm.list_ids()]
        pairs = Counter((s.commit_user, s.commit_identifier) for s in snaps)
        assert max(pairs.values()) == 1, f"duplicated (commitUser, commitIdentifier): {pairs.most_common(3)}"
        # exactly one data snapshot per micro-batch Spark completed (every batch had events), whatever
        # the crashes did; Spark may put two files in one batch after a restart
        batches = sorted(int(n) for n in os.listdir(base / f"checkpoint-{name}" / "commits") if n.isdigit())
        data = [s for s in snaps if s.commit_kind == "APPEND"]
        assert sorted(s.commit_identifier for s in data) == batches == list(range(len(batches)))
        assert len({s.commit_user for s in data}) == 1  # the query id survives restarts

    # sorted runs stay bounded at every snapshot (stop-trigger = compaction-trigger 3 + 3)
    assert max_runs_per_snapshot(pk_path, storage) <= 6

    if java_oracle is not None:
        copies = {name: warehouse.local_copy(name, base) for name in ("append", "pk")}
        with ThreadPoolExecutor(4) as pool:
            reads = {(impl, name): pool.submit(o.read, copies[name]) for impl, o in (("java", java_oracle),
                                                                                    ("pypaimon", pypaimon_oracle))
                     for name in copies}
            for (impl, name), fut in reads.items():
                theirs = fut.result()
                ours = append if name == "append" else pk
                key = "event" if name == "append" else "key"
                assert sorted(theirs.to_pylist(), key=lambda r: r[key]) == \
                    sorted(ours.select(theirs.column_names).to_pylist(), key=lambda r: r[key]), (impl, name)


def run_crash_scenario(tmp_path: Path, files: int, per_file: int, kills: int, seed: int,
                       java_oracle=None, pypaimon_oracle=None, s3=None) -> list[int]:
    base = tmp_path / "job"
    model = make_input(base / "input", files, per_file, seed)
    warehouse = Warehouse(base, s3)
    if s3 is None:
        (base / "warehouse/db.db").mkdir(parents=True)
    progress = kill_at_random_points(base, warehouse, kills, random.Random(seed))
    proc = start_job("finish", base, warehouse)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"finishing run failed:\n{err[-4000:]}"
    check_exactly_once(base, warehouse, files, per_file, model, java_oracle, pypaimon_oracle)
    return progress


def test_streaming_exactly_once_across_driver_kills(tmp_path, java_oracle, pypaimon_oracle):
    progress = run_crash_scenario(tmp_path, files=16, per_file=60, kills=2, seed=7,
                                  java_oracle=java_oracle, pypaimon_oracle=pypaimon_oracle)
    print(f"append-table data snapshots after each kill: {progress}")


def test_streaming_exactly_once_across_driver_kills_on_s3(tmp_path, s3_server, java_oracle, pypaimon_oracle):
    """The same on the S3 test server: tables on S3 (conditional-PUT commits), checkpoints on local disk."""
    progress = run_crash_scenario(tmp_path, files=10, per_file=60, kills=2, seed=13, java_oracle=java_oracle,
                                  pypaimon_oracle=pypaimon_oracle, s3=s3_server)
    print(f"append-table data snapshots after each kill (S3): {progress}")


@pytest.mark.soak
def test_streaming_exactly_once_soak(tmp_path, java_oracle, pypaimon_oracle):
    progress = run_crash_scenario(tmp_path, files=80, per_file=100, kills=10, seed=11,
                                  java_oracle=java_oracle, pypaimon_oracle=pypaimon_oracle)
    print(f"append-table data snapshots after each kill: {progress}")
    assert progress[-1] > 0  # the kills did land while batches were being committed
