"""Two Spark applications append to one table at the same time: no lost commit, nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

from paimon_ds import Table
from paimon_ds.manifest.files import ManifestList

from ._helpers import data_files_on_disk, files_under, live_files, load, snapshot_ids

COMMITS = 20
ROWS_PER_COMMIT = 10
APPS = {"appA": 0, "appB": 100_000}  # label -> first id

APP = textwrap.dedent('''
    import json, os, sys, time
    import paimon_ds

    path, label, base, commits, per_commit, barrier = sys.argv[1:7]
    base, commits, per_commit = int(base), int(commits), int(per_commit)
    spark = paimon_ds.session(f"paimon_ds-concurrent-{label}", master="local[1]")
    spark.range(1).collect()  # warm the JVM before the race starts
    open(os.path.join(barrier, label), "w").close()
    deadline = time.time() + 180
    while len(os.listdir(barrier)) < 2:  # start together with the other application
        if time.time() > deadline:
            sys.exit("the other application never started")
        time.sleep(0.02)
    t0 = time.time()
    for i in range(commits):
        start = base + i * per_commit
        (spark.range(start, start + per_commit, numPartitions=1).write.format("paimon").mode("append")
              .option("commit.user-prefix", label).save(path))
    print(json.dumps({"label": label, "commits_s": round(time.time() - t0, 2)}))
    spark.stop()
''')


def referenced_metadata(path: str) -> set[str]:
    """Every manifest and manifest list that some snapshot references."""
    table = Table.load(path)
    lists = ManifestList(table.io, table.root)
    names: set[str] = set()
    for sid in table.snapshot_manager.list_ids():
        snap = table.snapshot_manager.snapshot(sid)
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            names.add(name)
            names.update(m.file_name for m in lists.read(name))
    return names


def test_two_applications_append_concurrently(spark, tmp_path, table_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = tmp_path / "app.py"
    script.write_text(APP)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    t0 = time.time()
    procs = {label: subprocess.Popen([sys.executable, str(script), table_path, label, str(base), str(COMMITS),
                                      str(ROWS_PER_COMMIT), str(barrier)],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for label, base in APPS.items()}
    results = {}
    for label, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{label} failed:\n{err[-5000:]}"
        results[label] = json.loads(out.strip().splitlines()[-1])
    print(f"two applications: {results}, wall {time.time() - t0:.1f}s")

    # every commit of both applications landed, as exactly one snapshot each
    total = len(APPS) * COMMITS
    assert snapshot_ids(table_path) == list(range(1, total + 1))
    table = Table.load(table_path)
    snaps = [table.snapshot_manager.snapshot(i) for i in range(1, total + 1)]
    labels = [s.commit_user.split("_")[0] for s in snaps]
    assert {lb: labels.count(lb) for lb in APPS} == {lb: COMMITS for lb in APPS}
    switches = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
    assert switches >= 2, labels  # the applications really committed in between each other
    assert all(s.commit_kind == "APPEND" and s.delta_record_count == ROWS_PER_COMMIT for s in snaps)
    assert [s.total_record_count for s in snaps] == [ROWS_PER_COMMIT * i for i in range(1, total + 1)]

    # every row of every commit exactly once
    expected = sorted(base + i for base in APPS.values() for i in range(COMMITS * ROWS_PER_COMMIT))
    ids = [r.id for r in load(spark, table_path).collect()]
    assert sorted(ids) == expected and len(ids) == snaps[-1].total_record_count
    # one file per commit, none listed twice, none left unreferenced; no metadata of lost attempts left
    files = live_files(table_path)
    names = [name for _, name in files]
    assert len(names) == len(set(names)) == total
    assert sorted(os.path.basename(f) for f in data_files_on_disk(table_path)) == sorted(names)
    on_disk = {os.path.basename(f) for f in files_under(table_path) if f.startswith("manifest/")}
    assert on_disk == referenced_metadata(table_path)
    assert sorted(f for f in files_under(table_path) if f.startswith("schema/")) == ["schema/schema-0"]
