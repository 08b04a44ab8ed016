"""The defects the fault runs found (issue 45), each as the case that showed it.

- expiry interrupted between any two of its steps (a crash at every call; a real SIGKILL around the deletes of the
  snapshot files) leaves every listed snapshot readable, time travel and remove_orphan_files working;
- a snapshot file an older expiry left below EARLIEST (it wrote the hint first) is neither listed nor read, and the
  next expiry deletes it;
- a read whose snapshot expires under it raises SnapshotExpired naming the snapshot;
- the answer to the create of `snapshot-N` lost after it landed: the commit is reported done, once;
- a full disk: the commit fails with a StorageError naming the file, the table unchanged, no temporary file left.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, write_arrow
from paimon_ds import procedures as proc
from paimon_ds.fs.file_io import StorageError
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import remove_orphan_files
from paimon_ds.snapshot.manager import SnapshotExpired, SnapshotNotFound

from .faulty_fs import INJECTOR, Fault, install
from .harness import TABLE, prepare, rows_of, run_killed, run_with_fault, table_state
from .scenarios import BY_NAME, rows


@pytest.fixture(scope="module", autouse=True)
def faulty_filesystem() -> Iterator[None]:
    uninstall = install()
    logger = logging.getLogger("paimon_ds")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    logger.setLevel(level)
    uninstall()


def overwritten_table(path: str, commits: int = 5) -> None:
    """Each commit replaces the table: every snapshot's data file is its own, deleted with it by expiry."""
    for c in range(commits):
        write_arrow(path, rows(range(c, c + 3), v=f"c{c}"), mode="overwrite", options={"bucket": "1",
                                                                                      "bucket-key": "id"})


# ------------------------------------------------------------------ expiry, interrupted anywhere
@pytest.mark.parametrize("name", ["expire-snapshots", "changelog-expiry"])
def test_expiry_crashed_at_every_call_leaves_a_readable_table(name: str, tmp_path: Path) -> None:
    """A crash before each I/O call of the expiry (every step boundary): every listed snapshot reads the rows it
    had, time travel to each works, remove_orphan_files runs, and the next expiry finishes the job."""
    prep = prepare(BY_NAME[name], tmp_path)
    results = [run_with_fault(prep, call.index, Fault.CRASH, tmp_path) for call in prep.calls]
    assert not any(r.problems for r in results), "\n".join(str(r) for r in results if r.problems)
    for r in results:  # then an expiry again, cleanly: it finishes the job (the clean run's snapshots stay)
        if name == "expire-snapshots":
            BY_NAME[name].run(r.path)
            assert sorted(table_state(r.path).snapshots) == sorted(prep.after.snapshots), str(r)
        else:
            proc.expire_snapshots(r.path)
            table_state(r.path)  # every listed snapshot reads


def test_sigkill_around_the_deletes_of_snapshot_files(tmp_path: Path) -> None:
    """Real SIGKILLs just before, between and just after the deletes of the expired snapshot files."""
    prep = prepare(BY_NAME["expire-snapshots"], tmp_path)
    deletes = [c.index for c in prep.calls if c.op == "delete" and "/snapshot/snapshot-" in c.path]
    assert len(deletes) >= 2
    points = sorted({deletes[0], deletes[1], deletes[-1] + 1})
    for point in points:
        result = run_killed(prep, point, tmp_path)
        assert not result.problems, str(result)


def test_snapshot_left_below_earliest_is_not_listed_and_goes_with_the_next_expiry(tmp_path: Path) -> None:
    """The state an older expiry left when it died after writing EARLIEST (and later expiries deleted the files the
    left snapshot used): snapshots(), history() and remove_orphan_files skip it, time travel says it expired, and
    the next expiry deletes its file."""
    path = str(tmp_path / TABLE)
    overwritten_table(path)
    left = Path(path, "snapshot", "snapshot-1").read_bytes()
    proc.expire_snapshots(path, retain_max=4, retain_min=1)
    Path(path, "snapshot", "snapshot-1").write_bytes(left)  # as the interrupted expiry left it
    assert Path(path, "snapshot", "EARLIEST").read_text() == "2"
    table = Table.load(path)
    assert [s.id for s in table.snapshots()] == [2, 3, 4, 5]
    assert [h["snapshot_id"] for h in table.history()] == [5, 4, 3, 2]
    with pytest.raises(SnapshotExpired, match="snapshot 1 of .* expired"):
        table.scan(snapshot_id=1).to_arrow()
    remove_orphan_files(table, older_than_ms=0)
    assert {sid: rows_of(table.scan(snapshot_id=sid).to_arrow()) for sid in (2, 3, 4, 5)} == {
        sid: rows_of(rows(range(c, c + 3), v=f"c{c}")) for sid, c in ((2, 1), (3, 2), (4, 3), (5, 4))}
    result = proc.expire_snapshots(path, retain_max=4, retain_min=1)
    assert result.expired == [1] and not Path(path, "snapshot", "snapshot-1").exists()
    with pytest.raises(SnapshotNotFound):
        Table.load(path).scan(snapshot_id=1).to_arrow()


