"""The `paimon-ds` command line: maintenance without Spark, clear errors without tracebacks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.cli import main

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def upsert(path: str, ids: range, v: int) -> None:
    table = Table.for_write(path, SCHEMA, {"primary-key": "id", "bucket": "2", "write-only": "true"})
    write = table.new_write()
    write.write_arrow(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def rows(path: str) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in Table.load(path).to_arrow().to_pylist())


def test_maintenance_commands(tmp_path, capsys):
    path = str(tmp_path / "t")
    for i in range(6):
        upsert(path, range(i * 2, i * 2 + 10), v=i)
    expected = rows(path)

    assert main(["describe", path]) == 0
    out = capsys.readouterr().out
    assert "primary key: id" in out and "APPEND" in out
    assert out.count("L0:") == 2  # two buckets, level-0 files only (write-only)

    assert main(["compact", path, "--full"]) == 0
    assert "compacted 2 bucket(s)" in capsys.readouterr().out
    assert rows(path) == expected
    main(["describe", path])
    assert "L5:1" in capsys.readouterr().out  # one run per bucket, at the top level

    assert main(["tag", path, "before", "--snapshot", "3"]) == 0
    assert main(["expire", path, "--retain-min", "1", "--retain-max", "2"]) == 0
    assert "expired 5 snapshot(s) [1, 2, 3, 4, 5]" in capsys.readouterr().out
    assert rows(path) == expected
    assert main(["rollback", path, "--tag", "before"]) == 0
    assert Table.load(path).snapshot_manager.list_ids() == [3]
    assert main(["remove-orphans", path, "--older-than", "0 ms", "--dry-run"]) == 0
    assert "would delete" in capsys.readouterr().out


def test_errors_are_one_line_and_change_nothing(tmp_path, capsys):
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    before = sorted(p.name for p in Path(path).rglob("*"))
    assert main(["rollback", path, "--snapshot", "7"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("paimon-ds rollback: snapshot 7 does not exist") and "Traceback" not in err
    assert main(["describe", str(tmp_path / "missing")]) == 1
    assert "no Paimon table" in capsys.readouterr().err
    assert sorted(p.name for p in Path(path).rglob("*")) == before


def test_console_script_is_installed(tmp_path):
    script = shutil.which("paimon-ds", path=str(Path(sys.executable).parent))
    assert script is not None, "reinstall the package (make test does): the paimon-ds entry point is missing"
    path = str(tmp_path / "t")
    upsert(path, range(3), v=1)
    out = subprocess.run([script, "describe", path], capture_output=True, text=True, check=True).stdout
    assert f"table {path}" in out


def test_compact_given_partitions_only(tmp_path, capsys):
    path = str(tmp_path / "p")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    for i in range(3):
        table = Table.for_write(path, schema, {"primary-key": "id,dt", "partition": "dt", "bucket": "1",
                                               "write-only": "true"})
        write = table.new_write()
        write.write_arrow(pa.table({"id": [i, i, i], "dt": ["a", "b", "c"]}, schema=schema))
        table.new_commit().commit(write.prepare_commit())

    def files_per_partition() -> list[tuple[str, int]]:
        return sorted((d.name, len(list(d.glob("bucket-0/*.parquet")))) for d in Path(path).glob("dt=*"))

    assert main(["compact", path, "--full", "--partitions", "dt=a;dt=c"]) == 0
    assert "compacted 2 bucket(s)" in capsys.readouterr().out
    # compacted partitions keep their old files until expiry: count the live ones through the table
    live = sorted((e.partition, e.file.level) for e in Table.load(path).new_scan().read_entries())
    assert len(live) == 1 + 3 + 1
    assert files_per_partition() == [("dt=a", 4), ("dt=b", 3), ("dt=c", 4)]
    assert main(["compact", path, "--partitions", "nope=1"]) == 1
    assert "not partition keys" in capsys.readouterr().err
