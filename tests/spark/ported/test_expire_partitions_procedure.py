"""Apache Paimon 1.4.1's `ExpirePartitionsProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its
statements and expected rows are the specification, run through paimon_ds.sql (`CALL sys.expire_partitions`,
result `expired_partitions`).

Paimon writes each case's commits by a `foreachBatch` stream of a MemoryStream; here each is one INSERT (one
snapshot, the same rows; the foreachBatch path is the Rollback and tag suites'). The update-time cases sleep as
Paimon's do."""

from __future__ import annotations

import time

import pytest

from ._sql import rows, sql

ONE_KEY = "CREATE TABLE T (k STRING, pt STRING) TBLPROPERTIES ('primary-key'='k,pt', 'bucket'='1'{extra}) " \
          "PARTITIONED BY (pt)"
TWO_KEYS = "CREATE TABLE T (k STRING, pt STRING, hm STRING) TBLPROPERTIES ('primary-key'='k,pt,hm', 'bucket'='1') " \
           "PARTITIONED BY ({parts})"


def _insert(spark, *values: tuple) -> None:
    for v in values:  # one commit each, as each of Paimon's stream batches
        sql(spark, "INSERT INTO T VALUES (" + ", ".join(f"'{x}'" for x in v) + ")")


def _all(spark) -> list[tuple]:
    return sorted(rows(spark, "SELECT * FROM T"))


def _expire(spark, args: str) -> list[tuple]:
    db = spark.catalog.currentDatabase()
    return sorted(rows(spark, f"CALL sys.expire_partitions(table => '{db}.T', {args})"))


def test_expire_partitions(spark, wh):
    sql(spark, ONE_KEY.format(extra=""))
    _insert(spark, ("a", "2024-06-01"), ("Never-expire", "9999-09-09"))
    assert _all(spark) == [("Never-expire", "9999-09-09"), ("a", "2024-06-01")]
    db = spark.catalog.currentDatabase()
    result = sql(spark, f"CALL sys.expire_partitions(table => '{db}.T', expiration_time => '1 d', "
                        "timestamp_formatter => 'yyyy-MM-dd')")
    assert result.columns == ["expired_partitions"]
    assert [tuple(r) for r in result.collect()] == [("pt=2024-06-01",)]
    assert _all(spark) == [("Never-expire", "9999-09-09")]


@pytest.mark.parametrize("parts", ["pt,hm", "hm, pt"])
def test_expire_partitions_show_a_list_of_expired_partitions(spark, wh, parts):
    """`pt,hm`: "expire partitions show a list of expired partitions"; `hm, pt`: "expire partitions with specified
    time-pattern partitions" (timestamp_pattern => '$pt $hm')."""
    sql(spark, TWO_KEYS.format(parts=parts))
    pattern = ", timestamp_pattern => '$pt'" if parts == "hm, pt" else ""
    assert _expire(spark, f"expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd'{pattern}") == \
        [("No expired partitions.",)]
    _insert(spark, ("a", "2024-06-01", "01:00"), ("b", "2024-06-02", "02:00"), ("Never-expire", "9999-09-09", "99:99"))
    assert _all(spark) == [("Never-expire", "9999-09-09", "99:99"), ("a", "2024-06-01", "01:00"),
                           ("b", "2024-06-02", "02:00")]
    if parts == "hm, pt":
        expired = _expire(spark, "expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd HH:mm', "
                                 "timestamp_pattern => '$pt $hm'")
        assert expired == [("hm=01:00, pt=2024-06-01",), ("hm=02:00, pt=2024-06-02",)]
    else:
        expired = _expire(spark, "expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd'")
        assert expired == [("pt=2024-06-01, hm=01:00",), ("pt=2024-06-02, hm=02:00",)]
    assert _all(spark) == [("Never-expire", "9999-09-09", "99:99")]


def test_expire_partitions_with_values_time_strategy(spark, wh):
    sql(spark, ONE_KEY.format(extra=""))
    _insert(spark, ("HXH", "2024-06-01"), ("Never-expire", "9999-09-09"))
    assert _all(spark) == [("HXH", "2024-06-01"), ("Never-expire", "9999-09-09")]
    assert _expire(spark, "expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd',"
                          "expire_strategy => 'values-time'") == [("pt=2024-06-01",)]
    assert _all(spark) == [("Never-expire", "9999-09-09")]


