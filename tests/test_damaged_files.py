"""Damaged table files, as a broken disk or a killed writer leaves them: every file that cannot be read raises a
CorruptFileError (a PaimonDsError) naming the file's full path and what was wrong, within seconds; a damaged old
snapshot is skipped with a warning by listings, history and expiry, a damaged latest one is never read past."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import warnings
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import CorruptFileError, PaimonDsError, Table, write_arrow
from paimon_ds.cli import main
from paimon_ds.cli.describe import describe
from paimon_ds.errors import reading_file
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files
from paimon_ds.readers.system_tables import system_table
from paimon_ds.snapshot.manager import SkippedFileWarning

DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: max(1, len(data) // 2)],
    "empty": lambda data: b"",
    "garbage": lambda data: bytes((i * 131 + 7) % 256 for i in range(len(data) + 13)),
}


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: the read must return or raise within ``seconds``."""
    def timeout(*_):
        raise TimeoutError(f"no answer within {seconds} s")
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def damage(path: str, how: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(DAMAGES[how](data))


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "v": pa.array([f"v{i}" for i in range(start, start + n)])})


def expect_corrupt(path: str, action: Callable[[], object]) -> CorruptFileError:
    with within(20), pytest.raises(CorruptFileError) as info:
        action()
    error = info.value
    assert isinstance(error, PaimonDsError) and isinstance(error, OSError)
    assert error.path == path and path in str(error), str(error)
    return error


def check_problem(error: CorruptFileError, how: str) -> None:
    if how == "empty":
        assert "empty (0 bytes)" in error.problem, error.problem
    else:
        assert error.problem, error.problem


def append_table(tmp_path, fmt: str = "parquet", commits: int = 2) -> str:
    path = str(tmp_path / "t")
    for i in range(commits):
        write_arrow(path, rows(3, 10 * i), options={"file.format": fmt})
    return path


def data_files(table: Table) -> list[str]:
    return sorted(split.file_path(f) for split in table.new_scan().plan() for f in split.files)


# ------------------------------------------------------------------------------ one test per damaged file

@pytest.mark.parametrize("how", DAMAGES)
def test_latest_snapshot(tmp_path, how):
    path = append_table(tmp_path)
    snap = f"{path}/snapshot/snapshot-2"
    damage(snap, how)
    error = expect_corrupt(snap, lambda: Table.load(path).to_arrow())
    check_problem(error, how)
    assert error.problem.startswith(("the file is empty", "truncated or damaged"))
    # never an older snapshot in its place: listings raise too
    for listing in (lambda: Table.load(path).snapshots(), lambda: Table.load(path).history()):
        expect_corrupt(snap, listing)


@pytest.mark.parametrize("how", DAMAGES)
def test_schema(tmp_path, how):
    path = append_table(tmp_path, commits=1)
    schema = f"{path}/schema/schema-0"
    damage(schema, how)
    check_problem(expect_corrupt(schema, lambda: Table.load(path)), how)


@pytest.mark.parametrize("how", DAMAGES)
def test_manifest_list(tmp_path, how):
    path = append_table(tmp_path)
    snapshot = Table.load(path).latest_snapshot()
    target = f"{path}/manifest/{snapshot.delta_manifest_list}"
    damage(target, how)
    error = expect_corrupt(target, lambda: Table.load(path).to_arrow())
    check_problem(error, how)
    assert str(error).startswith("cannot read manifest-list ")


@pytest.mark.parametrize("how", DAMAGES)
def test_manifest(tmp_path, how):
    path = append_table(tmp_path)
    table = Table.load(path)
    metas = table.new_scan().manifest_list.read(table.latest_snapshot().delta_manifest_list)
    target = f"{path}/manifest/{metas[0].file_name}"
    damage(target, how)
    error = expect_corrupt(target, lambda: Table.load(path).to_arrow())
    check_problem(error, how)
    assert str(error).startswith("cannot read manifest ")


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
@pytest.mark.parametrize("how", DAMAGES)
def test_data_file(tmp_path, how, fmt):
    path = append_table(tmp_path, fmt)
    target = data_files(Table.load(path))[-1]
    damage(target, how)
    error = expect_corrupt(target, lambda: Table.load(path).to_arrow())
    check_problem(error, how)
    assert str(error).startswith(f"cannot read {fmt} data file ")


@pytest.mark.parametrize("how", DAMAGES)
def test_primary_key_data_file(tmp_path, how):
    """The merge-on-read path (mergetree/files.py) opens files through the same checked reader."""
    path = str(tmp_path / "pk")
    write_arrow(path, rows(4), primary_key="id", options={"bucket": "1"})
    write_arrow(path, rows(2, 2), primary_key="id", options={"bucket": "1"})
    target = data_files(Table.load(path))[0]
    damage(target, how)
    check_problem(expect_corrupt(target, lambda: Table.load(path).to_arrow()), how)


