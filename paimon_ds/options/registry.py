"""Every option paimon_ds interprets, with its default, check, effect and doc (docs/tables/options.md is made from it),
and what every other key Paimon defines does here (`paimon_option_keys.txt`).

Table options are Paimon's own keys. Any key Paimon defines is accepted and stored in the schema
file, as Paimon's own Spark connector does; a key nobody defines is refused, because a typo in an
option name would otherwise be silently ignored. Each key carries its effect: honoured (paimon_ds does
what Paimon does), no effect on results (a tuning knob, another engine's or a catalog's setting), or
refused: set to anything but a no-op value it is refused before anything is written, and a table that
stores such a value refuses the reads or writes it would change (check_supported).

Per-job options overlay the stored ones in one place, FileStore.__init__, which refuses through
check_job_options a job value of an immutable option that differs from the table's, as Paimon's
AbstractFileStoreTable.copy does.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..errors import EXIT_BAD_INPUT, PaimonDsError
from .javatime import check_pattern, check_zone
from .storage import (
    CONDITIONAL_WRITES,
    DEPRECATED_CONDITIONAL_WRITES,
    DEPRECATED_SINGLE_WRITER,
    SINGLE_WRITER,
    is_storage_key,
)


class OptionError(PaimonDsError, ValueError):
    """An option that is unknown or has an invalid value."""

    exit_code = EXIT_BAD_INPUT


# ----------------------------------------------------------------- values, as Java Paimon parses them
# Each parser gives what Paimon's (org.apache.paimon.options) gives for the same text, or refuses what it
# refuses: a value one side takes and the other refuses would break a table's other readers.

JAVA_LONG_MAX = 2**63 - 1
JAVA_INT_MIN, JAVA_INT_MAX = -(2**31), 2**31 - 1
# Java's String.trim() removes every character up to U+0020 (controls included), and nothing else.
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))

# MemorySize.MemoryUnit: the unit names Paimon takes (lower-cased), and bytes per unit.
_SIZE_UNITS = {unit: 1 << shift for names, shift in (
    (("b", "bytes"), 0), (("k", "kb", "kibibytes"), 10), (("m", "mb", "mebibytes"), 20),
    (("g", "gb", "gibibytes"), 30), (("t", "tb", "tebibytes"), 40)) for unit in names}

# TimeUtils' labels (lower-cased; plural forms only where Paimon has them: `mins` and `us` are refused),
# and nanoseconds per unit.
_NANOS_PER_MS = 1_000_000
_NANOS_PER_S = 1_000_000_000
_DURATION_UNITS = {label: nanos for labels, nanos in (
    (("d", "day", "days"), 86_400 * _NANOS_PER_S), (("h", "hour", "hours"), 3_600 * _NANOS_PER_S),
    (("min", "m", "minute", "minutes"), 60 * _NANOS_PER_S),
    (("s", "sec", "secs", "second", "seconds"), _NANOS_PER_S),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), _NANOS_PER_MS),
    (("\u00b5s", "micro", "micros", "microsecond", "microseconds"), 1_000),
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1)) for label in labels}


def _number_and_unit(text: str, what: str) -> tuple[int, str]:
    """The leading ASCII digits of ``text`` (trimmed as Java trims) as a 64-bit count, and the rest, trimmed
    and lower-cased: MemorySize.parseBytes and TimeUtils.parseDuration split a value the same way."""
    trimmed = str(text).strip(_JAVA_TRIMMED)
    if not trimmed:
        raise ValueError(f"not a {what}: {text!r} is empty")
    digits = re.match(r"[0-9]*", trimmed).group()
    if not digits:
        raise ValueError(f"not a {what}: {text!r} does not start with a number (no sign, no fraction)")
    value = int(digits)
    if value > JAVA_LONG_MAX:
        raise ValueError(f"not a {what}: {digits} does not fit a 64-bit number")
    # str.lower agrees with Java's toLowerCase on every character that lower-cases to a unit's letters
    return value, trimmed[len(digits):].strip(_JAVA_TRIMMED).lower()


def parse_memory_size(text: str) -> int:
    """A size in bytes, as Paimon's MemorySize.parse reads one: digits, then maybe a unit (b, bytes, k, kb,
    kibibytes, m, mb, mebibytes, g, gb, gibibytes, t, tb, tebibytes; any case; powers of 1024)."""
    value, unit = _number_and_unit(text, "memory size")
    if unit and unit not in _SIZE_UNITS:
        raise ValueError(f"not a memory size: {text!r} (unit {unit!r} is not one of Paimon's: b, k, m, g, t, "
                         "kb, mb, gb, tb, bytes, kibibytes, mebibytes, gibibytes, tebibytes)")
    size = value * _SIZE_UNITS.get(unit, 1)
    # Java checks its wrapped product by dividing it back; with a power-of-two unit that refuses exactly
    # the products above Long.MAX_VALUE
    if size > JAVA_LONG_MAX:
        raise ValueError(f"not a memory size: {text!r} is more bytes than a 64-bit number holds")
    return size


def parse_duration(text: str) -> int:
    """A duration as Paimon's TimeUtils.parseDuration reads one, in nanoseconds: digits, then maybe a unit
    (d, h, min/m, s, ms, µs (U+00B5), ns, or day(s), hour(s), minute(s), sec(s), second(s), milli(s), micro(s),
    nano(s)...; any case); a bare number is milliseconds. Java's Duration holds whole seconds in a long
    plus nanoseconds; a Python int holds that exactly, so nothing is rounded here."""
    value, unit = _number_and_unit(text, "duration")
    if unit and unit not in _DURATION_UNITS:
        raise ValueError(f"not a duration: {text!r} (unit {unit!r} is not one of Paimon's: d, h, min, m, s, ms, "
                         "µs, ns, day(s), hour(s), minute(s), sec(s), second(s), milli(s), micro(s), nano(s)...)")
    nanos = value * _DURATION_UNITS[unit or "ms"]
    if nanos // _NANOS_PER_S > JAVA_LONG_MAX:  # Duration.of(n, DAYS/HOURS/MINUTES) overflows its seconds
        raise ValueError(f"not a duration: {text!r} is more seconds than a 64-bit number holds")
    return nanos


def parse_duration_ms(text: str) -> int:
    """A duration (parse_duration) in whole milliseconds, as Paimon's callers take it (Duration.toMillis):
    truncated, so `500 µs` is 0 ms; refused where toMillis would overflow a long."""
    millis = parse_duration(text) // _NANOS_PER_MS
    if millis > JAVA_LONG_MAX:
        raise ValueError(f"not a duration: {text!r} is more milliseconds than a 64-bit number holds")
    return millis


def parse_bool(text: str) -> bool:
    """true or false in any case, nothing else (not even surrounding spaces), as Paimon's options take them."""
    upper = str(text).upper()
    if upper in ("TRUE", "FALSE"):
        return upper == "TRUE"
    raise ValueError(f"not a boolean: {text!r} (use true or false)")


