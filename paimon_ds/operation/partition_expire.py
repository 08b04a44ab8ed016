"""Partition expiration after a commit, as Paimon's PartitionExpire (run by TableCommitImpl after each commit).

With `partition.expiration-time` set on a partitioned table, a commit drops every partition older than that:

- values-time (default): the partition's time is read from its values (PartitionTimeExtractor: the first value,
  or `partition.timestamp-pattern` with `$column` replaced by each value, parsed with
  `partition.timestamp-formatter` or Paimon's lenient `yyyy-MM-dd[ HH:mm:ss]`); it expires when that time is
  before now less the expiration time. Values are read as Java's internal objects print (a DATE as its day
  number, so a DATE partition never parses, as in Paimon); a value that does not parse, or a null, never expires.
- update-time: the partition expires when its newest file (any file its manifests still list, live or deleted,
  as Paimon's readPartitionEntries merges them) was created before now less the expiration time.

The expired partitions go in one OVERWRITE snapshot that deletes their files and index files (Paimon's
FileStoreCommit.dropPartitions), committed with the committing snapshot's user and identifier; Paimon 1.x's
`partition.expiration-batch-size` splits them over several, and `partition.expiration-max-num` takes the first
ones by their values. The drop goes through a TableCommit without the after-commit hook, as Paimon's goes through
a FileStoreCommit without the table's committer: it starts no maintenance of its own (no recursion).

The check interval. Paimon keeps the time of the last check in memory per committer, starting at the committer's
creation: a committer that lives less than `partition.expiration-check-interval` (1 h) never checks, so a Java
batch write (one committer per write) never expires anything with the default interval, and Paimon 1.x starts the
clock a random part of the interval back. paimon_ds commits many writes from one process (a driver, a stream, a
script) through short-lived commits, so it keeps the last check per table (and branch) in the process instead: the
first commit of a process to a table checks, later ones when the interval has passed since. With an interval of 0
every commit checks, as in Paimon; `end-input.check-partition-expire` makes every batch commit check.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..format.binary_row import deserialize_row
from ..manifest.files import ManifestFile, ManifestList
from ..manifest.meta import FileKind
from ..options.javatime import LocalDateTime, epoch_millis_of_wall, local_datetime_text, parse_partition_time
from ..schema.types import DataType
from ..snapshot.manager import BATCH_COMMIT_IDENTIFIER, Snapshot
from .commit import TableCommit

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

# (table root, branch) -> wall time of this process's last check
_last_checks: dict[tuple[str, str], dt.datetime] = {}
_lock = threading.Lock()
_EPOCH_DATE = dt.date(1970, 1, 1)


def expire_partitions(table: FileStore, snapshot: Snapshot,
                      now: dt.datetime | None = None) -> list[dict[str, str]] | None:
    """The maintenance step: drop the partitions of ``table`` that expired, after ``snapshot`` was committed.
    Returns the expired partitions ({column: value as Paimon prints it}), or None when it did not check."""
    opts = table.options
    expiration_ms = opts.get("partition.expiration-time")
    if expiration_ms is None or not table.partition_keys or opts.get("write-only"):
        return None
    interval_ms = opts.get("partition.expiration-check-interval")
    now = now or dt.datetime.now()
    key = (table.root, table.branch)
    with _lock:
        last = _last_checks.get(key)
    due = (interval_ms == 0 or last is None or now > last + dt.timedelta(milliseconds=interval_ms)
           or (opts.get("end-input.check-partition-expire") and snapshot.commit_identifier == BATCH_COMMIT_IDENTIFIER))
    if not due:
        return None
    expired = _expire(table, snapshot, now - dt.timedelta(milliseconds=expiration_ms))
    with _lock:
        _last_checks[key] = now
    return expired


def _expire(table: FileStore, snapshot: Snapshot, expire_before: dt.datetime) -> list[dict[str, str]]:
    opts = table.options
    keys = table.partition_keys
    types = [f.type for f in table.table_schema.partition_fields]
    default_name = opts.get("partition.default-name")
    partitions = partition_entries(table)
    if opts.get("partition.expiration-strategy") == "update-time":
        before_ms = epoch_millis_of_wall(expire_before)
        selected = [p for p, last_created in partitions.items() if before_ms > last_created]
    else:
        threshold = LocalDateTime.of(expire_before)
        extract = PartitionTime(keys, opts.get("partition.timestamp-pattern"),
                                opts.get("partition.timestamp-formatter"))
        selected = []
        for p in partitions:
            time = extract(deserialize_row(p, types), types)
            if time is not None and time < threshold:
                selected.append(p)
    if not selected:
        return []
    # Paimon 1.x: by the values' text joined with commas (a null: the default partition name), at most max-num
    texts = {p: [default_name if v is None else java_text(v, t) or str(v)
                 for v, t in zip(deserialize_row(p, types), types)] for p in selected}
    selected.sort(key=lambda p: ",".join(texts[p]))
    max_num = opts.get("partition.expiration-max-num")
    if max_num is not None:
        selected = selected[:max_num]
    expired = [dict(zip(keys, texts[p])) for p in selected]
    log.info("expire partitions of %s: %s", table.path, expired)
    batch_size = opts.get("partition.expiration-batch-size")
    size = batch_size if batch_size is not None and 0 < batch_size < len(selected) else len(selected)
    fresh = table.reload()  # the drop records the latest schema, as Paimon's commit does
    for start in range(0, len(selected), size):
        batch = set(selected[start:start + size])
        commit = TableCommit(fresh, snapshot.commit_user)  # no after-commit hook: the drop starts no maintenance
        commit.overwrite([], partitions=lambda p, batch=batch: p in batch, identifier=snapshot.commit_identifier)
    return expired


def partition_entries(table: FileStore) -> dict[bytes, int]:
    """Paimon's readPartitionEntries of the latest snapshot: each partition that has files, with the creation
    time (epoch millis, the stored wall time read in the system's zone) of the newest file its manifests list
    (added or deleted: Paimon merges both kinds)."""
    snapshot = table.snapshot_manager.latest()
    if snapshot is None:
        return {}
    types = [f.type for f in table.table_schema.partition_fields]
    manifest_list = ManifestList(table.io, table.root)
    manifest_file = ManifestFile(table.io, table.root, types, table.table_schema.id)
    counts: dict[bytes, int] = {}
    newest: dict[bytes, int] = {}
    for meta in (manifest_list.read(snapshot.base_manifest_list) + manifest_list.read(snapshot.delta_manifest_list)):
        for e in manifest_file.read(meta.file_name):
            counts[e.partition] = counts.get(e.partition, 0) + (1 if e.kind == FileKind.ADD else -1)
            created = creation_millis(e.file.creation_time)
            newest[e.partition] = max(newest.get(e.partition, created), created)
    return {p: newest[p] for p, n in counts.items() if n > 0}


def creation_millis(created: dt.datetime | None) -> int:
    """DataFileMeta.creationTimeEpochMillis: the stored wall time in the system's zone (0 if there is none)."""
    if created is None:
        return 0
    if created.tzinfo is not None:  # a reader that gave the timestamp a zone: its wall time as stored
        created = created.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return epoch_millis_of_wall(created)


def java_text(value: Any, t: DataType) -> str | None:
    """A partition value as Paimon prints its internal object (InternalRow's value .toString()): strings as they
    are, numbers in decimal, a DATE as its epoch day, a TIME as its millisecond of the day, a TIMESTAMP as
    LocalDateTime.toString, a DECIMAL in plain notation. None for values whose Java text paimon_ds does not
    reproduce (floating point, binary): Paimon cannot read a time from those either."""
    r = t.root
    if r in ("CHAR", "VARCHAR"):
        return value
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return str(value)
    if r == "DATE":
        return str((value - _EPOCH_DATE).days)
    if r == "TIME":
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return local_datetime_text(value)
    if r == "DECIMAL":
        return format(value, "f")
    return None


class PartitionTime:
    """PartitionTimeExtractor: a partition's time from its values, None where Paimon cannot read one (its
    DateTimeParseException, or a null value)."""

    def __init__(self, keys: Sequence[str], pattern: str | None, formatter: str | None) -> None:
        self.keys = list(keys)
        self.pattern = pattern
        self.formatter = formatter
        # String.replaceAll("\\$" + key, value): the key is a regular expression, the value taken as it is
        self.regexes = [re.compile(r"\$" + k) for k in self.keys]

    def __call__(self, values: Sequence[Any], types: Sequence[DataType]) -> LocalDateTime | None:
        if any(v is None for v in values):
            return None  # Paimon 1.x: a null value never expires (0.9 failed the expiration)
        texts = [java_text(v, t) for v, t in zip(values, types)]
        if self.pattern is None:
            text = texts[0]
        else:
            text = self.pattern
            for regex, value in zip(self.regexes, texts):
                if regex.search(text) is None:
                    continue
                if value is None:
                    return None
                text = regex.sub(lambda _m, v=value: v, text)
        if text is None:
            return None
        return parse_partition_time(text, self.formatter)
