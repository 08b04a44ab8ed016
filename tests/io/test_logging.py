"""The library says what it could not do, through `logging`: a delete that left a file behind (paimon_ds.fs.file_io) and
snapshot hints not updated after a commit (paimon_ds.snapshot.manager). Both are harmless to readers, so they are
warnings, not errors."""

from __future__ import annotations

import logging
import subprocess

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.fs.file_io import FileIO

SCHEMA = pa.schema([("id", pa.int64())])


def messages(caplog, logger: str) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger]


def test_delete_that_leaves_a_file_is_logged(tmp_path, caplog):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "f").write_bytes(b"1")
    if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i (an undeletable file, even for root) is not supported on this filesystem")
    try:
        FileIO(str(tmp_path)).delete_quietly(str(locked / "f"))
        FileIO(str(tmp_path)).delete_quietly(str(locked / "missing"))  # absent: nothing to say
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    logged = messages(caplog, "paimon_ds.fs.file_io")
    assert len(logged) == 1 and logged[0][0] == logging.WARNING
    assert logged[0][1].startswith(f"could not delete {locked / 'f'} (left in place): ")
    assert (locked / "f").exists()


def test_commit_whose_hint_cannot_be_written_is_logged(tmp_path, caplog):
    path = str(tmp_path / "t")
    table = Table.for_write(path, SCHEMA, {})
    (tmp_path / "t" / "snapshot").mkdir(parents=True, exist_ok=True)
    (tmp_path / "t" / "snapshot" / "LATEST").mkdir()  # a directory where the hint file goes: writing it fails
    write = table.new_write()
    write.write_arrow(pa.table({"id": [1, 2]}, schema=SCHEMA))
    snapshot = table.new_commit().commit(write.prepare_commit())
    logged = messages(caplog, "paimon_ds.snapshot.manager")
    assert len(logged) == 1 and logged[0][0] == logging.WARNING
    assert logged[0][1].startswith(f"snapshot 1 of {table.snapshot_manager.dir} committed; its LATEST / EARLIEST "
                                   "hints were not updated (")
    assert snapshot.id == 1 and Table.load(path).to_arrow().column("id").to_pylist() == [1, 2]
