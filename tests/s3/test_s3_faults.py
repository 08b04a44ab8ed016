"""S3 under a bad network (issue 45): the loopback S3 server behind a proxy that fails requests
(tests/s3/fault_proxy.py), Spark-free writers committing through it.

- The lost answer to `snapshot/snapshot-N`'s conditional PUT: the store applied it, the connection closed (or a
  503 came back), the client retried and met its own snapshot (412). The commit is reported and readable, the
  table reads through the proxy and the direct endpoint, later commits land. Also a 503 before the store saw it,
  and a PUT that reached the store twice.
- A range GET of a data file that fails after it was opened is the library's StorageError naming the file.
- A soak: commits of appends and primary-key upserts while the proxy fails a tenth of all requests in one mode
  (before, after, twice, delay; `make soak`: 200 commits per mode; `make test`: 16 commits, modes mixed). Every
  commit the library reported done is there once, nothing of a commit that raised is (unless it raised
  OutcomeUnknown: the store never told, so it may be there), every listed snapshot reads, and remove_orphan_files
  leaves the same rows.

Half of the soak's commits run with the client's retries thinned (botocore 2 attempts, s3fs 1): with the
library's defaults botocore and s3fs try a failed request up to 25 times, so that only the answers a retry
changes (a 412 where a create landed) reach paimon_ds; with thin retries some requests fail in paimon_ds itself
(about one in 700 at a 10% fault rate: a 503 twice in a row; a closed connection the client's HTTP layer sends
again once by itself).
"""

from __future__ import annotations

import http.client
import random
import socketserver
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
import s3fs

import paimon_ds
from paimon_ds import PaimonDsError, StorageError, Table, procedures
from paimon_ds.fs.file_io import OutcomeUnknown

from .fault_proxy import AFTER, BEFORE, CLOSE, MODES, TWICE, UNAVAILABLE, FaultProxy, Rule

SNAPSHOT_PUT = r"/snapshot/snapshot-\d+$"
# the client's retries cut down (see the module's docstring): botocore's legacy policy, as by default, 2 attempts
# in all (its `max_attempts` counts the retries only)
THIN_RETRIES = {"config_kwargs": {"retries": {"mode": "legacy", "total_max_attempts": 2}}}

APPEND_SCHEMA = pa.schema([pa.field("c", pa.int64(), nullable=False), pa.field("j", pa.int32(), nullable=False),
                           ("payload", pa.string())])
UPSERT_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("c", pa.int64(), nullable=False),
                           ("payload", pa.string())])
# expiry after most commits (so that deletes meet faults too), compaction of both tables' buckets
RETENTION = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4"}
APPEND_OPTIONS = {"bucket": "2", "bucket-key": "j", "compaction.min.file-num": "3", **RETENTION}
UPSERT_OPTIONS = {"primary-key": "k", "bucket": "2", "num-sorted-run.compaction-trigger": "3", **RETENTION}
KEYS = 40  # the upserted keys: each commit rewrites a few of them


@pytest.fixture
def proxies(s3_server) -> Iterator[Callable[..., FaultProxy]]:
    """Start fault proxies in front of the session's S3 server (FaultProxy's arguments); all stop at the end."""
    started: list[FaultProxy] = []

    def start(**kwargs: Any) -> FaultProxy:
        started.append(FaultProxy(s3_server.endpoint, **kwargs).start())
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


def through(s3_server, proxy: FaultProxy, **extra: Any) -> dict[str, Any]:
    """The storage options that reach the store through ``proxy``."""
    return {**s3_server.options(), "s3.endpoint": proxy.endpoint, **extra}


def client_retries(monkeypatch: pytest.MonkeyPatch, thin: bool) -> dict[str, Any]:
    """Thin (see the module's docstring) or the library's default retries: the storage options to add. s3fs reads
    its retry count from the class (not an argument), so it is set there for the test."""
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1 if thin else 5)
    return dict(THIN_RETRIES) if thin else {}


def rows(path: str, opts: dict[str, Any], snapshot_id: int | None = None) -> list[tuple]:
    scan = {"scan.snapshot-id": str(snapshot_id)} if snapshot_id is not None else None
    return sorted(tuple(r.values()) for r in Table.load(path, scan, opts).to_arrow().to_pylist())


def foreign(e: BaseException) -> str:
    """An error that is not the library's, with the library's frames it came through (where to fix it)."""
    frames = [f"{f.filename.rsplit('/paimon_ds/', 1)[-1]}:{f.lineno} {f.name}"
              for f in traceback.extract_tb(e.__traceback__) if "/paimon_ds/" in f.filename]
    return f"{type(e).__name__}: {e} (via {' < '.join(reversed(frames[-4:]))})"


