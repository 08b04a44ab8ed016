"""External data paths (`data-file.external-paths`, Paimon 1.x; pypaimon 2.1 is the oracle).

Tables whose data files live outside the table directory, their full locations in the manifest's
`_EXTERNAL_PATH`: pypaimon writes -> paimon_ds reads (core and Spark), paimon_ds writes (append, primary
key, compaction) -> pypaimon reads, and maintenance (expiry, orphan removal) on such tables.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import mmh3
import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files
from paimon_ds.options.registry import OptionError
from paimon_ds.store.external_paths import entropy_dirs, murmur3_32, path_string

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])

SECOND_COMMIT = "commit_arrow(table, data)"  # the oracle's own batch commit (tests/oracles/paimon_oracle.py)


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["p"], r["v"]) for r in t.to_pylist())


def spark_rows(spark, path: str) -> list[tuple]:
    return sorted((r.id, r.p, r.v) for r in spark.read.format("paimon").load(path).collect())


def parquet_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".parquet", ".orc", ".avro")
                  and "manifest" not in p.parts)


def live_files(path: str) -> list:
    return [f for s in Table.load(path).new_scan().plan() for f in s.files]


def roots(tmp_path: Path, n: int = 2) -> list[Path]:
    out = [tmp_path / f"ext{i}" for i in range(n)]
    for r in out:
        r.mkdir()
    return out


def uri(p: Path) -> str:
    return f"file://{p}"  # `file:///abs/dir`, as users write it; Paimon records `file:/abs/dir/...`


@pytest.mark.parametrize("strategy", ["round-robin", "specific-fs", "entropy-inject"])
def test_pypaimon_written_pk_table_is_read_exactly(pypaimon_oracle, table_path, tmp_path, spark, strategy):
    e0, e1 = roots(tmp_path)
    opts = {"data-file.external-paths": f"{uri(e0)},{uri(e1)}", "data-file.external-paths.strategy": strategy}
    if strategy == "specific-fs":  # a root on another scheme is skipped by the strategy
        opts["data-file.external-paths"] += ",s3://nowhere/x"
        opts["data-file.external-paths.specific-fs"] = "file"
    first = pa.table({"id": pa.array([1, 2, 3, 4], pa.int32()), "p": ["a", "b", "a", "b"],
                      "v": ["x1", "x2", "x3", "x4"]}, schema=SCHEMA)
    second = pa.table({"id": pa.array([2, 3, 5], pa.int32()), "p": ["b", "a", "a"], "v": ["y2", "y3", "y5"]},
                      schema=SCHEMA)
    pypaimon_oracle.write(table_path, first, partition="p", bucket=2, primary_key="id,p", options=opts)
    pypaimon_oracle.exec(table_path, SECOND_COMMIT, second)

    expected = [(1, "a", "x1"), (2, "b", "y2"), (3, "a", "y3"), (4, "b", "x4"), (5, "a", "y5")]
    assert rows(pypaimon_oracle.read(table_path)) == expected
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert spark_rows(spark, table_path) == expected
    assert rows(Table.load(table_path, {"scan.snapshot-id": "1"}).to_arrow()) == rows(first)

    files = live_files(table_path)
    assert parquet_files(Path(table_path)) == []  # nothing in the table directory
    for f in files:
        assert f.external_path.startswith((f"file:{e0}/p=", f"file:{e1}/p="))
        assert Path(f.external_path[len("file:"):]).is_file()
        if strategy == "entropy-inject":  # <root>/p=a/bucket-N/bbbb/bbbb/bbbb/bbbbbbbb/<name>
            assert f.external_path.endswith(f"/{entropy_dirs(f.file_name)}/{f.file_name}")


def test_we_write_append_and_pk_tables_under_external_roots(pypaimon_oracle, tmp_path, spark):
    e0, e1 = roots(tmp_path)
    ext = {"data-file.external-paths": f"{uri(e0)},{uri(e1)}/",
           "data-file.external-paths.strategy": "round-robin"}

    append_path = str(tmp_path / "wh" / "db.db" / "append")
    table = Table.for_write(append_path, SCHEMA, {"partition": "p", **ext})
    expected: list[tuple] = []
    for n in range(4):  # one table object: each bucket's files take the roots in turn
        batch = pa.table({"id": pa.array([n * 10, n * 10 + 1], pa.int32()), "p": ["a", "b"],
                          "v": [f"v{n}", None]}, schema=SCHEMA)
        w = table.new_write()
        w.write_arrow(batch)
        table.new_commit(commit_user="u").commit(w.prepare_commit())
        expected += rows(batch)
        table = Table.load(append_path) if n == 1 else table
    files = live_files(append_path)
    assert len(files) == 8 and parquet_files(Path(append_path)) == []
    # two writes per table object, round-robin per bucket: each partition has two files in each root
    placed = Counter((f.external_path.split("/p=")[0], f.external_path.split("/p=")[1][0]) for f in files)
    assert placed == {(f"file:{e}", p): 2 for e in (e0, e1) for p in "ab"}
    assert rows(pypaimon_oracle.read(append_path)) == sorted(expected)
    assert rows(Table.load(append_path).to_arrow()) == sorted(expected)

    pk_path = str(tmp_path / "wh" / "db.db" / "pk")
    pk_opts = {"partition": "p", "primary-key": "id,p", "bucket": "2", "write-only": "true", **ext}
    state: dict[tuple, str] = {}
    for n in range(3):
        ids = list(range(n * 3, n * 3 + 8))
        batch = pa.table({"id": pa.array(ids, pa.int32()), "p": ["a" if i % 2 else "b" for i in ids],
                          "v": [f"w{n}-{i}" for i in ids]}, schema=SCHEMA)
        t = Table.for_write(pk_path, SCHEMA, pk_opts)
        w = t.new_write()
        w.write_arrow(batch)
        t.new_commit(commit_user="u").commit(w.prepare_commit())
        state.update({(i, p): v for i, p, v in rows(batch)})
    pk_expected = sorted((i, p, v) for (i, p), v in state.items())
    assert rows(pypaimon_oracle.read(pk_path)) == pk_expected

    # compaction (Spark tasks) rewrites the files, again under the external roots
    before = {f.file_name: f.external_path for f in live_files(pk_path)}
    assert paimon_ds.compact(spark, pk_path, full=True) is not None
    after = live_files(pk_path)
    assert {f.level for f in after} == {5} and any(f.file_name not in before for f in after)
    # a bucket's single file is upgraded in place (same file, new level): it keeps its location
    assert all(before[f.file_name] == f.external_path for f in after if f.file_name in before)
    assert all(f.external_path.startswith((f"file:{e0}/p=", f"file:{e1}/p=")) for f in after)
    assert parquet_files(Path(pk_path)) == []
    assert rows(pypaimon_oracle.read(pk_path)) == pk_expected
    assert rows(Table.load(pk_path).to_arrow()) == pk_expected
    assert spark_rows(spark, pk_path) == pk_expected

    assert paimon_ds.compact(spark, append_path, full=True) is not None
    assert len(live_files(append_path)) == 2
    assert all(f.external_path.startswith(("file:" + str(e0), "file:" + str(e1))) for f in live_files(append_path))
    assert rows(pypaimon_oracle.read(append_path)) == sorted(expected)

    # a row-level DELETE rewrites the touched external files and drops the old ones from the table
    assert paimon_ds.delete(spark, append_path, "v IS NULL") is not None
    kept = [r for r in sorted(expected) if r[2] is not None]
    assert rows(pypaimon_oracle.read(append_path)) == kept
    assert rows(Table.load(append_path).to_arrow()) == kept


def test_expire_and_orphan_removal_keep_every_referenced_external_file(pypaimon_oracle, tmp_path):
    e0, e1 = roots(tmp_path)
    path = str(tmp_path / "wh" / "db.db" / "t")
    opts = {"partition": "p", "primary-key": "id,p", "bucket": "1", "write-only": "true",
            "data-file.external-paths": f"{uri(e0)},{uri(e1)}", "data-file.external-paths.strategy": "round-robin"}
    state: dict[tuple, str] = {}
    for n in range(4):
        batch = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "p": ["a", "a", "b"],
                          "v": [f"v{n}"] * 3}, schema=SCHEMA)
        t = Table.for_write(path, SCHEMA, opts)
        w = t.new_write()
        w.write_arrow(batch)
        t.new_commit(commit_user="u").commit(w.prepare_commit())
        state.update({(i, p): v for i, p, v in rows(batch)})
    from paimon_ds.operation.compact import compact_in_process
    table = Table.load(path)
    assert compact_in_process(table, {(s.partition, s.bucket) for s in table.new_scan().plan()}, full=True)
    expected = sorted((i, p, v) for (i, p), v in state.items())
    on_disk = {str(p) for p in parquet_files(tmp_path) if "ext" in p.parts[-4]}
    assert len(on_disk) == 10  # 4 commits x 2 partitions + 2 compacted files

    # an orphan in a bucket directory of an external root, and a foreign file beside the table's layout
    orphan = e0 / "p=a" / "bucket-0" / "data-orphan-0.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)  # round-robin starts at a random root: e0 may have no p=a yet
    orphan.write_bytes(b"x")
    foreign = e1 / "other.parquet"
    foreign.write_bytes(b"y")
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    os.utime(foreign, (old, old))
    assert remove_orphan_files(Table.load(path), dry_run=True) == [path_string(uri(orphan))]
    assert orphan.exists()
    assert remove_orphan_files(Table.load(path)) == [f"file:{orphan}"]
    assert not orphan.exists() and foreign.exists()
    assert {str(p) for p in parquet_files(tmp_path) if "ext" in p.parts[-4]} == on_disk

    result = expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    assert result.expired == [1, 2, 3, 4]
    live = {f.external_path for f in live_files(path)}
    assert len(live) == 2 and sorted(result.deleted_files[:8]) == sorted(f"file:{p}" for p in on_disk
                                                                         if f"file:{p}" not in live)
    assert {f"file:{p}" for p in parquet_files(tmp_path) if "ext" in p.parts[-4]} == live
    assert rows(Table.load(path).to_arrow()) == expected
    assert rows(pypaimon_oracle.read(path)) == expected
    assert remove_orphan_files(Table.load(path), older_than_ms=0) == []


def test_strategies_and_option_checks(pypaimon_oracle, tmp_path):
    e0, e1 = roots(tmp_path)
    path = str(tmp_path / "wh" / "db.db" / "t")
    opts = {"bucket": "-1", "data-file.external-paths": f"{uri(e0)},{uri(e1)}",
            "data-file.external-paths.strategy": "weight-robin", "data-file.external-paths.weights": "1,1000000"}
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "p": ["a", "b"], "v": ["x", "y"]}, schema=SCHEMA)
    table = Table.for_write(path, SCHEMA, opts)
    for _ in range(3):
        w = table.new_write()
        w.write_arrow(data)
        table.new_commit(commit_user="u").commit(w.prepare_commit())
    # a root of weight 1 in a million: every file goes to the other one
    assert [f.external_path.rsplit("/", 1)[0] for f in live_files(path)] == [f"file:{e1}/bucket-0"] * 3
    assert rows(pypaimon_oracle.read(path)) == sorted(rows(data) * 3)

    # entropy-inject: Guava's murmur3_32 of the file name (pypaimon places files the same way)
    for name in ["", "a", "ab", "abc", "abcd", "data-5f1c2e7a-0b3d-4c1e-9a2f-000000000000-17.parquet"]:
        assert murmur3_32(name.encode()) == mmh3.hash(name.encode(), 0, signed=False)
    assert entropy_dirs("data-0-0.parquet").count("/") == 3
    assert path_string("file:///tmp//x/") == "file:/tmp/x" and path_string("s3://b/x/") == "s3://b/x"

    bad = {"data-file.external-paths.strategy": "round-robin"}
    for options, message in [({**bad, "data-file.external-paths": "/no/scheme"}, "has no scheme"),
                             ({**bad, "data-file.external-paths.strategy": "specific-fs",
                               "data-file.external-paths": uri(e0), "data-file.external-paths.specific-fs": "s3"},
                              "no external path"),
                             ({**bad, "data-file.external-paths.strategy": "sideways",
                               "data-file.external-paths": uri(e0)}, "not an external path strategy")]:
        with pytest.raises(OptionError, match=message):
            t = Table.for_write(str(tmp_path / f"bad{len(message)}"), SCHEMA, options)
            t.new_write().write_arrow(data)
    # strategy none (the default): the table's own directory, no _EXTERNAL_PATH
    plain = str(tmp_path / "plain")
    t = Table.for_write(plain, SCHEMA, {"data-file.external-paths": uri(e0)})
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit(commit_user="u").commit(w.prepare_commit())
    assert [f.external_path for f in live_files(plain)] == [None]


def test_external_root_on_another_filesystem(s3_server, tmp_path):
    """A local table with one root on S3: files open, compact and expire through the root's own filesystem."""
    from paimon_ds.operation.compact import compact_in_process
    e0 = roots(tmp_path, 1)[0]
    bucket = s3_server.new_bucket("ext")
    storage = s3_server.options()
    path = str(tmp_path / "t")
    opts = {"data-file.external-paths": f"{uri(e0)},s3://{bucket}/ext",
            "data-file.external-paths.strategy": "round-robin"}
    table = Table.for_write(path, SCHEMA, opts, storage)
    expected: list[tuple] = []
    for n in range(2):
        data = pa.table({"id": pa.array([n, n + 10], pa.int32()), "p": ["a", "b"], "v": [f"v{n}", None]},
                        schema=SCHEMA)
        w = table.new_write()
        w.write_arrow(data)
        table.new_commit(commit_user="u").commit(w.prepare_commit())
        expected += rows(data)
    files = [f for s in Table.load(path, None, storage).new_scan().plan() for f in s.files]
    assert sorted(f.external_path.split("/bucket-0/")[0] for f in files) == [f"file:{e0}", f"s3://{bucket}/ext"]
    s3 = s3_server.fs()
    assert [p.rsplit("/", 1)[1] for p in s3.find(bucket)] == [f.file_name for f in files
                                                              if f.external_path.startswith("s3:")]
    assert rows(Table.load(path, None, storage).to_arrow()) == sorted(expected)

    table = Table.load(path, None, storage)
    assert compact_in_process(table, {(s.partition, s.bucket) for s in table.new_scan().plan()}, full=True)
    assert rows(Table.load(path, None, storage).to_arrow()) == sorted(expected)
    result = expire_snapshots(Table.load(path, None, storage), retain_min=1, retain_max=1)
    assert result.expired == [1, 2]
    live = [f.external_path for s in Table.load(path, None, storage).new_scan().plan() for f in s.files]
    on_s3 = {f"s3://{p}" for p in s3.find(bucket)}
    on_disk = {f"file:{p}" for p in parquet_files(e0)}
    assert len(live) == 1 and on_s3 | on_disk == set(live)
    assert rows(Table.load(path, None, storage).to_arrow()) == sorted(expected)
