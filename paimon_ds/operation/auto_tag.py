"""Automatic tags after a commit, as Paimon's TagAutoManager (run by TableCommitImpl after each commit).

- `tag.automatic-creation` = process-time / watermark (TagAutoCreation): the snapshots since the last automatic
  tag are walked in order; a snapshot whose time (its commit time in `sink.process-time-zone`, or its watermark in
  `sink.watermark-time-zone`; a snapshot without a watermark is skipped) less `tag.creation-delay` has reached the
  end of the period after the last tagged one gets the tag of the period before its own (tag.period), or with
  `tag.automatic-completion` of the next missing one. A name that exists already is left as it is. Then, with
  `tag.num-retained-max`, the automatic tags of the oldest snapshots go until that many remain.
- batch (Paimon 1.x's Spark writer, TagBatchCreation; Paimon 0.9 had it for Flink batch jobs only): the latest
  snapshot is tagged `batch-write-yyyy-MM-dd` (its commit date) or `tag.batch.customized-name`, replacing a tag
  of that name, and then the oldest tags of any kind go until `tag.num-retained-max` remain.
- Tag time expiry (TagTimeExpire, on unless `tag.time-expire-enabled` is false): a tag with a creation time and a
  retention (`tag.default-time-retained` when it was made) is deleted once now is past the two.

Tags get the table's `tag.default-time-retained`. Deleting a tag whose snapshot still exists removes the tag file
only; otherwise the files only it used go too (maintenance.delete_tag). `write-only` tables skip all of this, as
Paimon's committer does.

Paimon derives TagAutoCreation's progress from the tags when its committer is created (a Java batch write creates
one per commit) and keeps it while the committer lives (a Flink job's). paimon_ds derives it the same way and keeps
it in the process while the table's automatic tags (names and snapshots) stay the same, so a long stream does not
walk its snapshots again at each commit: the walk is deterministic, so resuming gives what deriving again would
(short of a period whose tag existed already and whose snapshots expired since, where a new Java committer would
look again from the earliest snapshot).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..options.javatime import local_datetime_text, wall_time, zone_of
from ..options.registry import TAG, check_supported
from ..snapshot.manager import Snapshot, SnapshotNotFound, tag_json, tag_retention
from ..snapshot.tag_period import TagPeriod
from .maintenance import delete_tag

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

JAVA_LONG_MIN = -(2**63)  # a watermark of Long.MIN_VALUE is no watermark
BATCH_TAG_PREFIX = "batch-write-"


@dataclass
class _Progress:
    """TagAutoCreation's state: the next snapshot to look at and the period start of the next tag."""

    next_snapshot: int
    next_tag: dt.datetime | None


# (table root, branch, the settings) -> (the automatic tags it was derived or last left with, its progress)
_progress: dict[tuple, tuple[frozenset[tuple[str, int]], _Progress]] = {}
_lock = threading.Lock()


def automatic_tags(table: FileStore, snapshot: Snapshot) -> None:
    """The maintenance step: Paimon's TagAutoManager after ``snapshot`` was committed to ``table``."""
    opts = table.options
    if opts.get("write-only"):
        return
    mode = opts.get("tag.automatic-creation")
    if mode in ("process-time", "watermark"):
        create_period_tags(table)
    if opts.get("tag.time-expire-enabled"):
        expire_tags_by_time(table)
    if mode == "batch":  # Paimon 1.x's Spark writer tags after its commit, and so after the committer's expiry
        create_batch_tag(table)


def _write_tag(table: FileStore, snapshot: Snapshot, name: str) -> bool:
    sm = table.snapshot_manager
    table.io.mkdirs(sm.tag_dir)
    return table.io.try_create(sm.tag_path(name),
                               tag_json(snapshot, table.options.get("tag.default-time-retained")).encode())