def snapshot_puts(s3_server, bucket: str, sid: int) -> int:
    """How many PUTs of snapshot-``sid`` reached the store (its request log)."""
    return sum(1 for r in s3_server.requests() if r.startswith(f"PUT /{bucket}/") and r.endswith(f"/snapshot-{sid}"))


# ---------------------------------------------------------------- the lost answer to the snapshot's create
LOST_ANSWERS = [
    pytest.param(AFTER, CLOSE, False, id="applied-then-connection-closed"),
    pytest.param(AFTER, UNAVAILABLE, False, id="applied-then-503"),
    pytest.param(AFTER, CLOSE, True, id="applied-then-connection-closed-no-client-retries"),
    pytest.param(AFTER, UNAVAILABLE, True, id="applied-then-503-no-client-retries"),
    pytest.param(TWICE, CLOSE, False, id="sent-twice"),
    pytest.param(BEFORE, UNAVAILABLE, False, id="503-before-the-store"),
    pytest.param(BEFORE, UNAVAILABLE, True, id="503-before-the-store-no-client-retries"),
]


@pytest.mark.parametrize("mode, answer, no_client_retries", LOST_ANSWERS)
def test_lost_answer_to_the_snapshot_put(s3_server, proxies, monkeypatch, mode, answer, no_client_retries):
    """The conditional PUT of snapshot-2 meets a fault. Before fs/file_io.py checked a 412 against what it wrote, the
    retry's 412 was taken for a lost race: the commit deleted its manifest lists while its snapshot stayed the latest,
    and every read raised FileNotFoundError from then on, on the direct endpoint too."""
    proxy = proxies()
    retries = {}
    if no_client_retries:  # the fault reaches paimon_ds's own create, which asks again
        monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
        retries = {"config_kwargs": {"retries": {"mode": "legacy", "total_max_attempts": 1}}}
    opts, direct = through(s3_server, proxy, **retries), s3_server.options()
    bucket = s3_server.new_bucket("lost")
    path = f"s3://{bucket}/warehouse/db.db/t"
    first = pa.table({"id": [1, 2], "v": ["a", "b"]})
    paimon_ds.write_arrow(path, first, primary_key="id", options={"bucket": "2"}, storage_options=opts)

    proxy.rules.append(Rule(mode, "PUT", SNAPSHOT_PUT, answer=answer, header="If-None-Match"))
    s3_server.reset()
    snapshot = paimon_ds.write_arrow(path, pa.table({"id": [2, 3], "v": ["B", "c"]}), primary_key="id",
                                     storage_options=opts)
    assert proxy.faults[mode] == 1, proxy.summary()
    assert snapshot is not None and snapshot.id == 2  # the library found out that its create landed
    # the store saw the create twice (the second answered 412: the commit's own snapshot) or, for a 503 before, once
    # refused and then created
    assert snapshot_puts(s3_server, bucket, 2) == (1 if mode == BEFORE else 2)

    expected = [(1, "a"), (2, "B"), (3, "c")]
    for options in (opts, direct):
        assert rows(path, options) == expected
        table = Table.load(path, None, options)
        assert [s.id for s in table.snapshots()] == [1, 2]
        assert table.snapshots()[-1].commit_user == snapshot.commit_user
    assert rows(path, direct, snapshot_id=1) == [(1, "a"), (2, "b")]

    # later commits land; remove_orphan_files finds nothing the table uses
    assert paimon_ds.write_arrow(path, pa.table({"id": [4], "v": ["d"]}), storage_options=opts).id == 3
    procedures.remove_orphan_files(path, older_than=int(time.time() * 1000) + 1000, storage_options=direct)
    assert rows(path, direct) == expected + [(4, "d")]
    assert rows(path, opts, snapshot_id=2) == expected


