"""Time pypaimon 2.1's write of a parquet file into a new primary-key table (run by tests/test_bench_pk.py).

Usage: PYPAIMON_PYTHON pypaimon_write.py TABLE_PATH INPUT.parquet BUCKETS PRIMARY_KEY
TABLE_PATH must be WAREHOUSE/DB.db/TABLE. Prints one JSON line: rows, seconds, rows_per_s.
Only the write is timed (write, prepare_commit, commit), not reading the input or creating the table.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema


def main() -> None:
    path, source, buckets, primary_key = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    data = pq.read_table(source)
    db_dir = os.path.dirname(os.path.abspath(path))
    warehouse, db, name = os.path.dirname(db_dir), os.path.basename(db_dir)[: -len(".db")], os.path.basename(path)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(db, True)
    schema = Schema.from_pyarrow_schema(data.schema, primary_keys=primary_key.split(","),
                                        options={"bucket": buckets})
    catalog.create_table(f"{db}.{name}", schema, False)
    table = catalog.get_table(f"{db}.{name}")
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    start = time.perf_counter()
    write.write_arrow(data)
    commit.commit(write.prepare_commit())
    seconds = time.perf_counter() - start
    write.close()
    commit.close()
    print(json.dumps({"rows": data.num_rows, "seconds": seconds, "rows_per_s": data.num_rows / seconds}))


if __name__ == "__main__":
    main()