@pytest.mark.parametrize("case", ["update-time", "same partition", "non-date format"])
def test_expire_partitions_with_update_time_strategy(spark, wh, case):
    """"... with update-time strategy", "... in same partition" (its second write updates the same partition, which
    then does not expire) and "... with non-date format partition" (`pt-1`)."""
    if case == "same partition":
        sql(spark, TWO_KEYS.format(parts="pt,hm"))
        first = second = ("HXH", "2024-06-01", "01:00")
    else:
        sql(spark, ONE_KEY.format(extra=""))
        first, second = (("HXH", "9999-09-09"), ("HXH", "2024-06-01")) if case == "update-time" else \
            (("HXH", "pt-1"), ("HXH", "pt-2"))
    _insert(spark, first)
    time.sleep(2.5)
    _insert(spark, second)
    expired = _expire(spark, "expiration_time => '2 s',expire_strategy => 'update-time'")
    if case == "same partition":
        assert expired == [("No expired partitions.",)]
    else:
        assert expired == [(f"pt={first[1]}",)]
    assert _all(spark) == [second]
    time.sleep(1.5)
    expected = "pt=2024-06-01, hm=01:00" if case == "same partition" else f"pt={second[1]}"
    assert _expire(spark, "expiration_time => '1 s',expire_strategy => 'update-time'") == [(expected,)]
    assert _all(spark) == []


def test_sorted_the_expired_partitions_with_max_expires(spark, wh):
    sql(spark, TWO_KEYS.format(parts="pt,hm"))
    assert _expire(spark, "expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd'") == \
        [("No expired partitions.",)]
    _insert(spark, ("a", "2024-06-02", "02:00"), ("b", "2024-06-02", "01:00"), ("d", "2024-06-03", "01:00"),
            ("c", "2024-06-01", "01:00"), ("Never-expire", "9999-09-09", "99:99"))
    assert len(_all(spark)) == 5
    db = spark.catalog.currentDatabase()
    # Paimon's checkAnswer ignores order; the rows come sorted by partition (Paimon's expire sorts them)
    assert rows(spark, f"CALL sys.expire_partitions(table => '{db}.T', expiration_time => '1 d', "
                       "timestamp_formatter => 'yyyy-MM-dd', max_expires => 3)") == \
        [("pt=2024-06-01, hm=01:00",), ("pt=2024-06-02, hm=01:00",), ("pt=2024-06-02, hm=02:00",)]
    assert _all(spark) == [("Never-expire", "9999-09-09", "99:99"), ("d", "2024-06-03", "01:00")]


@pytest.mark.parametrize("case", ["default num", "table property first", "options parameter"])
def test_expire_partitions_with_table_options(spark, wh, case):
    """"... with default num" (`partition.expiration-max-num` 2), "... load table property first" (the formatter
    from the table) and "... add options parameter" (all settings in `options`)."""
    extra, args = {
        "default num": (", 'partition.expiration-max-num'='2'",
                        "expiration_time => '1 d', timestamp_formatter => 'yyyy-MM-dd'"),
        "table property first": (", 'write-only' = 'true', 'partition.timestamp-formatter' = 'yyyy-MM-dd', "
                                 "'partition.expiration-max-num'='2'", "expiration_time => '1 d'"),
        "options parameter": ("", "options => 'partition.expiration-time = 1d, partition.expiration-max-num = 2, "
                                  "partition.expiration-batch-size = 2, partition.timestamp-formatter = yyyy-MM-dd'"),
    }[case]
    sql(spark, ONE_KEY.format(extra=extra))
    _insert(spark, ("a", "2024-06-01"), ("b", "2024-06-02"), ("c", "2024-06-03"), ("Never-expire", "9999-09-09"))
    assert _all(spark) == [("Never-expire", "9999-09-09"), ("a", "2024-06-01"), ("b", "2024-06-02"),
                           ("c", "2024-06-03")]
    assert _expire(spark, args) == [("pt=2024-06-01",), ("pt=2024-06-02",)]
    assert _all(spark) == [("Never-expire", "9999-09-09"), ("c", "2024-06-03")]