def _java_integer(text: str, low: int, high: int, what: str) -> int:
    # Integer.parseInt / Long.parseLong: an optional sign and decimal digits (any script's), no spaces
    # or underscores, which Python's int() would take
    if not re.fullmatch(r"[+-]?\d+", str(text)):
        raise ValueError(f"not {what}: {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"not {what}: {text!r} is out of range")
    return value


def parse_int(text: str) -> int:
    """A 32-bit integer, as Paimon's int options take it (Integer.parseInt)."""
    return _java_integer(text, JAVA_INT_MIN, JAVA_INT_MAX, "a 32-bit integer")


def parse_long(text: str) -> int:
    """A 64-bit integer, as Paimon's long options take it (Long.parseLong)."""
    return _java_integer(text, -JAVA_LONG_MAX - 1, JAVA_LONG_MAX, "a 64-bit integer")


def enum_parser(*values: str) -> Callable[[str], str]:
    """A parser of one of ``values``, matched as Paimon matches an enum option (its value upper-cased against
    each constant's, so in any case, spaces not trimmed); it gives the value as Paimon spells it."""
    by_upper = {v.upper(): v for v in values}

    def parse(text: str) -> str:
        value = by_upper.get(str(text).upper())
        if value is None:
            raise ValueError(f"{text!r} is not one of {', '.join(values)}")
        return value

    return parse


def parse_list(text: str) -> list[str]:
    return [p.strip() for p in str(text).split(",") if p.strip()]


def _max_buckets(text: str) -> int:
    v = parse_int(text)
    if v != -1 and v <= 0:
        raise ValueError(f"must be -1 (no limit) or positive, got {v}")
    return v


def _fraction(text: str) -> float:
    """A number strictly between 0 and 1 (Double.parseDouble's decimal forms)."""
    v = float(str(text).strip())
    if not 0 < v < 1:
        raise ValueError(f"must be between 0 and 1 (exclusive), got {text!r}")
    return v


def _positive_int(text: str) -> int:
    v = parse_int(text)
    if v <= 0:
        raise ValueError(f"must be positive, got {v}")
    return v


def _non_negative_int(text: str) -> int:
    v = parse_int(text)
    if v < 0:
        raise ValueError(f"must be 0 or more, got {v}")
    return v


def _positive_long(text: str) -> int:
    v = parse_long(text)
    if v <= 0:
        raise ValueError(f"must be positive, got {v}")
    return v


def _non_negative_long(text: str) -> int:
    v = parse_long(text)
    if v < 0:
        raise ValueError(f"must be 0 or more, got {v}")
    return v


def _consumer_id(text: str) -> str:
    if not text:
        raise ValueError("consumer id cannot be empty string")
    return text


def _bucket(text: str) -> int:
    v = parse_int(text)
    if v == 0 or v < -2:
        raise ValueError(f"bucket must be -1 (unaware/dynamic), -2 (postpone) or a positive number of buckets, "
                         f"got {v}")
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


# The compression names (any case) paimon_ds's writers take for each file format, as Paimon names codecs: pyarrow's
# parquet and ORC writers and fastavro (lzo has no writer here: Arrow's C++ has none; Avro's lz4 needs a package
# fastavro does not depend on). A value the table's formats cannot write would fail every later write.
COMPRESSIONS = {
    "parquet": ("none", "uncompressed", "null", "zstd", "zstandard", "snappy", "gzip", "deflate", "zlib", "lz4",
                "lz4_raw", "brotli"),
    "orc": ("none", "uncompressed", "null", "zstd", "zstandard", "snappy", "zlib", "gzip", "deflate", "lz4"),
    "avro": ("none", "uncompressed", "null", "zstd", "zstandard", "snappy", "deflate", "bzip2", "xz"),
}
_ANY_COMPRESSION = tuple(dict.fromkeys(c for names in COMPRESSIONS.values() for c in names))


def _compression(text: str) -> str:
    low = str(text).strip().lower()
    if low not in _ANY_COMPRESSION:
        raise ValueError(f"{text!r} is not a compression paimon_ds writes (one of {', '.join(_ANY_COMPRESSION)}; "
                         "which ones a format takes: parquet and ORC also lz4, parquet brotli, Avro bzip2 and xz)")
    return low


def _compression_level_map(text: str) -> dict[int, str]:
    return {level: _compression(codec) for level, codec in _level_map(text).items()}


def _format_level_map(text: str) -> dict[int, str]:
    return {level: _file_format(fmt) for level, fmt in _level_map(text).items()}


def check_compressions(options: Options) -> None:
    """Refuse a compression the table's file or manifest format cannot be written with (e.g. brotli for ORC data
    files), naming the option: a table storing one could never be written again."""
    formats = {options.get("file.format"), *(options.get("file.format.per.level") or {}).values()}
    per_level = options.get("file.compression.per.level") or {}
    by_level_format = options.get("file.format.per.level") or {}
    checks = [("file.compression", options.get("file.compression"), sorted(formats))]
    checks += [("file.compression.per.level", codec, [by_level_format.get(level, options.get("file.format"))])
               for level, codec in per_level.items()]
    checks.append(("manifest.compression", options.get("manifest.compression"), [options.get("manifest.format")]))
    for key, codec, fmts in checks:
        for fmt in fmts:
            if codec not in COMPRESSIONS[fmt]:
                raise OptionError(f"option {key}={codec!r} cannot be written in {fmt} (the table's "
                                  f"{'manifest.format' if key == 'manifest.compression' else 'file format'}); "
                                  f"{fmt} takes {', '.join(COMPRESSIONS[fmt])}")


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
    weights = [parse_int(w) for w in parse_list(text)]
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
    fallback_keys: tuple[str, ...] = ()  # Paimon's other names of the option (withFallbackKeys), read in order
    deprecated_keys: tuple[str, ...] = ()  # paimon_ds's old names, still read, with a warning once
    shown_default: str | None = None  # the default as a user writes it, where the parsed one reads worse
    # what paimon_ds does with it (HONOURED, TUNING, REFUSED); None: as paimon_option_keys.txt classifies the key,
    # else HONOURED (see effect_of)
    effect: str | None = None

    @property
    def is_pattern(self) -> bool:
        """A family of keys (`fields.#.aggregate-function`): `#` stands for a name, e.g. a column's."""
        return "#" in self.key


MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "full-compaction", "lookup")
# Paimon's StartupMode values (0.9 and 1.x); paimon_ds streams from some (operation/stream.py)
STARTUP_MODES = ("default", "latest-full", "full", "latest", "latest-delta", "compacted-full", "from-timestamp",
                 "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full",
                 "incremental")
CONDITIONAL_WRITE_MODES = ("auto", "true", "false")


