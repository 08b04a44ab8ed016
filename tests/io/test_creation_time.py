"""A data file's creation time is the wall time of the writer's zone, as Java Paimon writes it (DataFileMeta:
``Timestamp.fromLocalDateTime(LocalDateTime.now())``) and reads it back (creationTimeEpochMillis, in the system's
zone): run in Asia/Shanghai (UTC+8), the stored time is 8 hours ahead of UTC and reads back as now."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import datetime as dt, json, sys, time
    import pyarrow as pa
    import paimon_ds
    from paimon_ds.operation.partition_expire import creation_millis
    path = sys.argv[1]
    paimon_ds.write_arrow(path, pa.table({"id": [1]}))
    table = paimon_ds.Table.load(path)
    [created] = table.inspect.files().column("creation_time").to_pylist()
    print(json.dumps({"stored": created.isoformat(), "utc": dt.datetime.now(dt.timezone.utc).isoformat(),
                      "read_back_ms": creation_millis(created), "now_ms": int(time.time() * 1000)}))
""")


def test_creation_time_is_the_writers_local_wall_time(tmp_path):
    env = {**os.environ, "TZ": "Asia/Shanghai"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t")], env=env, capture_output=True, text=True,
                         check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    stored = dt.datetime.fromisoformat(got["stored"])
    utc = dt.datetime.fromisoformat(got["utc"]).replace(tzinfo=None)
    assert abs((stored - utc).total_seconds() - 8 * 3600) < 60
    assert stored.microsecond % 1000 == 0  # milliseconds, as toMillisTimestamp
    assert abs(got["read_back_ms"] - got["now_ms"]) < 60_000
