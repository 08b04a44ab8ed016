"""Time travel by `scan.version`, `scan.timestamp` (string) and `scan.watermark`, and the scan.* pairs Paimon
refuses, through the Spark-free API (Table.load options, Table.scan(version=)), against a model and against Java
Paimon 0.9 reading the same table with the same options (AbstractFileStoreTable.tryTimeTravel /
travelToVersion: a tag first, then `watermark-<n>`, then a snapshot id; SchemaValidation.validateStartupMode).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, procedures
from paimon_ds.options.registry import OptionError
from paimon_ds.snapshot.time_travel import TimeTravelError, timestamp_text_millis
from paimon_ds.table import write_arrow

COMMITS = [[(1, "a"), (2, "b")], [(2, "B"), (3, "c")], [(4, "d")]]
WATERMARKS = [100, 200, 300]


def rows_at(n: int) -> list[tuple[int, str]]:
    """The model: the table after the first ``n`` commits (primary key id, the last value wins)."""
    out: dict[int, str] = {}
    for commit in COMMITS[:n]:
        out.update(commit)
    return sorted(out.items())


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    path = str(tmp_path / "wh" / "db.db" / "t")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
    for rows in COMMITS:
        write_arrow(path, pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema=schema),
                    primary_key="id", options={"bucket": "1"})
    # watermarks as a Flink writer records them (paimon_ds's batch commits carry none)
    for sid, watermark in enumerate(WATERMARKS, 1):
        file = Path(path) / "snapshot" / f"snapshot-{sid}"
        obj = json.loads(file.read_text())
        obj["watermark"] = watermark
        file.write_text(json.dumps(obj))
    procedures.create_tag(path, "t2", 2)
    procedures.create_tag(path, "1", 3)  # a tag named like snapshot 1: VERSION AS OF 1 reads the tag
    return path


def read(path: str, **options: str) -> list[tuple[int, str]]:
    return sorted(tuple(r.values()) for r in Table.load(path, options).to_arrow().to_pylist())


def local_text(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# (options, snapshot whose rows the read gives); the same list is read by Java below
def cases(path: str) -> list[tuple[dict[str, str], int]]:
    sm = Table.load(path).snapshot_manager
    t2 = sm.snapshot(2).time_millis
    return [
        ({"scan.version": "2"}, 2),
        ({"scan.version": "t2"}, 2),
        ({"scan.version": "1"}, 3),  # the tag named 1, not snapshot 1
        ({"scan.version": "watermark-150"}, 2),
        ({"scan.version": "watermark-200"}, 2),
        ({"scan.watermark": "150"}, 2),
        ({"scan.watermark": "300"}, 3),
        ({"scan.watermark": "-5"}, 1),
        ({"scan.timestamp": local_text(t2)}, 2),
        ({"scan.timestamp": local_text(t2 - 1)}, 1),
    ]


def test_version_timestamp_and_watermark_read_the_snapshot_they_name(table_path):
    for options, sid in cases(table_path):
        assert read(table_path, **options) == rows_at(sid), options
    t = Table.load(table_path)
    assert sorted(tuple(r.values()) for r in t.scan(version="t2").to_arrow().to_pylist()) == rows_at(2)
    assert sorted(tuple(r.values()) for r in t.scan(version=1).to_arrow().to_pylist()) == rows_at(3)
    assert t.scan(version=2, columns=["v"]).to_arrow().column("v").to_pylist() == ["a", "B", "c"]
    # the resolved key replaces scan.version, as Paimon's travelToVersion does
    assert Table.load(table_path, {"scan.version": "t2"}).dynamic_options == {"scan.tag-name": "t2"}
    assert Table.load(table_path, {"scan.version": "3"}).dynamic_options == {"scan.snapshot-id": "3"}


def test_unknown_version_and_watermark_are_refused(table_path):
    with pytest.raises(TimeTravelError, match="Cannot find a time travel version for nope"):
        read(table_path, **{"scan.version": "nope"})
    with pytest.raises(TimeTravelError, match=r"no snapshot later than or equal to watermark\[301\]"):
        read(table_path, **{"scan.watermark": "301"})
    with pytest.raises(LookupError, match="snapshot 9"):
        read(table_path, **{"scan.version": "9"})
    with pytest.raises(OptionError, match="version must be a snapshot id or a tag name"):
        Table.load(table_path).scan(version=1.5)
    with pytest.raises(OptionError, match="one of snapshot_id, tag or timestamp; got tag and version"):
        Table.load(table_path).scan(version=1, tag="t2")


def test_scan_timestamp_text_is_local_time():
    wall = dt.datetime(2024, 1, 1, 0, 0, 0)
    assert timestamp_text_millis("2024-01-01 00:00:00") == int(wall.timestamp() * 1000)
    assert timestamp_text_millis("2024-01-01") == int(wall.timestamp() * 1000)
    assert timestamp_text_millis("2024-01-01 00:00:00.123") == int(wall.timestamp() * 1000) + 123
    with pytest.raises(OptionError, match="scan.timestamp 'soon' is not a timestamp"):
        timestamp_text_millis("soon")


CONFLICTS = [
    ({"scan.snapshot-id": "1", "scan.timestamp-millis": "5"},
     r"\[scan.snapshot-id\] must be null when you set \[scan.timestamp-millis,scan.timestamp\]"),
    ({"scan.snapshot-id": "1", "scan.tag-name": "t2"},
     r"must set only one key in \[scan.snapshot-id,scan.tag-name,scan.watermark\] when you use from-snapshot"),
    ({"scan.timestamp-millis": "5", "scan.timestamp": "2024-01-01 00:00:00"},
     r"must set only one key in \[scan.timestamp-millis,scan.timestamp\] when you use from-timestamp"),
    ({"scan.mode": "latest", "scan.snapshot-id": "1"},
     "scan.snapshot-id must be null when you use latest for scan.mode"),
    ({"scan.mode": "from-snapshot"},
     r"must set only one key in \[scan.snapshot-id,scan.tag-name,scan.watermark\]"),
]


def test_conflicting_scan_options_are_refused_as_paimon_refuses_them(table_path):
    for options, message in CONFLICTS:
        with pytest.raises(OptionError, match=message):
            Table.load(table_path, options)


# Java Paimon 0.9 reads the table with each case's options (Table.copy: tryTimeTravel, then validation); one
# JSON line: per case the sorted rows, or the error's message
JAVA_READS = '''
import json
out = []
for options in CASES:
    try:
        out.append(sorted([r[0], r[1]] for r in java_rows(table._j_table.copy(options))))
    except Exception as e:
        out.append("error: " + str(e))
print(json.dumps(out))
'''


def test_java_reads_the_same_versions_and_refuses_the_same_pairs(table_path, java_oracle):
    travel = cases(table_path)
    scripts = [o for o, _ in travel] + [o for o, _ in CONFLICTS]
    out = java_oracle.exec(table_path, f"CASES = {json.dumps(scripts)}\n" + JAVA_READS)
    results = json.loads(out.strip().splitlines()[-1])
    for (options, sid), rows in zip(travel, results):
        assert [tuple(r) for r in rows] == rows_at(sid), (options, rows)
    for (options, _), answer in zip(CONFLICTS, results[len(travel):]):
        assert isinstance(answer, str) and answer.startswith("error"), (options, answer)
