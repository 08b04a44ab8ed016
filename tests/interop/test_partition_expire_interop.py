"""Partition expiration against a Java twin: the same commits made through Java Paimon 0.9's own batch commit (its
TableCommitImpl expires partitions after each commit) and through paimon_ds leave the same partitions, the same
snapshots (an OVERWRITE of the committing user after the APPEND that expired them), and the same rows, which Java
reads from paimon_ds's tables. Java's PartitionTimeExtractor reads the same times from partition values as
paimon_ds's (options.javatime), case for case.

`partition.expiration-check-interval` is 0 here: a Java batch commit creates its committer with the commit, and with
the default interval of an hour such a committer never checks (operation.partition_expire explains paimon_ds's
per-process interval instead).
"""

from __future__ import annotations

import json
import time

import pyarrow as pa

from paimon_ds import Table, write_arrow
from paimon_ds.operation.partition_expire import PartitionTime
from paimon_ds.operation.scan import TableScan
from paimon_ds.options.javatime import LocalDateTime, civil, parse_partition_time
from paimon_ds.schema.types import DataType

EVERY_COMMIT = {"partition.expiration-time": "1 d", "partition.expiration-check-interval": "0"}

# Creates each table in Java's catalog and makes its commits (pausing before each as told) through Paimon's own
# BatchWriteBuilder commit, which runs its maintenance; SCENARIOS: name -> (fields, partition keys, options, commits)
JAVA_TWINS = '''
import datetime as dt
import time
import pyarrow as pa

J = jvm.org.apache.paimon
ARROW = {"int": pa.int32(), "string": pa.string(), "date": pa.date32()}
JAVA = {"int": J.types.DataTypes.INT, "string": J.types.DataTypes.STRING, "date": J.types.DataTypes.DATE}
catalog._j_catalog.createDatabase("db", True)
for name, (fields, keys, pk, options, commits) in SCENARIOS.items():
    b = J.schema.Schema.newBuilder()
    for f, t in fields:
        b.column(f, JAVA[t]())
    b.partitionKeys(keys)
    if pk:
        b.primaryKey(pk)
    for k, v in options.items():
        b.option(k, v)
    catalog._j_catalog.createTable(J.catalog.Identifier.fromString("db." + name), b.build(), False)
    t = catalog.get_table("db." + name)
    schema = pa.schema([(f, ARROW[t]) for f, t in fields])
    for pause, rows in commits:
        time.sleep(pause)
        rows = [{k: dt.date.fromisoformat(v) if dict(fields)[k] == "date" and v else v for k, v in r.items()}
                for r in rows]
        commit_arrow(t, pa.Table.from_pylist(rows, schema=schema), cast=True)
'''

# Java's reading of each table: its rows, sorted, as JSON
JAVA_READ = '''
import json
out = {}
for name in NAMES:
    t = catalog.get_table("db." + name)
    rb = t.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    out[name] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
print(json.dumps(out))
'''

# Java's PartitionTimeExtractor on each (pattern, formatter, keys, values): the LocalDateTime, or ERR
JAVA_EXTRACT = '''
import json
out = []
for pattern, formatter, keys, values in CASES:
    ex = jvm.org.apache.paimon.partition.PartitionTimeExtractor(pattern, formatter)
    jk, jv = jvm.java.util.ArrayList(), jvm.java.util.ArrayList()
    for k, v in zip(keys, values):
        jk.add(k)
        jv.add(v)
    try:
        out.append(ex.extract(jk, jv).toString())
    except Exception as e:
        out.append("ERR " + str(e).split("\\n")[1][:60] if "\\n" in str(e) else "ERR")
print(json.dumps(out))
'''