def _index_files(path: str) -> list[str]:
    index_dir = f"{path}/index"
    return sorted(f"{index_dir}/{n}" for n in os.listdir(index_dir)) if os.path.isdir(index_dir) else []


@pytest.mark.parametrize("how", DAMAGES)
def test_hash_index_file(tmp_path, how):
    """A dynamic-bucket table's hash index is read by the next write's bucket assigner."""
    path = str(tmp_path / "dyn")
    write_arrow(path, rows(5), primary_key="id")
    (target,) = _index_files(path)
    damage(target, how)
    error = expect_corrupt(target, lambda: write_arrow(path, rows(2, 100)))
    check_problem(error, how)
    assert str(error).startswith("cannot read hash index file ")


@pytest.mark.parametrize("how", DAMAGES)
def test_deletion_vector_index_file(tmp_path, how):
    path = str(tmp_path / "dv")
    opts = {"bucket": "1", "deletion-vectors.enabled": "true"}
    write_arrow(path, rows(5), primary_key="id", options=opts)
    write_arrow(path, rows(2, 1), primary_key="id", options=opts)  # updates: rows of the first file are deleted
    (target,) = [p for p in _index_files(path) if "index-" in p]
    damage(target, how)
    error = expect_corrupt(target, lambda: Table.load(path).to_arrow())
    check_problem(error, how)
    assert isinstance(error, paimon_ds.DeletionVectorError)  # as before: `except DeletionVectorError` still holds


@pytest.mark.parametrize("how", DAMAGES)
def test_tag(tmp_path, how):
    path = append_table(tmp_path)
    paimon_ds.procedures.create_tag(path, "t1", 1)
    target = f"{path}/tag/tag-t1"
    damage(target, how)
    expect_corrupt(target, lambda: Table.load(path, {"scan.tag-name": "t1"}).to_arrow())


# ------------------------------------------------------------------------------ a damaged OLD snapshot