OPTIONS: dict[str, Option] = {o.key: o for o in [
    Option("bucket", -1, _bucket, "Fixed number of buckets; -1: unaware-bucket append table, dynamic buckets for "
           "a primary key; -2: postpone bucket (primary-key tables, Paimon 1.1+): each partition gets its own number "
           "of buckets (see `postpone.*`)."),
    Option("bucket-key", None, parse_list, "Comma-separated columns hashed into the fixed bucket; "
           "defaults to the primary key minus partition keys."),
    Option("partition", None, parse_list, "Comma-separated partition columns, used when the table is created."),
    Option("primary-key", None, parse_list, "Comma-separated primary-key columns, used when the table is created."),
    Option("file.format", "parquet", _file_format, "Data file format: parquet, orc or avro (read by each "
           "file's extension, so a table whose format changed reads every file)."),
    Option("file.compression", "zstd", _compression, "Compression codec of data files (Avro: zstd, else snappy)."),
    Option("file.compression.zstd-level", 1, parse_int, "Zstandard level for data files."),
    Option("file.format.per.level", None, _format_level_map, "Data file format per LSM level, e.g. `0:avro,5:parquet` "
           "(levels not named use `file.format`)."),
    Option("file.compression.per.level", None, _compression_level_map,
           "Compression per LSM level, e.g. `0:lz4,5:zstd`."),
    Option("manifest.compression", "zstd", _compression, "Codec of manifest files (zstd, deflate, snappy, null)."),
    Option("manifest.format", "avro", _manifest_format, "Format of manifest files, manifest lists and index "
           "manifests: avro, parquet or orc (each file is read by its magic bytes, whatever the option says)."),
    Option("manifest.target-file-size", 8 << 20, parse_memory_size, "Target size of a manifest file."),
    Option("file-index.bloom-filter.columns", None, parse_list, "Append tables: columns each data file gets a "
           "bloom filter of (as Java Paimon's), which scans filtering them by `=` or `IN` test to skip the file."),
    Option("file-index.bloom-filter.#.items", 1_000_000, _positive_int,
           "Expected distinct values of column #'s bloom filter per data file (sizes the filter)."),
    Option("file-index.bloom-filter.#.fpp", 0.1, _fraction, "False-positive rate of column #'s bloom filter."),
    Option("file-index.bitmap.columns", None, parse_list, "Append tables: columns each data file gets a bitmap "
           "index of (the rows of each distinct value, as Java Paimon's), which scans filtering them by `=` or `IN` "
           "test to skip the file; for columns of few distinct values."),
    Option("file-index.in-manifest-threshold", 500, parse_memory_size, "A data file's index of at most this "
           "many bytes is kept in its manifest entry, a larger one in `<data file>.index` beside it.",
           shown_default="500 b"),
    Option("file-index.read.enabled", True, parse_bool, "Scans skip data files whose index says no row matches."),
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
    Option("commit.max-retries", 10, _non_negative_int, "Retries of a commit when other writers win the race (0: "
           "one attempt)."),
    Option("commit.user-prefix", None, str, "Prefix of the commit user recorded in snapshots.", table=False),
    Option("source.split.target-size", 128 << 20, parse_memory_size, "Target size of one read split."),
    Option("source.split.open-file-cost", 4 << 20, parse_memory_size,
           "Cost of opening a file, in bytes, when packing splits."),
    Option("scan.snapshot-id", None, parse_long, "Read this snapshot (time travel).", table=False),
    Option("scan.timestamp-millis", None, parse_long,
           "Read the latest snapshot committed at or before this epoch millis (a batch read with none that early "
           "is an error, as in Paimon 1.2+; Paimon 0.9 read nothing).", table=False,
           fallback_keys=("log.scan.timestamp-millis",)),
    Option("scan.tag-name", None, str, "Read the snapshot a tag points to.", table=False),
    Option("scan.version", None, str, "Read a version as Spark's `VERSION AS OF` names it: the tag of that name, "
           "else `watermark-<n>` (as scan.watermark), else a snapshot id.", table=False),
    Option("scan.timestamp", None, str, "Read the latest snapshot committed at or before this local time "
           "(`yyyy-MM-dd HH:mm:ss[.fff]`, in the process's time zone as Java's default zone).", table=False),
    Option("incremental-between", None, str, "Batch reads: the changes between two snapshots `start,end` (the start "
           "exclusive) or two tags `tag1,tag2` (the diff of their snapshots), as Paimon 0.9 reads them.", table=False),
    Option("incremental-between-timestamp", None, str, "Batch reads: the changes between two epoch millis `t1,t2` "
           "(the snapshots they fall in, the start exclusive), or two local times `yyyy-MM-dd HH:mm:ss[.SSS]` "
           "(Paimon 1.x).", table=False),
    Option("incremental-between-scan-mode", "auto", enum_parser("auto", "delta", "changelog", "diff"),
           "What an incremental read takes: delta (the data files of APPEND commits), changelog (the changelog "
           "files), auto (changelog with a changelog producer, else delta), diff (Paimon 1.x: the merged rows that "
           "differ between the two snapshots).", table=False),
    Option("scan.watermark", None, parse_long, "Read the first snapshot whose watermark is at or above this "
           "value.", table=False),
    Option("branch", "main", str, "The branch a read or write uses (Paimon 1.x: `branch/branch-<name>/` holds its "
           "schemas, snapshots and tags; data files are shared); main is the table itself.", table=False),
    Option("scan.primary-branch", None, str, "Refused (not supported by paimon_ds): use scan.fallback-branch."),
    Option("scan.fallback-branch", None, str, "Batch reads: partitions this branch lacks are read from that branch "
           "(same column types required); streaming reads see this branch only."),
    Option("write.merge-schema", False, parse_bool,
           "true: a write whose data has new columns adds them to the table (last, nullable) and one whose "
           "column types are wider widens the table's, in a new schema file written before the data.",
           table=False),
    Option("write.merge-schema.explicit-cast", False, parse_bool,
           "With write.merge-schema: also change column types to the data's when only an explicit cast reaches "
           "them (e.g. BIGINT to INT, numbers to STRING), as Paimon allows.", table=False),
    Option("write.merge-schema.type-widening", True, parse_bool,
           "With write.merge-schema: false keeps the table's column types and casts the data's values into them "
           "(Paimon master, unreleased after 1.4.1, where false is the default); true (paimon_ds's default, and "
           "what every Paimon release up to 1.4.1 does without the option) widens them.", table=False),
    Option("add-column-before-partition", False, parse_bool, "ALTER TABLE: a column added without a position goes "
           "before the first partition column instead of last (Paimon 1.x; partitioned tables)."),
    Option("disable-explicit-type-casting", False, parse_bool, "ALTER TABLE: column types change only by widening "
           "(wider integers, FLOAT to DOUBLE, wider DECIMAL, longer VARCHAR/VARBINARY), not by explicit casts "
           "(Paimon 1.x takes its implicit casts, a superset)."),
    Option("dynamic-partition-overwrite", False, parse_bool,
           "true: mode('overwrite') on a partitioned table replaces only the partitions written (the same as "
           "option partitionOverwriteMode=dynamic); false replaces the whole table.", table=False),
    Option("merge-engine", "deduplicate", enum_parser(*MERGE_ENGINES),
           "Primary-key tables: deduplicate, partial-update, aggregation or first-row."),
    Option("changelog-producer", "none", enum_parser(*CHANGELOG_PRODUCERS),
           "Primary-key tables: none; input (writers also write their input as changelog files); lookup (every "
           "commit's compaction lifts level 0 and writes each changed key's -U/+U, +I or -D, looked up in the "
           "levels above); full-compaction (each full compaction writes the changes since the last one; writes "
           "compact fully every `full-compaction.delta-commits` commits, default 1). Streaming reads of a table "
           "with one read its changelog files."),
    Option("changelog-producer.row-deduplicate", False, parse_bool,
           "lookup and full-compaction producers: no -U/+U pair for a key whose value did not change."),
    Option("changelog-producer.row-deduplicate-ignore-fields", None, parse_list,
           "With changelog-producer.row-deduplicate: comma-separated columns left out of that comparison "
           "(Paimon 1.x)."),
    Option("force-lookup", False, parse_bool, "Primary-key tables: compact as the lookup producer does (every "
           "commit lifts level 0, merging each key's newest record above it) without writing a changelog."),
    Option("sequence.field", None, parse_list, "Primary-key tables: comma-separated columns that order the rows of "
           "a key instead of the write order (the greatest wins)."),
    Option("sequence.field.sort-order", "ascending", enum_parser("ascending", "descending"),
           "Primary-key tables: descending makes the smallest `sequence.field` win (a null one still loses)."),
    Option("rowkind.field", None, str, "Primary-key tables: a string column holding each input row's kind "
           "(+I, -U, +U, -D)."),
    Option("ignore-delete", False, parse_bool, "Primary-key tables: writers drop delete and update-before rows.",
           fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")),
    Option("ignore-update-before", False, parse_bool, "Writers drop update-before (-U) rows (Paimon 1.x)."),
    Option("partial-update.remove-record-on-delete", False, parse_bool,
           "Partial-update tables: a delete row removes the key's row (update-before rows are ignored)."),
    Option("partial-update.remove-record-on-sequence-group", None, parse_list,
           "Partial-update tables (Paimon 1.x): sequence fields of groups whose delete rows remove the key's row."),
    Option("aggregation.remove-record-on-delete", False, parse_bool,
           "Aggregation tables (Paimon 1.x): a delete row removes the key's row instead of retracting."),
    Option("fields.default-aggregate-function", None, str,
           "Aggregation and partial-update tables: the function of columns without their own (aggregation: unset "
           "means last_non_null_value)."),
    Option("fields.#.aggregate-function", None, str, "Aggregation tables, and partial-update columns in a sequence "
           "group: the function of column # (sum, product, min, max, last_value, last_non_null_value, first_value, "
           "first_non_null_value, bool_and, bool_or, listagg, collect, merge_map, merge_map_with_keytime, "
           "nested_update, nested_partial_update; hll_sketch, theta_sketch, rbm32, rbm64)."),
    Option("fields.#.ignore-retract", False, parse_bool,
           "Aggregation functions: column # ignores delete and update-before rows."),
    Option("fields.#.list-agg-delimiter", ",", str, "Aggregation functions: the delimiter of column #'s listagg."),
    Option("fields.#.distinct", False, parse_bool,
           "Aggregation functions: column #'s listagg or collect keeps each value once."),
    Option("fields.#.nested-key", None, parse_list,
           "nested_update / nested_partial_update: the fields of column #'s rows that identify a row."),
    Option("fields.#.nested-key-null-strategy", "merge", enum_parser("merge", "ignore", "error"),
           "nested_update / nested_partial_update (Paimon 2.x): rows whose nested key has a null: merge, ignore or "
           "error."),
    Option("fields.#.nested-sequence-field", None, parse_list,
           "nested_update with a nested key (Paimon 2.x): fields ordering two rows of one nested key (greatest wins)."),
    Option("fields.#.count-limit", 2**31 - 1, parse_int, "nested_update: at most this many rows in column #."),
    Option("fields.#.ts-field", None, str, "merge_map_with_keytime: the string field of column #'s map values that "
           "orders them (unset: the last field)."),
    Option("fields.#.sequence-group", None, parse_list,
           "Partial-update tables: the columns column # (or `fields.a,b.sequence-group`: columns a, b) orders; a "
           "row updates them only if its sequence value is not older."),
    Option("record-level.expire-time", None, parse_duration_ms,
           "Primary-key tables: compaction drops records whose `record-level.time-field` is older than this."),
    Option("record-level.time-field", None, str, "Primary-key tables: the INT (seconds), BIGINT (seconds, or "
           "milliseconds from 10^12) or TIMESTAMP column `record-level.expire-time` reads."),
    Option("record-level.time-field-type", None, enum_parser("seconds-int", "millis-long"),
           "Paimon 0.9 tables: seconds-int (an INT column) or millis-long (a BIGINT of milliseconds)."),
    Option("deletion-vectors.enabled", False, parse_bool, "Primary-key tables: compaction marks replaced rows in "
           "deletion vectors, and batch reads skip level 0 instead of merging keys."),
    Option("write-buffer-spillable", True, parse_bool,
           "Primary-key tables: a full write buffer spills sorted runs to local disk."),
    Option("num-sorted-run.compaction-trigger", 5, _positive_int,
           "Universal compaction starts when a bucket has more sorted runs."),
    Option("num-sorted-run.stop-trigger", None, _positive_int, "Writers wait for compaction once a bucket has "
           "this many sorted runs (unset: the compaction trigger + 3; never below the compaction trigger)."),
    Option("num-levels", None, _positive_int,
           "LSM levels of a primary-key bucket (unset: the compaction trigger + 1)."),
    Option("compaction.max-size-amplification-percent", 200, parse_int, "Universal compaction compacts every "
           "run once the runs above the oldest are this percentage of its size."),
    Option("compaction.size-ratio", 1, parse_int, "Universal compaction: percentage of size a run may exceed the "
           "runs before it by and still be compacted with them."),
    Option("full-compaction.delta-commits", None, parse_int,
           "Primary-key tables: writers compact fully every this many commits (the full-compaction changelog "
           "producer: 1 when unset, as Paimon's Flink writers)."),
    Option("compaction.min.file-num", 5, _positive_int,
           "Append tables: compaction rewrites small files once this many are in a row (streams, paimon_ds.compact)."),
    Option("write-only", False, parse_bool, "Writers never compact (leave it to paimon_ds.compact); "
           "streaming writes then do not compact either.", fallback_keys=("write.compaction-skip",)),
    Option("deletion-vectors.merge-on-read", False, parse_bool, "Deletion-vector primary-key tables: batch reads "
           "merge level 0 in instead of skipping it (Paimon 2.0)."),
    Option("deletion-vectors.modifiable", False, parse_bool, "true: a read or write option may turn "
           "`deletion-vectors.enabled` on or off for that job (Paimon 1.x refuses the change otherwise: rows could "
           "show twice)."),
    Option("index-file-in-data-file-dir", False, parse_bool, "Hash index and deletion-vector files go in the bucket's "
           "data directory instead of `index/` (Paimon 1.x; fixed when the table is created)."),
    Option("scan.mode", "default", enum_parser(*STARTUP_MODES),
           "Streaming reads: where a new query starts: latest-full (default: the table, "
           "then its changes), latest, from-snapshot, from-snapshot-full, from-timestamp.", table=False,
           fallback_keys=("log.scan",)),
    Option("read.stream.maxFilesPerTrigger", None, _positive_int,
           "Streaming reads: a micro-batch takes splits (one bucket's new files of one snapshot) while it took "
           "fewer than this many (Paimon counts splits; Spark 4.2+). Combines with the other read.stream limits.",
           table=False),
    Option("read.stream.maxRowsPerTrigger", None, _positive_long,
           "Streaming reads: a micro-batch takes splits while it took fewer rows than this (the last split may "
           "pass it, as in Paimon; Spark 4.2+).", table=False),
    Option("read.stream.maxBytesPerTrigger", None, _positive_long,
           "Streaming reads: a micro-batch takes splits while it took fewer bytes of files than this (Spark 4.2+).",
           table=False),
    Option("read.stream.minRowsPerTrigger", None, _positive_long,
           "Streaming reads, with read.stream.maxTriggerDelayMs (one without the other is refused): a micro-batch "
           "of fewer rows waits until more are committed or the delay has passed since the last batch (a query's "
           "first batch never waits; Spark 4.2+).", table=False),
    Option("read.stream.maxTriggerDelayMs", None, _non_negative_long,
           "Streaming reads: the longest a micro-batch under read.stream.minRowsPerTrigger rows waits after the "
           "last batch, in milliseconds.", table=False),
    Option("consumer-id", None, _consumer_id,
           "Streaming reads: record the read's progress in `consumer/consumer-<id>` (`{\"nextSnapshot\" : N}`, "
           "as Java Paimon); expiry keeps snapshot N and later ones, and a new query with this id starts at N "
           "(see Consumers).", table=False),
    Option("consumer.mode", "exactly-once", enum_parser("exactly-once", "at-least-once"),
           "Streaming reads with `consumer-id`: exactly-once (micro-batches take whole snapshots, so the recorded "
           "next snapshot is exactly what was consumed) or at-least-once (batches may end inside a snapshot, "
           "which is then recorded as the next one: a new query reads it again).", table=False),
    Option("consumer.ignore-progress", False, parse_bool,
           "Streaming reads with `consumer-id`: start where `scan.mode` says, not at the consumer's recorded "
           "snapshot (it is still recorded, and still keeps snapshots from expiring).", table=False),
    Option("consumer.expiration-time", None, parse_duration_ms,
           "Each commit first deletes the consumer files not updated for this long, so a reader gone away stops "
           "keeping snapshots from expiring (unset: consumers never expire)."),
    Option("dynamic-bucket.target-row-num", 2_000_000, _positive_long,
           "Dynamic-bucket tables (bucket=-1): keys per bucket before a new bucket opens."),
    Option("dynamic-bucket.initial-buckets", None, _positive_int,
           "Dynamic-bucket tables: buckets a partition's new keys spread over at first (writes without a shuffle: "
           "room for this many x target-row-num, default 16; paimon_ds.write: its assigners, at most the channels)."),
    Option("dynamic-bucket.max-buckets", -1, _max_buckets,
           "Dynamic-bucket tables: at most this many buckets per partition (-1: no limit; Paimon 1.1+)."),
    Option("dynamic-bucket.assigner-parallelism", None, _positive_int,
           "paimon_ds.write: bucket-assigner channels (default: spark.sql.shuffle.partitions)."),
    Option("postpone.batch-write-fixed-bucket", True, parse_bool,
           "Postpone-bucket tables (bucket=-2): writes (batch and streaming, as Paimon's Spark writer) put rows "
           "straight into real buckets, each partition's existing number of them (a new partition: "
           "`postpone.default-bucket-num`); false: into the partition's `bucket-postpone` directory, which batch "
           "reads do not see until a compaction (paimon_ds.compact) moves the rows into real buckets."),
    Option("postpone.default-bucket-num", 1, _positive_int,
           "Postpone-bucket tables: buckets of a partition that has none yet, when a write or a compaction creates "
           "them (as Paimon's compaction; Paimon's Spark writer instead estimates them from the data, which gives "
           "1 below `postpone.target-size-per-bucket`). Layout only: the rows read are the same."),
    Option("postpone.target-row-num-per-bucket", None, _positive_long,
           "Postpone-bucket tables: a compaction gives a partition without buckets ceil(rows in its "
           "`bucket-postpone` / this) buckets (Paimon 2.0's compaction). Writes use `postpone.default-bucket-num`."),
    Option("postpone.merge-on-read", False, parse_bool,
           "Postpone-bucket tables (Paimon 2.0): merge the rows still in `bucket-postpone` into batch reads; true is "
           "refused by this version of paimon_ds (without it, as Paimon, batch reads show only real buckets)."),
    Option("cross-partition-upsert.index-ttl", None, parse_duration_ms,
           "Cross-partition upsert tables: keys leave the global index this long after their last move."),
    Option("sink.cross-partition.managed-memory", 256 << 20, parse_memory_size,
           "Cross-partition upsert tables: page cache of each assigner's on-disk key index."),
    Option("compaction.optimization-interval", None, parse_duration_ms,
           "Primary-key tables (Paimon 1.x): a bucket's first compaction pick in a process, and its first after this "
           "interval, compacts every sorted run into the top level (Paimon keeps the time per writer)."),
    Option("snapshot.num-retained.min", 10, _positive_int, "Expiry keeps at least this many snapshots."),
    Option("snapshot.num-retained.max", 2**31 - 1, _positive_int, "Expiry keeps at most this many snapshots."),
    Option("snapshot.time-retained", 3_600_000, parse_duration_ms,
           "Expiry removes snapshots older than this, beyond snapshot.num-retained.min.", shown_default="1 h"),
    Option("paimon_ds.background-compaction", True, parse_bool,
           "Streaming writes (writeStream, foreach_batch_writer): compact the buckets a batch wrote on a background "
           "thread of the committing process while the next batches run, waiting only where a bucket would exceed "
           "`num-sorted-run.stop-trigger` (as Paimon's MergeTreeCompactManager); false: compact after each batch's "
           "commit, inside the batch. Compactions whose result the commit needs (lookup, full) always run inline.",
           table=False),
    Option("partition.expiration-time", None, parse_duration_ms,
           "Partitioned tables: after a commit, drop (in an OVERWRITE snapshot of the committing user and "
           "identifier) every partition older than this: its time read from its values (values-time) or its last "
           "file's creation (update-time)."),
    Option("partition.expiration-check-interval", 3_600_000, parse_duration_ms,
           "Partition expiration looks for expired partitions at most this often per table and process (0: after "
           "every commit); the first commit of a process to a table looks.", shown_default="1 h"),
    Option("partition.expiration-strategy", "values-time", enum_parser("values-time", "update-time"),
           "values-time: a partition's time is read from its values (`partition.timestamp-pattern` / "
           "`-formatter`; values that do not parse never expire); update-time: the creation time of its newest "
           "file."),
    Option("partition.expiration-max-num", None, _non_negative_int,
           "At most this many partitions expire per check, the first by their values (Paimon 1.x; its default "
           "is 100; unset: no limit, as Paimon 0.9)."),
    Option("partition.expiration-batch-size", None, parse_int,
           "Expired partitions are dropped in commits of at most this many partitions each (Paimon 1.x; unset: "
           "one commit)."),
    Option("partition.timestamp-formatter", None, check_pattern,
           "The java.time pattern (`yyyyMMdd`, `yyyy-MM-dd HH`...; letters y, u, M, d, H, m, s, S) a partition's "
           "time is parsed with (unset: `yyyy-MM-dd HH:mm:ss` or `yyyy-MM-dd`, leniently)."),
    Option("partition.timestamp-pattern", None, str,
           "How a partition's time text is made from its values: `$dt $hour:00:00` (unset: the first partition "
           "column's value)."),
    Option("end-input.check-partition-expire", False, parse_bool,
           "true: a batch commit checks partition expiration whatever the check interval."),
    Option("tag.automatic-creation", "none", enum_parser("none", "process-time", "watermark", "batch"),
           "After every commit: process-time / watermark tag each period once its end (plus "
           "`tag.creation-delay`) has passed by the commit time / the snapshot's watermark, naming the tag by "
           "the period; batch (Paimon 1.x's Spark writer) tags the commit's snapshot `batch-write-yyyy-MM-dd`."),
    Option("tag.creation-period", "daily", enum_parser("daily", "hourly", "two-hours"),
           "The period of automatic tags."),
    Option("tag.creation-period-duration", None, parse_duration_ms,
           "A period of this length instead (Paimon 1.x), its tags named `yyyyMMddHHmm`."),
    Option("tag.creation-delay", 0, parse_duration_ms,
           "A period is tagged this long after it ends (shorter than the period).", shown_default="0 ms"),
    Option("tag.period-formatter", "with_dashes", enum_parser("with_dashes", "without_dashes",
                                                              "without_dashes_and_spaces"),
           "Automatic tag names: `2024-01-01 10`, `20240101 10` or (Paimon 1.x) `2024010110`."),
    Option("tag.num-retained-max", None, parse_int,
           "Keep at most this many automatic tags (the oldest go); with batch tags, at most this many tags."),
    Option("tag.default-time-retained", None, parse_duration,
           "Tags created (automatically or by create_tag) record their creation time and this retention, and a "
           "commit deletes them once it has passed."),
    Option("tag.time-expire-enabled", True, parse_bool,
           "Commits delete tags whose retention has passed (Paimon 1.x; false: they stay)."),
    Option("tag.automatic-completion", False, parse_bool,
           "Automatic tags: a commit after a gap tags each missing period in turn instead of only the last."),
    Option("tag.batch.customized-name", None, str,
           "Batch tags (Paimon 1.x): this name instead of `batch-write-yyyy-MM-dd`."),
    Option("sink.watermark-time-zone", "UTC", check_zone,
           "The zone a snapshot's watermark is read in for watermark tags."),
    Option("sink.process-time-zone", None, check_zone,
           "The zone a commit's time is read in for process-time and batch tag names (Paimon 1.x; unset: the "
           "system's)."),
    Option("snapshot.expire.limit", 10, parse_int, "The most snapshots (and changelogs) one expiry run removes: the "
           "expiry after each commit catches up over the next commits."),
    Option("snapshot.clean-empty-directories", False, parse_bool, "Expiry also removes the bucket and partition "
           "directories it left empty.", fallback_keys=("snapshot.expire.clean-empty-directories",)),
    Option("snapshot.expire.execution-mode", "sync", enum_parser("sync", "async"),
           "sync: the maintenance after a commit (expiry, ...) runs before the commit call returns; async: in a "
           "background thread of the committing process (one at a time, in commit order)."),
    Option("changelog.num-retained.min", None, _positive_int, "Changelog expiry keeps at least this many "
           "changelogs (default: snapshot.num-retained.min); above it, expired snapshots leave "
           "`changelog/changelog-<id>`."),
    Option("changelog.num-retained.max", None, _positive_int, "Changelog expiry keeps at most this many changelogs "
           "(default: snapshot.num-retained.max); above it, expired snapshots leave `changelog/changelog-<id>`."),
    Option("changelog.time-retained", None, parse_duration_ms, "Changelog expiry removes changelogs older than this "
           "(default: snapshot.time-retained); above it, expired snapshots leave `changelog/changelog-<id>`."),
    Option("delete-file.thread-num", None, _positive_int, "Threads that delete the files of expired snapshots and "
           "changelogs (default: the number of CPUs)."),
    Option("paimon_ds.row-kind-column", None, str, "Reads: add a leading string column of this name with each "
           "row's kind (+I, -U, +U, -D), as Paimon's `$audit_log` table.", table=False),
    Option("read.changelog", False, parse_bool, "Reads (batch and streaming), Paimon's Spark option: the rows as "
           "`$audit_log` has them, with a leading `rowkind` column (paimon_ds.row-kind-column = rowkind).",
           table=False),
    Option("row-tracking.enabled", False, parse_bool, "Append tables with bucket=-1 (Paimon 1.x): every row gets a "
           "table-wide `_ROW_ID` and a `_SEQUENCE_NUMBER`, assigned by the commit and kept by compaction."),
    Option("row-tracking.partition-group-on-commit", True, parse_bool,
           "Row-tracking tables: the files a commit adds take row ids partition by partition."),
    Option("data-evolution.enabled", False, parse_bool, "Row-tracking tables (Paimon 1.x): files may hold some "
           "columns of existing rows; reads merge the files of a row-id range, each column from the newest file."),
    Option("paimon_ds.native-write", True, parse_bool, "paimon_ds.write (and INSERT through paimon_ds.sql) into an "
           "append table: Spark's own parquet writer encodes the data files, which are then committed as the table's "
           "(docs: \"Which write to use\"); false, or a table it cannot serve: rows go through Python "
           "workers.", table=False),
    Option("paimon_ds.row-tracking-columns", False, parse_bool, "Reads of row-tracking tables: add `_ROW_ID` and "
           "`_SEQUENCE_NUMBER` columns, as Paimon's `$row_tracking` table.", table=False),
    Option(CONDITIONAL_WRITES, "auto", enum_parser(*CONDITIONAL_WRITE_MODES), "Storage option, S3 commits: "
           "whether the store honours conditional writes (If-None-Match): auto probes it once, true trusts it, "
           "false refuses commits unless single-writer (old name `s3.conditional-writes`, deprecated).",
           table=False, deprecated_keys=(DEPRECATED_CONDITIONAL_WRITES,)),
    Option(SINGLE_WRITER, False, parse_bool, "Storage option, S3 commits: true if one job at a time commits to the "
           "table, so a store without conditional writes may commit (old name `s3.single-writer`, deprecated).",
           table=False, deprecated_keys=(DEPRECATED_SINGLE_WRITER,)),
]}
# Spark lower-cases option keys: the camel-case keys of Paimon's Spark connector arrive lower-cased.
_OPTIONS_BY_LOWER = {k.lower(): o for k, o in OPTIONS.items() if not o.is_pattern}
# Other names an option is read under: Paimon's fallback keys and paimon_ds's deprecated ones.
_OPTIONS_BY_OTHER_NAME = {name: o for o in OPTIONS.values() for name in (*o.fallback_keys, *o.deprecated_keys)}
_OPTION_PATTERNS = [(re.compile(re.escape(o.key).replace("\\#", ".+")), o) for o in OPTIONS.values() if o.is_pattern]
_log = logging.getLogger(__name__)
_warned_deprecated: set[str] = set()

# Keys that configure this package or the path, never stored in the table.
LOCAL_KEYS = {"path"}
# Families accepted whole: file indexes (which only speed reads: no effect on results), storage and engine
# settings, and paimon_ds's own job options. Field-level keys (`fields.<column>.*`) must be a family of the keys file.
_PREFIXES = ("file-index.", "spark.", "fs.", "s3.", "s3a.", "hadoop.", "paimon_ds.")


# What a key does in paimon_ds (the classes of paimon_option_keys.txt, whose header explains them).
HONOURED = "honoured"
TUNING = "tuning"
ENGINE = "engine"
CATALOG = "catalog"
COMPANION = "companion"
REFUSED = "refused"
EFFECTS = (HONOURED, TUNING, ENGINE, CATALOG, COMPANION, REFUSED)
# what a stored refused value blocks (check_supported's ``operation``)
WRITE, READ, EXPIRE, TAG = "write", "read", "expire", "tag"
_BLOCKABLE = (WRITE, READ, EXPIRE, TAG)



@dataclass(frozen=True)
class KeyEffect:
    """One line of paimon_option_keys.txt: a key Paimon defines and what paimon_ds does with it."""

    key: str
    effect: str
    issue: str | None = None  # "32": commit-time maintenance, for issue 32 to implement
    no_ops: frozenset[str] = frozenset()  # refused keys: the values (lower-cased, trimmed) that change nothing
    blocks: frozenset[str] = frozenset()  # refused keys: what a stored value refuses (WRITE, READ, EXPIRE, TAG)
    note: str = ""  # refused keys: what Paimon does with the key, which paimon_ds does not

    @property
    def is_pattern(self) -> bool:
        return "#" in self.key

    def changes_behaviour(self, value: Any) -> bool:
        """Whether ``value`` of this refused key makes Paimon do what paimon_ds does not."""
        return value is not None and str(value).strip().lower() not in self.no_ops


def _key_effects() -> list[KeyEffect]:
    text = resources.files("paimon_ds.options").joinpath("paimon_option_keys.txt").read_text()
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 5)
        key, effect, issue, no_ops, blocks = (parts + ["-"] * 5)[:5]
        if effect not in EFFECTS:
            raise ValueError(f"paimon_option_keys.txt: {key}: effect {effect!r} is not one of {EFFECTS}")
        values = frozenset("" if v == "''" else v.lower() for v in no_ops.split(",")) if no_ops != "-" else frozenset()
        out.append(KeyEffect(key, effect, None if issue == "-" else issue, values,
                             frozenset(blocks.split("+")) - {"-"}, parts[5] if len(parts) > 5 else ""))
    return out


