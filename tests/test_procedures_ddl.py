"""The Spark-free API of issue 36's DDL and procedures (paimon_ds.procedures): truncate, drop_partitions,
compact_manifest, rename_tag, rollback_to_timestamp, create_tag_from_timestamp, mark_partition_done, as Java
Paimon 0.9 / 1.x define them (their SQL forms and Java reads: tests/spark/test_sql_ddl_procedures.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_ds import Table, procedures, write_arrow

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("hr", pa.int32())])


def table(tmp_path) -> str:
    path = str(tmp_path / "t")
    for i, (dt, hr) in enumerate([("a", 1), ("a", 2), ("b", 1)]):
        write_arrow(path, pa.Table.from_pylist([{"id": i, "dt": dt, "hr": hr}], schema=SCHEMA),
                    options={"partition": "dt,hr"})
    return path


def ids(path: str) -> list[int]:
    return sorted(Table.load(path).to_arrow().column("id").to_pylist())


def test_drop_partitions_and_truncate(tmp_path):
    path = table(tmp_path)
    s = procedures.drop_partitions(path, "dt=a,hr=2")
    assert (s.id, s.commit_kind) == (4, "OVERWRITE") and ids(path) == [0, 2]
    procedures.drop_partitions(path, [{"dt": "a"}])  # a prefix: every partition under it
    assert ids(path) == [2]
    with pytest.raises(ValueError, match="not partition keys"):
        procedures.drop_partitions(path, "x=1")
    s = procedures.truncate(path)
    assert (s.id, s.commit_kind, s.total_record_count) == (6, "OVERWRITE", 0) and ids(path) == []


def test_compact_manifest_tags_rollback(tmp_path):
    path = table(tmp_path)
    procedures.drop_partitions(path, "dt=b")
    s = procedures.compact_manifest(path)
    assert (s.id, s.commit_kind) == (5, "COMPACT") and ids(path) == [0, 1]
    assert procedures.compact_manifest(path) is None
    sm = Table.load(path).snapshot_manager
    assert procedures.create_tag_from_timestamp(path, "t2", sm.snapshot(2).time_millis).id == 2
    procedures.rename_tag(path, "t2", "two")
    assert sm.tag_names() == ["two"]
    with pytest.raises(ValueError, match="already exists"):
        procedures.create_tag(path, "x") and procedures.rename_tag(path, "x", "two")
    assert procedures.rollback_to_timestamp(path, sm.snapshot(3).time_millis).id == 3
    assert ids(path) == [0, 1, 2]
    written = procedures.mark_partition_done(path, "dt=a,hr=1;dt=b,hr=1")
    assert [w.rsplit("/", 3)[1:] for w in written] == [["dt=a", "hr=1", "_SUCCESS"], ["dt=b", "hr=1", "_SUCCESS"]]


def test_cli_commands(tmp_path, capsys):
    """The same through `paimon-ds` (JSON output)."""
    import json

    from paimon_ds.cli import main

    def run(*args: str) -> dict:
        capsys.readouterr()
        assert main([*args, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    path = table(tmp_path)
    sm = Table.load(path).snapshot_manager
    assert run("tag", path, "t1", "--timestamp", str(sm.snapshot(1).time_millis)) == {"tag": "t1", "snapshot_id": 1}
    assert run("rename-tag", path, "t1", "one") == {"from": "t1", "to": "one"}
    assert run("drop-partition", path, "dt=a,hr=1") == {"snapshot_id": 4}
    assert ids(path) == [1, 2]
    assert run("compact-manifest", path) == {"snapshot_id": 5}
    assert run("rollback", path, "--timestamp", str(sm.snapshot(2).time_millis)) == {"snapshot_id": 2}
    assert ids(path) == [0, 1]
    assert run("mark-partition-done", path, "dt=a,hr=1")["success_files"][0].endswith("dt=a/hr=1/_SUCCESS")
    assert run("expire-partitions", path, "1 d") == {"expired_partitions": []}  # 'a' is no time: never expires
    assert run("expire-tags", path, "--older-than", "2999-01-01 00:00:00") == {"expired_tags": ["one"]}
    assert run("truncate", path) == {"snapshot_id": 3}
    assert ids(path) == []
