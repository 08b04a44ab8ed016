"""Postpone-bucket tables (`bucket` = -2, Paimon 1.1+) against pypaimon 2.1, the reference for what Java 0.9 lacks.

Both ways, over several commits: rows written into real buckets (`postpone.batch-write-fixed-bucket`, pypaimon's
new_postpone_fixed_bucket_write_builder) are read at once; rows written into a partition's postpone bucket
(pypaimon's default batch builder) are read by neither until paimon_ds's postpone compaction moves them into
buckets, after which both read the same rows, deletes applied and later rows winning; a partition keeps the bucket
count the other side gave it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_ds import Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.scan import TableScan
from paimon_ds.table import write_arrow

POSTPONE = {"postpone.batch-write-fixed-bucket": "false"}
SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])

PP_WRITE = """
import pyarrow as pa
schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])
for rows, fixed in WRITES:
    wb = table.new_postpone_fixed_bucket_write_builder() if fixed else table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [r[0] for r in rows], "p": [r[1] for r in rows], "v": [r[2] for r in rows]},
                           schema=schema))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
"""


def pp_reads(oracle, path: str, tmp_path, snapshots: list[int]) -> list[list[tuple]]:
    """pypaimon's reads of the table at each of ``snapshots``, in one process."""
    outs = [str(tmp_path / f"pp-{sid}.parquet") for sid in snapshots]
    oracle.exec(path, f"""
import pyarrow.parquet as pq
for sid, out in zip({snapshots!r}, {outs!r}):
    t = table.copy({{"scan.snapshot-id": str(sid)}})
    rb = t.new_read_builder()
    pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()), out)
""")
    return [rows(pq.read_table(o)) for o in outs]


def latest(path: str) -> int:
    return Table.load(path).latest_snapshot().id


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(t.column("p").to_pylist(), t.column("id").to_pylist(), t.column("v").to_pylist()))


def ours(path: str) -> list[tuple]:
    return rows(Table.load(path).to_arrow())


def write(path: str, data: list[tuple], kinds: list[str] | None = None, **options: str) -> None:
    table = pa.table({"id": pa.array([r[0] for r in data], pa.int32()), "p": [r[1] for r in data],
                      "v": [r[2] for r in data]}, schema=SCHEMA)
    if not Table.exists(path):
        write_arrow(path, table.slice(0, 0), primary_key="id,p", partition_by="p", options={"bucket": "-2"})
    w = Table.load(path, options).new_write(row_kind_column="kind")
    w.write_arrow(table.append_column("kind", pa.array(kinds or ["+I"] * len(data))))
    Table.load(path).new_commit().commit_or_abort(w.prepare_commit())


def bucket_counts(path: str) -> dict[str, set[int]]:
    table = Table.load(path)
    scan = TableScan(table)
    out: dict[str, set[int]] = {}
    for e in scan.read_entries():
        out.setdefault(scan.partition_dir(e.partition), set()).add(e.total_buckets)
    return out


def test_paimon_ds_writes_pypaimon_reads(pypaimon_oracle, table_path, tmp_path):
    write(table_path, [(1, "a", "x1"), (2, "a", "x2")])
    write(table_path, [(1, "a", "x3"), (2, "a", "x2"), (3, "b", "y1")], kinds=["+I", "-D", "+I"], **POSTPONE)
    expected = {latest(table_path): [("a", 1, "x1"), ("a", 2, "x2")]}  # the postpone bucket waits for a compaction
    compact_in_process(Table.load(table_path, {"postpone.default-bucket-num": "2"}), None)
    expected[latest(table_path)] = [("a", 1, "x3"), ("b", 3, "y1")]
    assert bucket_counts(table_path) == {"p=a": {1}, "p=b": {2}}  # a kept its bucket, b got default-bucket-num
    # pypaimon continues the table: into b's two buckets and a new partition c, and into postpone buckets
    pypaimon_oracle.exec(table_path, "WRITES = [([(3, 'b', 'y2'), (4, 'c', 'z1')], True), "
                                     "([(1, 'a', 'x4'), (5, 'c', 'z2')], False)]\n" + PP_WRITE)
    expected[latest(table_path)] = [("a", 1, "x3"), ("b", 3, "y2"), ("c", 4, "z1")]
    assert bucket_counts(table_path) == {"p=a": {1, -2}, "p=b": {2}, "p=c": {1, -2}}
    compact_in_process(Table.load(table_path), None)
    expected[latest(table_path)] = [("a", 1, "x4"), ("b", 3, "y2"), ("c", 4, "z1"), ("c", 5, "z2")]
    snapshots = sorted(expected)
    mine = [rows(Table.load(table_path, {"scan.snapshot-id": str(sid)}).to_arrow()) for sid in snapshots]
    assert mine == [expected[sid] for sid in snapshots]
    assert pp_reads(pypaimon_oracle, table_path, tmp_path, snapshots) == mine


def test_pypaimon_writes_paimon_ds_reads(pypaimon_oracle, table_path, tmp_path):
    """pypaimon's postpone files (its sequence numbers count from 0 where Java's are -1: paimon_ds reads neither,
    writer by writer in creation order) and its fixed-bucket writes, read and compacted here."""
    pypaimon_oracle.exec(table_path, """
import pyarrow as pa, os
from pypaimon import CatalogFactory, Schema
cat = CatalogFactory.create({"warehouse": os.path.dirname(os.path.dirname(path))})
cat.create_database("db", True)
schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])
cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id", "p"], partition_keys=["p"],
                                                    options={"bucket": "-2"}), False)
table = cat.get_table("db.t")
WRITES = [([(1, "a", "x1"), (2, "a", "x2"), (1, "a", "x3")], False), ([(3, "b", "y1")], True),
          ([(2, "a", "x4")], False)]
""" + PP_WRITE)
    expected = {latest(table_path): [("b", 3, "y1")]}
    compact_in_process(Table.load(table_path), None)
    expected[latest(table_path)] = [("a", 1, "x3"), ("a", 2, "x4"), ("b", 3, "y1")]
    write(table_path, [(2, "a", "x5"), (3, "b", "y2")])
    expected[latest(table_path)] = [("a", 1, "x3"), ("a", 2, "x5"), ("b", 3, "y2")]
    snapshots = sorted(expected)
    mine = [rows(Table.load(table_path, {"scan.snapshot-id": str(sid)}).to_arrow()) for sid in snapshots]
    assert mine == [expected[sid] for sid in snapshots]
    assert pp_reads(pypaimon_oracle, table_path, tmp_path, snapshots) == mine