class _Recorder(socketserver.StreamRequestHandler):
    """A stand-in store that keeps each request's raw bytes (head and body, as they came) and answers 200."""

    seen: list[bytes] = []

    def handle(self) -> None:
        raw = bytearray()
        while not raw.endswith(b"\r\n\r\n"):
            raw += self.rfile.read(1)
        if b"chunked" in raw.lower():
            while not raw.endswith(b"\r\n0\r\nx-amz-checksum-crc32: AAAAAA==\r\n\r\n"):
                raw += self.rfile.read(1)
        _Recorder.seen.append(bytes(raw))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def test_proxy_forwards_bodies_intact():
    """A chunked body (botocore's aws-chunked uploads: chunks, then a checksum trailer) reaches the store byte for
    byte, with its framing; so does If-None-Match, and a `twice` fault sends the request twice."""
    store = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=store.serve_forever, daemon=True).start()
    proxy = FaultProxy(f"http://127.0.0.1:{store.server_address[1]}",
                       rules=[Rule(TWICE, "PUT", "/twice$")]).start()
    body = b"5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32: AAAAAA==\r\n\r\n"
    try:
        _Recorder.seen.clear()
        for key in ("once", "twice"):
            conn = http.client.HTTPConnection("127.0.0.1", int(proxy.endpoint.rsplit(":", 1)[1]), timeout=10)
            conn.putrequest("PUT", f"/b/{key}", skip_accept_encoding=True)
            for name, value in (("Transfer-Encoding", "chunked"), ("Content-Encoding", "aws-chunked"),
                                ("X-Amz-Trailer", "x-amz-checksum-crc32"), ("If-None-Match", "*")):
                conn.putheader(name, value)
            conn.endheaders(body)
            assert conn.getresponse().status == 200
            conn.close()
    finally:
        proxy.stop()
        store.shutdown()
        store.server_close()
    assert len(_Recorder.seen) == 3 and proxy.faults == {TWICE: 1}
    for raw in _Recorder.seen:
        head, _, forwarded = raw.partition(b"\r\n\r\n")
        assert forwarded == body
        assert b"If-None-Match: *" in head and b"Transfer-Encoding: chunked" in head


@pytest.mark.parametrize("primary_key", [None, "id"], ids=["append", "primary-key"])
def test_failed_range_read_of_a_data_file(s3_server, proxies, monkeypatch, primary_key):
    """A data file is opened, then read range by range: a GET that fails then (no client retries left) is the
    library's StorageError naming the file, not s3fs's bare OSError (the soak's reads met it)."""
    proxy = proxies()
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    opts = through(s3_server, proxy, config_kwargs={"retries": {"mode": "legacy", "total_max_attempts": 1}})
    path = f"s3://{s3_server.new_bucket('range')}/warehouse/db.db/t"
    options = {"primary-key": primary_key, "bucket": "1"} if primary_key else {}
    paimon_ds.write_arrow(path, pa.table({"id": [1, 2], "v": ["a", "b"]}), options=options, storage_options=opts)
    proxy.rules.append(Rule(BEFORE, "GET", r"/bucket-0/data-[^/]+\.parquet$"))
    with pytest.raises(StorageError, match=r"could not read .*/bucket-0/data-.*\.parquet"):
        Table.load(path, None, opts).to_arrow()
    assert proxy.faults[BEFORE] == 1
    assert rows(path, opts) == [(1, "a"), (2, "b")]  # the next read gets it


