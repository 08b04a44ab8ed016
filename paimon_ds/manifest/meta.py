"""Records stored in manifests, mirroring Paimon's DataFileMeta, ManifestEntry and ManifestFileMeta."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from ..format.binary_row import EMPTY_ROW


class FileKind(IntEnum):
    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    APPEND = 0
    COMPACT = 1


def _wall_millis(t: dt.datetime | None) -> dt.datetime | None:
    """The creation time as the Avro encoder must see it to store its wall time's milliseconds (Paimon's
    timestamp-millis of a LocalDateTime): a naive wall time marked UTC, since the encoder reads a naive one as
    the process's local time."""
    return t.replace(tzinfo=dt.timezone.utc) if t is not None and t.tzinfo is None else t


@dataclass(frozen=True)
class SimpleStats:
    """Min and max values as serialized BinaryRows, and null counts, of some columns."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: tuple[int | None, ...] | None = ()

    def to_avro(self) -> dict[str, Any]:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts)}

    @staticmethod
    def from_avro(r: dict[str, Any]) -> SimpleStats:
        nc = r.get("_NULL_COUNTS")
        return SimpleStats(r["_MIN_VALUES"], r["_MAX_VALUES"], None if nc is None else tuple(nc))

    def __repr__(self) -> str:  # serialized rows say nothing printed: their sizes only
        return (f"SimpleStats(min_values=<{len(self.min_values)} bytes>, max_values=<{len(self.max_values)} bytes>, "
                f"null_counts={None if self.null_counts is None else list(self.null_counts)})")


EMPTY_STATS = SimpleStats()


@dataclass(frozen=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = EMPTY_STATS
    value_stats: SimpleStats = EMPTY_STATS
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    schema_id: int = 0
    level: int = 0
    extra_files: tuple[str, ...] = ()
    creation_time: dt.datetime | None = None
    delete_row_count: int | None = 0
    embedded_index: bytes | None = None
    file_source: int | None = FileSource.APPEND
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size, "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key, "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(), "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number, "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id, "_LEVEL": self.level, "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": _wall_millis(self.creation_time), "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index, "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path, "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
        }

    def __repr__(self) -> str:
        # the facts a reader looks for; keys and stats are serialized rows (system_tables renders them)
        fields = [repr(self.file_name), f"rows={self.row_count}", f"size={self.file_size}", f"level={self.level}",
                  f"sequence={self.min_sequence_number}..{self.max_sequence_number}", f"schema_id={self.schema_id}"]
        if self.delete_row_count:
            fields.append(f"deleted_rows={self.delete_row_count}")
        if self.external_path:
            fields.append(f"external_path={self.external_path!r}")
        if self.first_row_id is not None:
            fields.append(f"first_row_id={self.first_row_id}")
        return f"DataFileMeta({', '.join(fields)})"

    @staticmethod
    def from_avro(r: dict[str, Any]) -> DataFileMeta:
        # Files written by older Paimon releases lack the later fields: .get() with Paimon's defaults.
        vsc = r.get("_VALUE_STATS_COLS")
        wc = r.get("_WRITE_COLS")
        return DataFileMeta(
            r["_FILE_NAME"], r["_FILE_SIZE"], r["_ROW_COUNT"], r["_MIN_KEY"], r["_MAX_KEY"],
            SimpleStats.from_avro(r["_KEY_STATS"]), SimpleStats.from_avro(r["_VALUE_STATS"]),
            r["_MIN_SEQUENCE_NUMBER"], r["_MAX_SEQUENCE_NUMBER"], r["_SCHEMA_ID"], r["_LEVEL"],
            tuple(r.get("_EXTRA_FILES") or ()), r.get("_CREATION_TIME"), r.get("_DELETE_ROW_COUNT"),
            r.get("_EMBEDDED_FILE_INDEX"), r.get("_FILE_SOURCE"),
            None if vsc is None else tuple(vsc), r.get("_EXTERNAL_PATH"), r.get("_FIRST_ROW_ID"),
            None if wc is None else tuple(wc),
        )


@dataclass(frozen=True)
class ManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[Any, ...]:
        """What makes two entries name the same file (Paimon's FileEntry.Identifier)."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index,
                f.external_path)

    def __repr__(self) -> str:  # the partition is a serialized row: its size only
        return (f"ManifestEntry({self.kind.name}, partition=<{len(self.partition)} bytes>, bucket={self.bucket}, "
                f"total_buckets={self.total_buckets}, file={self.file!r})")

    def to_avro(self) -> dict[str, Any]:
        return {"_VERSION": 2, "_KIND": int(self.kind), "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @staticmethod
    def from_avro(r: dict[str, Any]) -> ManifestEntry:
        return ManifestEntry(FileKind(r["_KIND"]), r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"],
                             DataFileMeta.from_avro(r["_FILE"]))


def live_entries(entries: Iterable[ManifestEntry]) -> dict[tuple, ManifestEntry]:
    """Apply ADD/DELETE entries in order: the files that remain, by identifier."""
    live: dict[tuple, ManifestEntry] = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            live[e.identifier] = e
        else:
            live.pop(e.identifier, None)
    return live


@dataclass(frozen=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"ManifestFileMeta({self.file_name!r}, size={self.file_size}, added={self.num_added_files}, "
                f"deleted={self.num_deleted_files}, schema_id={self.schema_id})")

    def to_avro(self) -> dict[str, Any]:
        return {"_VERSION": 2, "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size,
                "_NUM_ADDED_FILES": self.num_added_files, "_NUM_DELETED_FILES": self.num_deleted_files,
                "_PARTITION_STATS": self.partition_stats.to_avro(), "_SCHEMA_ID": self.schema_id,
                "_MIN_BUCKET": self.min_bucket, "_MAX_BUCKET": self.max_bucket,
                "_MIN_LEVEL": self.min_level, "_MAX_LEVEL": self.max_level,
                "_MIN_ROW_ID": None, "_MAX_ROW_ID": None}

    @staticmethod
    def from_avro(r: dict[str, Any]) -> ManifestFileMeta:
        return ManifestFileMeta(r["_FILE_NAME"], r["_FILE_SIZE"], r["_NUM_ADDED_FILES"], r["_NUM_DELETED_FILES"],
                                SimpleStats.from_avro(r["_PARTITION_STATS"]), r["_SCHEMA_ID"],
                                r.get("_MIN_BUCKET"), r.get("_MAX_BUCKET"), r.get("_MIN_LEVEL"), r.get("_MAX_LEVEL"))
