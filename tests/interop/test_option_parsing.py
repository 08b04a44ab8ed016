"""paimon_ds reads option values as Java Paimon 0.9 does: every size, duration, boolean, int and enum form of
tests/option_forms.py (Flink's MemorySizeTest and TimeUtilsTest inputs, which Paimon's parsers come from, and edge
cases) goes to Java's own parsers through the oracle, in one JVM run, and to ours: the same value or both refuse.
The table's expected values are checked against Java too, so the pure-Python tests of tests/options/test_registry.py
test what Java does."""

from __future__ import annotations

import json

import pytest
from conftest import Oracle

from paimon_ds.options.registry import OPTIONS, parse_bool, parse_duration, parse_int, parse_memory_size
from tests.option_forms import BOOLEANS, DURATIONS, INTS, MERGE_ENGINES, SIZES

# Runs in the Java oracle's process (`jvm`: Paimon 0.9 through py4j); prints one JSON line of answers, each the
# parsed value or None where Java throws.
JAVA_PARSE = '''
import json
from py4j.protocol import Py4JJavaError

opts_pkg = jvm.org.apache.paimon.options
MemorySize, TimeUtils = opts_pkg.MemorySize, jvm.org.apache.paimon.utils.TimeUtils
BOOL_OPTION = opts_pkg.ConfigOptions.key("b").booleanType().noDefaultValue()
INT_OPTION = opts_pkg.ConfigOptions.key("i").intType().noDefaultValue()
MERGE_ENGINE = jvm.org.apache.paimon.CoreOptions.MERGE_ENGINE


def answer(parse, text):
    try:
        return parse(text)
    except Py4JJavaError:
        return None


def options_get(option, text):
    conf = jvm.java.util.HashMap()
    conf.put(option.key(), text)
    return opts_pkg.Options.fromMap(conf).get(option)


def duration(text):
    d = TimeUtils.parseDuration(text)
    return [d.getSeconds(), d.getNano()]


print(json.dumps({
    "sizes": [answer(lambda t: MemorySize.parse(t).getBytes(), t) for t in SIZES],
    "durations": [answer(duration, t) for t in DURATIONS],
    "booleans": [answer(lambda t: options_get(BOOL_OPTION, t), t) for t in BOOLEANS],
    "ints": [answer(lambda t: options_get(INT_OPTION, t), t) for t in INTS],
    "merge_engines": [answer(lambda t: options_get(MERGE_ENGINE, t).toString(), t) for t in MERGE_ENGINES],
}))
'''


def _ours(parse, text):
    try:
        return parse(text)
    except ValueError:
        return None


def _seconds_and_nanos(nanos: int | None) -> list[int] | None:
    return None if nanos is None else list(divmod(nanos, 1_000_000_000))


@pytest.fixture(scope="module")
def java(tmp_path_factory) -> dict:
    oracle = Oracle("java", tmp_path_factory.mktemp("option-parsing"))
    path = str(tmp_path_factory.mktemp("w") / "warehouse" / "db.db" / "t")
    inputs = {"SIZES": [t for t, _ in SIZES], "DURATIONS": [t for t, _ in DURATIONS],
              "BOOLEANS": [t for t, _ in BOOLEANS], "INTS": [t for t, _ in INTS],
              "MERGE_ENGINES": [t for t, _ in MERGE_ENGINES]}
    head = "".join(f"{k} = json.loads({json.dumps(json.dumps(v))})\n" for k, v in inputs.items())
    out = oracle.exec(path, "import json\n" + head + JAVA_PARSE)
    return json.loads(out.strip().splitlines()[-1])


def _differences(forms, java_answers, parse, as_java=lambda v: v) -> list[str]:
    out = []
    for (text, expected), theirs in zip(forms, java_answers, strict=True):
        ours = as_java(_ours(parse, text))
        if ours != theirs or as_java(expected) != theirs:
            out.append(f"{text!r}: java {theirs!r}, paimon_ds {ours!r}, table {as_java(expected)!r}")
    return out


def test_memory_sizes_match_java(oracles_ready, java) -> None:
    assert _differences(SIZES, java["sizes"], parse_memory_size) == []


def test_durations_match_java(oracles_ready, java) -> None:
    assert _differences(DURATIONS, java["durations"], parse_duration, _seconds_and_nanos) == []


def test_booleans_ints_and_enums_match_java_options(oracles_ready, java) -> None:
    assert _differences(BOOLEANS, java["booleans"], parse_bool) == []
    assert _differences(INTS, java["ints"], parse_int) == []
    assert _differences(MERGE_ENGINES, java["merge_engines"], OPTIONS["merge-engine"].parse) == []


def test_the_forms_cover_both_answers(java) -> None:
    # a table where Java took everything (or nothing) would not show that refusals agree
    for key in ("sizes", "durations", "booleans", "ints", "merge_engines"):
        answers = java[key]
        assert any(a is None for a in answers) and any(a is not None for a in answers), key
