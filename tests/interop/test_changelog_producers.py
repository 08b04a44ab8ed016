"""`changelog-producer` lookup and full-compaction, written by paimon_ds as Java Paimon 0.9 writes them.

For the same commits (inserts, updates of existing keys, deletes through `rowkind.field`, re-inserts, a key updated
twice in one commit), a table paimon_ds writes and its twin Java Paimon 0.9 writes with its own batch TableWrite
(changelog_scripts.WRITES) must have the same snapshots (APPEND, then the COMPACT snapshot whose compaction wrote the
changelog), the same `changelogRecordCount`s, and the same changelog: Java's own streaming read of either table
returns the same rows with the same row kinds, snapshot by snapshot; so does paimon_ds's. Java writes, paimon_ds
writes, Java writes again: the changelog is the one Java alone writes.

Partial-update and first-row steps carry no deletes: Java 0.9 refuses deletes there by default, and with
`partial-update.remove-record-on-delete` its lookup changelog fails (a null merge result in
LookupChangelogMergeFunctionWrapper.setChangelog, fixed in 1.x); aggregation steps neither (its `a` column would
need a retractable function).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Table
from paimon_ds.manifest.meta import FileKind, FileSource
from paimon_ds.operation.read import TableRead
from paimon_ds.operation.scan import TableScan
from paimon_ds.operation.stream import StreamScan
from paimon_ds.options.registry import OptionError

from .changelog_scripts import COMPACT, READS, WRITES

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("op", pa.string()), ("a", pa.string()),
                    ("b", pa.int32())])

# one commit each: inserts; updates (one to null), an insert and a delete; a key updated twice, a re-insert, a
# delete, an update to the same value; a delete, an insert, another update to the same value
STEPS = [
    [("+I", i, f"a{i}", i) for i in range(1, 9)],
    [("+U", 1, "a1x", 10), ("+I", 2, "a2x", None), ("+I", 9, "a9", 9), ("-D", 3, None, None)],
    [("+U", 4, "a4x", 40), ("+I", 3, "a3z", 3), ("-D", 5, None, None), ("+U", 4, "a4y", 41), ("+U", 1, "a1x", 10),
     ("+U", 6, None, 60)],
    [("-D", 9, None, None), ("+I", 10, "a10", 10), ("+U", 2, "a2x", None), ("+U", 7, "a7x", None)],
]
NO_DELETES = ("partial-update", "first-row", "aggregation")

VARIANTS = {
    "dedup_lookup": {"changelog-producer": "lookup"},
    "dedup_lookup_dv": {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
    "dedup_lookup_rowdedup": {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
    "dedup_full": {"changelog-producer": "full-compaction"},
    "dedup_full_rowdedup": {"changelog-producer": "full-compaction", "changelog-producer.row-deduplicate": "true"},
    "dedup_full_every2": {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"},
    "pu_lookup": {"changelog-producer": "lookup", "merge-engine": "partial-update"},
    "pu_lookup_dv": {"changelog-producer": "lookup", "merge-engine": "partial-update",
                     "deletion-vectors.enabled": "true"},
    "pu_full": {"changelog-producer": "full-compaction", "merge-engine": "partial-update"},
    "fr_lookup": {"changelog-producer": "lookup", "merge-engine": "first-row"},
    "agg_lookup": {"changelog-producer": "lookup", "merge-engine": "aggregation", "fields.b.aggregate-function": "sum"},
}


def steps_for(options: dict[str, str]) -> list[list[tuple]]:
    if options.get("merge-engine") in NO_DELETES:
        return [[r for r in step if r[0] != "-D"] for step in STEPS]
    return STEPS


def batch(rows: list[tuple]) -> pa.Table:
    return pa.table({"id": [r[1] for r in rows], "op": [r[0] for r in rows], "a": [r[2] for r in rows],
                     "b": [r[3] for r in rows]}, schema=SCHEMA)


def table_options(options: dict[str, str]) -> dict[str, str]:
    return {**options, "bucket": "2", "rowkind.field": "op"}


def paimon_ds_writes(path: str, options: dict[str, str], steps: list[list[tuple]]) -> None:
    for step in steps:
        paimon_ds.write_arrow(path, batch(step), primary_key="id", options=table_options(options))


def java_writes(java_oracle, warehouse: Path, tables: list[tuple], tmp: Path, write_only: dict | None = None) -> None:
    java_oracle.exec(str(warehouse / "db.db" / tables[0][0]),
                     WRITES.replace("TABLES", repr(tables)).replace("WRITE_ONLY", repr(write_only or {}))
                     .replace("TMP", repr(str(tmp))))


def java_reads(java_oracle, paths: list[str]) -> dict[str, dict]:
    out = java_oracle.exec(paths[0], READS.replace("PATHS", repr(paths)))
    return json.loads(out.strip().splitlines()[-1])


def per_snapshot(stream: list[list]) -> dict[int, list[tuple]]:
    """The changelog rows of each snapshot, sorted (their order within a snapshot is not defined)."""
    out: dict[int, list[tuple]] = {}
    for sid, *row in stream:
        out.setdefault(sid, []).append(tuple(row))
    return {sid: sorted(rows, key=repr) for sid, rows in out.items()}


def contents(rows: list[list]) -> list[tuple]:
    """A batch read's rows without their row kinds (Java reports +I for a file it reads raw, else the record's)."""
    return sorted(tuple(r[1:]) for r in rows)


def paimon_ds_stream(path: str) -> dict[int, list[tuple]]:
    """paimon_ds's streaming read from snapshot 1: the changelog rows of each snapshot."""
    table = Table.load(path, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    scan = StreamScan(table)
    start = scan.initial_position()
    read = TableRead(table, row_kind_column="rowkind")
    rows = []
    for sid in range(start.snapshot, scan.latest_position(start).snapshot):
        for s in scan.unit(sid, False):
            for b in read.read(s.split, delta=s.delta, changelog=s.changelog):
                rows += [[sid, r["rowkind"], r["id"], r["op"], r["a"], r["b"]] for r in b.to_pylist()]
    return per_snapshot(rows)


def changelog_files(path: str) -> list[tuple]:
    """(snapshot, bucket, level, file source, name prefix, suffix, the levels the snapshot's compaction added files
    at in that bucket) of every changelog file."""
    t = Table.load(path)
    scan = TableScan(t)
    out = []
    for s in t.snapshots():
        if s.changelog_manifest_list:
            added: dict[int, set] = {}
            for m in scan.manifest_list.read(s.delta_manifest_list):
                for e in scan.manifest_file.read(m.file_name):
                    if e.kind == FileKind.ADD:
                        added.setdefault(e.bucket, set()).add(e.file.level)
            for m in scan.manifest_list.read(s.changelog_manifest_list):
                for e in scan.manifest_file.read(m.file_name):
                    name = e.file.file_name
                    out.append((s.id, e.bucket, e.file.level, e.file.file_source, name.split("-")[0],
                                name.rsplit(".")[-1], added.get(e.bucket, set())))
    return out


def test_changelog_of_each_snapshot_is_javas(java_oracle, tmp_path):
    """Every variant: paimon_ds's core writes (one Table write per step) against Java's twin."""
    java_wh, ds_wh = tmp_path / "java", tmp_path / "ds"
    java_writes(java_oracle, java_wh, [(n, o, steps_for(o)) for n, o in VARIANTS.items()], tmp_path / "io")
    for name, options in VARIANTS.items():
        paimon_ds_writes(str(ds_wh / "db.db" / name), options, steps_for(options))
    paths = [str(wh / "db.db" / n) for n in VARIANTS for wh in (java_wh, ds_wh)]
    java = java_reads(java_oracle, paths)
    for name in VARIANTS:
        theirs, ours = java[str(java_wh / "db.db" / name)], java[str(ds_wh / "db.db" / name)]
        assert ours["snapshots"] == theirs["snapshots"], name
        every = int(VARIANTS[name].get("full-compaction.delta-commits", "1"))
        assert [s[1] for s in ours["snapshots"]] == (["APPEND", "COMPACT"] * len(STEPS) if every == 1 else
                                                     ["APPEND", "APPEND", "COMPACT"] * (len(STEPS) // 2)), name
        assert per_snapshot(ours["stream"]) == per_snapshot(theirs["stream"]), name
        assert contents(ours["batch"]) == contents(theirs["batch"]), name
        # paimon_ds reads both tables as Java does, in batch and in a stream
        for wh in (java_wh, ds_wh):
            got = Table.load(str(wh / "db.db" / name)).to_arrow()
            assert sorted((r["id"], r["op"], r["a"], r["b"]) for r in got.to_pylist()) == contents(theirs["batch"]), \
                (name, wh.name)
            assert paimon_ds_stream(str(wh / "db.db" / name)) == per_snapshot(theirs["stream"]), (name, wh.name)
        # the changelog files: `changelog-<uuid>-N.parquet`, at the compaction's output level, file source APPEND
        # (the levels themselves follow the file sizes, which differ between the two writers)
        for wh in (java_wh, ds_wh):
            files = changelog_files(str(wh / "db.db" / name))
            assert files, name
            for _, _, level, source, prefix, suffix, compacted_to in files:
                assert (source, prefix, suffix) == (FileSource.APPEND, "changelog", "parquet"), name
                assert level > 0 and level in compacted_to, name
    # the expected changelog, spelled out for one table: deduplicate with lookup
    dedup = per_snapshot(java[str(ds_wh / "db.db" / "dedup_lookup")]["stream"])
    assert dedup[4] == sorted([("-U", 1, "+I", "a1", 1), ("+U", 1, "+U", "a1x", 10), ("-U", 2, "+I", "a2", 2),
                               ("+U", 2, "+I", "a2x", None), ("-D", 3, "+I", "a3", 3), ("+I", 9, "+I", "a9", 9)],
                              key=repr)
    assert dedup[6] == sorted([("-U", 1, "+U", "a1x", 10), ("+U", 1, "+U", "a1x", 10), ("+I", 3, "+I", "a3z", 3),
                               ("-U", 4, "+I", "a4", 4), ("+U", 4, "+U", "a4y", 41), ("-D", 5, "+I", "a5", 5),
                               ("-U", 6, "+I", "a6", 6), ("+U", 6, "+U", None, 60)], key=repr)
    # row-deduplicate: no -U/+U pair for key 1, whose value did not change
    rowdedup = per_snapshot(java[str(ds_wh / "db.db" / "dedup_lookup_rowdedup")]["stream"])
    assert rowdedup[6] == [r for r in dedup[6] if r[1] != 1]
    # first-row: +I of new keys only
    first = per_snapshot(java[str(ds_wh / "db.db" / "fr_lookup")]["stream"])
    assert first == {2: [("+I", i, "+I", f"a{i}", i) for i in range(1, 9)], 4: [("+I", 9, "+I", "a9", 9)],
                     8: [("+I", 10, "+I", "a10", 10)]}


COWRITE = ["dedup_lookup", "dedup_lookup_dv", "pu_lookup", "dedup_full", "agg_lookup"]


def test_java_and_paimon_ds_co_write(java_oracle, tmp_path):
    """Java writes steps 1-2 of a table created by Java, paimon_ds step 3, Java step 4: the same snapshots,
    changelog and rows as the table Java wrote alone."""
    wh, alone = tmp_path / "wh", tmp_path / "alone"
    variants = {n: VARIANTS[n] for n in COWRITE}
    java_writes(java_oracle, alone, [(n, o, steps_for(o)) for n, o in variants.items()], tmp_path / "io")
    java_writes(java_oracle, wh, [(n, o, steps_for(o)[:2]) for n, o in variants.items()], tmp_path / "io")
    for name, options in variants.items():
        t = Table.load(str(wh / "db.db" / name))
        t.append(batch(steps_for(options)[2]))
    java_writes(java_oracle, wh, [(n, o, steps_for(o)[3:]) for n, o in variants.items()], tmp_path / "io")
    java = java_reads(java_oracle, [str(w / "db.db" / n) for n in variants for w in (wh, alone)])
    for name in variants:
        ours, theirs = java[str(wh / "db.db" / name)], java[str(alone / "db.db" / name)]
        assert ours["snapshots"] == theirs["snapshots"], name
        assert per_snapshot(ours["stream"]) == per_snapshot(theirs["stream"]), name
        assert contents(ours["batch"]) == contents(theirs["batch"]), name
        got = Table.load(str(wh / "db.db" / name)).to_arrow()
        assert sorted((r["id"], r["op"], r["a"], r["b"]) for r in got.to_pylist()) == contents(theirs["batch"]), name
        assert paimon_ds_stream(str(wh / "db.db" / name)) == per_snapshot(theirs["stream"]), name


def test_dedicated_compaction_writes_the_changelog_of_write_only_commits(java_oracle, tmp_path):
    """Commits with `write-only` leave level 0; paimon_ds's compaction (paimon_ds.compact's, here in process)
    lifts it with the changelog Java's dedicated compaction writes."""
    from paimon_ds.operation.compact import compact_in_process

    name, options = "dedup_lookup", VARIANTS["dedup_lookup"]
    java_wh, ds_wh = tmp_path / "java", tmp_path / "ds"
    steps = steps_for(options)
    java_writes(java_oracle, java_wh, [(name, options, steps[:3])], tmp_path / "io", write_only={name: [1, 2]})
    java_oracle.exec(str(java_wh / "db.db" / name), COMPACT.replace("IDENT", repr(f"db.{name}"))
                     .replace("FULL", "False").replace("TMP", repr(str(tmp_path / "io"))))
    path = str(ds_wh / "db.db" / name)
    paimon_ds_writes(path, options, steps[:1])
    for step in steps[1:3]:
        Table.load(path, {"write-only": "true"}).append(batch(step))
    assert compact_in_process(Table.load(path), None) is not None
    java = java_reads(java_oracle, [str(java_wh / "db.db" / name), path])
    ours, theirs = java[path], java[str(java_wh / "db.db" / name)]
    assert ours["snapshots"] == theirs["snapshots"]
    assert [s[1] for s in ours["snapshots"]] == ["APPEND", "COMPACT", "APPEND", "APPEND", "COMPACT"]
    assert per_snapshot(ours["stream"]) == per_snapshot(theirs["stream"])


@pytest.mark.parametrize("options, message", [
    ({"changelog-producer": "full-compaction", "merge-engine": "first-row"},
     "changelog-producer=full-compaction is not supported with the first-row merge engine"),
    ({"changelog-producer": "input", "merge-engine": "first-row"},
     "changelog-producer=input is not supported with the first-row merge engine"),
    ({"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"},
     "deletion-vectors.enabled is not supported with changelog-producer=full-compaction"),
    ({"changelog-producer": "lookup", "deletion-vectors.enabled": "true", "merge-engine": "first-row"},
     "deletion-vectors.enabled is not supported with the first-row merge engine"),
])
def test_combinations_paimon_refuses_are_refused_before_anything_is_written(tmp_path, options, message):
    """Paimon's SchemaValidation refuses these tables; so does paimon_ds, leaving nothing behind."""
    path = tmp_path / "db.db" / "t"
    with pytest.raises(OptionError, match=message):
        paimon_ds.write_arrow(str(path), batch(STEPS[0]), primary_key="id", options=table_options(options))
    assert not path.exists() or not any(path.rglob("*"))
