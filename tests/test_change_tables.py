"""`$audit_log` and `$ro` through the Spark-free API (Table.inspect.audit_log() / .ro()), with exact rows
against a model and against Java Paimon 0.9 reading `db.t$audit_log` / `db.t$ro` of the same tables
(AuditLogTable: a leading `rowkind` column, read with forceKeepDelete; ReadOptimizedTable: the top level only)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from paimon_ds import Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.table import write_arrow

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def data(*rows: tuple[int, str]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA)


def pk_table(tmp_path: Path) -> str:
    """(1,a) (2,b) (3,c), fully compacted to the top level; then +(2,B) and key 3 deleted, in level 0."""
    path = str(tmp_path / "wh" / "db.db" / "pk")
    write_arrow(path, data((1, "a"), (2, "b"), (3, "c")), primary_key="id",
                options={"bucket": "1", "num-sorted-run.compaction-trigger": "10"})
    compact_in_process(Table.load(path), None, full=True)
    write_arrow(path, data((2, "B")))
    Table.load(path).delete("id = 3")
    return path


def append_table(tmp_path: Path) -> str:
    path = str(tmp_path / "wh" / "db.db" / "app")
    write_arrow(path, data((1, "a"), (2, "b")))
    write_arrow(path, data((3, "c")))
    return path


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_audit_log_and_ro_of_a_primary_key_table(tmp_path):
    t = Table.load(pk_table(tmp_path))
    audit = t.inspect.audit_log()
    assert audit.schema.names == ["rowkind", "id", "v"] and audit.schema.field("rowkind").nullable
    assert rows(audit) == [("+I", 1, "a"), ("+I", 2, "B"), ("-D", 3, "c")]
    assert rows(t.inspect.ro()) == [(1, "a"), (2, "b"), (3, "c")]  # level 0 (the update, the delete) not yet
    assert rows(t.to_arrow()) == [(1, "a"), (2, "B")]
    # time travel applies: snapshot 1, before any compaction, has nothing at the top level
    old = Table.load(t.path, {"scan.snapshot-id": "1"})
    assert rows(old.inspect.audit_log()) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    assert rows(old.inspect.ro()) == []


def test_audit_log_and_ro_of_an_append_table(tmp_path):
    t = Table.load(append_table(tmp_path))
    assert rows(t.inspect.audit_log()) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    assert rows(t.inspect.ro()) == [(1, "a"), (2, "b"), (3, "c")]


JAVA_READS = '''
import json
out = [sorted(java_rows(catalog.get_table(ident + suffix)._j_table)) for suffix in ("$audit_log", "$ro")]
print(json.dumps(out))
'''


def test_java_reads_the_same_audit_log_and_ro(tmp_path, java_oracle):
    for path in (pk_table(tmp_path), append_table(tmp_path)):
        t = Table.load(path)
        java_audit, java_ro = json.loads(java_oracle.exec(path, JAVA_READS).strip().splitlines()[-1])
        assert [tuple(r) for r in java_audit] == rows(t.inspect.audit_log()), path
        assert [tuple(r) for r in java_ro] == rows(t.inspect.ro()), path


def test_binlog_wraps_each_audit_log_value_in_an_array(tmp_path):
    """Paimon 1.0's BinlogTable (batch read): `rowkind`, then each column as ARRAY<nullable type> holding the
    audit_log row's value (no -U/+U pair is packed in a batch read). Java 0.9 has no binlog and pypaimon 2.1 does
    not serve it, so the model is BinlogTable's convertToArray(row, null)."""
    t = Table.load(pk_table(tmp_path))
    binlog = t.inspect.binlog()
    assert binlog.schema == pa.schema([pa.field("rowkind", pa.string()), pa.field("id", pa.list_(pa.int32())),
                                       pa.field("v", pa.list_(pa.string()))])
    assert rows(binlog) == [("+I", [1], ["a"]), ("+I", [2], ["B"]), ("-D", [3], ["c"])]
    appended = Table.load(append_table(tmp_path))
    assert rows(appended.inspect.binlog()) == [("+I", [1], ["a"]), ("+I", [2], ["b"]), ("+I", [3], ["c"])]
    with_null = str(tmp_path / "wh" / "db.db" / "n")
    write_arrow(with_null, pa.table({"id": [1], "v": [None]}, schema=SCHEMA), primary_key="id")
    assert rows(Table.load(with_null).inspect.binlog()) == [("+I", [1], [None])]