def remove_tag(table: FileStore, name: str) -> None:
    """TagManager.deleteTag: a tag whose snapshot still exists loses its file only; otherwise the files only it
    still used go with it."""
    sm = table.snapshot_manager
    try:
        tagged = sm.tag(name)
    except SnapshotNotFound:
        return
    if table.io.exists(sm.path(tagged.id)):
        table.io.delete(sm.tag_path(name))
    else:
        delete_tag(table, name)


# ----------------------------------------------------------------- process-time and watermark tags
def _tag_time(table: FileStore, snapshot: Snapshot) -> dt.datetime | None:
    """TagTimeExtractor: the snapshot's commit time or watermark as a wall time."""
    opts = table.options
    if opts.get("tag.automatic-creation") == "process-time":
        zone = opts.get("sink.process-time-zone")
        return wall_time(snapshot.time_millis, zone_of(zone) if zone is not None else None)
    if snapshot.watermark is None or snapshot.watermark == JAVA_LONG_MIN:
        return None
    return wall_time(snapshot.watermark, zone_of(opts.get("sink.watermark-time-zone")))


def _auto_tags(table: FileStore, period: TagPeriod) -> dict[str, int]:
    """The automatic tags (by the period's names) and their snapshot ids."""
    sm = table.snapshot_manager
    out = {}
    for name in sm.tag_names():
        if period.is_auto_tag(name):
            try:
                out[name] = sm.tag(name).id
            except SnapshotNotFound:  # deleted meanwhile by another writer
                continue
    return out


def _one_tag(names: list[str]) -> str:
    if len(names) != 1:
        raise ValueError(f"There are more than 1 auto-created tags of the same snapshot: {','.join(sorted(names))}. "
                         "This is unexpected.")
    return names[0]


def _by_snapshot(tags: dict[str, int]) -> list[tuple[int, list[str]]]:
    grouped: dict[int, list[str]] = {}
    for name, sid in tags.items():
        grouped.setdefault(sid, []).append(name)
    return sorted(grouped.items())


def create_period_tags(table: FileStore) -> None:
    """TagAutoCreation.run over the snapshots not looked at yet."""
    opts = table.options
    check_supported(opts, TAG, table.path)
    period = TagPeriod.of(opts)
    delay = dt.timedelta(milliseconds=opts.get("tag.creation-delay"))
    period.check_delay(delay)
    sm = table.snapshot_manager
    settings = (table.root, table.branch, period, delay, opts.get("tag.automatic-creation"),
                opts.get("tag.automatic-completion"), opts.get("tag.num-retained-max"),
                opts.get("sink.process-time-zone"), opts.get("sink.watermark-time-zone"))
    tags = _auto_tags(table, period)
    seen = frozenset(tags.items())
    with _lock:
        cached = _progress.get(settings)
    if cached is not None and cached[0] == seen:
        progress = _Progress(cached[1].next_snapshot, cached[1].next_tag)
    elif not tags:
        progress = _Progress(sm.earliest_id() or 1, None)
    else:
        last_id, names = _by_snapshot(tags)[-1]
        progress = _Progress(last_id + 1, period.next_tag_time(period.tag_to_time(_one_tag(names))))
    while True:
        if table.io.exists(sm.path(progress.next_snapshot)):
            try:
                snapshot = sm.snapshot(progress.next_snapshot)
            except SnapshotNotFound:  # expired meanwhile: look again
                continue
            _tag_snapshot(table, snapshot, period, delay, progress)
            progress.next_snapshot += 1
        else:
            earliest = sm.earliest_id()
            if earliest is not None and earliest > progress.next_snapshot:  # the next ones expired
                progress.next_snapshot = earliest
            else:
                break
    with _lock:
        _progress[settings] = (frozenset(_auto_tags(table, period).items()), progress)