KEY_EFFECTS: dict[str, KeyEffect] = {e.key: e for e in _key_effects()}
_KEY_EFFECTS_BY_LOWER = {k.lower(): e for k, e in KEY_EFFECTS.items() if not e.is_pattern}
_KEY_EFFECT_PATTERNS = [(re.compile(re.escape(e.key).replace("\\#", "[^.]+")), e)
                        for e in KEY_EFFECTS.values() if e.is_pattern]
_PAIMON_KEYS = frozenset(k for k in KEY_EFFECTS if "#" not in k)


def key_effect(key: str) -> KeyEffect | None:
    """The line of paimon_option_keys.txt that ``key`` names (itself, lower-cased by Spark, or a key of a family
    such as `fields.price.default-value`), or None."""
    found = KEY_EFFECTS.get(key) or _KEY_EFFECTS_BY_LOWER.get(key.lower())
    if found is not None and not found.is_pattern:
        return found
    return next((e for p, e in _KEY_EFFECT_PATTERNS if p.fullmatch(key)), None)


def effect_of(option: Option) -> str:
    """A registered option's effect: its own, else its key's class in paimon_option_keys.txt, else honoured."""
    if option.effect is not None:
        return option.effect
    line = KEY_EFFECTS.get(option.key)
    return line.effect if line is not None else HONOURED


