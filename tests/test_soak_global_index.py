"""Cross-partition upsert at scale (issue 6's acceptance "bootstrap of a 20M-key table completes and the
index's memory stays bounded"; `make soak`).

A cross-partition table (primary key `pk`, partition `pt`, bucket = -1) of SOAK_GLOBAL_INDEX_KEYS keys
(default 20M) is written directly as sorted KV files: SOAK_GLOBAL_INDEX_PARTITIONS partitions (default
20) of 10 buckets, one compacted file per bucket, plus a level-0 file in every partition's bucket 0 that
deletes 1000 keys and updates 1000 (so the bootstrap merges runs there). A fresh process then bootstraps
a GlobalIndexAssigner from it (page cache SOAK_GLOBAL_INDEX_CACHE_MB, default 64) and moves 1M keys to a
new partition; it reports the time of each phase and its peak RSS (ru_maxrss), before and after.
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
from paimon_ds.format.binary_row import serialize_row
from paimon_ds.io.names import DataFileNamer
from paimon_ds.mergetree.files import KeyValueFileWriter
from paimon_ds.mergetree.kv import DELETE, KeyValueLayout
from paimon_ds.operation.messages import CommitMessage
from tests.index.test_cross_partition import SCHEMA, create_table

pytestmark = pytest.mark.soak

KEYS = int(os.environ.get("SOAK_GLOBAL_INDEX_KEYS", 20_000_000))
PARTITIONS = int(os.environ.get("SOAK_GLOBAL_INDEX_PARTITIONS", 20))
CACHE_MB = int(os.environ.get("SOAK_GLOBAL_INDEX_CACHE_MB", 64))
BUCKETS = 10


def write_table(path: str) -> tuple[Table, int]:
    """The table, and how many keys it holds (KEYS minus the deleted ones)."""
    table = create_table(path, **{"dynamic-bucket.target-row-num": str(KEYS // (PARTITIONS * BUCKETS) + 1),
                                  "target-file-size": "1 gb"})
    layout = KeyValueLayout(table.table_schema)
    namer = DataFileNamer()
    per_bucket = KEYS // (PARTITIONS * BUCKETS)
    messages = []
    deleted = 0
    for pt in range(PARTITIONS):
        part = serialize_row([pt], [table.table_schema.field("pt").type])
        for bucket in range(BUCKETS):
            directory = f"{table.root}/pt={pt}/bucket-{bucket}"
            first = (pt * BUCKETS + bucket) * per_bucket
            ids = np.arange(first, first + per_bucket, dtype=np.int32)
            files = []
            for level, ids_, kinds, seq0 in ([(5, ids, np.zeros(len(ids), np.int8), 0)]
                                             + ([(0, ids[:2000], np.repeat(np.int8([DELETE, 0]), 1000), per_bucket)]
                                                if bucket == 0 and len(ids) >= 2000 else [])):
                writer = KeyValueFileWriter(table.store, directory, namer, level=level)
                chunks = (layout.to_kv(pa.table([pa.array(np.full(len(c), pt, np.int32)), pa.array(c), pa.array(c)],
                                                 schema=SCHEMA),
                                       np.arange(s, s + len(c), dtype=np.int64) + seq0, kinds[s:s + len(c)])
                          for s in range(0, len(ids_), 1 << 20) for c in [ids_[s:s + (1 << 20)]])
                files += writer.write_all(chunks)
                deleted += int((kinds == DELETE).sum())
            messages.append(CommitMessage(part, bucket, -1, files, f"pt={pt}"))
    table.new_commit().commit(messages)
    return Table.load(path), per_bucket * PARTITIONS * BUCKETS - deleted


BOOTSTRAP_SCRIPT = textwrap.dedent("""
    import resource, sys, time
    import numpy as np, pyarrow as pa
    sys.path.insert(0, sys.argv[1])
    from paimon_ds import Table
    from paimon_ds.operation.index_bootstrap import GlobalIndexAssigner
    from tests.index.test_cross_partition import SCHEMA
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    table = Table.load(sys.argv[2])
    base = peak()
    t0 = time.time()
    a = GlobalIndexAssigner(table, sys.argv[3], cache_bytes=int(sys.argv[4]) << 20)
    loaded = a.bootstrap()
    t_boot = time.time() - t0
    boot_peak = peak()
    import os
    disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(sys.argv[3]) for f in fs)
    n, per_bucket = int(sys.argv[5]), int(sys.argv[6])
    rng = np.random.default_rng(5)
    ids = np.unique(rng.integers(0, n, 1_300_000))  # (choice without replacement would permute all n)
    rng.shuffle(ids)
    ids = ids[(ids // per_bucket) % 10 != 0][:1_000_000].astype(np.int32)  # keys of bucket 0 may be deleted
    t1 = time.time()
    out_rows = 0
    for s in range(0, len(ids), 100_000):
        k = ids[s:s + 100_000]
        batch = pa.RecordBatch.from_arrays([pa.array(np.full(len(k), 10_000, np.int32)), pa.array(k), pa.array(k)],
                                           schema=SCHEMA)
        out_rows += a.process(batch).num_rows
    t_move = time.time() - t1
    a.close()
    print(loaded, base, boot_peak, peak(), t_boot, t_move, out_rows, disk)
""")


def test_bootstrap_20m_keys(tmp_path):
    t0 = time.time()
    table, live = write_table(str(tmp_path / "t"))
    t_write = time.time() - t0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    per_bucket = KEYS // (PARTITIONS * BUCKETS)
    res = subprocess.run([sys.executable, "-c", BOOTSTRAP_SCRIPT, root, table.path, str(tmp_path / "w"), str(CACHE_MB),
                          str(per_bucket * PARTITIONS * BUCKETS), str(per_bucket)],
                         capture_output=True, text=True, timeout=3600)
    assert res.returncode == 0, res.stderr
    loaded, base, boot_peak, peak = (int(x) for x in res.stdout.split()[:4])
    t_boot, t_move = (float(x) for x in res.stdout.split()[4:6])
    out_rows, disk = int(res.stdout.split()[6]), int(res.stdout.split()[7])
    print(f"\ncross-partition soak: {KEYS} keys in {PARTITIONS} partitions x {BUCKETS} buckets written in "
          f"{t_write:.0f}s; bootstrap loaded {loaded} keys in {t_boot:.1f}s ({loaded / t_boot / 1e6:.2f}M keys/s), "
          f"page cache {CACHE_MB} MiB: peak RSS {base >> 20} MiB after imports, {boot_peak >> 20} MiB after the "
          f"bootstrap (+{(boot_peak - base) >> 20} MiB), index on disk {disk >> 20} MiB; "
          f"1M moves in {t_move:.1f}s ({out_rows} rows out), "
          f"peak RSS {peak >> 20} MiB")
    assert loaded == live
    assert out_rows == 2_000_000  # every moved key: a -D in its old partition and the row in the new one
    # bounded: the page cache, the bootstrap's sort buffer and its sorted copy, one read batch
    assert boot_peak - base < (CACHE_MB << 20) + (512 << 20)
