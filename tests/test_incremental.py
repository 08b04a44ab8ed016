"""Batch incremental reads (`incremental-between`, `incremental-between-timestamp`,
`incremental-between-scan-mode`) through the Spark-free API, with exact rows against a model and against Java
Paimon 0.9 reading the same ranges of the same tables (AbstractDataTableScan's INCREMENTAL case:
IncrementalStartingScanner for snapshot ids, IncrementalTagStartingScanner for tags,
IncrementalTimeStampStartingScanner for times), on primary-key tables without and with a changelog producer
(input) and on an append table."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, procedures
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.incremental import changed_rows_keep_delete
from paimon_ds.options.registry import OptionError
from paimon_ds.table import write_arrow

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])


def data(*rows: tuple[int, str]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=SCHEMA)


def pk_table(tmp_path: Path, producer: str) -> str:
    """Snapshots: 1 +(1,a) +(2,b); 2 +(2,B) +(3,c); 3 -(1); 4 a full compaction; 5 +(4,d) +(3,C).
    Tags t1, t3, t5 on snapshots 1, 3, 5."""
    path = str(tmp_path / "wh" / "db.db" / f"pk_{producer}")
    options = {"bucket": "1", "changelog-producer": producer, "num-sorted-run.compaction-trigger": "10"}
    write_arrow(path, data((1, "a"), (2, "b")), primary_key="id", options=options)
    write_arrow(path, data((2, "B"), (3, "c")))
    Table.load(path).delete("id = 1")
    compact_in_process(Table.load(path), None, full=True)
    write_arrow(path, data((4, "d"), (3, "C")))
    sm = Table.load(path).snapshot_manager
    assert [sm.snapshot(i).commit_kind for i in range(1, 6)] == ["APPEND", "APPEND", "APPEND", "COMPACT", "APPEND"]
    for sid in (1, 3, 5):
        procedures.create_tag(path, f"t{sid}", sid)
    return path


def append_table(tmp_path: Path) -> str:
    """Snapshots: 1 (1,a) (2,b); 2 (3,c); 3 an overwrite by (5,e); 4 (6,f). Tags t1, t4."""
    path = str(tmp_path / "wh" / "db.db" / "app")
    write_arrow(path, data((1, "a"), (2, "b")))
    write_arrow(path, data((3, "c")))
    write_arrow(path, data((5, "e")), mode="overwrite")
    write_arrow(path, data((6, "f")))
    procedures.create_tag(path, "t1", 1)
    procedures.create_tag(path, "t4", 4)
    return path


def read(path: str, **options: str) -> list[tuple[int, str]]:
    return sorted(tuple(r.values()) for r in Table.load(path, options).to_arrow().to_pylist())


# (options, rows): the model of the primary-key table, the same with and without a changelog producer (input:
# each APPEND commit's changelog file holds its input; the compaction writes none)
PK_CASES = [
    ({"incremental-between": "0,2"}, [(1, "a"), (2, "B"), (3, "c")]),
    ({"incremental-between": "1,3"}, [(2, "B"), (3, "c")]),  # key 1's deletion: merged away
    ({"incremental-between": "2,5"}, [(3, "C"), (4, "d")]),  # the compaction (4) left out
    ({"incremental-between": "3,4"}, []),
    ({"incremental-between": "2,2"}, []),
    ({"incremental-between": "1,3", "incremental-between-scan-mode": "delta"}, [(2, "B"), (3, "c")]),
    ({"incremental-between": "t1,t3"}, [(2, "B"), (3, "c")]),  # the diff of the tags' snapshots
    ({"incremental-between": "t3,t5"}, [(3, "C"), (4, "d")]),
    ({"incremental-between": "t1,t5"}, [(2, "B"), (3, "C"), (4, "d")]),
]
APPEND_CASES = [
    ({"incremental-between": "0,4"}, [(1, "a"), (2, "b"), (3, "c"), (6, "f")]),  # the overwrite left out
    ({"incremental-between": "2,4"}, [(6, "f")]),
    ({"incremental-between": "1,2", "incremental-between-scan-mode": "changelog"}, []),  # no changelog files
    ({"incremental-between": "t1,t4"}, [(5, "e"), (6, "f")]),  # the files only t4 holds
]


@pytest.mark.parametrize("producer", ["none", "input"])
def test_incremental_between_snapshots_and_tags_on_a_primary_key_table(tmp_path, producer):
    path = pk_table(tmp_path, producer)
    for options, rows in PK_CASES:
        assert read(path, **options) == rows, options
    changelog_only = read(path, **{"incremental-between": "1,3", "incremental-between-scan-mode": "changelog"})
    assert changelog_only == ([] if producer == "none" else [(2, "B"), (3, "c")])
    # Paimon 1.x's diff mode between snapshot ids: keys whose merged value snapshot 5 gives anew against 1
    assert read(path, **{"incremental-between": "1,5", "incremental-between-scan-mode": "diff"}) == \
        [(2, "B"), (3, "C"), (4, "d")]


def test_incremental_between_timestamps_and_the_spark_free_scan(tmp_path):
    path = pk_table(tmp_path, "none")
    sm = Table.load(path).snapshot_manager
    t1, t3 = sm.snapshot(1).time_millis, sm.snapshot(3).time_millis
    assert read(path, **{"incremental-between-timestamp": f"{t1},{t3}"}) == [(2, "B"), (3, "c")]
    assert read(path, **{"incremental-between-timestamp": f"{t1 - 10_000},{t1}"}) == [(1, "a"), (2, "b")]
    assert read(path, **{"incremental-between-timestamp": f"{t3 + 60_000},{t3 + 90_000}"}) == []
    t = Table.load(path)
    assert sorted(tuple(r.values()) for r in t.scan(incremental_between=(1, 3)).to_arrow().to_pylist()) == \
        [(2, "B"), (3, "c")]
    assert t.scan(incremental_between="t3,t5", columns=["v"], filter="id > 3").to_arrow().to_pylist() == \
        [{"v": "d"}]
    assert t.scan(incremental_between=(2, 5)).count() == 2
    with pytest.raises(OptionError, match="takes no snapshot_id"):
        t.scan(incremental_between=(1, 3), snapshot_id=2)


def test_incremental_between_on_an_append_table(tmp_path):
    path = append_table(tmp_path)
    for options, rows in APPEND_CASES:
        assert read(path, **options) == rows, options


def test_bad_ranges_are_refused_as_paimon_refuses_them(tmp_path):
    path = pk_table(tmp_path, "none")
    for options, message in [
        ({"incremental-between": "3,2"}, "Starting snapshotId 3 must less than ending snapshotId 2"),
        ({"incremental-between": "0,9"}, r"range \[0, 9\] is out of available snapshotId range \[1, 5\]"),
        ({"incremental-between": "t3,t1"}, "Tag end t1 with snapshot id 1 should be larger than tag start t3"),
        ({"incremental-between": "5"}, "must specific start\\(exclusive\\) and end snapshot or timestamp"),
        # a snapshot id makes the mode from-snapshot, which then refuses the range (CoreOptions.startupMode)
        ({"incremental-between": "1,2", "scan.snapshot-id": "1"},
         r"\[incremental-between\] must be null when you set \[scan.snapshot-id,scan.tag-name\]"),
        ({"incremental-between": "1,2", "incremental-between-timestamp": "1,2"},
         r"must set only one key in \[incremental-between,incremental-between-timestamp\]"),
    ]:
        with pytest.raises(OptionError, match=message):
            read(path, **options)
    with pytest.raises(LookupError, match="tag 'nope'"):
        read(path, **{"incremental-between": "t1,nope"})


# Java Paimon 0.9 reads each case's range of the table (Table.copy with the options, its batch scan and read);
# one JSON line: per case the sorted rows
JAVA_READS = '''
import json
# the id (first) and the value (last) column of each row
out = [sorted([r[0], r[-1]] for r in java_rows(table._j_table.copy(options))) for options in CASES]
print(json.dumps(out))
'''


def java_reads(java_oracle, path: str, cases: list[dict[str, str]]) -> list[list[tuple]]:
    out = java_oracle.exec(path, f"CASES = {json.dumps(cases)}\n" + JAVA_READS)
    return [[tuple(r) for r in rows] for rows in json.loads(out.strip().splitlines()[-1])]


@pytest.mark.parametrize("producer", ["none", "input"])
def test_java_reads_the_same_ranges_of_a_primary_key_table(tmp_path, java_oracle, producer):
    path = pk_table(tmp_path, producer)
    sm = Table.load(path).snapshot_manager
    t1, t3 = sm.snapshot(1).time_millis, sm.snapshot(3).time_millis
    cases = [o for o, _ in PK_CASES] + [
        {"incremental-between": "1,3", "incremental-between-scan-mode": "changelog"},
        {"incremental-between": "0,5", "incremental-between-scan-mode": "auto"},
        {"incremental-between-timestamp": f"{t1},{t3}"},
        {"incremental-between-timestamp": f"{t1 - 10_000},{t1}"},
    ]
    expected = java_reads(java_oracle, path, cases)
    assert [read(path, **options) for options in cases] == expected
    assert expected[:len(PK_CASES)] == [rows for _, rows in PK_CASES]


def test_java_reads_the_same_ranges_of_an_append_table(tmp_path, java_oracle):
    path = append_table(tmp_path)
    cases = [o for o, _ in APPEND_CASES]
    assert java_reads(java_oracle, path, cases) == [rows for _, rows in APPEND_CASES]


def test_java_reads_the_same_ranges_of_a_partitioned_bucketed_table(tmp_path, java_oracle):
    """Two partitions, two buckets, an input changelog: every range and mode, compared with Java row for row."""
    path = str(tmp_path / "wh" / "db.db" / "parts")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])

    def commit(*rows):
        write_arrow(path, pa.table({"id": [r[0] for r in rows], "dt": [r[1] for r in rows],
                                    "v": [r[2] for r in rows]}, schema=schema),
                    primary_key="id,dt", partition_by="dt", options={"bucket": "2", "changelog-producer": "input"})

    commit((1, "x", "a"), (2, "x", "b"), (3, "y", "c"))
    commit((2, "x", "B"), (4, "y", "d"))
    Table.load(path).delete("dt = 'y' AND id = 3")
    commit((5, "x", None), (4, "y", "D"))
    procedures.create_tag(path, "a", 1)
    procedures.create_tag(path, "b", 4)
    cases = [{"incremental-between": f"{s},{e}", "incremental-between-scan-mode": m}
             for s, e in ((0, 4), (1, 3), (2, 4)) for m in ("auto", "delta", "changelog")]
    cases.append({"incremental-between": "a,b"})
    expected = java_reads(java_oracle, path, cases)

    def ours(options):
        return sorted((r["id"], r["v"]) for r in Table.load(path, options).to_arrow().to_pylist())

    assert [ours(o) for o in cases] == [sorted(rows) for rows in expected]
    assert expected[-1] == [(2, "B"), (4, "D"), (5, None)]


def test_changed_rows_keep_delete_as_diff_merger_with_keep_delete():
    """IncrementalDiffSplitRead's DiffMerger with keepDelete (Paimon 1.4.1; an audit_log read between tags): a key
    only the end holds gives its row in its own kind (-D too); one both hold gives the end's row where the value or
    add-ness differs; one only the start holds as an add gives that row as -D."""
    def table(rows):
        return pa.table({"rowkind": [r[0] for r in rows], "k": pa.array([r[1] for r in rows], pa.int32()),
                         "v": pa.array([r[2] for r in rows], pa.int32())})

    before = table([("+I", 1, 10), ("+I", 2, 20), ("+I", 3, 30), ("-D", 4, 40), ("+I", 5, 50), ("+I", 6, 60)])
    after = table([("+I", 1, 10), ("+U", 2, 21), ("-D", 3, 30), ("-D", 4, 40), ("+I", 7, 70), ("-D", 8, 80),
                   ("+U", 6, 60)])
    got = changed_rows_keep_delete(before, after, ["k"], "rowkind")
    assert sorted(zip(*(got[c].to_pylist() for c in ("rowkind", "k", "v"))), key=lambda r: r[1]) == [
        ("+U", 2, 21), ("-D", 3, 30), ("-D", 5, 50), ("+I", 7, 70), ("-D", 8, 80)]
