"""Automatic tags after every commit (operation.auto_tag), as Paimon's TagAutoManager and TagBatchCreation make them.

The period tags are checked on snapshots whose commit times and watermarks the test sets (the snapshot files
rewritten before the tag options are switched on), so every expected name is exact; Java Paimon 0.9 makes the same
tags for the same snapshots (tests/interop/test_auto_tag_interop.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table, write_arrow
from paimon_ds.operation import auto_tag
from paimon_ds.operation.auto_tag import automatic_tags, expire_tags_by_time
from paimon_ds.operation.maintenance import create_tag, expire_snapshots
from paimon_ds.options.registry import OptionError, validate
from paimon_ds.schema.change import SetOption, commit_changes
from paimon_ds.snapshot.manager import tag_retention

UTC = dt.timezone.utc


def millis(text: str, zone: dt.tzinfo = UTC) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=zone).timestamp() * 1000)


def table_with_snapshots(tmp_path: Path, fields: list[dict]) -> str:
    """A table with one snapshot per entry of ``fields``, each snapshot's JSON given those fields (timeMillis,
    watermark)."""
    path = str(tmp_path / "t")
    for i in range(len(fields)):
        write_arrow(path, pa.table({"id": pa.array([i], pa.int32())}))
    table = Table.load(path)
    sm = table.snapshot_manager
    for sid, extra in enumerate(fields, 1):
        obj = json.loads(table.io.read_text(sm.path(sid)))
        obj.update(extra)
        table.io.write_bytes(sm.path(sid), json.dumps(obj, indent=2).encode())
    return path


def run_tags(path: str, **options: str) -> dict[str, int]:
    """Switch the options on (ALTER) and run the tag step after the latest snapshot; the tags and their snapshots."""
    commit_changes(path, [SetOption(k, v) for k, v in options.items()])
    table = Table.load(path)
    automatic_tags(table, table.latest_snapshot())
    return tags(path)


def tags(path: str) -> dict[str, int]:
    sm = Table.load(path).snapshot_manager
    return {name: sm.tag(name).id for name in sm.tag_names()}


# watermarks of five snapshots on 2024-01-01 (UTC): 00:30, 01:10, 02:20, 03:05, 05:40
WATERMARKS = [{"watermark": millis(f"2024-01-01T{t}")} for t in ("00:30", "01:10", "02:20", "03:05", "05:40")]


def test_watermark_hourly_tags_each_hour_once_it_has_passed(tmp_path):
    path = table_with_snapshots(tmp_path, WATERMARKS)
    # the first snapshot gets the hour before its own; each later one whose watermark reached the end of the hour
    # after the last tagged one gets the hour before its own; the hour 03 has no snapshot past its end in time
    assert run_tags(path, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"}) == {
        "2023-12-31 23": 1, "2024-01-01 00": 2, "2024-01-01 01": 3, "2024-01-01 02": 4, "2024-01-01 04": 5}


def test_delay_retention_and_completion(tmp_path):
    delayed = table_with_snapshots(tmp_path / "delayed", WATERMARKS)
    assert run_tags(delayed, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                                "tag.creation-delay": "30 min"}) == {
        "2023-12-31 23": 1, "2024-01-01 01": 3, "2024-01-01 04": 5}
    retained = table_with_snapshots(tmp_path / "retained", WATERMARKS)
    create_tag(Table.load(retained), "manual", 1)  # not an automatic tag: never counted, never deleted
    assert run_tags(retained, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                                 "tag.num-retained-max": "3"}) == {
        "manual": 1, "2024-01-01 01": 3, "2024-01-01 02": 4, "2024-01-01 04": 5}
    completed = table_with_snapshots(tmp_path / "completed", WATERMARKS)
    assert run_tags(completed, **{"tag.automatic-creation": "watermark", "tag.creation-period": "hourly",
                                  "tag.automatic-completion": "true"}) == {
        "2023-12-31 23": 1, "2024-01-01 00": 2, "2024-01-01 01": 3, "2024-01-01 02": 4, "2024-01-01 03": 5}


def test_snapshots_without_a_watermark_are_skipped_and_zones_shift_the_names(tmp_path):
    path = table_with_snapshots(tmp_path, [{}, {"watermark": -(2**63)}, {"watermark": millis("2024-01-01T23:30")},
                                           {"watermark": millis("2024-01-03T00:10")}])
    assert run_tags(path, **{"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "+08:00"}) == {
        "2024-01-01": 3, "2024-01-02": 4}  # 2024-01-02 07:30 and 2024-01-03 08:10 in +08:00


@pytest.mark.parametrize(("options", "expected"), [
    ({"tag.creation-period": "daily", "tag.period-formatter": "without_dashes"},
     {"20231231": 1, "20240101": 3, "20240102": 4}),
    ({"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"},
     {"20231231 23": 1, "20240101 23": 3, "20240102 23": 4}),
    ({"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes_and_spaces"},
     {"2023123123": 1, "2024010123": 3, "2024010223": 4}),
    ({"tag.creation-period": "two-hours", "tag.period-formatter": "without_dashes"},  # two-hours: always dashed
     {"2023-12-31 22": 1, "2024-01-01 22": 3, "2024-01-02 22": 4}),
    ({"tag.creation-period-duration": "30 min", "tag.creation-period": "daily"},
     {"202312312330": 1, "202401012330": 3, "202401030000": 4}),
])
def test_process_time_periods_and_formats(tmp_path, options, expected):
    # commit times (UTC) 2024-01-01 00:10, 00:20, 2024-01-02 00:05, 2024-01-03 00:40
    times = ["2024-01-01T00:10", "2024-01-01T00:20", "2024-01-02T00:05", "2024-01-03T00:40"]
    path = table_with_snapshots(tmp_path, [{"timeMillis": millis(t)} for t in times])
    assert run_tags(path, **{"tag.automatic-creation": "process-time", "sink.process-time-zone": "UTC",
                             **options}) == expected


def test_progress_is_derived_again_when_the_automatic_tags_change(tmp_path):
    path = table_with_snapshots(tmp_path, WATERMARKS)
    options = {"tag.automatic-creation": "watermark", "tag.creation-period": "hourly"}
    expected = {"2023-12-31 23": 1, "2024-01-01 00": 2, "2024-01-01 01": 3, "2024-01-01 02": 4, "2024-01-01 04": 5}
    assert run_tags(path, **options) == expected
    table = Table.load(path)
    automatic_tags(table, table.latest_snapshot())  # resumed from the process's progress: nothing new
    assert tags(path) == expected
    # a tag deleted by hand: the progress is derived from the tags again, as a new Java committer derives it, and the
    # snapshots after the last automatic tag are looked at again
    table.io.delete_quietly(table.snapshot_manager.tag_path("2024-01-01 04"))
    auto_tag._progress.clear()
    automatic_tags(table, table.latest_snapshot())
    assert tags(path) == expected


def test_a_commit_tags_its_own_snapshot_and_tags_keep_a_retention_time(tmp_path):
    path = str(tmp_path / "t")
    snapshot = write_arrow(path, pa.table({"id": pa.array([1], pa.int32())}),
                           options={"tag.automatic-creation": "process-time", "tag.default-time-retained": "1 h"})
    day = dt.datetime.fromtimestamp(snapshot.time_millis / 1000).date() - dt.timedelta(days=1)
    assert tags(path) == {day.isoformat(): 1}  # the day before the commit's (local time)
    table = Table.load(path)
    text = table.io.read_text(table.snapshot_manager.tag_path(day.isoformat()))
    assert '"tagTimeRetained": 3600.000000000' in text
    created, retained = tag_retention(table.snapshot_manager.tag(day.isoformat()))
    assert abs((dt.datetime.now() - created).total_seconds()) < 30 and retained == 3600 * 10**9
    Table.load(path).append(pa.table({"id": pa.array([2], pa.int32())}))
    assert tags(path) == {day.isoformat(): 1}  # the same day: no new tag
    create_tag(Table.load(path), "manual")  # create_tag gives the table's retention too
    assert tag_retention(Table.load(path).snapshot_manager.tag("manual"))[1] == 3600 * 10**9
    # an hour later both are past their retention
    assert sorted(expire_tags_by_time(Table.load(path), now=dt.datetime.now() + dt.timedelta(minutes=61))) == \
        sorted([day.isoformat(), "manual"])
    assert tags(path) == {}


def test_a_tag_past_its_retention_takes_the_files_only_it_held(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}), primary_key="id",
                options={"bucket": "1", "tag.default-time-retained": "1 s", "write-only": "true"})
    create_tag(Table.load(path), "old")
    Table.load(path).overwrite(pa.table({"id": pa.array([2], pa.int32()), "v": ["b"]}))
    expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    root = Path(path)
    held = [f.file_name for s in Table.load(path, {"scan.tag-name": "old"}).new_scan().plan() for f in s.files]
    assert len(held) == 1 and (root / "bucket-0" / held[0]).exists()  # only the tag holds it now
    time.sleep(1.1)
    commit_changes(path, [SetOption("write-only", "false")])
    Table.load(path).append(pa.table({"id": pa.array([3], pa.int32()), "v": ["c"]}))  # its commit expires the tag
    assert tags(path) == {}
    assert not (root / "bucket-0" / held[0]).exists()
    live = {f.file_name for s in Table.load(path).new_scan().plan() for f in s.files}
    assert len(live) == 2 and all((root / "bucket-0" / n).exists() for n in live)
    assert sorted(r["id"] for r in Table.load(path).to_arrow().to_pylist()) == [2, 3]


def test_batch_tags_the_latest_snapshot_and_keeps_at_most_num_retained_max_tags(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": pa.array([1], pa.int32())}))
    create_tag(Table.load(path), "a")
    time.sleep(0.02)
    create_tag(Table.load(path), "b")
    commit_changes(path, [SetOption("tag.automatic-creation", "batch"), SetOption("tag.num-retained-max", "2")])
    snapshot = Table.load(path).append(pa.table({"id": pa.array([2], pa.int32())}))
    name = "batch-write-" + dt.datetime.fromtimestamp(snapshot.time_millis / 1000).date().isoformat()
    # three tags, at most two: of the oldest snapshot's, the tag written first goes
    assert tags(path) == {"b": 1, name: 2}
    snapshot = Table.load(path).append(pa.table({"id": pa.array([3], pa.int32())}))
    assert tags(path) == {"b": 1, name: 3}  # replaced: it follows the latest write
    commit_changes(path, [SetOption("tag.batch.customized-name", "nightly")])
    Table.load(path).append(pa.table({"id": pa.array([4], pa.int32())}))
    assert tags(path) == {name: 3, "nightly": 4}


def test_tag_options_it_cannot_honour_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(OptionError, match="not a time zone|unknown time zone"):
        validate({"sink.process-time-zone": "Mars/Olympus"})
    with pytest.raises(OptionError, match="is not one of none, process-time, watermark, batch"):
        validate({"tag.automatic-creation": "daily"})
    with pytest.raises(OptionError, match="tag.creation-delay .* must be shorter than the tag period"):
        write_arrow(str(tmp_path / "delay"), pa.table({"id": [1]}),
                    options={"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                             "tag.creation-delay": "1 h"})
    assert not (tmp_path / "delay").exists()
    # callbacks Paimon would call for the tags a commit creates: the write is refused
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": [1]}))
    table = Table.load(path)
    table.schema_manager.create(dataclasses.replace(table.table_schema, id=1, options={
        **table.table_schema.options, "tag.automatic-creation": "batch", "tag.callbacks": "com.example.Callback"}))
    before = sorted(p for p in Path(path).rglob("*"))
    with pytest.raises(OptionError, match="tag.callbacks='com.example.Callback'.*nothing was written"):
        Table.load(path).append(pa.table({"id": [2]}))
    assert sorted(p for p in Path(path).rglob("*")) == before
