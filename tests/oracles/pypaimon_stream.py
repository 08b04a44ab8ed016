"""Streaming-read oracle: pypaimon 2.1 reads a table as a stream, with row kinds, up to its latest snapshot.

Usage (in the pypaimon oracle venv): pypaimon_stream.py TABLE_PATH --out OUT.parquet [--from SNAPSHOT_ID]

pypaimon's streaming scan polls forever; this reads every plan until the scan has passed the
snapshot that was latest at start, then writes the rows (first column `_row_kind`) and exits.
Each row also gets `_plan`, the index of the plan (micro-batch) it came in.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--out", required=True)
    p.add_argument("--from", dest="from_snapshot", type=int)
    args = p.parse_args()
    from pypaimon.table.file_store_table import FileStoreTable
    table = FileStoreTable.from_path(os.path.abspath(args.path))
    latest = table.snapshot_manager().get_latest_snapshot().id
    builder = table.new_stream_read_builder().with_include_row_kind(True).with_poll_interval_ms(100)
    scan = builder.new_streaming_scan()
    if args.from_snapshot is not None:
        scan.next_snapshot_id = args.from_snapshot
        scan._diff_threshold = 1 << 30  # one plan per snapshot, as a stream reads them
    read = builder.new_read()
    tables: list[pa.Table] = []
    failure: list[BaseException] = []

    def consume() -> None:
        try:
            for i, plan in enumerate(scan.stream_sync()):
                t = read.to_arrow(plan.splits())
                if t is not None and t.num_rows:
                    tables.append(t.append_column("_plan", pa.array([i] * t.num_rows, pa.int32())))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failure.append(e)

    threading.Thread(target=consume, daemon=True).start()
    deadline = time.time() + 120
    while not failure and (scan.next_snapshot_id or 0) <= latest and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # let the last plan's read finish
    if failure:
        raise failure[0]
    if (scan.next_snapshot_id or 0) <= latest:
        raise SystemExit(f"pypaimon's stream did not reach snapshot {latest}")
    pq.write_table(pa.concat_tables(tables) if tables else pa.table({}), args.out)
    os._exit(0)  # the polling thread never ends by itself


if __name__ == "__main__":
    main()
