"""Every option paimon_ds honours, with its default, check and doc (the README table is made from it).

Table options are Paimon's own keys. Any key Paimon defines is accepted and stored in the schema
file, as Paimon's own Spark connector does; a key nobody defines is refused, because a typo in an
option name would otherwise be silently ignored.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .errors import EXIT_BAD_INPUT, PaimonDsError
from .storage import is_storage_key


class OptionError(PaimonDsError, ValueError):
    """An option that is unknown or has an invalid value."""

    exit_code = EXIT_BAD_INPUT


_SIZE_UNITS = {"b": 1, "kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20, "gb": 1 << 30, "g": 1 << 30,
               "tb": 1 << 40, "t": 1 << 40, "bytes": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def parse_memory_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS | {"": 1}:
        raise ValueError(f"not a memory size: {text!r} (use e.g. 128mb)")
    return int(m.group(1)) * _SIZE_UNITS.get(m.group(2).lower(), 1)


def parse_bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValueError(f"not a boolean: {text!r} (use true or false)")


_DURATION_MS = {
    "d": 86_400_000, "day": 86_400_000, "h": 3_600_000, "hour": 3_600_000, "min": 60_000, "m": 60_000,
    "minute": 60_000, "s": 1000, "sec": 1000, "second": 1000, "ms": 1, "milli": 1, "millisecond": 1,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "microsecond": 1e-3, "ns": 1e-6, "nano": 1e-6, "nanosecond": 1e-6,
}


def parse_duration_ms(text: str) -> float:
    """A duration as Paimon's TimeUtils reads one (`1 d`, `12 h`, `30 min`, `10 s`, `500 ms`, plural units
    too; a bare number is milliseconds), in milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([^\d\s]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if unit.endswith("s") and unit[:-1] in _DURATION_MS and unit not in _DURATION_MS:
        unit = unit[:-1]
    if not m or (unit and unit not in _DURATION_MS):
        raise ValueError(f"not a duration: {text!r} (use e.g. 30 min, 1 h, 7 d)")
    value = int(m.group(1)) * (_DURATION_MS[unit] if unit else 1)
    return int(value) if value == int(value) else value


def parse_list(text: str) -> list[str]:
    return [p.strip() for p in str(text).split(",") if p.strip()]


def _max_buckets(text: str) -> int:
    v = int(text)
    if v != -1 and v <= 0:
        raise ValueError(f"must be -1 (no limit) or positive, got {v}")
    return v


def _positive_int(text: str) -> int:
    v = int(text)
    if v <= 0:
        raise ValueError(f"must be positive, got {v}")
    return v


def _bucket(text: str) -> int:
    v = int(text)
    if v == 0 or v < -2:
        raise ValueError(f"bucket must be -1 (unaware/dynamic) or a positive number of buckets, got {v}")
    return v


def _stats_mode(text: str) -> str:
    if not re.fullmatch(r"none|counts|full|truncate\(\d+\)", text.strip().lower()):
        raise ValueError(f"{text!r} is not one of none, counts, full, truncate(N)")
    return text.strip().lower()


def _file_format(text: str) -> str:
    low = text.strip().lower()
    if low not in ("parquet", "orc", "avro"):
        raise ValueError(f"{text!r} is not one of parquet, orc, avro")
    return low


def _level_map(text: str) -> dict[int, str]:
    """Paimon's per-level map (`0:avro,5:parquet`)."""
    out: dict[int, str] = {}
    for part in str(text).split(","):
        if part.strip():
            level, sep, value = part.partition(":")
            if not sep or not level.strip().isdigit() or not value.strip():
                raise ValueError(f"not a per-level map: {text!r} (use e.g. 0:avro,5:parquet)")
            out[int(level)] = value.strip().lower()
    return out


def _manifest_format(text: str) -> str:
    low = text.strip().lower()
    if low not in ("avro", "parquet", "orc"):
        raise ValueError(f"manifest.format must be avro, parquet or orc, not {text!r}")
    return low


# Paimon 1.x's ExternalPathStrategy values (`data-file.external-paths.strategy`)
_EXTERNAL_STRATEGIES = ("none", "round-robin", "specific-fs", "entropy-inject", "weight-robin")


def parse_external_strategy(text: str) -> str:
    low = text.strip().lower()
    if low not in _EXTERNAL_STRATEGIES:
        raise ValueError(f"not an external path strategy: {text!r} (use one of {', '.join(_EXTERNAL_STRATEGIES)})")
    return low


def parse_external_weights(text: str) -> list[int]:
    weights = [int(w) for w in parse_list(text)]
    if not weights or any(w <= 0 for w in weights):
        raise ValueError(f"weights must be positive integers, got {text!r}")
    return weights


@dataclass(frozen=True)
class Option:
    key: str
    default: Any
    parse: Callable[[str], Any]
    doc: str
    table: bool = True  # stored in the schema file; False for per-job read/write options


OPTIONS: dict[str, Option] = {o.key: o for o in [
    Option("bucket", -1, _bucket, "Fixed number of buckets, or -1 for an unaware-bucket append table."),
    Option("bucket-key", None, parse_list, "Comma-separated columns hashed into the fixed bucket; "
           "defaults to the primary key minus partition keys."),
    Option("partition", None, parse_list, "Comma-separated partition columns, used when the table is created."),
    Option("primary-key", None, parse_list, "Comma-separated primary-key columns, used when the table is created."),
    Option("file.format", "parquet", _file_format, "Data file format: parquet, orc or avro (read by each "
           "file's extension, so a table whose format changed reads every file)."),
    Option("file.compression", "zstd", str, "Compression codec of data files (Avro: zstd, else snappy)."),
    Option("file.compression.zstd-level", 1, int, "Zstandard level for data files."),
    Option("file.format.per.level", None, _level_map, "Data file format per LSM level, e.g. `0:avro,5:parquet` "
           "(levels not named use `file.format`)."),
    Option("file.compression.per.level", None, _level_map, "Compression per LSM level, e.g. `0:lz4,5:zstd`."),
    Option("manifest.compression", "zstd", str, "Codec of manifest files (zstd, deflate, snappy, null)."),
    Option("manifest.format", "avro", _manifest_format, "Format of manifest files, manifest lists and index "
           "manifests: avro, parquet or orc (each file is read by its magic bytes, whatever the option says)."),
    Option("manifest.target-file-size", 8 << 20, parse_memory_size, "Target size of a manifest file."),
    Option("manifest.merge-min-count", 30, _positive_int,
           "Manifests merged into fewer once a snapshot references more than this many."),
    Option("target-file-size", 256 << 20, parse_memory_size, "Data files roll over at this size (append tables)."),
    Option("write-buffer-size", 256 << 20, parse_memory_size,
           "Memory a write task buffers before it writes row groups out."),
    Option("parquet.block.size", 128 << 20, parse_memory_size, "Target row-group size of data files."),
    Option("metadata.stats-mode", "truncate(16)", _stats_mode,
           "Per-column file stats: none, counts, full, truncate(N)."),
    Option("data-file.external-paths", None, parse_list, "Comma-separated roots (with a scheme: `file:///dir`, "
           "`s3://bucket/dir`) that new data files go under instead of the table directory, in the same "
           "`partition/bucket-N/` layout, recorded in the manifest's `_EXTERNAL_PATH` (Paimon 1.x); used only "
           "when the strategy is not none. Files already written stay where they are."),
    Option("data-file.external-paths.strategy", "none", parse_external_strategy,
           "How a new data file picks its external root: none (the table directory), round-robin (in turn from "
           "a random start), specific-fs (round-robin over the roots of one scheme), weight-robin (random by "
           "weight) or entropy-inject (in turn, under hash directories of the file name)."),
    Option("data-file.external-paths.specific-fs", None, str,
           "The scheme (e.g. s3) whose external roots the specific-fs strategy uses."),
    Option("data-file.external-paths.weights", None, parse_external_weights,
           "Weights of the external roots, in their order, for the weight-robin strategy (e.g. `1,3`)."),
    Option("partition.default-name", "__DEFAULT_PARTITION__", str, "Directory name of a null partition value."),
    Option("commit.max-retries", 10, int, "Attempts to commit a snapshot when other writers win the race."),
    Option("commit.user-prefix", None, str, "Prefix of the commit user recorded in snapshots.", table=False),
    Option("source.split.target-size", 128 << 20, parse_memory_size, "Target size of one read split."),
    Option("source.split.open-file-cost", 4 << 20, parse_memory_size,
           "Cost of opening a file, in bytes, when packing splits."),
    Option("scan.snapshot-id", None, int, "Read this snapshot (time travel).", table=False),
    Option("scan.timestamp-millis", None, int, "Read the latest snapshot committed at or before this epoch millis.",
           table=False),
    Option("scan.tag-name", None, str, "Read the snapshot a tag points to.", table=False),
    Option("branch", "main", str, "The branch a read or write uses (Paimon 1.x: `branch/branch-<name>/` holds its "
           "schemas, snapshots and tags; data files are shared); main is the table itself.", table=False),
    Option("scan.fallback-branch", None, str, "Batch reads: partitions this branch lacks are read from that branch "
           "(same column types required); streaming reads see this branch only."),
    Option("write.merge-schema", False, parse_bool,
           "true: a write whose data has new columns adds them to the table (last, nullable) and one whose "
           "column types are wider widens the table's, in a new schema file written before the data.",
           table=False),
    Option("write.merge-schema.explicit-cast", False, parse_bool,
           "With write.merge-schema: also change column types to the data's when only an explicit cast reaches "
           "them (e.g. BIGINT to INT, numbers to STRING), as Paimon allows.", table=False),
    Option("dynamic-partition-overwrite", False, parse_bool,
           "true: mode('overwrite') on a partitioned table replaces only the partitions written (the same as "
           "option partitionOverwriteMode=dynamic); false replaces the whole table.", table=False),
    Option("merge-engine", "deduplicate", str,
           "Primary-key tables: deduplicate, partial-update, aggregation or first-row."),
    Option("write-buffer-spillable", True, parse_bool,
           "Primary-key tables: a full write buffer spills sorted runs to local disk."),
    Option("num-sorted-run.compaction-trigger", 5, _positive_int,
           "Universal compaction starts when a bucket has more sorted runs."),
    Option("compaction.min.file-num", 5, _positive_int,
           "Append tables: compaction rewrites small files once this many are in a row (streams, paimon_ds.compact)."),
    Option("write-only", False, parse_bool, "Writers never compact (leave it to paimon_ds.compact); "
           "streaming writes then do not compact either."),
    Option("deletion-vectors.merge-on-read", False, parse_bool, "Deletion-vector primary-key tables: batch reads "
           "merge level 0 in instead of skipping it (Paimon 2.0)."),
    Option("index-file-in-data-file-dir", False, parse_bool, "Hash index and deletion-vector files go in the bucket's "
           "data directory instead of `index/` (Paimon 1.x; fixed when the table is created)."),
    Option("scan.mode", "default", str, "Streaming reads: where a new query starts: latest-full (default: the table, "
           "then its changes), latest, from-snapshot, from-snapshot-full, from-timestamp.", table=False),
    Option("read.stream.maxFilesPerTrigger", None, _positive_int,
           "Streaming reads: at most this many files per micro-batch (Spark 4.2+).", table=False),
    Option("read.stream.maxRowsPerTrigger", None, _positive_int,
           "Streaming reads: at most this many rows per micro-batch (Spark 4.2+).", table=False),
    Option("read.stream.maxBytesPerTrigger", None, _positive_int,
           "Streaming reads: at most this many bytes of files per micro-batch (Spark 4.2+).", table=False),
    Option("dynamic-bucket.target-row-num", 2_000_000, _positive_int,
           "Dynamic-bucket tables (bucket=-1): keys per bucket before a new bucket opens."),
    Option("dynamic-bucket.initial-buckets", None, _positive_int,
           "Dynamic-bucket tables: buckets a partition's new keys spread over at first (writes without a shuffle: "
           "room for this many x target-row-num, default 16; paimon_ds.write: its assigners, at most the channels)."),
    Option("dynamic-bucket.max-buckets", -1, _max_buckets,
           "Dynamic-bucket tables: at most this many buckets per partition (-1: no limit; Paimon 1.1+)."),
    Option("dynamic-bucket.assigner-parallelism", None, _positive_int,
           "paimon_ds.write: bucket-assigner channels (default: spark.sql.shuffle.partitions)."),
    Option("cross-partition-upsert.index-ttl", None, parse_duration_ms,
           "Cross-partition upsert tables: keys leave the global index this long after their last move."),
    Option("sink.cross-partition.managed-memory", 256 << 20, parse_memory_size,
           "Cross-partition upsert tables: page cache of each assigner's on-disk key index."),
    Option("snapshot.num-retained.min", 10, _positive_int, "Expiry keeps at least this many snapshots."),
    Option("snapshot.num-retained.max", 2**31 - 1, _positive_int, "Expiry keeps at most this many snapshots."),
    Option("snapshot.time-retained", "1 h", parse_duration_ms,
           "Expiry removes snapshots older than this, beyond snapshot.num-retained.min."),
    Option("paimon_ds.row-kind-column", None, str, "Reads: add a leading string column of this name with each "
           "row's kind (+I, -U, +U, -D), as Paimon's `$audit_log` table.", table=False),
    Option("row-tracking.enabled", False, parse_bool, "Append tables with bucket=-1 (Paimon 1.x): every row gets a "
           "table-wide `_ROW_ID` and a `_SEQUENCE_NUMBER`, assigned by the commit and kept by compaction."),
    Option("row-tracking.partition-group-on-commit", True, parse_bool,
           "Row-tracking tables: the files a commit adds take row ids partition by partition."),
    Option("data-evolution.enabled", False, parse_bool, "Row-tracking tables (Paimon 1.x): files may hold some "
           "columns of existing rows; reads merge the files of a row-id range, each column from the newest file."),
    Option("paimon_ds.row-tracking-columns", False, parse_bool, "Reads of row-tracking tables: add `_ROW_ID` and "
           "`_SEQUENCE_NUMBER` columns, as Paimon's `$row_tracking` table.", table=False),
]}
# Spark lower-cases option keys: the camel-case keys of Paimon's Spark connector arrive lower-cased.
_OPTIONS_BY_LOWER = {k.lower(): o for k, o in OPTIONS.items()}

# Keys that configure this package or the path, never stored in the table.
LOCAL_KEYS = {"path"}
_PREFIXES = ("fields.", "file-index.", "spark.", "fs.", "s3.", "s3a.", "hadoop.", "paimon_ds.")


def _known_paimon_keys() -> tuple[frozenset[str], list[re.Pattern[str]]]:
    text = resources.files("paimon_ds").joinpath("paimon_option_keys.txt").read_text()
    keys = [k.strip() for k in text.splitlines() if k.strip() and not k.startswith("#")]
    plain = frozenset(k for k in keys if "#" not in k)
    patterns = [re.compile(re.escape(k).replace("\\#", "[^.]+")) for k in keys if "#" in k]
    return plain, patterns


_PAIMON_KEYS, _PAIMON_PATTERNS = _known_paimon_keys()


def is_known_key(key: str) -> bool:
    return (key in OPTIONS or key.lower() in _OPTIONS_BY_LOWER or key in LOCAL_KEYS or key in _PAIMON_KEYS
            or key.startswith(_PREFIXES)
            or any(p.fullmatch(key) for p in _PAIMON_PATTERNS))


def validate(options: Mapping[str, str]) -> None:
    """Refuse unknown keys and invalid values of the options paimon_ds interprets."""
    for key, value in options.items():
        if not is_known_key(key):
            near = difflib.get_close_matches(key, list(OPTIONS) + sorted(_PAIMON_KEYS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise OptionError(f"unknown option {key!r}{hint}")
        option = OPTIONS.get(key) or _OPTIONS_BY_LOWER.get(key.lower())
        if option is not None and value is not None:
            try:
                option.parse(value)
            except (ValueError, TypeError) as e:
                raise OptionError(f"invalid value {value!r} for option {key!r}: {e}") from None


class Options:
    """Typed access to a table's options (stored options overlaid with per-job ones)."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = {str(k): str(v) for k, v in raw.items() if v is not None}

    def get(self, key: str) -> Any:
        opt = OPTIONS[key]
        if key in self.raw:
            return opt.parse(self.raw[key])
        return opt.default

    def with_overrides(self, extra: Mapping[str, str]) -> Options:
        return Options({**self.raw, **{k: v for k, v in extra.items() if v is not None}})


def table_options(options: Mapping[str, str]) -> dict[str, str]:
    """The subset of user options that belongs in the schema file of a new table."""
    skip = {"partition", "primary-key"} | LOCAL_KEYS | {k for k, o in OPTIONS.items() if not o.table}
    # storage settings (credentials, endpoints) never reach table metadata
    return {k: str(v) for k, v in options.items()
            if k not in skip and not k.startswith("paimon_ds.") and not is_storage_key(k)}


def markdown_table() -> str:
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for o in OPTIONS.values():
        rows.append(f"| `{o.key}` | `{o.default}` | {o.doc} |")
    return "\n".join(rows)
