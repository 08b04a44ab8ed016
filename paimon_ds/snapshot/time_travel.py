"""Which snapshot a batch read starts from: the scan.* time-travel options as Paimon 0.9 resolves and checks them.

- `scan.version` (what Spark's `VERSION AS OF` sets): a tag of that name first, else `watermark-<n>` (a
  watermark), else digits (a snapshot id), else an error; the key is replaced by the one it resolves to, as
  AbstractFileStoreTable.travelToVersion does.
- `scan.timestamp`: a string `yyyy-MM-dd[ HH:mm:ss[.fff]]` read in the process's local zone (Java's default
  time zone), as CoreOptions.scanTimestampMills parses it; replaced by `scan.timestamp-millis`.
- `scan.watermark`: the first snapshot whose watermark is at or above the value
  (SnapshotManager.laterOrEqualWatermark); an error when there is none (StaticFromWatermarkStartingScanner).
- Conflicting keys (e.g. `scan.snapshot-id` with `scan.timestamp-millis`) are refused with Paimon's messages
  (SchemaValidation.validateStartupMode).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from ..casts.from_string import string_to_timestamp
from ..casts.temporal import local_to_instant, local_zone, timestamp_parts
from ..errors import PaimonDsError
from ..options.registry import OptionError, Options
from ..schema.types import parse_type
from .manager import Snapshot, SnapshotManager, SnapshotNotFound

SNAPSHOT_ID, TAG_NAME, WATERMARK = "scan.snapshot-id", "scan.tag-name", "scan.watermark"
TIMESTAMP_MILLIS, TIMESTAMP, VERSION = "scan.timestamp-millis", "scan.timestamp", "scan.version"
FILE_CREATION = "scan.file-creation-time-millis"
INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between", "incremental-between-timestamp"
WATERMARK_PREFIX = "watermark-"
# every key that makes a batch read start anywhere but the latest snapshot
TRAVEL_KEYS = (SNAPSHOT_ID, TAG_NAME, WATERMARK, TIMESTAMP_MILLIS, TIMESTAMP, VERSION)
# those and the keys of an incremental read: what a read that names its own version drops from a table's options
READ_RANGE_KEYS = (*TRAVEL_KEYS, INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP)
# Java's Long.MIN_VALUE: the watermark Flink writers record when they have none
NO_WATERMARK = -(2**63)


class TimeTravelError(PaimonDsError, LookupError):
    """A version or watermark that names no snapshot."""


def is_set(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key)
    if value is None and key == TIMESTAMP_MILLIS:
        value = options.get("log.scan.timestamp-millis")  # its fallback key
    return value is not None


def resolve_travel(options: Mapping[str, str], sm: SnapshotManager) -> dict[str, str]:
    """``options`` (a job's) with `scan.version` and `scan.timestamp` replaced by the keys they resolve to."""
    out = dict(options)
    version = out.pop(VERSION, None)
    if version is not None:
        version = str(version)
        if version in sm.tag_names():
            out[TAG_NAME] = version
        elif version.startswith(WATERMARK_PREFIX) and version[len(WATERMARK_PREFIX):].lstrip("-").isdigit():
            out[WATERMARK] = version[len(WATERMARK_PREFIX):]
        elif version.isdigit():
            out[SNAPSHOT_ID] = version
        else:
            # Paimon 1.x takes such a version for a tag and says so (TagManager); 0.9 said the first sentence
            raise TimeTravelError(f"Cannot find a time travel version for {version}: Tag '{version}' doesn't "
                                  f"exist in {sm.table_path} (nor is it a snapshot id or watermark-<n>)")
    text = out.pop(TIMESTAMP, None)
    if text is not None and TIMESTAMP_MILLIS not in out:
        out[TIMESTAMP_MILLIS] = str(timestamp_text_millis(str(text)))
    elif text is not None:
        out[TIMESTAMP] = text  # both given: left for check_startup to refuse
    return out


def timestamp_text_millis(text: str) -> int:
    """`scan.timestamp`'s text as epoch millis: DateTimeUtils.parseTimestampData(text, 3) at the local zone."""
    try:
        wall = string_to_timestamp(pa.array([text.strip()]), parse_type("STRING"), parse_type("TIMESTAMP(3)"), "UTC")
    except Exception as e:  # noqa: BLE001 - a CastError or an Arrow error: either way, not a timestamp
        raise OptionError(f"scan.timestamp {text!r} is not a timestamp (yyyy-MM-dd HH:mm:ss[.fff]): {e}") from None
    millis, _, valid = timestamp_parts(wall)
    return int(local_to_instant(millis, valid, local_zone())[0])


def startup_mode(options: Mapping[str, str]) -> str:
    """CoreOptions.startupMode: scan.mode, or for `default` the mode the other keys imply."""
    mode = str(options.get("scan.mode") or options.get("log.scan") or "default").lower()
    if mode == "full":
        return "latest-full"
    if mode != "default":
        return mode
    if is_set(options, TIMESTAMP_MILLIS) or is_set(options, TIMESTAMP):
        return "from-timestamp"
    if any(is_set(options, k) for k in (SNAPSHOT_ID, TAG_NAME, WATERMARK, VERSION)):
        return "from-snapshot"
    if is_set(options, FILE_CREATION):
        return "from-file-creation-time"
    if is_set(options, INCREMENTAL_BETWEEN) or is_set(options, INCREMENTAL_BETWEEN_TIMESTAMP):
        return "incremental"
    return "latest-full"


def check_startup(options: Mapping[str, str]) -> None:
    """Refuse the scan.* keys that contradict each other or the scan mode, as SchemaValidation.validateStartupMode
    (Paimon 0.9) refuses them; ``options``: the table's stored options with the job's overlaid."""
    mode = startup_mode(options)

    def exactly_one(*keys: str) -> None:
        if sum(is_set(options, k) for k in keys) != 1:
            raise OptionError(f"must set only one key in [{','.join(keys)}] when you use {mode} for scan.mode")

    def conflict(illegal: tuple[str, ...], legal: tuple[str, ...]) -> None:
        for key in illegal:
            if is_set(options, key):
                raise OptionError(f"[{key}] must be null when you set [{','.join(legal)}]")

    if mode == "from-timestamp":
        exactly_one(TIMESTAMP_MILLIS, TIMESTAMP)
        conflict((SNAPSHOT_ID, FILE_CREATION, TAG_NAME, INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_BETWEEN),
                 (TIMESTAMP_MILLIS, TIMESTAMP))
    elif mode == "from-snapshot":
        if is_set(options, VERSION):
            return  # resolved into one of the keys below before Paimon checks (resolve_travel)
        exactly_one(SNAPSHOT_ID, TAG_NAME, WATERMARK)
        conflict((TIMESTAMP_MILLIS, TIMESTAMP, FILE_CREATION, INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_BETWEEN),
                 (SNAPSHOT_ID, TAG_NAME))
    elif mode == "incremental":
        exactly_one(INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP)
        conflict((SNAPSHOT_ID, TIMESTAMP_MILLIS, FILE_CREATION, TIMESTAMP, TAG_NAME),
                 (INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP))
    elif mode == "from-snapshot-full":
        if not is_set(options, SNAPSHOT_ID):
            raise OptionError(f"{SNAPSHOT_ID} can not be null when you use {mode} for scan.mode")
        conflict((TIMESTAMP_MILLIS, TIMESTAMP, FILE_CREATION, TAG_NAME, INCREMENTAL_BETWEEN_TIMESTAMP,
                  INCREMENTAL_BETWEEN), (SNAPSHOT_ID,))
    elif mode in ("from-file-creation-time", "from-creation-timestamp"):
        pass  # refused as an option by the registry (paimon_option_keys.txt)
    else:
        for key in (TIMESTAMP_MILLIS, FILE_CREATION, TIMESTAMP, SNAPSHOT_ID, TAG_NAME, INCREMENTAL_BETWEEN_TIMESTAMP,
                    INCREMENTAL_BETWEEN):
            if is_set(options, key):
                raise OptionError(f"{key} must be null when you use {mode} for scan.mode")


def snapshot_at_watermark(sm: SnapshotManager, watermark: int) -> Snapshot:
    """The first snapshot whose watermark is at or above ``watermark`` (SnapshotManager.laterOrEqualWatermark;
    watermarks do not decrease from one snapshot to the next, so the first one found is Paimon's)."""
    ids = sm.list_ids()
    if ids and sm.snapshot(ids[-1]).watermark != NO_WATERMARK:
        for sid in ids:
            s = sm.snapshot(sid)
            if s.watermark is not None and s.watermark >= watermark:
                return s
    raise TimeTravelError(f"There is currently no snapshot later than or equal to watermark[{watermark}] "
                          f"in {sm.table_path}")


def snapshot_by_id(sm: SnapshotManager, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id``; when it does not exist, the error says why as Paimon 1.x's
    StaticFromSnapshotStartingScanner does: no snapshot at all, or the id outside the available range."""
    try:
        return sm.snapshot(snapshot_id)
    except SnapshotNotFound as e:
        ids = sm.list_ids()
        if not ids:
            raise SnapshotNotFound(f"{e}: There is currently no snapshot.") from None
        if not ids[0] <= snapshot_id <= ids[-1]:
            raise SnapshotNotFound(f"{e}: The specified scan snapshotId {snapshot_id} is out of available "
                                   f"snapshotId range [{ids[0]}, {ids[-1]}].") from None
        raise


def travel_snapshot(options: Options, sm: SnapshotManager) -> Snapshot | None:
    """The snapshot the time-travel options name, or None when none is set (the latest is read)."""
    sid = options.get(SNAPSHOT_ID)
    if sid is not None:
        return snapshot_by_id(sm, sid)
    tag = options.get(TAG_NAME)
    if tag is not None:
        return sm.tag(tag)
    watermark = options.get(WATERMARK)
    if watermark is not None:
        return snapshot_at_watermark(sm, watermark)
    ts = options.get(TIMESTAMP_MILLIS)
    if ts is None and options.get(TIMESTAMP) is not None:
        ts = timestamp_text_millis(options.get(TIMESTAMP))
    if ts is not None:
        return sm.at_or_before(ts)
    return None


__all__ = ["READ_RANGE_KEYS", "TRAVEL_KEYS", "TimeTravelError", "SnapshotNotFound", "check_startup", "resolve_travel",
           "snapshot_at_watermark", "startup_mode", "timestamp_text_millis", "travel_snapshot"]