# ---------------------------------------------------------------- the soak
@dataclass
class Soak:
    """Commits through a fault proxy, and what the library reported for each (see the module's docstring)."""

    s3_server: Any
    proxy: FaultProxy
    monkeypatch: pytest.MonkeyPatch
    seed: int
    bucket: str = ""
    appended: dict[int, int] = field(default_factory=dict)  # append commit -> its rows
    upserted: dict[int, list[int]] = field(default_factory=dict)  # upsert commit -> its keys
    done: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)  # commit -> the library's error
    unknown: set[int] = field(default_factory=set)  # commits that raised OutcomeUnknown
    foreign: list[str] = field(default_factory=list)  # errors that are not the library's
    reads: Counter = field(default_factory=Counter)  # reads under faults: checked / failed (the library's error)
    apis: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.bucket = self.s3_server.new_bucket("soak")
        self.append_path = f"s3://{self.bucket}/warehouse/db.db/appended"
        self.upsert_path = f"s3://{self.bucket}/warehouse/db.db/upserted"

    def options(self, thin: bool) -> dict[str, Any]:
        return through(self.s3_server, self.proxy, **client_retries(self.monkeypatch, thin))

    def run(self, commits: int, check_every: int = 10) -> None:
        for c in range(1, commits + 1):
            self.commit(c)
            if c % check_every == 0:
                self.read_under_faults()

    def commit(self, c: int) -> None:
        thin = self.rng.random() < 0.5
        opts = self.options(thin)
        try:
            if self.rng.random() < 0.5:
                self.append(c, self.rng.randint(1, 5), opts)
            else:
                self.upsert(c, self.rng.sample(range(KEYS), self.rng.randint(1, 6)), opts)
            self.done.add(c)
        except OutcomeUnknown as e:
            self.unknown.add(c)
            self.failed[c] = f"{type(e).__name__}: {e}"
        except PaimonDsError as e:
            self.failed[c] = f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 - recorded: the test fails on it at the end, with the others
            self.failed[c] = f"{type(e).__name__}: {e}"
            self.foreign.append(f"commit {c}: {foreign(e)}")

    def append(self, c: int, n: int, opts: dict[str, Any]) -> None:
        self.appended[c] = n
        data = pa.table({"c": [c] * n, "j": list(range(n)), "payload": [f"{c}-{j}" for j in range(n)]},
                        schema=APPEND_SCHEMA)
        if self.rng.random() < 0.5:
            self.apis["write_arrow"] += 1
            paimon_ds.write_arrow(self.append_path, data, options=APPEND_OPTIONS, storage_options=opts)
        else:
            self.apis["Table.append"] += 1
            Table.for_write(self.append_path, APPEND_SCHEMA, APPEND_OPTIONS, opts).append(data)

    def upsert(self, c: int, keys: list[int], opts: dict[str, Any]) -> None:
        self.upserted[c] = keys
        data = pa.table({"k": keys, "c": [c] * len(keys), "payload": [f"{c}:{k}" for k in keys]}, schema=UPSERT_SCHEMA)
        if self.rng.random() < 0.5:
            self.apis["write_arrow"] += 1
            paimon_ds.write_arrow(self.upsert_path, data, options=UPSERT_OPTIONS, storage_options=opts)
            return
        self.apis["TableWrite+TableCommit"] += 1
        table = Table.for_write(self.upsert_path, UPSERT_SCHEMA, UPSERT_OPTIONS, opts)
        write = table.new_write()
        try:
            write.write_arrow(data)
            messages = write.prepare_commit()
        except BaseException:
            write.abort()
            raise
        commit = table.new_commit()
        try:
            commit.commit(messages, identifier=c)
        except BaseException:
            commit.abort(messages)  # as a caller does: deletes nothing if the snapshot may have landed
            raise

    # ---------------------------------------------------------------- checks
    def read_under_faults(self) -> None:
        """Read both tables through the faulty proxy: an error must be the library's; rows must be the model's."""
        opts = self.options(self.rng.random() < 0.5)
        for path, check in ((self.append_path, self.check_appended), (self.upsert_path, self.check_upserted)):
            try:
                found = rows(path, opts)
            except PaimonDsError:
                self.reads["failed"] += 1
                continue
            except Exception as e:  # noqa: BLE001 - recorded, the test fails on it
                self.foreign.append(f"read of {path}: {foreign(e)}")
                continue
            self.reads["checked"] += 1
            problems = check(found)
            assert not problems, f"read under faults of {path}: {problems}"

    def settled(self, commits: dict[int, Any]) -> tuple[set[int], set[int]]:
        """(done, unknown) among ``commits``."""
        return self.done & commits.keys(), self.unknown & commits.keys()

    def check_appended(self, found: list[tuple], latest: bool = True) -> list[str]:
        """Every append reported done is there once with all its rows (``latest``: the table's latest rows; an
        older snapshot may lack later ones); nothing of one reported failed is."""
        done, unknown = self.settled(self.appended)
        per_row = Counter((c, j) for c, j, _ in found)
        problems = [f"row {r} {n} times" for r, n in per_row.items() if n > 1]
        present = {c for c, _ in per_row}
        problems += [f"commit {c} (done) is missing" for c in sorted(done - present) if latest]
        problems += [f"commit {c} ({self.failed.get(c, 'never made')}) is there"
                     for c in sorted(present - done - unknown)]
        problems += [f"commit {c} has rows {sorted(j for cc, j in per_row if cc == c)} of {self.appended[c]}"
                     for c in sorted(present & self.appended.keys())
                     if {j for cc, j in per_row if cc == c} != set(range(self.appended[c]))]
        return problems

    def check_upserted(self, found: list[tuple], latest: bool = True) -> list[str]:
        """Each key has the value of the last upsert of it reported done, or of a later one that raised
        OutcomeUnknown and landed (``latest``; an older snapshot: of some commit reported done or unknown); one
        key once."""
        done, unknown = self.settled(self.upserted)
        keys = Counter(k for k, _, _ in found)
        problems = [f"key {k} {n} times" for k, n in keys.items() if n > 1]
        actual = {k: c for k, c, _ in found}
        problems += [f"key {k} has the value of commit {c} ({self.failed.get(c, 'never made')})"
                     for k, c in sorted(actual.items()) if c not in done | unknown or k not in self.upserted[c]]
        problems += [f"key {k}: payload {p!r}" for k, c, p in found if p != f"{c}:{k}"]
        if latest and not problems:
            landed = {c for c in actual.values() if c in unknown}
            model: dict[int, int] = {}
            for c in sorted(done | landed):
                for k in self.upserted[c]:
                    model[k] = c
            if actual != model:
                problems.append(f"keys and their last commit {sorted(actual.items())} != the model's "
                                f"{sorted(model.items())}")
        return problems

    def check_at_rest(self) -> dict[str, int]:
        """Faults off, through the direct endpoint: the latest rows, every listed snapshot, remove_orphan_files."""
        assert not self.foreign, "errors that are not paimon_ds's:\n" + "\n".join(self.foreign)
        direct = self.s3_server.options()
        listed = {}
        for path, check, made in ((self.append_path, self.check_appended, self.appended),
                                  (self.upsert_path, self.check_upserted, self.upserted)):
            if not (self.done & made.keys()) and not Table.exists(path, direct):
                continue
            latest = rows(path, direct)
            assert not check(latest), f"{path}: {check(latest)}"
            assert rows(path, through(self.s3_server, self.proxy)) == latest  # the proxy, faults off, agrees
            snapshots = {s.id: rows(path, direct, s.id) for s in Table.load(path, None, direct).snapshots()}
            for sid, found in snapshots.items():
                problems = check(found, latest=False)
                assert not problems, f"{path} snapshot {sid}: {problems}"
            removed = procedures.remove_orphan_files(path, older_than=int(time.time() * 1000) + 1000,
                                                     storage_options=direct)
            assert rows(path, direct) == latest
            assert {s.id: rows(path, direct, s.id) for s in Table.load(path, None, direct).snapshots()} == snapshots
            listed[path.rsplit("/", 1)[1]] = len(snapshots)
            listed[f"orphans removed ({path.rsplit('/', 1)[1]})"] = len(removed)
        return listed

    def report(self, title: str) -> str:
        return (f"{title}: {len(self.done)} commits done, {len(self.failed)} raised ({len(self.unknown)} "
                f"OutcomeUnknown), reads under faults {dict(self.reads)}, APIs {dict(self.apis)}; errors: "
                f"{dict(Counter(e.split(':', 1)[0] for e in self.failed.values()))}\n  proxy: {self.proxy.summary()}")


