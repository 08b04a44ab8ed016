"""Option validation: typos refused with a suggestion, bad values refused, Paimon's own keys accepted."""

from __future__ import annotations

import logging

import pytest

import paimon_ds.options.registry as options_module
from paimon_ds.fs.file_io import FileIO
from paimon_ds.options.registry import (
    OPTIONS,
    OptionError,
    Options,
    is_known_key,
    parse_bool,
    parse_duration,
    parse_duration_ms,
    parse_int,
    parse_memory_size,
    table_options,
    validate,
)
from tests.option_forms import BOOLEANS, DURATIONS, INTS, MERGE_ENGINES, SIZES


@pytest.mark.parametrize("typo,meant", [
    ("bukcet", "bucket"),
    ("bucket-kye", "bucket-key"),
    ("scan.snapshotid", "scan.snapshot-id"),
    ("target-file-sise", "target-file-size"),
    ("manifest.merge-min-cont", "manifest.merge-min-count"),
])
def test_unknown_option_names_it_and_suggests_the_close_key(typo: str, meant: str) -> None:
    with pytest.raises(OptionError) as err:
        validate({typo: "1"})
    message = str(err.value)
    assert repr(typo) in message
    assert f"did you mean {meant!r}" in message


def test_unknown_option_without_a_close_key() -> None:
    with pytest.raises(OptionError) as err:
        validate({"zzzzqqqq": "1"})
    assert "'zzzzqqqq'" in str(err.value) and "did you mean" not in str(err.value)


@pytest.mark.parametrize("key,value", [
    ("bucket", "0"),
    ("bucket", "abc"),
    ("bucket", "-3"),
    ("target-file-size", "lots"),
    ("target-file-size", "12 parsecs"),
    ("manifest.merge-min-count", "0"),
    ("metadata.stats-mode", "some"),
    ("file.format", "csv"),
    ("file.format.per.level", "0=avro"),
    ("manifest.format", "json"),
    ("scan.snapshot-id", "latest"),
    ("dynamic-partition-overwrite", "yes"),
])
def test_invalid_values_are_refused(key: str, value: str) -> None:
    with pytest.raises(OptionError) as err:
        validate({key: value})
    message = str(err.value)
    assert repr(key) in message and repr(value) in message


@pytest.mark.parametrize("key,value", [
    ("bucket", "4"),
    ("bucket", "-1"),
    ("target-file-size", "128mb"),
    ("metadata.stats-mode", "truncate(32)"),
    ("metadata.stats-mode", "FULL"),
    ("file.format", "parquet"),
    ("file.format", "orc"),
    ("file.format", "AVRO"),
    ("manifest.format", "orc"),
    ("manifest.format", "Parquet"),
    ("file.format.per.level", "0:avro, 5:parquet"),
    ("snapshot.num-retained.max", "10"),
    ("snapshot.time-retained", "1 h"),
    ("commit.callback.x.param", "anything"),
    ("tag.callback.my-callback.param", "anything"),
    ("fields.price.aggregate-function", "sum"),
    ("changelog-producer", "input"),
    ("merge-engine", "deduplicate"),
    ("path", "/tmp/t"),
])
def test_keys_paimon_defines_are_accepted(key: str, value: str) -> None:
    validate({key: value})
    assert is_known_key(key)


def test_pattern_keys_need_their_name_part() -> None:
    # "commit.callback.#.param": the # stands for a name, not for nothing
    assert is_known_key("commit.callback.x.param")
    assert not is_known_key("commit.callback..param")
    assert not is_known_key("commit.callback.x.params")


def _parsed(parse, text):
    try:
        return parse(text)
    except ValueError:
        return None


@pytest.mark.parametrize("text,expected", SIZES)
def test_memory_sizes_as_java_parses_them(text: str, expected: int | None) -> None:
    assert _parsed(parse_memory_size, text) == expected


@pytest.mark.parametrize("text,expected", DURATIONS)
def test_durations_as_java_parses_them(text: str, expected: int | None) -> None:
    assert _parsed(parse_duration, text) == expected


