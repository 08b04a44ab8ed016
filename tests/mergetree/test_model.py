"""Model-based test of primary-key tables: random upserts and deletes against a plain-Python model.

Each case writes random rows (row kinds from `rowkind.field`: +I, +U, -U, -D) over several commits
into a table with primary key (id, dt), partition dt (3 values) and 3 buckets, on ~300 keys, and
after EVERY commit (and every compaction) compares the merge-on-read result of paimon_ds's core
with a dict that applies the engine's rule row by row. Cases differ in engine, writer (core
TableWrite, two core writers sharing buckets in one commit, Spark's df.write with 3 tasks per
commit, the clustered paimon_ds.write that compacts inline), write buffer (8kb: spills, or L0
files when not spillable) and compaction (none, inline, paimon_ds.compact minor or full). Apache
Paimon 0.9 (Java) and pypaimon 2.1 then read the table and must see exactly the model's rows.

Oracle limits, each checked here rather than assumed:
- pypaimon 2.1 refuses to read partial-update tables with `partial-update.remove-record-on-delete`
  and aggregation tables with `fields.<f>.ignore-retract` (NotImplementedError): for those cases the
  test asserts that refusal, and the pypaimon-readable variants (no deletes) are separate cases.
- Java 0.9's partial-update merge with remove-record-on-delete fails (NullPointerException) on a
  DELETE followed by an INSERT of the same key in one merge, so that case is fully compacted
  (deletes dropped) before Java reads it.
- Partial-update with remove-record-on-delete is not associative across a delete in Paimon itself
  (a DELETE then an INSERT of one key, merged without the older runs, becomes that INSERT and lets
  older values show through its nulls), so that case sends no row of a key after its DELETE in the
  same commit and compacts only fully: then Paimon's answer is the model's.
- Paimon's batch scans skip level-0 files of first-row tables (CoreOptions.batchScanSkipLevel0: Paimon's
  first-row writers compact every commit's files out of level 0). paimon_ds's committer does the same
  (it lifts the level-0 files of the buckets it just wrote), so the oracles read the first-row case
  after an ordinary commit too.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.mergetree.compact import sorted_runs
from paimon_ds.operation.write import BucketRestore

SCHEMA = pa.schema([("id", pa.int32()), ("dt", pa.string()), ("op", pa.string()), ("a", pa.int64()),
                    ("b", pa.string()), ("c", pa.float64())])
SPARK_SCHEMA = "id int, dt string, op string, a bigint, b string, c double"
NAMES = SCHEMA.names
DTS = ["2024-01-01", "2024-01-02", "2024-01-03"]
IDS = 100  # x 3 partitions = 300 keys
OPS = ["+I", "+U", "-U", "-D"]
BASE = {"primary-key": "id,dt", "partition": "dt", "bucket": "3", "rowkind.field": "op"}
AGG = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.c.aggregate-function": "max",
       "fields.b.aggregate-function": "last_non_null_value"}
# A row takes ~60 bytes in the write buffer, so a commit (200-500 rows) is 12-30 KB: 8kb forces spills.
TINY_BUFFER = "8kb"
RETRACT_IGNORED = {"fields.b.ignore-retract": "true", "fields.c.ignore-retract": "true",
                   "fields.op.ignore-retract": "true"}

Row = dict[str, Any]
Key = tuple[int, str]


# ------------------------------------------------------------------------------------- models

def dedup(model: dict[Key, Row], r: Row) -> None:
    if r["op"] in ("-U", "-D"):
        model.pop((r["id"], r["dt"]), None)
    else:
        model[(r["id"], r["dt"])] = dict(r)


def first_row_ignore_delete(model: dict[Key, Row], r: Row) -> None:
    if r["op"] not in ("-U", "-D"):
        model.setdefault((r["id"], r["dt"]), dict(r))


def partial_update(model: dict[Key, Row], r: Row) -> None:
    """Last non-null value per column; with remove-record-on-delete a DELETE drops the row, -U is ignored."""
    key = (r["id"], r["dt"])
    if r["op"] == "-D":
        model.pop(key, None)
    elif r["op"] != "-U":
        cur = model.setdefault(key, dict.fromkeys(NAMES))
        cur.update({k: v for k, v in r.items() if v is not None})


def aggregation(model: dict[Key, Row], r: Row) -> None:
    """a: sum (retracted by -U/-D), c: max, b and op: last non-null value (both ignore retractions)."""
    cur = model.setdefault((r["id"], r["dt"]), {**dict.fromkeys(NAMES), "id": r["id"], "dt": r["dt"]})
    retract = r["op"] in ("-U", "-D")
    if r["a"] is not None:
        v = -r["a"] if retract else r["a"]
        cur["a"] = v if cur["a"] is None else cur["a"] + v
    if retract:
        return
    if r["c"] is not None:
        cur["c"] = r["c"] if cur["c"] is None else max(cur["c"], r["c"])
    for k in ("b", "op"):
        if r[k] is not None:
            cur[k] = r[k]


# -------------------------------------------------------------------------------------- cases

@dataclass
class Case:
    options: dict[str, str]
    model: Callable[[dict[Key, Row], Row], None]
    op_weights: list[float]  # of OPS
    writer: str  # "core" | "core-2" (two writers, one commit) | "spark" (df.write, 3 tasks) | "clustered"
    commits: int = 6
    compact: dict[int, bool] = field(default_factory=dict)  # after commit n: paimon_ds.compact(full=...)
    oracles_after: tuple[int, ...] = ()
    pypaimon_refuses: str | None = None  # the option pypaimon 2.1 names when it refuses the table
    no_rows_after_delete: bool = False  # within a commit (see the module docstring)
    expect_spill: bool = False
    expect_many_l0: bool = False


CASES = {
    # Spark, 3 tasks per commit writing the same buckets; spills; no compaction: runs pile up.
    # write-only: the committer leaves the tasks' runs for the readers to merge (without it, it compacts them)
    "deduplicate-spark": Case({**BASE, "write-buffer-size": TINY_BUFFER, "write-only": "true"}, dedup,
                              [0.5, 0.15, 0.1, 0.25], "spark", oracles_after=(3, 6)),
    # Two core writers share every bucket in each commit (a sequence number per task and run); spills; compactions.
    "partial-update-remove-on-delete": Case(
        {**BASE, "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
         "write-buffer-size": TINY_BUFFER, "write-only": "true"},  # runs pile up for the dedicated compactions
        partial_update, [0.5, 0.2, 0.1, 0.2], "core-2", compact={3: True, 6: True}, oracles_after=(6,),
        pypaimon_refuses="partial-update.remove-record-on-delete", no_rows_after_delete=True, expect_spill=True),
    # Clustered writes compacting inline at 2 sorted runs; retractions reach the sum.
    "aggregation-retract-clustered": Case(
        {**BASE, **AGG, **RETRACT_IGNORED, "num-sorted-run.compaction-trigger": "2"},
        aggregation, [0.5, 0.2, 0.1, 0.2], "clustered", oracles_after=(6,), pypaimon_refuses="ignore-retract"),
    # Not spillable: a full buffer becomes an L0 file, so each commit adds several runs per bucket.
    "first-row-ignore-delete": Case(
        {**BASE, "merge-engine": "first-row", "ignore-delete": "true", "write-buffer-size": TINY_BUFFER,
         "write-buffer-spillable": "false"},
        first_row_ignore_delete, [0.5, 0.2, 0.1, 0.2], "core", oracles_after=(3, 6),
        expect_many_l0=True),
    # pypaimon-readable variants: no deletes.
    "partial-update-clustered": Case(
        {**BASE, "merge-engine": "partial-update", "num-sorted-run.compaction-trigger": "2"},
        partial_update, [0.7, 0.3, 0.0, 0.0], "clustered", commits=4, oracles_after=(4,)),
    "aggregation-spill": Case(
        {**BASE, **AGG, "write-buffer-size": TINY_BUFFER}, aggregation, [0.7, 0.3, 0.0, 0.0], "core", commits=4,
        compact={2: True}, oracles_after=(4,), expect_spill=True),
}


# ------------------------------------------------------------------------------------ helpers

def random_rows(rng: np.random.Generator, case: Case) -> list[Row]:
    n = int(rng.integers(200, 501))
    ids = rng.integers(0, IDS, n)
    dts = rng.integers(0, len(DTS), n)
    ops = rng.choice(len(OPS), n, p=case.op_weights)
    a = rng.integers(-50, 50, n)
    b = rng.integers(0, 1000, n)
    c = rng.integers(-400, 400, n) / 4  # exact in binary floating point
    nulls = rng.random((3, n)) < [[0.15], [0.25], [0.15]]
    rows = [{"id": int(ids[i]), "dt": DTS[dts[i]], "op": OPS[ops[i]],
             "a": None if nulls[0, i] else int(a[i]), "b": None if nulls[1, i] else f"b{b[i]}",
             "c": None if nulls[2, i] else float(c[i])} for i in range(n)]
    if case.no_rows_after_delete:
        deleted: set[Key] = set()
        kept = []
        for r in rows:
            if (r["id"], r["dt"]) not in deleted:
                kept.append(r)
                if r["op"] == "-D":
                    deleted.add((r["id"], r["dt"]))
        rows = kept
    return rows


def split_by_key(rng: np.random.Generator, rows: list[Row], parts: int) -> list[list[Row]]:
    """Rows dealt to `parts` writers, every key's rows to one writer in their order (so the model's
    order is the table's: rows of one key in one commit are ordered only within a writer)."""
    owner: dict[Key, int] = {}
    out: list[list[Row]] = [[] for _ in range(parts)]
    for r in rows:
        out[owner.setdefault((r["id"], r["dt"]), int(rng.integers(parts)))].append(r)
    return out


def arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def in_batches(t: pa.Table, size: int = 40) -> list[pa.Table]:
    return [t.slice(i, size) for i in range(0, t.num_rows, size)]


def dataframe(spark, chunks: list[pa.Table]):
    """A DataFrame of exactly len(chunks) partitions, partition i holding chunks[i] in order."""
    def emit(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from chunks[i].to_batches()
    return spark.range(0, len(chunks), 1, len(chunks)).mapInArrow(emit, SPARK_SCHEMA)


def as_rows(t: pa.Table) -> list[Row]:
    return sorted(t.select(NAMES).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def model_rows(model: dict[Key, Row]) -> list[Row]:
    return [model[k] for k in sorted(model, key=lambda k: (k[1], k[0]))]


def runs_per_bucket(path: str, storage: dict[str, str] | None = None) -> dict[tuple[bytes, int], int]:
    groups: dict[tuple[bytes, int], list] = {}
    for e in Table.load(path, None, storage).new_scan().read_entries():
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    return {k: len(sorted_runs(files)) for k, files in groups.items()}


class Writer:
    def __init__(self, case: Case, path: str, spark, storage: dict[str, str]) -> None:
        self.case, self.path, self.spark = case, path, spark
        self.options = {**case.options, **storage}
        self.spilled = 0
        self.max_files_per_bucket = 0

    def commit(self, rng: np.random.Generator, rows: list[Row]) -> None:
        w = self.case.writer
        if w == "spark":
            chunks = [arrow(p) for p in split_by_key(rng, rows, 3)]
            dataframe(self.spark, chunks).write.format("paimon").mode("append").options(**self.options) \
                .save(self.path)
        elif w == "clustered":
            # one input partition: the shuffle by bucket keeps each key's rows in their order
            paimon_ds.write(dataframe(self.spark, [arrow(rows)]), self.path, options=self.options,
                            parallelism=4)
        else:
            table = Table.for_write(self.path, SCHEMA, self.options)
            parts = split_by_key(rng, rows, 2) if w == "core-2" else [rows]
            restore = BucketRestore.from_table(table)
            writes = [table.new_write(restore=restore, task=i) for i in range(len(parts))]
            for tw, part in zip(writes, parts):
                for batch in in_batches(arrow(part)):
                    tw.write_arrow(batch)
                self.spilled += sum(len(mw.spills) for mw in tw.writers.values())
            messages = [m for tw in writes for m in tw.prepare_commit()]
            for m in messages:
                self.max_files_per_bucket = max(self.max_files_per_bucket, len(m.new_files))
            table.new_commit().commit(messages)


def read_oracles(pypaimon_oracle, java_oracle, path: str) -> tuple[Any, pa.Table]:
    """Both oracles at once (each is a subprocess): pypaimon's table or the error it raised, Java's table."""
    def pypaimon_read() -> Any:
        try:
            return pypaimon_oracle.read(path)
        except AssertionError as e:  # the oracle process failed; its stderr is in the message
            return e
    with ThreadPoolExecutor(2) as pool:
        pp = pool.submit(pypaimon_read)
        java = pool.submit(java_oracle.read, path)
        return pp.result(), java.result()


# --------------------------------------------------------------------------------------- test

# The same cases on S3 (the loopback server): the oracles read a local copy of the table.
ON_S3 = ["deduplicate-spark", "partial-update-remove-on-delete", "aggregation-retract-clustered"]


@pytest.mark.parametrize(("name", "where"), [(n, "local") for n in CASES] + [(n, "s3") for n in ON_S3])
def test_random_upserts_and_deletes_match_the_model(name, where, request, spark, table_path, tmp_path,
                                                    pypaimon_oracle, java_oracle):
    case = CASES[name]
    rng = np.random.default_rng(1000 + list(CASES).index(name))
    model: dict[Key, Row] = {}
    storage: dict[str, str] = {}
    if where == "s3":
        s3 = request.getfixturevalue("s3_server")
        table_path, storage = f"s3://{s3.new_bucket('model')}/warehouse/db.db/t", s3.options()
    writer = Writer(case, table_path, spark, storage)
    deletes = 0

    def check(when: str) -> list[Row]:
        expected = model_rows(model)
        assert as_rows(Table.load(table_path, None, storage).to_arrow()) == expected, \
            f"{name}: paimon_ds core after {when}"
        return expected

    def local_copy(commit: int) -> str:
        if where == "local":
            return table_path
        return s3.download(table_path, tmp_path / f"copy-{commit}" / "warehouse" / "db.db" / "t")

    for commit in range(1, case.commits + 1):
        rows = random_rows(rng, case)
        deletes += sum(r["op"] == "-D" for r in rows)
        writer.commit(rng, rows)
        for r in rows:
            case.model(model, r)
        expected = check(f"commit {commit}")
        assert len(expected) > 100

        if commit in case.compact:
            full = case.compact[commit]
            # a minor compaction with trigger 3 (universal compaction picks runs to merge)
            snapshot = paimon_ds.compact(spark, table_path, full=full,
                                         options={**storage, **({} if full else
                                                                {"num-sorted-run.compaction-trigger": "3"})})
            assert snapshot is not None and snapshot.commit_kind == "COMPACT"
            check(f"{'full' if full else 'minor'} compaction after commit {commit}")
            if full:
                assert set(runs_per_bucket(table_path, storage).values()) == {1}

        if commit in case.oracles_after:
            pp, java = read_oracles(pypaimon_oracle, java_oracle, local_copy(commit))
            assert as_rows(java) == expected, f"{name}: Java Paimon 0.9 after commit {commit}"
            if case.pypaimon_refuses:
                assert isinstance(pp, AssertionError) and "NotImplementedError" in str(pp) \
                    and case.pypaimon_refuses in str(pp), f"{name}: pypaimon 2.1 was expected to refuse: {pp}"
            else:
                assert not isinstance(pp, Exception), pp
                assert as_rows(pp) == expected, f"{name}: pypaimon 2.1 after commit {commit}"

    if case.op_weights[3]:
        assert deletes > 100
    if case.expect_spill:
        assert writer.spilled > 0, "the tiny write buffer never spilled"
    if case.expect_many_l0:
        assert writer.max_files_per_bucket > 1, "the unspillable buffer never wrote more than one L0 file"
    runs = runs_per_bucket(table_path, storage)
    assert len(runs) == 9  # 3 partitions x 3 buckets
    if case.writer == "spark" and not case.compact:
        # no compaction, and in every commit more than one task wrote each bucket (a run per task)
        assert min(runs.values()) >= 2 * case.commits
    if case.writer == "clustered":
        assert max(runs.values()) <= 3  # compaction trigger 2: inline compaction keeps runs few
