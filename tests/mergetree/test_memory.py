"""The write buffer bounds a primary-key writer's memory: measured peak RSS of a fresh process.

A subprocess (core API only, no Spark) writes random int64 keys into ONE bucket in batches of 100k
rows, so the bucket's writer sees every row. Its peak RSS (ru_maxrss) above a baseline taken after
the imports must stay under write-buffer-size + 300 MB, the writer must have spilled sorted runs to
local disk (and removed them), and reading the table back must give exactly the expected rows.

Keys: a bijective 64-bit mix of the row number modulo `unique`, so they look random, the last 10 %
of the rows update earlier keys, and the expected count and value sum are known exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

BATCH_ROWS = 100_000
# bytes of one row in the writer's key-value layout: _KEY_id, _SEQUENCE_NUMBER, id, v, w (8 each), _VALUE_KIND (1)
KV_ROW_BYTES = 8 * 5 + 1
MB = 1 << 20

JOB = textwrap.dedent('''
    import json, os, resource, sys, time
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from paimon_ds import Table
    from paimon_ds.operation.write import BucketRestore

    path, rows, buffer, batch_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    unique = rows - rows // 10
    MIX1, MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9)

    def keys(i):
        # odd multiplications and a xor-shift: a bijection on 64-bit integers (distinct keys stay distinct)
        x = i.astype(np.uint64) * MIX1
        x ^= x >> np.uint64(31)
        x *= MIX2
        return x.view(np.int64)

    def peak_rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB

    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("w", pa.float64())])
    table = Table.for_write(path, schema, {"primary-key": "id", "bucket": "1", "write-buffer-size": str(buffer)})
    write = table.new_write(restore=BucketRestore())
    baseline = peak_rss()
    t0 = time.time()
    for start in range(0, rows, batch_rows):
        i = np.arange(start, min(rows, start + batch_rows), dtype=np.int64)
        write.write_arrow(pa.table({"id": keys(i % unique), "v": i, "w": i * 0.5}, schema=schema))
    (writer,) = write.writers.values()
    spills = [os.path.getsize(p) for p in writer.spills]
    spill_dir = writer._spill_dir
    messages = write.prepare_commit()
    peak = peak_rss()
    write_s = time.time() - t0
    table.new_commit().commit(messages)

    count = total_v = 0
    t = Table.load(path)
    read = t.new_read()
    for split in t.new_scan().plan():
        for b in read.read(split):
            count += b.num_rows
            total_v += int(pc.sum(b.column("v")).as_py() or 0)
    print(json.dumps({"baseline": baseline, "peak": peak, "spills": spills, "write_s": write_s,
                      "spill_dir_left": spill_dir is not None and os.path.exists(spill_dir),
                      "count": count, "sum_v": total_v, "unique": unique,
                      "files": sum(len(m.new_files) for m in messages)}))
''')


def run_job(path: str, rows: int, buffer: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", JOB, path, str(rows), str(buffer), str(BATCH_ROWS)],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check(result: dict, rows: int, buffer: int) -> None:
    grown = result["peak"] - result["baseline"]
    print(f"\n{rows:,} rows, write-buffer-size {buffer // MB} MB: peak RSS {result['peak'] / MB:.0f} MB, "
          f"baseline {result['baseline'] / MB:.0f} MB, grew {grown / MB:.0f} MB "
          f"(limit {(buffer + 300 * MB) / MB:.0f} MB); {len(result['spills'])} spills, "
          f"{sum(result['spills']) / MB:.0f} MB on disk; write {result['write_s']:.1f} s")
    unique = result["unique"]
    # one row per key; the last rows - unique rows updated keys 0 .. rows - unique - 1 with v = key + unique
    assert result["count"] == unique
    assert result["sum_v"] == unique * (unique - 1) // 2 + (rows - unique) * unique
    # the buffer spilled sorted runs to disk each time it filled (it may pass the limit by one batch)
    min_spills = rows * KV_ROW_BYTES // (buffer + BATCH_ROWS * KV_ROW_BYTES) - 1
    assert len(result["spills"]) >= min_spills
    assert all(size > 0 for size in result["spills"])
    assert not result["spill_dir_left"]  # prepare_commit merged the spills and removed them
    assert result["files"] >= 1
    assert grown < buffer + 300 * MB


def test_write_buffer_bounds_memory_small(tmp_path):
    rows, buffer = 2_000_000, 8 * MB
    check(run_job(str(tmp_path / "t"), rows, buffer), rows, buffer)


@pytest.mark.soak
def test_write_buffer_bounds_memory_20m_rows(tmp_path):
    """Issue 3's memory acceptance: 20M rows into one bucket with write-buffer-size=64mb."""
    rows, buffer = 20_000_000, 64 * MB
    check(run_job(str(tmp_path / "t"), rows, buffer), rows, buffer)
