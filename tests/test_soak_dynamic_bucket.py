"""Memory of a write task's stateless bucket assigner on a 10M-key partition (issue 18; `make soak`).

A dynamic-bucket table with one partition of SOAK_DYNAMIC_KEYS keys (default 10M, target 2M: 5 buckets) is
written by the core's single writer. A fresh process then does what one task of a `df.write.format` write
does: it loads the partition's hash index from the write's base snapshot (SnapshotBucketAssigner) and assigns
a batch of 1M keys, half of them indexed, half new. It reports the time to load and assign and its peak RSS
(VmHWM) over the baseline after imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table

pytestmark = pytest.mark.soak

KEYS = int(os.environ.get("SOAK_DYNAMIC_KEYS", 10_000_000))
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])

ASSIGN_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np, pyarrow as pa
    sys.path.insert(0, sys.argv[1])
    from paimon_ds import Table
    from paimon_ds.index.snapshot_assigner import SnapshotBucketAssigner
    from paimon_ds.operation.write import BucketRestore
    def peak():  # VmHWM: this process image's peak RSS (ru_maxrss would carry the forking parent's over exec)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    base = peak()  # after imports
    table = Table.load(sys.argv[2])
    restore = BucketRestore.from_table(table)
    t0 = time.time()
    assigner = SnapshotBucketAssigner(table, restore.index_files)
    index = assigner.partition_index(next(iter(assigner.files)))
    t_load = time.time() - t0
    loaded = peak()
    n = int(sys.argv[3])
    indexed = np.arange(0, n, max(1, n // 500_000), dtype=np.int64)[:500_000]
    ids = np.concatenate([indexed, np.arange(n, n + 500_000, dtype=np.int64)])
    batch = pa.table({"id": ids, "dt": pa.array(np.full(len(ids), "p", dtype=object)), "v": ids})
    t1 = time.time()
    buckets, new = assigner.assign(batch)
    t_assign = time.time() - t1
    print(index.size, base, loaded, peak(), t_load, t_assign, int(new.sum()), len(np.unique(buckets[~new])))
""")


def test_stateless_assigner_memory_on_a_10m_key_partition(tmp_path):
    path = str(tmp_path / "t")
    t0 = time.time()
    table = Table.for_write(path, SCHEMA, {"primary-key": "dt,id", "partition": "dt", "write-only": "true"})
    w = table.new_write()
    for start in range(0, KEYS, 1_000_000):
        ids = np.arange(start, min(start + 1_000_000, KEYS), dtype=np.int64)
        w.write_arrow(pa.table({"id": ids, "dt": pa.array(["p"] * len(ids)), "v": ids}))
    table.new_commit().commit(w.prepare_commit())
    t_write = time.time() - t0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-c", ASSIGN_SCRIPT, root, path, str(KEYS)], capture_output=True, text=True,
                         timeout=3600)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split()
    size, base, loaded, peak = (int(x) for x in out[:4])
    t_load, t_assign = float(out[4]), float(out[5])
    new, old_buckets = int(out[6]), int(out[7])
    print(f"\nstateless assigner, one partition of {size} keys (written in {t_write:.0f}s): index loaded in "
          f"{t_load:.2f}s, 1M keys assigned in {t_assign:.2f}s; peak RSS {base >> 20} MiB after imports, "
          f"{loaded >> 20} MiB with the index loaded (+{(loaded - base) >> 20} MiB; the map itself is "
          f"{size * 6 >> 20} MiB), {peak >> 20} MiB after assigning (+{(peak - base) >> 20} MiB)")
    assert size == KEYS and new == 500_000 and old_buckets == -(-KEYS // 2_000_000)
    # the map (6 bytes a key), its 8-byte-a-key sort buffer while loading, one bucket file at a time, the batch
    assert loaded - base < KEYS * 16 + (64 << 20)
    assert peak - base < KEYS * 16 + (160 << 20)