@pytest.mark.parametrize("text,expected", BOOLEANS)
def test_booleans_as_java_parses_them(text: str, expected: bool | None) -> None:
    assert _parsed(parse_bool, text) == expected


@pytest.mark.parametrize("text,expected", INTS)
def test_ints_as_java_parses_them(text: str, expected: int | None) -> None:
    assert _parsed(parse_int, text) == expected


@pytest.mark.parametrize("text,expected", MERGE_ENGINES)
def test_enums_as_java_matches_them(text: str, expected: str | None) -> None:
    assert _parsed(OPTIONS["merge-engine"].parse, text) == expected


@pytest.mark.parametrize("text,millis", [
    ("1 h", 3_600_000), ("1234", 1234), ("5 s", 5000), ("999999 ns", 0), ("1999 \u00b5s", 1), ("2 d", 172_800_000),
    ("9223372036854775807", 2**63 - 1),
])
def test_durations_in_milliseconds_truncate_as_duration_to_millis(text: str, millis: int) -> None:
    assert parse_duration_ms(text) == millis


def test_durations_beyond_a_long_of_milliseconds_are_refused() -> None:
    # Java parses it, but Duration.toMillis, which Paimon calls on every duration option, overflows
    assert parse_duration("9223372036854775807 s") == (2**63 - 1) * 10**9
    with pytest.raises(ValueError, match="milliseconds"):
        parse_duration_ms("9223372036854775807 s")


@pytest.mark.parametrize("key,value,read_as", [
    ("num-levels", "five", "num-levels"),
    ("compaction.size-ratio", "1.5", "compaction.size-ratio"),
    ("num-sorted-run.stop-trigger", "0", "num-sorted-run.stop-trigger"),
    ("deletion-vectors.enabled", "yes", "deletion-vectors.enabled"),
    ("changelog-producer", "always", "changelog-producer"),
    ("full-compaction.delta-commits", " 3", "full-compaction.delta-commits"),
    ("fields.price.ignore-retract", "1", "fields.price.ignore-retract"),
    ("snapshot.time-retained", "3 mins", "snapshot.time-retained"),
    ("target-file-size", "128mib", "target-file-size"),
    ("partial-update.ignore-delete", "y", "ignore-delete"),  # a fallback key of ignore-delete
])
def test_an_invalid_value_is_refused_up_front_naming_key_and_value(key: str, value: str, read_as: str) -> None:
    # options once read with a bare int() deep in a write task: validate() refuses them, and so does a typed read
    expected = f"invalid value {value!r} for option {key!r}"
    with pytest.raises(OptionError) as err:
        validate({key: value})
    assert expected in str(err.value)
    with pytest.raises(OptionError) as err:
        Options({key: value}).get(read_as)
    assert expected in str(err.value)


def test_registered_defaults_are_the_ones_the_code_used() -> None:
    opts = Options({})
    assert [opts.get(k) for k in ("num-sorted-run.compaction-trigger", "compaction.max-size-amplification-percent",
                                  "compaction.size-ratio", "merge-engine", "changelog-producer", "scan.mode",
                                  "deletion-vectors.enabled", "ignore-delete", "snapshot.time-retained",
                                  "fields.x.list-agg-delimiter", "fields.x.distinct")] == \
        [5, 200, 1, "deduplicate", "none", "default", False, False, 3_600_000, ",", False]
    # derived in mergetree/compact.py from the compaction trigger, as Paimon derives them
    assert [opts.get(k) for k in ("num-levels", "num-sorted-run.stop-trigger", "full-compaction.delta-commits",
                                  "sequence.field", "fields.default-aggregate-function")] == [None] * 5


def test_enum_values_come_back_as_paimon_spells_them() -> None:
    opts = Options({"merge-engine": "Partial-Update", "changelog-producer": "INPUT", "scan.mode": "Latest-Full"})
    assert (opts.get("merge-engine"), opts.get("changelog-producer"), opts.get("scan.mode")) == \
        ("partial-update", "input", "latest-full")