SCENARIOS = {
    # Paimon's lenient default formatters: 2020-1-2 is a date, 2020-13-01 is 2021-01-01; `abc` has no time
    "values": ([("id", "int"), ("dt", "string")], ["dt"], None, EVERY_COMMIT, [
        (0, [{"id": 1, "dt": "2020-01-01"}, {"id": 2, "dt": "2020-01-01"}, {"id": 3, "dt": "2099-01-01"},
             {"id": 4, "dt": "abc"}, {"id": 5, "dt": "2020-1-2"}, {"id": 6, "dt": "2020-13-01"}]),
        (0, [{"id": 7, "dt": "2099-01-01"}]),
        (0, [{"id": 8, "dt": "2020-06-01"}, {"id": 9, "dt": "2099-01-02"}])]),
    "pattern": ([("id", "int"), ("dt", "string"), ("hr", "int")], ["dt", "hr"], None,
                {**EVERY_COMMIT, "partition.timestamp-pattern": "$dt $hr:00:00"}, [
        (0, [{"id": 1, "dt": "2020-01-01", "hr": 10}, {"id": 2, "dt": "2099-01-01", "hr": 3},
             {"id": 3, "dt": "2020-01-01", "hr": 24}])]),
    "formatter": ([("id", "int"), ("dt", "string")], ["dt"], None,
                  {**EVERY_COMMIT, "partition.timestamp-formatter": "yyyyMMdd"}, [
        (0, [{"id": 1, "dt": "20200101"}, {"id": 2, "dt": "20990101"}, {"id": 3, "dt": "2020-01-01"},
             {"id": 4, "dt": "20200230"}])]),
    # a DATE partition's value is its day number to Paimon: it never parses
    "dates": ([("id", "int"), ("d", "date")], ["d"], None, EVERY_COMMIT, [
        (0, [{"id": 1, "d": "2020-01-01"}, {"id": 2, "d": "2099-01-01"}])]),
    # a primary-key table with fixed buckets
    "keyed": ([("id", "int"), ("dt", "string"), ("v", "string")], ["dt"], ["id", "dt"],
              {**EVERY_COMMIT, "bucket": "2"}, [
        (0, [{"id": i, "dt": d, "v": "a"} for i in range(4) for d in ("2020-01-01", "2099-01-01")]),
        (0, [{"id": 1, "dt": "2099-01-01", "v": "b"}, {"id": 9, "dt": "2020-02-02", "v": "b"}])]),
    # update-time: a is not written again within the second
    "updated": ([("id", "int"), ("p", "string")], ["p"], None,
                {"partition.expiration-time": "1 s", "partition.expiration-check-interval": "0",
                 "partition.expiration-strategy": "update-time"}, [
        (0, [{"id": 1, "p": "a"}, {"id": 2, "p": "b"}]),
        (1.2, [{"id": 3, "p": "b"}])]),
}


def ours(path: str, fields, keys, pk, options, commits) -> None:
    types = {"int": pa.int32(), "string": pa.string(), "date": pa.date32()}
    schema = pa.schema([(f, types[t]) for f, t in fields])
    for i, (pause, rows) in enumerate(commits):
        time.sleep(pause)
        data = pa.Table.from_pylist([{k: (pa.scalar(v, pa.string()).cast(pa.date32()).as_py()
                                          if types[dict(fields)[k]] == pa.date32() and v else v)
                                      for k, v in r.items()} for r in rows], schema=schema)
        if i == 0:
            write_arrow(path, data, partition_by=keys, primary_key=pk, options=options)
        else:
            Table.load(path).append(data)


def partitions(path: str) -> list[str]:
    table = Table.load(path)
    scan = TableScan(table)
    return sorted({scan.partition_dir(e.partition) for e in scan.read_entries()})


def history(path: str) -> list[tuple]:
    snapshots = Table.load(path).snapshots()
    users = {u: n for n, u in enumerate(dict.fromkeys(s.commit_user for s in snapshots))}
    # kinds and record deltas, and which commit user made each (the drop is its committer's)
    return [(s.commit_kind, s.delta_record_count, users[s.commit_user], s.commit_identifier) for s in snapshots]


EXPECTED = {
    "values": ["dt=2099-01-01", "dt=2099-01-02", "dt=abc"],
    "pattern": ["dt=2099-01-01/hr=3"],
    "formatter": ["dt=2020-01-01", "dt=20990101"],
    "dates": ["d=18262", "d=47117"],
    "keyed": ["dt=2099-01-01"],
    "updated": ["p=b"],
}


def test_java_and_paimon_ds_leave_the_same_partitions_and_snapshots(java_oracle, tmp_path):
    wh = tmp_path / "wh" / "db.db"
    java_oracle.exec(str(wh / "values"), JAVA_TWINS.replace("SCENARIOS", repr(SCENARIOS)))
    for name, scenario in SCENARIOS.items():
        ours(str(wh / f"ours_{name}"), *scenario)
    for name in SCENARIOS:
        java, mine = str(wh / name), str(wh / f"ours_{name}")
        assert partitions(java) == partitions(mine) == EXPECTED[name], name
        assert history(java) == history(mine), name
    assert [k for k, *_ in history(str(wh / "values"))] == ["APPEND", "OVERWRITE", "APPEND", "APPEND", "OVERWRITE"]
    assert history(str(wh / "updated"))[1:] == [("APPEND", 1, 1, 2**63 - 1), ("OVERWRITE", -1, 1, 2**63 - 1)]
    # Java reads paimon_ds's tables as its own, and paimon_ds reads Java's as Java does
    names = list(SCENARIOS) + [f"ours_{n}" for n in SCENARIOS]
    read = json.loads(java_oracle.exec(str(wh / "values"), JAVA_READ.replace("NAMES", repr(names)))
                      .strip().splitlines()[-1])
    for name in SCENARIOS:
        assert read[name] == read[f"ours_{name}"], name
        mine = sorted(json.dumps(r, sort_keys=True, default=str)
                      for r in Table.load(str(wh / f"ours_{name}")).to_arrow().to_pylist())
        assert mine == read[name], name
    assert len(read["values"]) == 4 and len(read["keyed"]) == 4