def soak(s3_server, proxies, monkeypatch, commits: int, modes: tuple[str, ...], seed: int,
         rules: list[Rule] | None = None) -> Soak:
    proxy = proxies(seed=seed, rate=0.1, modes=modes, rules=rules or [])
    run = Soak(s3_server, proxy, monkeypatch, seed)
    started = time.monotonic()
    run.run(commits)
    with proxy.paused():
        at_rest = run.check_at_rest()
    print("\n" + run.report(f"{commits} commits, modes {'/'.join(modes)}, seed {seed}, "
                            f"{time.monotonic() - started:.0f} s") + f"\n  at rest: {at_rest}")
    return run


def test_commits_under_faults_short(s3_server, proxies, monkeypatch):
    """`make test`'s sample of the soak: 16 commits, a tenth of the requests failing in any mode (each 503 costs
    the client's retry half a second on average: 30 commits take 100 s)."""
    # the random plan's few snapshot creates may all pass: these fail for sure (the n-th conditional PUT)
    rules = [Rule(mode, "PUT", SNAPSHOT_PUT, nth=nth, answer=answer, header="If-None-Match")
             for mode, answer, nth in ((AFTER, CLOSE, 3), (AFTER, UNAVAILABLE, 7), (TWICE, CLOSE, 11),
                                       (BEFORE, UNAVAILABLE, 15))]
    run = soak(s3_server, proxies, monkeypatch, commits=16, modes=MODES, seed=45, rules=rules)
    assert all(rule.seen >= rule.nth for rule in rules), run.proxy.summary()
    assert {"snapshot PUT", "manifest PUT", "GET", "DELETE"} <= {kind for _, kind in run.proxy.faults_by_kind}
    assert len(run.done) >= 12, run.report("short")


@pytest.mark.soak
@pytest.mark.parametrize("mode", MODES)
def test_soak_commits_under_faults(s3_server, proxies, monkeypatch, mode):
    """200 commits with a tenth of the requests failing in ``mode``; every mode hits the snapshots' creates,
    the manifests' writes, reads and deletes."""
    run = soak(s3_server, proxies, monkeypatch, commits=200, modes=(mode,), seed=4500 + MODES.index(mode))
    hit = {kind for (m, kind), n in run.proxy.faults_by_kind.items() if m == mode and n}
    assert {"snapshot PUT", "manifest PUT", "GET", "DELETE"} <= hit, run.proxy.summary()
    assert len(run.done) >= 100, run.report(mode)