def _tag_snapshot(table: FileStore, snapshot: Snapshot, period: TagPeriod, delay: dt.timedelta,
                  progress: _Progress) -> None:
    """TagAutoCreation.tryToCreateTags."""
    time = _tag_time(table, snapshot)
    if time is None:
        return
    if progress.next_tag is not None and time - delay < period.next_tag_time(progress.next_tag):
        return
    this_tag = period.normalize_to_previous(time)
    if table.options.get("tag.automatic-completion") and progress.next_tag is not None:
        this_tag = progress.next_tag
    name = period.time_to_tag(this_tag)
    if not table.io.exists(table.snapshot_manager.tag_path(name)):
        _write_tag(table, snapshot, name)
        log.info("created tag %s of %s at snapshot %d", name, table.path, snapshot.id)
    progress.next_tag = period.next_tag_time(this_tag)
    retain = table.options.get("tag.num-retained-max")
    if retain is not None:
        groups = _by_snapshot(_auto_tags(table, period))
        for _, names in groups[:max(len(groups) - retain, 0)]:
            doomed = _one_tag(names)
            log.info("delete tag %s of %s: more than tag.num-retained-max (%d) automatic tags", doomed,
                     table.path, retain)
            remove_tag(table, doomed)


# ----------------------------------------------------------------- batch tags
def create_batch_tag(table: FileStore) -> None:
    """Paimon 1.x's TagBatchCreation.createTag: tag the latest snapshot, then keep at most tag.num-retained-max
    tags."""
    opts = table.options
    check_supported(opts, TAG, table.path)
    sm = table.snapshot_manager
    snapshot = sm.latest()
    if snapshot is None:
        return
    name = opts.get("tag.batch.customized-name")
    if name is None:
        zone = opts.get("sink.process-time-zone")
        day = wall_time(snapshot.time_millis, zone_of(zone) if zone is not None else None)
        name = f"{BATCH_TAG_PREFIX}{local_datetime_text(day)[:10]}"
    try:
        remove_tag(table, name)  # a tag of the name is replaced
        if not _write_tag(table, snapshot, name):
            raise ValueError(f"Tag '{name}' already exists.")
    except Exception as e:  # noqa: BLE001 - as Paimon: the tag is left for the user to create
        log.warning("failed to create tag %r of %s at snapshot %d (create it by hand): %s", name, table.path,
                    snapshot.id, e)
        remove_tag(table, name)
    retain = opts.get("tag.num-retained-max")
    if retain is None:
        return
    names = sm.tag_names()
    count = len(names)
    tags: dict[str, int] = {}
    for n in names:
        try:
            tags[n] = sm.tag(n).id
        except SnapshotNotFound:
            count -= 1
    for _, group in _by_snapshot(tags):
        if count <= retain:
            break
        if count - len(group) > retain:
            doomed = group
        else:  # some of this snapshot's tags: the oldest files first
            doomed = sorted(group, key=lambda n: (_modified(table, n), n))[:count - retain]
        for n in doomed:
            remove_tag(table, n)
        count -= len(doomed)


def _modified(table: FileStore, name: str) -> float:
    try:
        return table.io.modified(table.snapshot_manager.tag_path(name)).timestamp()
    except (FileNotFoundError, OSError, NotImplementedError):
        return 0.0


# ----------------------------------------------------------------- time expiry
def expire_tags_by_time(table: FileStore, now: dt.datetime | None = None) -> list[str]:
    """TagTimeExpire: delete the tags whose creation time plus retention is before now (local wall time)."""
    sm = table.snapshot_manager
    now = now or dt.datetime.now()
    expired = []
    for name in sm.tag_names():
        try:
            created, retained_ns = tag_retention(sm.tag(name))
        except SnapshotNotFound:
            continue
        if created is None or retained_ns is None:
            continue
        if now > created + dt.timedelta(microseconds=retained_ns // 1000):
            expired.append(name)
    if expired:
        check_supported(table.options, TAG, table.path)  # callbacks Paimon would call on deletion: refused
        for name in expired:
            log.info("delete tag %s of %s: its retention time has passed", name, table.path)
            remove_tag(table, name)
    return expired
