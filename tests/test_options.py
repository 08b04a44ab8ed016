"""Option validation: typos refused with a suggestion, bad values refused, Paimon's own keys accepted."""

from __future__ import annotations

import pytest

from paimon_ds.options import (
    OPTIONS,
    OptionError,
    Options,
    is_known_key,
    parse_memory_size,
    table_options,
    validate,
)


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


def test_memory_sizes() -> None:
    assert parse_memory_size("128mb") == 128 << 20
    assert parse_memory_size("1 gb") == 1 << 30
    assert parse_memory_size("64 KB") == 64 << 10
    assert parse_memory_size("512") == 512
    with pytest.raises(ValueError):
        parse_memory_size("1.5gb")


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