def option_for(key: str) -> Option | None:
    """The registered option ``key`` names (itself, lower-cased by Spark, one of its other names, or a key of
    a family such as `fields.price.aggregate-function`), or None."""
    option = OPTIONS.get(key) or _OPTIONS_BY_LOWER.get(key.lower()) or _OPTIONS_BY_OTHER_NAME.get(key)
    if option is not None and not option.is_pattern:
        return option
    return next((o for p, o in _OPTION_PATTERNS if p.fullmatch(key)), None)


def is_known_key(key: str) -> bool:
    return (option_for(key) is not None or key in LOCAL_KEYS or key in _PAIMON_KEYS
            or key.startswith(_PREFIXES) or key_effect(key) is not None)


def _parsed(option: Option, key: str, value: str) -> Any:
    try:
        return option.parse(value)
    except (ValueError, TypeError) as e:
        raise OptionError(f"invalid value {value!r} for option {key!r}: {e}") from None


def validate(options: Mapping[str, str]) -> None:
    """Refuse unknown keys and invalid values of the options paimon_ds interprets."""
    for key, value in options.items():
        if not is_known_key(key):
            near = difflib.get_close_matches(key, list(OPTIONS) + sorted(_PAIMON_KEYS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise OptionError(f"unknown option {key!r}{hint}")
        option = option_for(key)
        if option is not None and value is not None:
            _parsed(option, key, value)
        refuse_setting(key, value)


def check_values(options: Options) -> None:
    """Parse every registered option ``options`` sets (a table's stored ones with a job's overlaid), so that a value
    another engine stored that paimon_ds cannot use (e.g. `commit.max-retries=-1`) is refused, naming the option,
    before a write starts rather than part-way through it; and refuse a compression the table's formats cannot
    be written with (check_compressions)."""
    for key, value in options.raw.items():
        option = option_for(key)
        if option is not None:
            _parsed(option, key, value)
    check_compressions(options)


def refuse_setting(key: str, value: Any) -> None:
    """Refuse a user's setting (a new table's option, ALTER SET, a read or write option) of a key paimon_ds does
    not implement, unless the value changes nothing."""
    line = key_effect(key)
    if line is not None and line.effect == REFUSED and line.changes_behaviour(value):
        raise OptionError(f"option {key}={value!r} is not supported by paimon_ds: with it, Paimon {line.note}"
                          + (f" (no-op values: {', '.join(repr(v) for v in sorted(line.no_ops))})"
                             if line.no_ops else " (leave it unset)"))


class Options:
    """Typed access to a table's options (stored options overlaid with per-job ones)."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = {str(k): str(v) for k, v in raw.items() if v is not None}

    def get(self, key: str) -> Any:
        """The value of registered option ``key`` (a family's key names its member: `fields.a.distinct`),
        parsed; its default when unset. An invalid value raises OptionError naming the key and the value."""
        option = option_for(key)
        if option is None or (option.key != key and not option.is_pattern):
            raise KeyError(f"{key!r} is not a registered option (paimon_ds.options.registry.OPTIONS)")
        for name in (key, key.lower(), *option.fallback_keys, *option.deprecated_keys):
            if name in self.raw:
                if name in option.deprecated_keys and name not in _warned_deprecated:
                    _warned_deprecated.add(name)
                    _log.warning("option %r is deprecated: use %r (the old name still works)", name, option.key)
                return _parsed(option, name, self.raw[name])
        return option.default

    def is_set(self, key: str) -> bool:
        """Whether ``key`` (or one of its other names) is given, whatever its default."""
        option = option_for(key)
        names = (key, key.lower()) + ((*option.fallback_keys, *option.deprecated_keys) if option else ())
        return any(name in self.raw for name in names)

    def with_overrides(self, extra: Mapping[str, str]) -> Options:
        return Options({**self.raw, **{k: v for k, v in extra.items() if v is not None}})


# ----------------------------------------------------------------- stored values paimon_ds does not implement
_DOING = {WRITE: ("writes", "written"), READ: ("reads", "read"), EXPIRE: ("snapshot expiry", "expired"),
          TAG: ("tag creation", "created")}


def unsupported_stored(options: Mapping[str, Any], operation: str) -> list[tuple[str, str, KeyEffect]]:
    """The (key, value, line) of each refused key in ``options`` (a table's, maybe with a job's overlaid) whose value
    changes what ``operation`` (WRITE, READ, EXPIRE, TAG) does in Paimon."""
    if operation not in _BLOCKABLE:
        raise ValueError(f"operation {operation!r} is not one of {_BLOCKABLE}")
    out = []
    for key, value in options.items():
        line = key_effect(str(key))
        if (line is not None and line.effect == REFUSED and operation in line.blocks
                and line.changes_behaviour(value)):
            out.append((str(key), str(value), line))
    return out


def check_supported(options: Mapping[str, Any] | Options, operation: str, path: str) -> None:
    """Refuse, before anything is read or written, a ``operation`` on the table at ``path`` whose options (stored,
    e.g. by Java Paimon, or given) hold a value of a key paimon_ds does not implement that changes it."""
    raw = options.raw if isinstance(options, Options) else options
    found = unsupported_stored(raw, operation)
    if found:
        doing, done = _DOING[operation]
        reasons = "; ".join(f"{key}={value!r}: with it, Paimon {line.note}" for key, value, line in found)
        keys = ", ".join(key for key, _, _ in found)
        raise OptionError(f"Paimon table {path}: its option(s) {reasons}. paimon_ds does not do that, so its {doing} "
                          f"of this table would differ from Java Paimon's; nothing was {done}. Remove {keys} "
                          "(ALTER TABLE ... UNSET TBLPROPERTIES, or schema.change.RemoveOption) if the table does "
                          "not need it, or use Java Paimon here")


# ----------------------------------------------------------------- immutable options, per job
# Paimon's CoreOptions fields annotated @Immutable (CoreOptions.IMMUTABLE_OPTIONS): 0.9's, and those Paimon 1.x
# (up to master) added. Paimon refuses a table copy whose dynamic (per-job) options change one
# (AbstractFileStoreTable.checkImmutability), and an ALTER that changes one once the table holds data.
IMMUTABLE_OPTIONS = frozenset({
    # Paimon 0.9
    "bucket-key", "merge-engine", "ignore-delete", "sequence.field", "partial-update.remove-record-on-delete",
    "rowkind.field", "primary-key", "partition", "force-lookup",
    # Paimon 1.x
    "data-file.path-directory", "sequence.field.sort-order", "partial-update.remove-record-on-sequence-group",
    "aggregation.remove-record-on-delete", "bucket-function.type", "row-tracking.enabled", "data-evolution.enabled",
    "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field", "blob-view-field",
    "blob-external-storage-path", "blob-external-storage-field", "pk-clustering-override", "type",
    "sequence.snapshot-ordering", "primary-key.nullable", "dynamic-bucket.initial-buckets",
})
# How an immutable key paimon_ds does not register is compared: its parser and default (Paimon's).
_IMMUTABLE_FORMS: dict[str, tuple[Callable[[str], Any], Any]] = {
    "force-lookup": (parse_bool, False), "aggregation.remove-record-on-delete": (parse_bool, False),
    "pk-clustering-override": (parse_bool, False), "sequence.snapshot-ordering": (parse_bool, False),
    "primary-key.nullable": (parse_bool, False),
    "sequence.field.sort-order": (enum_parser("ascending", "descending"), "ascending"),
    "bucket-function.type": (enum_parser("default", "mod", "hive"), "default"),
    "type": (enum_parser("table", "format-table", "materialized-table", "object-table", "lance-table",
                         "iceberg-table", "chain-table"), "table"),
    "partial-update.remove-record-on-sequence-group": (parse_list, []),
    "blob-field": (parse_list, []), "blob-descriptor-field": (parse_list, []), "blob-view-field": (parse_list, []),
}


def _immutable_value(key: str, options: Mapping[str, str], given: str | None = None) -> Any:
    """The value of immutable ``key`` that Paimon compares: ``given``, else the one in ``options`` (its default
    when unset), parsed as Paimon parses it, so that `Deduplicate` is `deduplicate` and `a, b` is `a,b`."""
    option = option_for(key)
    if option is not None and option.key == key:
        value = Options({key: given}).get(key) if given is not None else Options(options).get(key)
        return [] if value is None and option.parse is parse_list else value
    parse, default = _IMMUTABLE_FORMS.get(key, (str, None))
    text = given if given is not None else options.get(key)
    if text is None:
        return default
    try:
        return parse(text)
    except ValueError:
        return text  # a value Paimon would refuse: compared as written


def check_job_options(stored: Mapping[str, str], job: Mapping[str, Any], primary_keys: list[str],
                      partition_keys: list[str]) -> None:
    """Refuse per-job options (of a load, a read or a write) that would change what the table's stored options fix,
    as Paimon's AbstractFileStoreTable.copy refuses them: an immutable option's value other than the table's
    (values are compared as Paimon parses them; Paimon compares the text, so it also refuses `Deduplicate` for
    `deduplicate`, which paimon_ds takes), the bucket count, and (Paimon 1.x) the deletion-vector mode
    unless `deletion-vectors.modifiable`. ``primary_keys`` / ``partition_keys``: the table's."""
    for key, value in job.items():
        if value is None:
            continue
        value = str(value)
        option = option_for(key)
        name = option.key if option is not None and not option.is_pattern else key
        if name in ("primary-key", "partition"):
            table_keys = list(primary_keys if name == "primary-key" else partition_keys)
            if parse_list(value) != table_keys:
                raise OptionError(f"option {key}={value!r} differs from the table's {name} {table_keys}: a table's "
                                  f"{name} is fixed when it is created")
        elif name == "bucket-key" and "bucket-key" not in stored:
            # unset, a primary-key table's bucket key is its primary key minus the partition keys (Paimon's
            # default; an append table without one has no fixed buckets)
            default = [k for k in primary_keys if k not in partition_keys]
            if parse_list(value) != default:
                raise OptionError(f"option {key}={value!r} differs from the table's bucket-key (unset: "
                                  f"{', '.join(default) or 'none'}): bucket-key cannot change once a table is created "
                                  "(Paimon: \"Change 'bucket-key' is not supported yet\")")
        elif name == "bucket":
            if _immutable_value(name, stored, value) != _immutable_value(name, stored):
                raise OptionError(f"option bucket={value} differs from the table's bucket "
                                  f"{stored.get('bucket', '-1')} (rescaling is not supported; Paimon: \"Cannot change "
                                  "bucket number through dynamic options\")")
        elif name in IMMUTABLE_OPTIONS:
            if _immutable_value(name, stored, value) != _immutable_value(name, stored):
                raise OptionError(f"option {key}={value!r} differs from the table's {name} "
                                  f"{_stored_shown(name, stored)}: {name} cannot change once a table is created "
                                  f"(Paimon: \"Change '{name}' is not supported yet\"); leave the option out, or give "
                                  "the table's value")
        elif name in ONE_WAY_OPTIONS:
            check_one_way(name, stored.get(name), value)
        elif name == "deletion-vectors.enabled":
            modifiable = {**stored, **{k: str(v) for k, v in job.items() if v is not None}}.get(
                "deletion-vectors.modifiable", "false")
            if (str(modifiable).lower() != "true"
                    and _immutable_value(name, stored, value) != _immutable_value(name, stored)):
                raise OptionError(f"option {key}={value!r} differs from the table's {name} "
                                  f"{_stored_shown(name, stored)}: changing the deletion-vector mode could show "
                                  "rows twice (Paimon 1.x refuses it unless 'deletion-vectors.modifiable' = 'true')")


# Options that may be switched on but never off again (Paimon 1.x SchemaManager.checkAlterTableOption, for ALTER and
# dynamic options alike): rows dropped while it was on cannot come back.
ONE_WAY_OPTIONS = ("ignore-update-before",)


def check_one_way(key: str, old: str | None, new: str | None) -> None:
    """Refuse turning a one-way option (ONE_WAY_OPTIONS) from true to false; ``old``/``new``: its text, None unset."""
    if key not in ONE_WAY_OPTIONS:
        return
    was = Options({key: old} if old is not None else {}).get(key)
    now = Options({key: new} if new is not None else {}).get(key)
    if was and not now:
        raise OptionError(f"cannot change {key} from true to false (as Paimon: \"Cannot change {key} from true to "
                          "false.\"): the update-before rows dropped while it was true cannot come back")


def _stored_shown(key: str, stored: Mapping[str, str]) -> str:
    if key in stored:
        return repr(stored[key])
    default = _immutable_value(key, {})
    shown = "unset" if default in (None, []) else f"{_shown(default)!r}, the default"
    return f"({shown})" if shown == "unset" else shown


def table_options(options: Mapping[str, str]) -> dict[str, str]:
    """The subset of user options that belongs in the schema file of a new table."""
    skip = {"partition", "primary-key"} | LOCAL_KEYS | {k for k, o in OPTIONS.items() if not o.table}
    # storage settings (credentials, endpoints) never reach table metadata
    return {k: str(v) for k, v in options.items()
            if k not in skip and not k.startswith("paimon_ds.") and not is_storage_key(k)}


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# how the docs name each effect
EFFECT_SHOWN = {HONOURED: "honoured", TUNING: "no effect on results (tuning)", ENGINE: "no effect (another engine's)",
                CATALOG: "no effect (a catalog's)", COMPANION: "no effect by itself", REFUSED: "refused"}


def markdown_tables() -> list[str]:
    """The option tables of docs/tables/options.md: the registry (key, default as a user writes it, effect, meaning,
    other names read); the refused keys of paimon_option_keys.txt (no-op values, what a stored value refuses, what
    Paimon does); the commit-time maintenance keys (issue 32); every other key Paimon defines, by effect."""
    registry = ["| option | default | effect | meaning |", "| --- | --- | --- | --- |"]
    for o in OPTIONS.values():
        also = f" Also read as {', '.join(f'`{k}`' for k in o.fallback_keys)}." if o.fallback_keys else ""
        effect = _effect_shown(o.key, effect_of(o))
        registry.append(f"| `{o.key}` | `{_shown(o.shown_default or o.default)}` | {effect} | {o.doc}{also} |")
    lines = sorted(KEY_EFFECTS.values(), key=lambda e: e.key.lower())
    refused = ["| key | no-op values | a table storing another value refuses | with it, Paimon |",
               "| --- | --- | --- | --- |"]
    for e in lines:
        if e.effect == REFUSED and e.issue is None:
            refused.append(f"| `{e.key}` | {_no_ops_shown(e)} | {_blocks_shown(e)} | {e.note} |")
    maintenance = ["| key | effect | notes |", "| --- | --- | --- |"]
    for e in lines:
        if e.issue is not None:
            note = (f"refused unless {_no_ops_shown(e)}; a table storing another value refuses "
                    f"{_blocks_shown(e)}; with it, Paimon {e.note}" if e.effect == REFUSED else e.note)
            maintenance.append(f"| `{e.key}` | {_effect_shown(e.key, e.effect)} | {note} |")
    others = ["| effect | keys |", "| --- | --- |"]
    groups: dict[str, list[str]] = {}
    for e in sorted(lines, key=lambda e: (EFFECTS.index(e.effect), e.key.lower())):
        if e.issue is None and e.effect != REFUSED and e.key not in OPTIONS:
            groups.setdefault(_effect_shown(e.key, e.effect), []).append(e.key)
    for shown in groups:  # in EFFECTS' order, as the keys' effects sort
        others.append(f"| {shown} | {', '.join(f'`{k}`' for k in groups[shown])} |")
    return ["\n".join(t) for t in (registry, refused, maintenance, others)]


def markdown_table() -> str:
    """docs/tables/options.md's option tables, as one text (their rows, in order: tests/test_docs.py checks them)."""
    return "\n".join(markdown_tables())


def _effect_shown(key: str, effect: str) -> str:
    return EFFECT_SHOWN[effect]


def _no_ops_shown(line: KeyEffect) -> str:
    return ", ".join(f"`{v}`" if v else "`''`" for v in sorted(line.no_ops)) or "unset"


def _blocks_shown(line: KeyEffect) -> str:
    shown = {WRITE: "writes", READ: "reads", EXPIRE: "expire_snapshots", TAG: "create_tag"}
    return ", ".join(shown[b] for b in _BLOCKABLE if b in line.blocks) or "nothing (paimon_ds refuses what it allows)"