TEXTS = ["2024-01-01", "2024-1-1", "2024-01-01 10:00:00", "2024-01-01 10:00", "2024-01-01 10:00:00.123456789",
         "2024-01-01 1:2:3", "2024-13-01", "2024-02-30", "2024-00-00", "-2024-01-01", "+2024-01-01", "24-01-01",
         "2024-01-01 24:00:00", "2024-01-01 25:61:61", "2024-001-01", "2024-01-01x", " 2024-01-01", "abc", "",
         "12345678901-01-01", "2024-01-01 10:00:00.", "2024/01/01"]
FORMATTED = [("yyyyMMdd", "20240101"), ("yyyyMMdd", "20240230"), ("yyyyMMdd", "20241301"), ("yyyyMMdd", "2024011"),
             ("yyyyMMdd", "202401011"), ("yyyyMMddHH", "2024010110"), ("yyyyMMddHH", "2024010124"),
             ("yyyyMMddHH", "2024010125"), ("yyyy-MM-dd HH", "2024-01-01 24"), ("yyyy-MM-dd HH:mm", "2024-01-01 10:30"),
             ("yyyy-MM-dd HH:mm:ss.SSS", "2024-01-01 10:30:05.123"), ("yyMMdd", "240101"), ("yyyy-M-d", "2024-1-1"),
             ("yyyy-M-d", "2024-01-01"), ("yyyy/MM/dd", "2024/01/01"), ("yyyyMMd", "2024011"),
             ("uuuuMMdd", "20240101"), ("yyyy-MM-dd'T'HH", "2024-01-01T10"), ("yyyy", "2024"), ("yyyyMM", "202401"),
             ("yyyy-MM-dd mm", "2024-01-01 30"), ("dd.MM.yyyy", "31.12.2023"), ("yyyyMMdd", "+2024010101"),
             ("y-M-d", "99999-1-1"), ("yyyy-MM-dd HH:mm:ss", "2024-01-01 10:60:00")]


def test_partition_times_are_read_as_java_reads_them(java_oracle, tmp_path):
    cases = [(None, None, ["dt"], [t]) for t in TEXTS]
    cases += [(None, fmt, ["dt"], [t]) for fmt, t in FORMATTED]
    cases += [("$dt $hr:00:00", None, ["dt", "hr"], ["2024-01-01", "10"]),
              ("$year-$month-$day", None, ["year", "month", "day"], ["2024", "1", "2"]),
              ("$dt$hr", "yyyyMMddHH", ["dt", "hr"], ["20240101", "07"]),
              ("$dt", None, ["dt", "dtx"], ["2024-01-01", "2099-01-01"])]
    java = json.loads(java_oracle.exec(str(tmp_path / "wh/db.db/x"), JAVA_EXTRACT.replace("CASES", repr(cases)))
                      .strip().splitlines()[-1])
    string = DataType("VARCHAR", (2**31 - 1,))
    for (pattern, formatter, keys, values), expected in zip(cases, java):
        got = PartitionTime(keys, pattern, formatter)(values, [string] * len(values))
        if expected.startswith("ERR"):
            assert got is None, (pattern, formatter, values, _java_text(got))
        else:
            assert got is not None, (pattern, formatter, values, expected)
            assert _java_text(got) == expected, (pattern, formatter, values)
    assert sum(e.startswith("ERR") for e in java) >= 15 and sum(not e.startswith("ERR") for e in java) >= 25


def _java_text(value: LocalDateTime) -> str:
    """LocalDateTime.toString: seconds and a fraction (3, 6 or 9 digits) only when not zero; years past 9999
    signed."""
    year, month, day = civil(value.epoch_day)
    y = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 9999 else f"-{-year:04d}")
    seconds, nanos = divmod(value.nano_of_day, 10**9)
    text = f"{y}-{month:02d}-{day:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
    if seconds % 60 or nanos:
        text += f":{seconds % 60:02d}"
        if nanos:
            text += (f".{nanos // 10**6:03d}" if nanos % 10**6 == 0 else
                     f".{nanos // 1000:06d}" if nanos % 1000 == 0 else f".{nanos:09d}")
    return text


def test_partition_times_keep_nanoseconds():
    assert parse_partition_time("2024-01-01 10:00:00.123456789", None).nano_of_day == 36_000_123_456_789