# ------------------------------------------------------------------ a read that loses its files to expiry
def test_scan_whose_snapshot_expires_under_it_names_the_snapshot(tmp_path: Path) -> None:
    """While a scan of snapshot 3 reads its first data file, another writer compacts the table fully and expires
    every older snapshot: the files the scan planned are gone. The error names the snapshot and says it expired;
    a new scan reads the latest snapshot."""
    path = str(tmp_path / TABLE)
    for c in range(3):
        write_arrow(path, rows(range(c * 2, c * 2 + 3), v=f"c{c}"), primary_key="id", options={"bucket": "1"})
    expected = rows_of(Table.load(path).to_arrow())
    scan = Table.load(path).scan()

    def compact_and_expire(_call) -> None:
        compact_in_process(Table.load(path), None, full=True)
        proc.expire_snapshots(path, retain_max=1, retain_min=1)

    INJECTOR.arm(1, Fault.DELAY, match=lambda op, p: op == "open-read" and "/bucket-0/data-" in p,
                 on_delay=compact_and_expire)
    try:
        with pytest.raises(SnapshotExpired, match=r"snapshot 3 of .* expired while it was being read: its file "
                                                  r".*data-.*\.parquet was deleted"):
            scan.to_arrow()
    finally:
        INJECTOR.disarm()
    table = Table.load(path)
    assert table.snapshot_manager.latest_id() == 4 and rows_of(table.scan().to_arrow()) == expected


# ------------------------------------------------------------------ the answer to the snapshot's create lost
@pytest.mark.parametrize("fault", [Fault.AFTER, Fault.TWICE])
def test_commit_whose_snapshot_create_answer_was_lost_is_reported_done_once(fault: Fault, tmp_path: Path) -> None:
    """The create of `snapshot-3` lands, then its answer is lost (AFTER: an error; TWICE: the retried request meets
    the file, as S3's 412 after a lost response): the commit recognises its own snapshot, reports it, and deletes
    nothing it uses; the rows are there once and the next commit works."""
    path = str(tmp_path / TABLE)
    for c in range(2):
        write_arrow(path, rows(range(c * 3, c * 3 + 3)))
    INJECTOR.arm(1, fault, match=lambda op, p: op == "link" and p.endswith("/snapshot/snapshot-3"))
    try:
        snapshot = Table.load(path).append(rows(range(10, 13)))
    finally:
        INJECTOR.disarm()
    assert INJECTOR.fired is not None and snapshot is not None and snapshot.id == 3
    assert rows_of(Table.load(path).to_arrow()) == rows_of(pa.concat_tables([rows(range(0, 6)), rows(range(10, 13))]))
    Table.load(path).append(rows(range(20, 21)))
    assert Table.load(path).snapshot_manager.latest_id() == 4
    assert len(Table.load(path).to_arrow()) == 10


# ------------------------------------------------------------------ a full disk
def test_no_space_at_each_write_of_an_append(tmp_path: Path) -> None:
    """ENOSPC once at each write of an append (data file, manifests, lists, the snapshot's temporary file, the
    hints): the append either succeeds (a hint is only logged; a whole-file write is tried again) or fails with a
    StorageError naming the file and the table unchanged; never a temporary file left behind."""
    prep = prepare(BY_NAME["append"], tmp_path)
    writes = [c for c in prep.calls if c.op in ("open-write", "close", "rename", "link", "write")]
    failed = 0
    for call in writes:
        run_dir = tmp_path / f"nospace-{call.index}"
        shutil.copytree(prep.template, run_dir)
        path = str(run_dir / TABLE)
        INJECTOR.arm(call.index, Fault.BEFORE, error_errno=errno.ENOSPC)
        try:
            BY_NAME["append"].run(path)
            expected = prep.after
        except StorageError as e:
            failed += 1
            assert "No space left on device" in str(e) and "/warehouse/db.db/t/" in str(e), f"{call}: {e}"
            expected = prep.before
        finally:
            INJECTOR.disarm()
        assert table_state(path).observed() == expected.observed(), f"{call}: the table is not as expected"
        assert not list(Path(path).rglob("*.tmp")), f"{call}: temporary files left"
    assert failed >= 1, "no write failed the append: the data file writes at least cannot be tried again"


def test_full_disk_fails_the_commit_cleanly(tmp_path: Path) -> None:
    """A real full disk (a 2 MB tmpfs mounted for the test; skipped where the test may not mount one): the append
    fails with a StorageError naming the file, the table reads as before, no temporary file is left; after space
    is freed the same append succeeds."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): the injected ENOSPC test covers the paths")
    try:
        path = str(mount / TABLE)
        write_arrow(path, rows(range(0, 3)))
        before = rows_of(Table.load(path).to_arrow())
        filler = mount / "filler"
        with open(filler, "wb", buffering=0) as f:  # fill the disk, then free two pages
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as e:
                assert e.errno == errno.ENOSPC
        os.truncate(filler, os.path.getsize(filler) - 8192)
        big = pa.table({"id": pa.array(range(20_000), pa.int64()), "v": [os.urandom(8).hex() for _ in range(20_000)],
                        "day": ["d"] * 20_000})
        with pytest.raises(StorageError, match="No space left on device") as info:
            Table.load(path).append(big)
        assert str(mount) in str(info.value)
        assert rows_of(Table.load(path).to_arrow()) == before
        assert not list(Path(path).rglob("*.tmp"))
        filler.unlink()
        Table.load(path).append(big)
        assert len(Table.load(path).to_arrow()) == 20_003
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
