"""Every registered option with a typed value (int, bool, duration, memory size, enum, zone, pattern, codec...) is
checked when a table is created and when a load passes it, so that no stored value can block later writes; a
table that already stores one (written by another engine) refuses a write naming the option, before writing."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from paimon_ds import OptionError, Table, write_arrow
from paimon_ds.options.registry import OPTIONS, Option, _shown, parse_list
from paimon_ds.schema.change import SetOption, commit_changes

# a value each parser takes, for the options without a default
GOOD_BY_PARSER = {"parse_int": "1", "parse_long": "1", "_positive_int": "1", "_positive_long": "1",
                  "_non_negative_long": "0", "_non_negative_int": "1", "parse_duration_ms": "1 h",
                  "parse_duration": "1 h",
                  "check_pattern": "yyyy-MM-dd", "check_zone": "UTC", "_format_level_map": "0:avro",
                  "_compression_level_map": "0:lz4", "parse_external_weights": "1", "_consumer_id": "c1"}
GOOD_BY_KEY = {"record-level.time-field-type": "seconds-int"}
BAD_BY_KEY = {"consumer-id": ""}  # any non-empty id is one


def typed_options() -> list[Option]:
    """The registered options whose value has a type or a set of values (not free text, not a list of names)."""
    return [o for o in OPTIONS.values() if o.parse is not str and o.parse is not parse_list]


def key_of(option: Option) -> str:
    return option.key.replace("#", "v")  # a family's member, for column v


def good_value(option: Option) -> str:
    if option.key in GOOD_BY_KEY:
        return GOOD_BY_KEY[option.key]
    if option.default is not None:
        return option.shown_default if option.shown_default is not None else _shown(option.default)
    return GOOD_BY_PARSER[option.parse.__name__]


def bad_value(option: Option) -> str:
    return BAD_BY_KEY.get(option.key, "not-a-value-%")


def rows() -> pa.Table:
    return pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array(["a", "b"])})


@pytest.fixture(scope="module")
def existing(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("opts") / "t")
    write_arrow(path, rows())
    return path


def test_the_check_covers_every_typed_option():
    options = typed_options()
    assert len(options) >= 100  # every typed option of the registry (134 options, 108 typed when written)
    for option in options:  # each has a good and a bad value the parser tells apart
        option.parse(good_value(option))
        with pytest.raises((ValueError, TypeError)):
            option.parse(bad_value(option))


@pytest.mark.parametrize("option", typed_options(), ids=key_of)
def test_bad_value_refused_at_create_and_at_load(tmp_path, existing, option):
    key, bad = key_of(option), bad_value(option)
    new = str(tmp_path / "new")
    with pytest.raises(OptionError) as info:
        write_arrow(new, rows(), options={key: bad})
    assert repr(key) in str(info.value) and repr(bad) in str(info.value), str(info.value)
    assert not os.path.exists(new)  # refused before anything was written
    with pytest.raises(OptionError) as info:
        Table.load(existing, {key: bad})
    assert repr(key) in str(info.value) and repr(bad) in str(info.value), str(info.value)


# options whose good value needs another option or a particular table (their value's check is above)
NEEDS_CONTEXT = {"scan.snapshot-id", "scan.timestamp-millis", "scan.mode", "consumer-id", "consumer.mode",
                 "record-level.expire-time", "record-level.time-field-type", "bucket", "merge-engine",
                 "changelog-producer", "dynamic-bucket.initial-buckets", "deletion-vectors.enabled"}


@pytest.mark.parametrize("option", [o for o in typed_options() if o.key not in NEEDS_CONTEXT], ids=key_of)
def test_good_value_passes_at_load(existing, option):
    Table.load(existing, {key_of(option): good_value(option)})


def test_commit_max_retries(tmp_path):
    """Java's FileStoreCommitImpl tries once whatever commit.max-retries says, then gives up once retryCount >=
    commitMaxRetries, so -1 and 0 both mean one attempt there; paimon_ds refuses the negative value instead of
    reading it as "no attempt" (which failed every write with "gave up committing after 0 attempts")."""
    path = str(tmp_path / "t")
    with pytest.raises(OptionError, match=r"'commit.max-retries': must be 0 or more, got -1"):
        write_arrow(path, rows(), options={"commit.max-retries": "-1"})
    assert write_arrow(path, rows(), options={"commit.max-retries": "0"}).id == 1  # one attempt, no retry


@pytest.mark.parametrize("fmt,codec", [("orc", "brotli"), ("avro", "lz4"), ("avro", "brotli")])
def test_compression_the_format_cannot_write(tmp_path, fmt, codec):
    path = str(tmp_path / "t")
    with pytest.raises(OptionError, match=f"option file.compression='{codec}' cannot be written in {fmt}"):
        write_arrow(path, rows(), options={"file.format": fmt, "file.compression": codec})
    assert not os.path.exists(path)
    with pytest.raises(OptionError, match="option manifest.compression='lz4' cannot be written in avro"):
        write_arrow(path, rows(), options={"manifest.compression": "lz4"})
    for good in ("zstd", "snappy", "none"):
        write_arrow(str(tmp_path / f"ok-{fmt}-{good}"), rows(), options={"file.format": fmt,
                                                                          "file.compression": good})


@pytest.mark.parametrize("key,value", [("commit.max-retries", "-1"), ("manifest.compression", "bogus"),
                                       ("file.compression", "bogus"), ("snapshot.num-retained.min", "x")])
def test_a_bad_value_another_engine_stored_is_named_on_write(tmp_path, key, value):
    path = str(tmp_path / "t")
    write_arrow(path, rows())
    schema_file = f"{path}/schema/schema-0"
    with open(schema_file) as f:
        schema = json.load(f)
    schema["options"][key] = value
    with open(schema_file, "w") as f:
        json.dump(schema, f)
    assert Table.load(path).to_arrow().num_rows == 2  # reads are not blocked
    with pytest.raises(OptionError) as info:
        write_arrow(path, rows())
    message = str(info.value)
    assert path in message and f"invalid value {value!r} for option {key!r}" in message, message
    assert "nothing was written" in message
    assert [s.id for s in Table.load(path).snapshots()] == [1]


def test_alter_to_a_compression_the_format_cannot_write(tmp_path):
    path = str(tmp_path / "t")
    write_arrow(path, rows(), options={"file.format": "orc"})
    with pytest.raises(OptionError, match="option file.compression='brotli' cannot be written in orc"):
        commit_changes(path, SetOption("file.compression", "brotli"))
    with pytest.raises(OptionError, match="option file.compression='lz4' cannot be written in avro"):
        commit_changes(path, [SetOption("file.compression", "lz4"), SetOption("file.format", "avro")])
    commit_changes(path, SetOption("file.compression", "lz4"))
    assert write_arrow(path, rows()).id == 2
