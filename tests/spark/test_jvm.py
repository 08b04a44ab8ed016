"""paimon_ds.spark.jvm: a classic session's JVM values in one py4j round trip, equal to what py4j's own idioms
(an attribute per package, a call per map entry) give."""

from __future__ import annotations

from paimon_ds.spark.jvm import java_map, jvm_class, scala_seq, session_conf


def test_session_conf_is_the_sessions_conf_entry_for_entry(spark):
    spark.conf.set("paimon_ds.test.odd", 'a "quoted", comma=value, {brace} ünïcode\nline')
    try:
        assert session_conf(spark) == dict(spark.conf.getAll)
        assert session_conf(spark)["paimon_ds.test.odd"] == 'a "quoted", comma=value, {brace} ünïcode\nline'
    finally:
        spark.conf.unset("paimon_ds.test.odd")
    assert "paimon_ds.test.odd" not in session_conf(spark)


def test_a_java_map_and_a_scala_seq_cross_in_one_piece(spark):
    jmap = jvm_class(spark, "java.util.HashMap")()
    for k, v in {"k1": "v1", "k.2": "", "=k3": "x, y"}.items():
        jmap.put(k, v)
    assert java_map(spark, jmap) == {"k1": "v1", "k.2": "", "=k3": "x, y"}
    assert java_map(spark, jvm_class(spark, "java.util.HashMap")()) == {}
    seq = scala_seq(spark, ["a", "b", "c"])
    assert [seq.apply(i) for i in range(seq.size())] == ["a", "b", "c"]
