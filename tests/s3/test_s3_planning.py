"""Planning a scan of an S3 table costs a few metadata requests however many data files the table has:
the manifests hold every file's size, so nothing HEADs or opens a data file before it is read, and
reading one costs one GET (no HEAD for its size).

Two append tables written the same way (10 commits): 10 files (1 partition) and 1,000 (100 partitions).
The S3 test server counts the requests it serves.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from paimon_ds import Table

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.string())])
COMMITS = 10
MAX_PLAN_REQUESTS = 30


def write_table(path: str, opts: dict[str, str], partitions: int) -> pa.Table:
    """COMMITS commits of one file per partition; the rows written."""
    table = Table.for_write(path, SCHEMA, {"partition": "p", **opts})

    def prepare(c: int):
        ids = list(range(c * partitions, (c + 1) * partitions))
        w = table.new_write()
        w.write_arrow(pa.table({"id": ids, "p": [i % partitions for i in ids], "v": [f"v{i}" for i in ids]},
                               schema=SCHEMA))
        return w.prepare_commit()

    with ThreadPoolExecutor(4) as pool:  # the data files' PUTs overlap; commits go in order
        for c, msgs in enumerate(pool.map(prepare, range(COMMITS))):
            table.new_commit("w").commit(msgs, identifier=c)
    ids = list(range(COMMITS * partitions))
    return pa.table({"id": ids, "p": [i % partitions for i in ids], "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def tables(s3_server) -> dict[int, tuple[str, pa.Table]]:
    """Data files -> (path, rows): a 10-file and a 1,000-file table."""
    out = {}
    for files, partitions in ((10, 1), (1000, 100)):
        t0 = time.monotonic()
        path = f"s3://{s3_server.new_bucket()}/warehouse/db.db/t{files}"
        out[files] = path, write_table(path, s3_server.options(), partitions)
        print(f"\nwrote the {files}-file table in {time.monotonic() - t0:.1f}s")
    return out


def kind(request: str, data_files: set[str]) -> str:
    """'METHOD what' of one served request ("METHOD /bucket/key?query")."""
    method, target = request.split(" ", 1)
    key, _, query = target.partition("?")
    if "list-type=" in query:
        what = "list"
    elif key in data_files:
        what = "data-file"
    elif "/manifest/manifest-list-" in key:
        what = "manifest-list"
    else:
        what = next((d for d in ("manifest", "snapshot", "schema") if f"/{d}/" in key), "other")
    return f"{method} {what}"


def data_file_keys(path: str, opts: dict[str, str]) -> set[str]:
    """Every live data file as the server logs it (/bucket/key)."""
    return {"/" + s.file_path(f) for s in Table.load(path, None, opts).new_scan().plan() for f in s.files}


def test_planning_costs_the_same_few_requests_for_10_and_1000_files(s3_server, tables):
    opts = s3_server.options()
    breakdown = {}
    for files, (path, _) in tables.items():
        data_files = data_file_keys(path, opts)
        assert len(data_files) == files
        s3_server.reset()
        splits = Table.load(path, None, opts).new_scan().plan()
        served = s3_server.requests()
        assert sum(len(s.files) for s in splits) == files
        breakdown[files] = Counter(kind(r, data_files) for r in served)
        print(f"\nplanning {files} files: {len(served)} requests {dict(sorted(breakdown[files].items()))}")
        assert len(served) <= MAX_PLAN_REQUESTS
        assert not any(k.endswith("data-file") for k in breakdown[files])
    # the same requests, kind by kind: one per manifest (10 commits, 10 manifests), none per data file
    assert breakdown[10] == breakdown[1000]
    assert breakdown[1000]["GET manifest"] == COMMITS


def test_reading_1000_files_gets_each_once(s3_server, tables):
    opts = s3_server.options()
    path, expected = tables[1000]
    data_files = data_file_keys(path, opts)
    s3_server.reset()
    t0 = time.monotonic()
    rows = Table.load(path, None, opts).to_arrow()
    seconds = time.monotonic() - t0
    served = s3_server.requests()
    per_file = Counter(r.split(" ", 1)[1] for r in served if r.split(" ", 1)[1] in data_files)
    methods = Counter(r.split(" ", 1)[0] for r in served if r.split(" ", 1)[1] in data_files)
    print(f"\nreading 1000 files ({seconds:.1f}s): {len(served)} requests, on data files {dict(methods)}, "
          f"GETs per file max {max(per_file.values())} mean {sum(per_file.values()) / len(per_file):.2f}")
    assert rows.sort_by("id").equals(expected)
    assert methods["HEAD"] == 0
    assert set(methods) == {"GET"}
    assert set(per_file) == data_files
    assert max(per_file.values()) <= 3


def test_spark_plans_without_per_file_requests(spark, s3_server, tables):
    opts = s3_server.options()
    path, expected = tables[1000]
    table = Table.load(path, None, opts)
    data_files = data_file_keys(path, opts)
    p3_files = {"/" + s.file_path(f) for s in table.new_scan().plan() for f in s.files
                if s.directory.endswith("/p=3/bucket-0")}
    assert len(p3_files) == COMMITS

    s3_server.reset()
    df = spark.read.format("paimon").options(**opts).load(path)
    assert df.schema.names == SCHEMA.names
    loading = Counter(kind(r, data_files) for r in s3_server.requests(reset=True))
    got = sorted(r.id for r in df.filter("p = 3").select("id").collect())
    served = s3_server.requests()
    query = Counter(kind(r, data_files) for r in served)
    metadata = sum(n for k, n in query.items() if not k.endswith("data-file"))
    print(f"\nspark load+schema: {dict(sorted(loading.items()))}"
          f"\nspark filter p = 3 on 1000 files: {len(served)} requests, {metadata} not on data files: "
          f"{dict(sorted(query.items()))}")
    assert got == [i for i in expected["id"].to_pylist() if i % 100 == 3]
    assert not any(k.endswith("data-file") for k in loading)
    assert query["HEAD data-file"] == 0
    # partition pruning at planning: only p=3's files are fetched, once each
    fetched = Counter(r.split(" ", 1)[1] for r in served if r.split(" ", 1)[1] in data_files)
    assert set(fetched) == p3_files
    assert max(fetched.values()) <= 3
    assert metadata <= MAX_PLAN_REQUESTS  # as the core's planning: never a request per data file