def test_damaged_old_snapshot_is_skipped_by_listings(tmp_path):
    path = append_table(tmp_path, commits=3)
    damaged = f"{path}/snapshot/snapshot-2"
    damage(damaged, "truncated")
    table = Table.load(path)
    assert table.to_arrow().num_rows == 9  # the latest reads
    with pytest.warns(SkippedFileWarning, match=damaged):
        assert [s.id for s in table.snapshots()] == [1, 3]
    with pytest.warns(SkippedFileWarning, match=damaged):
        assert [h["snapshot_id"] for h in table.history()] == [3, 1]
    with pytest.warns(SkippedFileWarning):
        assert [h["snapshot_id"] for h in table.history(limit=2)] == [3, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [h["snapshot_id"] for h in table.history(limit=1)] == [3]  # the damaged file is not even read
    with pytest.warns(SkippedFileWarning):
        assert system_table(table.store, "snapshots").column("snapshot_id").to_pylist() == [1, 3]
    with pytest.warns(SkippedFileWarning):
        doc, _ = describe(table)
    assert [s["id"] for s in doc["snapshots"]] == [1, 3]


def test_damaged_old_snapshot_expiry_and_orphans(tmp_path):
    path = append_table(tmp_path, commits=4)
    damage(f"{path}/snapshot/snapshot-2", "garbage")
    table = Table.load(path)
    with pytest.warns(SkippedFileWarning):
        remove_orphan_files(table, older_than_ms=0)
    assert table.to_arrow().num_rows == 12  # nothing the readable snapshots use went
    with pytest.warns(SkippedFileWarning):
        result = expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    assert result.expired == [1, 2, 3]
    assert sorted(os.listdir(f"{path}/snapshot")) == ["EARLIEST", "LATEST", "snapshot-4"]
    assert Table.load(path).to_arrow().sort_by("id").column("id").to_pylist() == [
        0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]


# ------------------------------------------------------------------------------ temporary files of killed writes

def test_remove_orphans_removes_old_temporary_files(tmp_path):
    """A writer killed mid-commit leaves `snapshot-N.<uuid>.tmp` (FileIO.try_create) or a hidden `.<name>.<uuid>.tmp`
    (FileIO.write_bytes; Java Paimon's Path.createTempPath, with a dashed uuid): remove-orphans deletes those older
    than its margin in any directory, and keeps younger ones (their write may still be running)."""
    path = append_table(tmp_path, commits=2)
    paimon_ds.procedures.create_tag(path, "t1", 1)
    hex32, dashed = "0123456789abcdef0123456789abcdef", "01234567-89ab-cdef-0123-456789abcdef"
    temps = [f"snapshot/snapshot-3.{hex32}.tmp", f"snapshot/.snapshot-3.{dashed}.tmp", f"schema/.schema-1.{hex32}.tmp",
             f"tag/tag-t2.{hex32}.tmp", f"manifest/.manifest-list-x-1.{dashed}.tmp", f"snapshot/.LATEST.{hex32}.tmp"]
    hour_ago = os.path.getmtime(f"{path}/snapshot/snapshot-1") - 3600
    for rel in temps:
        for prefix, when in (("", hour_ago), ("young-", None)):
            directory, name = os.path.split(f"{path}/{rel}")
            target = os.path.join(directory, name.replace(name.lstrip("."), prefix + name.lstrip("."), 1))
            with open(target, "wb") as f:
                f.write(b"{\"id\": 3")  # half a snapshot
            if when is not None:
                os.utime(target, (when, when))
    before = sorted(os.listdir(f"{path}/snapshot"))
    table = Table.load(path)
    margin = 600_000  # ten minutes
    assert remove_orphan_files(table, margin, dry_run=True) == sorted(temps)
    assert paimon_ds.procedures.remove_orphan_files(path, older_than=int(time.time() * 1000) - margin) == sorted(temps)
    for rel in temps:
        assert not os.path.exists(f"{path}/{rel}")
    young = [n for n in os.listdir(f"{path}/snapshot") if "young-" in n]
    assert len(young) == 3 and sorted(os.listdir(f"{path}/snapshot")) == sorted(
        [n for n in before if not n.endswith(".tmp")] + young)
    assert Table.load(path).to_arrow().num_rows == 6
    assert Table.load(path, {"scan.tag-name": "t1"}).to_arrow().num_rows == 3
    assert remove_orphan_files(Table.load(path), margin) == []


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_data_file_damaged_past_its_header(tmp_path, fmt):
    """A file whose header reads but whose rows are cut short fails at the batch that reaches the damage, and that
    error names the file too (the reader's batches are checked, not only its opening). Not ORC: Arrow's C++ ORC
    reader (pyarrow 26) crashes the process (SIGSEGV) on zeroed stripe data, which no Python code can catch."""
    path = str(tmp_path / "t")
    write_arrow(path, rows(5000), options={"file.format": fmt})
    (target,) = data_files(Table.load(path))
    with open(target, "rb") as f:
        data = f.read()
    if fmt == "avro":
        damaged = data[:-40]  # the last block cut short, the header intact
    else:  # columnar formats keep their footer at the end: keep it, damage the pages before it
        damaged = data[:4] + bytes(len(data) // 2) + data[4 + len(data) // 2:]
    with open(target, "wb") as f:
        f.write(damaged)
    error = expect_corrupt(target, lambda: Table.load(path).to_arrow())
    assert error.problem.startswith("truncated or damaged"), error.problem


def test_only_decoding_errors_become_corrupt_file_errors():
    """A store's failure or a program error inside a decoding block keeps its own type: only bad bytes are a
    damaged file."""
    for error in (FileNotFoundError("gone"), PermissionError(13, "denied"), ConnectionError("reset"),
                  OSError(5, "I/O error"), AttributeError("bug"), paimon_ds.OptionError("x")):
        with pytest.raises(type(error)), reading_file("/t/snapshot/snapshot-1", "snapshot"):
            raise error
    for error in (ValueError("bad"), EOFError(), OSError("Couldn't deserialize thrift"), KeyError("id"),
                  UnicodeDecodeError("utf-8", b"\x8f", 0, 1, "invalid start byte")):
        with pytest.raises(CorruptFileError, match="^cannot read snapshot /t/snapshot/snapshot-1: "), \
                reading_file("/t/snapshot/snapshot-1", "snapshot", 10):
            raise error


def test_cli_describe(tmp_path, capsys):
    """`paimon-ds describe`: a damaged old snapshot is left out (warned), a damaged latest one is a one-line error
    naming the file, with the storage exit status."""
    path = append_table(tmp_path, commits=3)
    damage(f"{path}/snapshot/snapshot-1", "empty")
    with pytest.warns(SkippedFileWarning):
        assert main(["describe", path, "--json"]) == 0
    assert '"id": 1,' not in capsys.readouterr().out
    damage(f"{path}/snapshot/snapshot-3", "garbage")
    with pytest.warns(SkippedFileWarning):  # snapshot-1, on the way to the damaged latest
        assert main(["describe", path]) == CorruptFileError.exit_code == 5
    assert f"cannot read snapshot {path}/snapshot/snapshot-3: truncated or damaged" in capsys.readouterr().err