def test_pattern_options_and_fallback_keys() -> None:
    opts = Options({"fields.price.aggregate-function": "sum", "fields.tags.list-agg-delimiter": ";",
                    "partial-update.ignore-delete": "TRUE"})
    assert opts.get("fields.price.aggregate-function") == "sum"
    assert opts.get("fields.tags.list-agg-delimiter") == ";"
    assert opts.get("fields.other.list-agg-delimiter") == ","  # the family's default
    assert opts.get("ignore-delete") is True  # read under Paimon's fallback key
    assert Options({"ignore-delete": "false", "partial-update.ignore-delete": "true"}).get("ignore-delete") is False
    assert Options({"write.compaction-skip": "true"}).get("write-only") is True  # Paimon's old name of write-only
    assert Options({"log.scan": "LATEST"}).get("scan.mode") == "latest"
    with pytest.raises(KeyError):
        opts.get("no-such-option")


def test_camel_case_keys_are_read_lower_cased_as_spark_passes_them() -> None:
    assert Options({"read.stream.maxfilespertrigger": "3"}).get("read.stream.maxFilesPerTrigger") == 3


def test_table_options_strip_per_job_keys() -> None:
    given = {
        "bucket": "2", "bucket-key": "id", "partition": "dt", "primary-key": "id",
        "snapshot.num-retained.max": "5", "target-file-size": "64mb",
        "scan.snapshot-id": "3", "scan.timestamp-millis": "1700000000000", "scan.tag-name": "t1",
        "path": "/tmp/x", "commit.user-prefix": "job", "dynamic-partition-overwrite": "false",
        "paimon_ds.cluster-write": "true",
    }
    assert table_options(given) == {
        "bucket": "2", "bucket-key": "id", "snapshot.num-retained.max": "5", "target-file-size": "64mb",
    }


def test_typed_access_defaults_and_overrides() -> None:
    opts = Options({"bucket": "3", "target-file-size": "1mb"})
    assert opts.get("bucket") == 3
    assert opts.get("target-file-size") == 1 << 20
    assert opts.get("manifest.merge-min-count") == OPTIONS["manifest.merge-min-count"].default
    over = opts.with_overrides({"target-file-size": "2mb", "scan.snapshot-id": "7", "bucket": None})
    assert over.get("target-file-size") == 2 << 20 and over.get("scan.snapshot-id") == 7
    assert over.get("bucket") == 3  # a None override leaves the stored value
    assert opts.get("scan.snapshot-id") is None  # the original is untouched


def test_own_storage_keys_are_storage_options_out_of_the_schema() -> None:
    given = {"bucket": "2", "paimon_ds.s3.conditional-writes": "false", "paimon_ds.s3.single-writer": "true",
             "s3.conditional-writes": "false", "s3.single-writer": "true"}
    assert table_options(given) == {"bucket": "2"}
    validate(given)
    with pytest.raises(OptionError, match="'paimon_ds.s3.conditional-writes'"):
        validate({"paimon_ds.s3.conditional-writes": "maybe"})
    with pytest.raises(OptionError, match="'paimon_ds.s3.single-writer'"):
        FileIO("/tmp", {"paimon_ds.s3.single-writer": "yes"})


def test_old_s3_commit_keys_still_work_with_one_warning(tmp_path, caplog, monkeypatch) -> None:
    monkeypatch.setattr(options_module, "_warned_deprecated", set())
    with caplog.at_level(logging.WARNING, logger="paimon_ds.options.registry"):
        io = FileIO(str(tmp_path), {"s3.conditional-writes": "FALSE", "s3.single-writer": "true"})
        FileIO(str(tmp_path), {"s3.conditional-writes": "true"})
    assert (io.conditional_writes, io.single_writer) == ("false", True)
    warned = [r.getMessage() for r in caplog.records]
    assert warned == [
        "option 's3.conditional-writes' is deprecated: use 'paimon_ds.s3.conditional-writes' "
        "(the old name still works)",
        "option 's3.single-writer' is deprecated: use 'paimon_ds.s3.single-writer' (the old name still works)",
    ]
    # the new names win over the old, and their defaults are the ones commits used before
    io = FileIO(str(tmp_path), {"s3.single-writer": "true", "paimon_ds.s3.single-writer": "false"})
    assert (io.conditional_writes, io.single_writer) == ("auto", False)
