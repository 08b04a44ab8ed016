"""Paimon's whole cast table, value by value against Java Paimon's own CastExecutors, and on altered tables.

Every rule of Paimon's cast table (`CastExecutors`) gets values through Java Paimon 0.9's executor for the pair
(inside the Java oracle, with the JVM's default zone set to a zone with daylight saving time, which the rules
of TIMESTAMP WITH LOCAL TIME ZONE use) and through paimon_ds's `cast_column` with the same zone: the results
must be equal (timestamps to the nanosecond, floats as float32/float64 values, "ERROR" where a value fails the
read). Rules Paimon 0.9 does not have (ARRAY / MAP / ROW to STRING, Paimon 1.x) are checked against Paimon's
algorithm applied to 0.9's casts of the elements. Which pairs ALTER TABLE accepts is compared with 0.9's
`DataTypeCasts.supportsExplicitCast` and `CastExecutors.resolve`.

Then tables: Java 0.9 creates and fills a table, ALTERs every column to a new type (the casts 0.9 accepts),
paimon_ds ALTERs another table for the rest; both are read through `spark.read.format("paimon")` and
`Table.load(path).to_arrow()`, and must read as Java reads them (Java's table) or as Java's CastExecutors give
(paimon_ds's table, whose casts Java 0.9 cannot read).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from conftest import Oracle

from paimon_ds import Table
from paimon_ds.casts.column import cast_column
from paimon_ds.casts.rules import CastError, castable
from paimon_ds.schema.types import parse_type, to_arrow_type

from .java_rows import arrow_from_plain, java_script, plain_column

ZONE = "America/New_York"
D = 86_400_000_000_000  # a day in nanoseconds
MS = 1_000_000
TS_VALUES = [0, 1_700_000_000_123_456_789, -1, -1_500 * MS, 1_234 * MS + 567_891, -D - 1, 1_699_999_999_999 * MS,
             # around New York's daylight saving changes (2024-03-10 07:00Z, 2024-11-03 06:00Z)
             1_710_054_000_000 * MS, 1_730_613_600_500 * MS, 1_710_050_400_000 * MS, 4_102_444_800_000 * MS, None]


def _ts(p: int) -> list[Any]:
    step = 10 ** (9 - p)
    return [None if v is None else v - v % step for v in TS_VALUES]


# (source type, target type, plain values): every rule of the cast table, with its corner cases
CASES: list[tuple[Any, str, list[Any]]] = [
    # numbers among themselves
    ("BIGINT", "INT", [4294967297, -1, 2**63 - 1, -(2**63), 123, None]),
    ("BIGINT", "SMALLINT", [70000, -32769, 5]),
    ("INT", "TINYINT", [200, -129, 127]),
    ("DOUBLE", "INT", [3.9e10, -3.9e10, -2.7, 2.7, "NaN", "Infinity", 0.5]),
    ("DOUBLE", "BIGINT", [9.3e18, -1.5, "-Infinity"]),
    ("DOUBLE", "TINYINT", [300.7, -129.0, 127.9]),
    ("FLOAT", "SMALLINT", [40000.5, -1.5]),
    ("DOUBLE", "FLOAT", [0.1, 1e300, -2.5, 1e-50]),
    ("INT", "FLOAT", [16777217, -3]),
    ("BIGINT", "DOUBLE", [2**53 + 1, -7]),
    ("TINYINT", "BIGINT", [-128, 127]),
    # DECIMAL
    ("INT", "DECIMAL(4, 1)", [999, 1000, -999, None]),
    ("BIGINT", "DECIMAL(38, 0)", [2**63 - 1, -(2**63)]),
    ("TINYINT", "DECIMAL(1, 0)", [9, 10, -9]),
    ("DOUBLE", "DECIMAL(5, 2)", [2.345, -2.345, 0.005, 999.995, 1e-10, 0.125]),
    ("FLOAT", "DECIMAL(10, 4)", [0.1, 1.5, -2.75, 3.4e38]),
    ("DECIMAL(6, 3)", "DECIMAL(4, 1)", ["12.345", "-12.350", "999.949", "999.950", "0.050", None]),
    ("DECIMAL(38, 10)", "DECIMAL(20, 2)", ["1234567890123456789.9950000000", "-0.0050000000", "0E-10"]),
    ("DECIMAL(5, 2)", "DECIMAL(38, 18)", ["-999.99", "0.01"]),
    ("DECIMAL(10, 2)", "INT", ["12345678.99", "-2.50", "-0.99"]),
    ("DECIMAL(10, 2)", "TINYINT", ["300.99", "-129.00"]),
    ("DECIMAL(38, 0)", "BIGINT", ["99999999999999999999999999999999999999", "-9223372036854775809"]),
    ("DECIMAL(10, 3)", "DOUBLE", ["1234567.891", "-0.001", "0.100"]),
    ("DECIMAL(18, 9)", "DOUBLE", ["123456789.123456789", "-999999999.999999999"]),
    ("DECIMAL(10, 3)", "FLOAT", ["1234567.891", "0.100"]),
    ("DECIMAL(30, 10)", "DOUBLE", ["12345678901234567890.1234567891", "-0.0000000001"]),
    # BOOLEAN
    ("BOOLEAN", "TINYINT", [True, False, None]),
    ("BOOLEAN", "INT", [True, False]),
    ("BOOLEAN", "DOUBLE", [True, False]),
    ("BOOLEAN", "DECIMAL(1, 0)", [True, False]),
    ("BOOLEAN", "DECIMAL(3, 2)", [True, False]),
    ("BOOLEAN", "DECIMAL(2, 2)", [True, False]),
    ("TINYINT", "BOOLEAN", [0, 1, -1, None]),
    ("BIGINT", "BOOLEAN", [0, 2**40]),
    # to strings
    ("INT", "STRING", [0, -42, 2147483647, None]),
    ("BIGINT", "CHAR(3)", [1, -12345]),
    ("SMALLINT", "VARCHAR(2)", [123, -5]),
    ("DOUBLE", "STRING", [0.1, 1e7, 9999999.0, 1e-3, 9.99e-4, 123456789.125, -0.0, 1e300, 1 / 3, 100.0, 1e21, 1e-5,
                          4.35, 2 / 3, "NaN", "-Infinity"]),
    ("FLOAT", "STRING", [0.1, 1e10, 3.4028235e38, 0.3, 2 / 3, 9999999.0, 33554432.0, 1e-10]),
    ("DECIMAL(6, 3)", "STRING", ["12.345", "-0.001", "0.000"]),
    ("DECIMAL(38, 18)", "VARCHAR(10)", ["12345678901234567890.123456789012345678"]),
    ("BOOLEAN", "STRING", [True, False, None]),
    ("BOOLEAN", "CHAR(6)", [True, False]),
    ("BOOLEAN", "VARCHAR(3)", [True, False]),
    *[(f"TIMESTAMP({p})", "STRING", _ts(p)) for p in (0, 1, 3, 6, 7, 9)],
    *[(f"TIMESTAMP({p}) WITH LOCAL TIME ZONE", "STRING", _ts(p)) for p in (0, 3, 9)],
    *[(f"TIME({p})", "STRING", [0, 1, 10, 100, 120, 45296789, 86399999, 3_600_000, None]) for p in (0, 1, 2, 3, 9)],
    ("DATE", "STRING", [0, -1, 19753, -719162, 2932896, None]),
    ("STRING", "VARCHAR(3)", ["abcdef", "ab", "日本語テ", ""]),
    ("STRING", "CHAR(4)", ["ab", "abcdef", "", None]),
    ("CHAR(2)", "STRING", ["ab", "a"]),
    ("VARCHAR(5)", "CHAR(2)", ["abcde", "a"]),
    ("BYTES", "STRING", ["616263", "e697a5", "", None]),
    ("BINARY(3)", "VARCHAR(2)", ["616263"]),
    # from strings
    ("STRING", "BOOLEAN", ["true", "T", "yes", "Y", "1", "false", "F", "no", "N", "0", "TrUe", None, "maybe", "",
                           " 1"]),
    ("STRING", "INT", ["42", "-7.9", "+5", "1.", ".5", "007", "2147483647", "2147483648", "-2147483648", "1e3", "",
                       "-", " 1", "12a", "3.x"]),
    ("STRING", "TINYINT", ["127", "128", "-128", "5.9"]),
    ("STRING", "SMALLINT", ["32767", "-32769"]),
    ("STRING", "BIGINT", ["9223372036854775807", "9223372036854775808", "-9223372036854775808", "-1.99"]),
    ("STRING", "DOUBLE", ["1.5e3", " 2.5 ", "NaN", "-Infinity", "1e-3", "3d", "0x10", "", "1,5", ".5", "5."]),
    ("STRING", "FLOAT", ["0.1", "3.4028236e38", "1.00000017881393432617187499", "16777217", "1e-46"]),
    ("STRING", "DECIMAL(5, 2)", ["1.005", "-1.005", "1e2", "999.995", "1000", "-0.001", "+3", ".5", "abc", " 1", ""]),
    ("STRING", "DECIMAL(38, 0)", ["99999999999999999999999999999999999999", "1E+37"]),
    ("STRING", "DATE", ["2024-01-31", "2024-1-5", "2017-12-12 09:30:00.0", "20240131", "2024-02-30", "2024",
                        "2024-03", " 2024 - 01 - 02", "1969-12-31", "0001-01-01", "10000-01-01", "2023-02-29",
                        "2024-02-29", "x", "", "12a"]),
    ("STRING", "TIME(3)", ["12:34:56", "12:34:56.789", "1:2:3", "12:34", "12", "3600000", "12:34:56.7894",
                           "12:34:56.7895", "23:59:59.999", "10:00:00+01:00", "10:00:00-02:30", "10:00:00+3",
                           "x", "", "25:00:00"]),
    ("STRING", "TIMESTAMP(3)", ["2024-01-31 10:00:00", "2024-01-31T10:00", "2024-01-31T10:00:05.5",
                                "2024-01-31 10:00:00.123456789", "2024-1-5 1:2:3", "1700000000123", "2024-01-31",
                                "2024-02-30 00:00:00", "2023-02-29 01:00:00", "2024-01-31 10:00", "x", "",
                                "1969-12-31 23:59:59.9995", "2024-01-31 24:00:00"]),
    ("STRING", "TIMESTAMP(0)", ["1700000000", "2024-01-31 10:00:00.999"]),
    ("STRING", "TIMESTAMP(6)", ["1700000000123456", "-1", "2024-01-31 10:00:00.1234567"]),
    ("STRING", "TIMESTAMP(9)", ["1700000000123456789", "-1500", "2024-01-31T10:00:00.123456789"]),
    ("STRING", "TIMESTAMP(5)", ["2024-01-31 10:00:00.1234567", "17"]),
    ("STRING", "TIMESTAMP(3) WITH LOCAL TIME ZONE", ["2024-01-31 10:00:00", "2024-07-01T12:00", "2024-03-10 02:30:00",
                                                     "2024-11-03 01:30:00", "1700000000"]),
    ("STRING", "BYTES", ["abc", "日", "", None]),
    ("STRING", "BINARY(4)", ["ab", "abcdef"]),
    ("STRING", "VARBINARY(2)", ["abc", "a"]),
    # binaries
    ("BYTES", "BINARY(3)", ["0102", "01020304", ""]),
    ("BINARY(2)", "VARBINARY(1)", ["0102"]),
    ("VARBINARY(4)", "BINARY(6)", ["0102"]),
    ("VARBINARY(10)", "BYTES", ["00ff"]),
    # timestamps among themselves
    *[(f"TIMESTAMP({a})", f"TIMESTAMP({b})", _ts(a)) for a, b in ((9, 3), (9, 6), (6, 0), (3, 0), (3, 1), (9, 7),
                                                                 (0, 9), (4, 6))],
    ("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", _ts(6)),
    ("TIMESTAMP(9)", "TIMESTAMP(3) WITH LOCAL TIME ZONE", _ts(9)),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3)", _ts(3)),
    ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIMESTAMP(0)", _ts(9)),
    ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", _ts(9)),
    # timestamps, dates, times
    ("TIMESTAMP(3)", "DATE", _ts(3)),
    ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "DATE", _ts(9)),
    ("TIMESTAMP(3)", "TIME(3)", _ts(3)),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIME(0)", _ts(6)),
    ("DATE", "TIMESTAMP(9)", [0, -1, 19753, 19792, -719162, None]),
    ("DATE", "TIMESTAMP(3) WITH LOCAL TIME ZONE", [0, -1, 19753, 19792, 20030]),
    ("TIME(3)", "TIMESTAMP(3)", [0, 45296789, 86399999, None]),
    ("TIME(0)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", [0, 45296000]),
    ("TIMESTAMP(3)", "BIGINT", _ts(3)),
    ("TIMESTAMP(9)", "INT", _ts(9)),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "BIGINT", _ts(3)),
    ("INT", "TIMESTAMP(3)", [0, 1_700_000_000, -1, None]),
    ("BIGINT", "TIMESTAMP(9)", [1_700_000_000, -86_401]),
    ("INT", "TIMESTAMP(6) WITH LOCAL TIME ZONE", [0, 1_700_000_000, 1_710_054_000, 1_730_613_600]),
    ("BIGINT", "TIMESTAMP(0) WITH LOCAL TIME ZONE", [-1]),
]

# Runs in the Java oracle: each case's values through CastExecutors.resolve(src, dst), in the zone ZONE.
JAVA_CASTS = """
tzc = jvm.java.util.TimeZone
old_zone = tzc.getDefault()
tzc.setDefault(tzc.getTimeZone(ZONE))


def plain_result(value, t):
    if value is None:
        return None
    r = root(t)
    if r in ("CHAR", "VARCHAR"):
        return value.toString()
    if r == "DECIMAL":
        return format(value.toBigDecimal(), "f")
    if r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        return value.getMillisecond() * 1000000 + value.getNanoOfMillisecond()
    if r in ("BINARY", "VARBINARY"):
        return bytes(value).hex()
    if r == "FLOAT":
        return jfloat_out(struct.unpack("<f", struct.pack("<f", value))[0])
    if r == "DOUBLE":
        return jfloat_out(value)
    return value


try:
    out = []
    for src, dst, values in CASES:
        s, d = jtype(src), jtype(dst)
        executor = J.casting.CastExecutors.resolve(s, d)
        getter = J.casting.CastFieldGetter(J.data.InternalRow.createFieldGetter(s, 0), executor) \\
            if executor is not None else None
        got = []
        for v in values:
            if getter is None:
                got.append("NO RULE")
                continue
            try:
                got.append(plain_result(getter.getFieldOrNull(make_row([s], [v])), d))
            except Exception as e:  # a value Paimon cannot cast fails the read
                got.append("ERROR")
        out.append(got)
    allowed = [[bool(J.types.DataTypeCasts.supportsExplicitCast(jtype(a), jtype(b)))
                and J.casting.CastExecutors.resolve(jtype(a), jtype(b)) is not None for b in PAIRS] for a in PAIRS]
    elements = [[plain_result(J.casting.CastFieldGetter(J.data.InternalRow.createFieldGetter(jtype(t), 0),
                 J.casting.CastExecutors.resolve(jtype(t), jtype("STRING"))).getFieldOrNull(make_row([jtype(t)], [v])),
                 jtype("STRING")) for v in vs] for t, vs in ELEMENTS]
finally:
    tzc.setDefault(old_zone)
print(json.dumps({"casts": out, "allowed": allowed, "elements": elements}))
"""

# atomic types whose every pair is checked: does ALTER TABLE accept src -> dst (Java 0.9 against castable)?
PAIRS = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "CHAR(5)",
         "VARCHAR(5)", "STRING", "BINARY(5)", "VARBINARY(5)", "BYTES", "DATE", "TIME(0)", "TIME(3)", "TIMESTAMP(3)",
         "TIMESTAMP(9)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"]

# Paimon 1.x's ARRAY / MAP / ROW -> STRING (not in 0.9): element types whose casts to STRING 0.9 gives
NESTED_TO_STRING: list[tuple[Any, list[Any]]] = [
    ({"type": "ARRAY", "element": "INT"}, [[1, None, -3], [], None]),
    ({"type": "ARRAY", "element": "TIMESTAMP(3)"}, [[1_700_000_000_123 * MS, -1 * MS]]),
    ({"type": "ARRAY", "element": {"type": "ARRAY", "element": "STRING"}}, [[["a", None], [], None]]),
    ({"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}, [[["a", 1.5], ["b", None]], [], None]),
    ({"type": "MAP", "key": "INT NOT NULL", "value": "DECIMAL(5, 2)"}, [[[1, "1.50"]]]),
    ({"type": "ROW", "fields": [{"id": 1, "name": "a", "type": "INT"}, {"id": 2, "name": "b", "type": "BYTES"},
                                {"id": 3, "name": "c", "type": "DATE"}]},
     [[1, "6869", 19753], [None, None, None], None]),
]
ELEMENTS: list[tuple[str, list[Any]]] = [
    ("INT", [1, -3]), ("TIMESTAMP(3)", [1_700_000_000_123 * MS, -1 * MS]), ("DOUBLE", [1.5]),
    ("DECIMAL(5, 2)", ["1.50"]), ("BYTES", ["6869"]), ("DATE", [19753]),
]


def ours(src: Any, dst: str, values: list[Any]) -> list[Any]:
    """cast_column's results in the plain form, "ERROR" for a value that fails, value by value."""
    s, d = parse_type(src), parse_type(dst)
    out = []
    for v in values:
        try:
            r = cast_column(arrow_from_plain([v], to_arrow_type(s)), s, d, zone=ZONE)
        except CastError:
            out.append("ERROR")
            continue
        out.append(plain_column(r)[0])
    return out


@pytest.fixture(scope="module")
def java_casts(tmp_path_factory) -> dict:
    oracle = Oracle("java", tmp_path_factory.mktemp("casts"))
    path = str(tmp_path_factory.mktemp("w") / "warehouse" / "db.db" / "t")
    out = oracle.exec(path, java_script(JAVA_CASTS, CASES=[[s, d, v] for s, d, v in CASES], ZONE=ZONE, PAIRS=PAIRS,
                                        ELEMENTS=ELEMENTS))
    return json.loads(out.strip().splitlines()[-1])


# Values whose cast Paimon changed after 0.9: (source, target, value) -> what Paimon 1.x gives, from its source
# (paimon-common's casting rules and utils), which paimon_ds follows; Java 0.9 gives something else for each.
PAIMON_1X: dict[tuple[str, str, Any], Any] = {
    # NumericToBooleanCastRule: longValue() != 0 (0.9: intValue(), which drops the high bits)
    ("BIGINT", "BOOLEAN", 2**40): True,
    # BinaryStringUtils.toTimestamp: a number is an epoch in the precision's unit (0.9: a parse error), and the
    # formatter takes 'T' between date and time (0.9: only a space)
    ("STRING", "TIMESTAMP(3)", "2024-01-31T10:00"): 1_706_695_200_000 * MS,
    ("STRING", "TIMESTAMP(3)", "2024-01-31T10:00:05.5"): 1_706_695_205_500 * MS,
    ("STRING", "TIMESTAMP(3)", "1700000000123"): 1_700_000_000_123 * MS,
    ("STRING", "TIMESTAMP(0)", "1700000000"): 1_700_000_000_000 * MS,
    ("STRING", "TIMESTAMP(6)", "1700000000123456"): 1_700_000_000_123_456_000,
    ("STRING", "TIMESTAMP(9)", "1700000000123456789"): 1_700_000_000_123_456_789,
    ("STRING", "TIMESTAMP(9)", "2024-01-31T10:00:00.123456789"): 1_706_695_200_123_456_789,
    ("STRING", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "2024-07-01T12:00"): 1_719_849_600_000 * MS,  # 12:00 EDT
    # TimestampToDateCastRule / TimestampToTimeCastRule: Math.floorDiv / floorMod of the day (0.9: / and %,
    # which give 1970-01-01 and negative times before 1970)
    ("TIMESTAMP(3)", "DATE", -1 * MS): -1, ("TIMESTAMP(3)", "DATE", -1_500 * MS): -1,
    ("TIMESTAMP(3)", "DATE", -D - MS): -2,
    ("TIMESTAMP(3)", "TIME(3)", -1 * MS): 86_399_999, ("TIMESTAMP(3)", "TIME(3)", -1_500 * MS): 86_398_500,
    ("TIMESTAMP(3)", "TIME(3)", -D - MS): 86_399_999,
    # not Paimon's but paimon_ds's limit: a TIMESTAMP(7..9) is read into Arrow's 64-bit nanoseconds (year 1 is not)
    ("DATE", "TIMESTAMP(9)", -719162): "ERROR",
}
# the same in UTC (the zone of the altered tables' readers), where it depends on the zone
PAIMON_1X_UTC = {**PAIMON_1X,
                 ("STRING", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "2024-07-01T12:00"): 1_719_835_200_000 * MS}


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{s}->{d}" for s, d, _ in CASES])
def test_cast_matches_javas_cast_executors(oracles_ready, java_casts, case):
    src, dst, values = CASES[case]
    java = java_casts["casts"][case]
    assert "NO RULE" not in java, f"Paimon 0.9 has no cast {src} -> {dst}"
    expected = []
    for v, j in zip(values, java):
        key = (src, dst, v)
        if key in PAIMON_1X:
            assert j != PAIMON_1X[key], f"{key}: Java 0.9 agrees with Paimon 1.x here; drop it from PAIMON_1X"
        expected.append(PAIMON_1X.get(key, j))
    assert ours(src, dst, values) == expected


def test_alter_accepts_what_paimon_accepts(oracles_ready, java_casts):
    """castable against Paimon 0.9's supportsExplicitCast and resolve, for every pair of different types of
    PAIRS (Paimon 1.x's table, which castable implements, accepts the same pairs of these types)."""
    differs = []
    for i, a in enumerate(PAIRS):
        for j, b in enumerate(PAIRS):
            if a != b and castable(parse_type(a), parse_type(b)) != java_casts["allowed"][i][j]:
                differs.append((a, b, java_casts["allowed"][i][j]))
    assert differs == []


def test_nested_to_string_as_paimon_1x(oracles_ready, java_casts):
    """ARRAY / MAP / ROW -> STRING (Paimon 1.x's rules): `[a, b]`, `{k -> v}`, `{a, b}` of the elements as 0.9
    casts them to STRING, `null` for null elements."""
    element_text = {t: dict(zip(map(json.dumps, vs), texts))
                    for (t, vs), texts in zip(ELEMENTS, java_casts["elements"])}

    def text(t: Any, v: Any) -> str:
        if v is None:
            return "null"
        t = parse_type(t) if not hasattr(t, "root") else t
        if t.root == "ARRAY":
            return "[" + ", ".join(text(t.element, x) for x in v) + "]"
        if t.root == "MAP":
            return "{" + ", ".join(f"{text(t.key, k)} -> {text(t.value, x)}" for k, x in v) + "}"
        if t.root == "ROW":
            return "{" + ", ".join(text(f.type, x) for f, x in zip(t.fields, v)) + "}"
        if t.root in ("VARCHAR", "CHAR"):
            return v
        return element_text[t.copy(True).sql()][json.dumps(v)]

    for src, values in NESTED_TO_STRING:
        t = parse_type(src)
        assert castable(t, parse_type("STRING"))
        assert ours(src, "STRING", values) == [None if v is None else text(t, v) for v in values], src


# ------------------------------------------------------------------------------------ altered tables

# one pair (or more) per rule of the cast table; ARRAY / MAP / ROW -> STRING come from NESTED_TO_STRING
TABLE_PAIRS = [
    ("DECIMAL(6, 3)", "DECIMAL(4, 1)"), ("INT", "DECIMAL(4, 1)"), ("DOUBLE", "DECIMAL(5, 2)"),
    ("DECIMAL(10, 2)", "INT"), ("DECIMAL(10, 3)", "DOUBLE"), ("BIGINT", "INT"), ("DOUBLE", "TINYINT"),
    ("INT", "TIMESTAMP(3)"), ("INT", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("BOOLEAN", "DECIMAL(3, 2)"),
    ("BOOLEAN", "INT"), ("TINYINT", "BOOLEAN"), ("DOUBLE", "STRING"), ("FLOAT", "STRING"), ("BIGINT", "CHAR(3)"),
    ("BOOLEAN", "VARCHAR(3)"), ("TIMESTAMP(9)", "STRING"), ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "STRING"),
    ("TIME(3)", "STRING"), ("DATE", "STRING"), ("STRING", "CHAR(4)"), ("STRING", "BOOLEAN"), ("STRING", "INT"),
    ("STRING", "DOUBLE"), ("STRING", "DECIMAL(5, 2)"), ("STRING", "DATE"), ("STRING", "TIME(3)"),
    ("STRING", "TIMESTAMP(3)"), ("STRING", "TIMESTAMP(9)"), ("STRING", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("STRING", "BYTES"), ("STRING", "BINARY(4)"), ("BYTES", "BINARY(3)"), ("BYTES", "STRING"),
    ("TIMESTAMP(9)", "TIMESTAMP(3)"), ("TIMESTAMP(3)", "TIMESTAMP(0)"), ("TIMESTAMP(0)", "TIMESTAMP(9)"),
    ("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(3)"),
    ("TIMESTAMP(3)", "DATE"), ("TIMESTAMP(3)", "TIME(3)"), ("DATE", "TIMESTAMP(9)"),
    ("DATE", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("TIME(3)", "TIMESTAMP(3)"), ("TIMESTAMP(3)", "BIGINT"),
    ("TIMESTAMP(9)", "INT"),
]
TABLE_CASES = [c for c in CASES if (json.dumps(c[0]), c[1]) in {(json.dumps(a), b) for a, b in TABLE_PAIRS}]

# Runs in the Java oracle: the table of SOURCE types, filled with ROWS, then each column ALTERed to its target
# one by one (those Paimon 0.9 accepts); prints which were altered and the rows as Java reads them.
JAVA_ALTER = """
create_table(FIELDS, [], [], {"bucket": "-1"})
write_rows(ROWS)
ID = J.catalog.Identifier.fromString(ident)
altered = []
for name, dst in CHANGES:
    changes = jvm.java.util.ArrayList()
    changes.add(J.schema.SchemaChange.updateColumnType(name, jtype(dst)))
    try:
        catalog._j_catalog.alterTable(ID, changes, False)
        altered.append(name)
    except Exception:  # a cast Paimon 0.9 does not accept in ALTER TABLE
        pass
print(json.dumps({"altered": altered, "rows": read_rows()}))
"""


def _nested_text(t: Any, v: Any, element_text: dict) -> str:
    """Paimon 1.x's ARRAY / MAP / ROW -> STRING of value ``v`` (elements as ``element_text`` gives them)."""
    if v is None:
        return "null"
    t = parse_type(t) if not hasattr(t, "root") else t
    if t.root == "ARRAY":
        return "[" + ", ".join(_nested_text(t.element, x, element_text) for x in v) + "]"
    if t.root == "MAP":
        return "{" + ", ".join(f"{_nested_text(t.key, k, element_text)} -> {_nested_text(t.value, x, element_text)}"
                               for k, x in v) + "}"
    if t.root == "ROW":
        return "{" + ", ".join(_nested_text(f.type, x, element_text) for f, x in zip(t.fields, v)) + "}"
    if t.root in ("VARCHAR", "CHAR"):
        return v
    return element_text[t.copy(True).sql()][json.dumps(v)]


@pytest.fixture(scope="module")
def utc_casts(oracles_ready, tmp_path_factory) -> list[list[Any]]:
    """Java's CastExecutors on TABLE_CASES in UTC (the zone of the tables' readers here)."""
    oracle = Oracle("java", tmp_path_factory.mktemp("utc"))
    path = str(tmp_path_factory.mktemp("w") / "warehouse" / "db.db" / "t")
    out = oracle.exec(path, java_script(JAVA_CASTS, CASES=[[s, d, v] for s, d, v in TABLE_CASES], ZONE="UTC",
                                        PAIRS=[], ELEMENTS=ELEMENTS))
    return json.loads(out.strip().splitlines()[-1])["casts"]


def _table_data(utc: list[list[Any]], java_0_9: bool = False,
                ) -> tuple[list[tuple[Any, str]], list[list[Any]], list[list[Any]]]:
    """(column types (source, target), rows, expected rows after the cast): the values of each case that read
    (a value that fails its cast would fail the whole read; for ``java_0_9`` also those 0.9 casts otherwise than
    Paimon 1.x, which may fail it there), padded with nulls; column 0 is the id."""
    columns, sources, expected = [], [], []
    for (src, dst, values), results in zip(TABLE_CASES, utc):
        kept = [(v, PAIMON_1X_UTC.get((src, dst, v), r)) for v, r in zip(values, results)
                if not (java_0_9 and ((src, dst, v) in PAIMON_1X_UTC or _int96_before_1970(src, v)))]
        kept = [(v, r) for v, r in kept if r != "ERROR"]
        columns.append((src, dst))
        sources.append([v for v, _ in kept])
        expected.append([r for _, r in kept])
    for src, values in NESTED_TO_STRING:
        columns.append((src, "STRING"))
        # Java 0.9's parquet reader reads a ROW whose fields are all null as a null ROW (Paimon 1.x does not)
        sources.append([v for v in values if not (java_0_9 and isinstance(v, list) and src.get("type") == "ROW"
                                                   and all(x is None for x in v))])
        expected.append(None)  # filled in by the test from Java's element casts
    n = max(len(v) for v in sources)
    rows = [[i] + [col[i] if i < len(col) else None for col in sources] for i in range(n)]
    return columns, rows, expected


def _int96_before_1970(src: Any, v: Any) -> bool:
    """A TIMESTAMP(7..9) before 1970 with digits below the millisecond: Java Paimon 0.9 fails to read its own
    parquet INT96 of such values (a negative nano-of-millisecond; fixed in Paimon 1.x)."""
    t = parse_type(src)
    return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6 and v is not None and v < 0 and v % MS != 0


def _spark_plain(spark, path: str) -> list[list[Any]]:
    from .java_rows import plain_rows
    return sorted(plain_rows(spark.read.format("paimon").load(path).toArrow()), key=lambda r: r[0])


def test_table_java_altered_reads_as_java_reads(spark, java_oracle, table_path, utc_casts):
    """Java 0.9 creates a table of every source type, fills it, ALTERs each column to its target (where 0.9 accepts
    the cast): paimon_ds reads it as Java does, through Spark and the core."""
    from .java_rows import plain_rows, row_differences, spark_rows
    columns, rows, _ = _table_data(utc_casts, java_0_9=True)
    fields = [["id", "INT NOT NULL"]] + [[f"c{i}", src] for i, (src, _) in enumerate(columns)]
    changes = [[f"c{i}", dst] for i, (_, dst) in enumerate(columns)]
    out = json.loads(java_oracle.exec(table_path, java_script(JAVA_ALTER, FIELDS=fields, ROWS=rows,
                                                              CHANGES=changes)).strip().splitlines()[-1])
    java = sorted(out["rows"], key=lambda r: r[0])
    # 0.9 ALTERs every column but the ARRAY / MAP / ROW ones (their casts to STRING came with Paimon 1.x)
    assert [columns[int(c[1:])][1] for c, _ in changes if c not in out["altered"]] == ["STRING"] * len(NESTED_TO_STRING)
    assert all(not isinstance(columns[int(c[1:])][0], str) for c, _ in changes if c not in out["altered"])
    table = Table.load(table_path)
    assert table.table_schema.id == len(out["altered"])
    names = ["id"] + [f"{s}->{d}" for s, d in columns]
    core = sorted(plain_rows(table.to_arrow()), key=lambda r: r[0])
    assert core == java, row_differences(core, java, names)
    via_spark = _spark_plain(spark, table_path)
    assert via_spark == spark_rows(java, table.arrow_schema()), row_differences(
        via_spark, spark_rows(java, table.arrow_schema()), names)


def test_table_paimon_ds_altered_reads_as_javas_casts(spark, java_oracle, table_path, utc_casts, java_casts):
    """paimon_ds creates and fills a primary-key table of every source type and ALTERs every column to its
    target, the rules 0.9 lacks included: Spark and the core read what Java's CastExecutors (Paimon 1.x's rules
    where they changed) give for the values written."""
    from paimon_ds.fs.file_io import FileIO
    from paimon_ds.schema.change import UpdateColumnType, commit_changes
    from paimon_ds.schema.manager import SchemaManager, TableSchema
    from paimon_ds.schema.types import DataField

    from .java_rows import arrow_table_from_plain, plain_rows, row_differences, spark_rows
    columns, rows, expected = _table_data(utc_casts)
    fields = [DataField(0, "id", parse_type("INT NOT NULL"))] + \
        [DataField(i + 1, f"c{i}", parse_type(src)) for i, (src, _) in enumerate(columns)]
    SchemaManager(FileIO(table_path), table_path).create(
        TableSchema(0, tuple(fields), len(fields) - 1, (), ("id",), {"bucket": "1"}, None, int(time.time() * 1000)))
    table = Table.load(table_path)
    write = table.new_write()
    write.write_arrow(arrow_table_from_plain(rows, table.arrow_schema()))
    table.new_commit("u").commit(write.prepare_commit())
    commit_changes(table_path, [UpdateColumnType(f"c{i}", dst) for i, (_, dst) in enumerate(columns)])

    element_text = {t: dict(zip(map(json.dumps, vs), texts))
                    for (t, vs), texts in zip(ELEMENTS, java_casts["elements"])}
    want_columns = []
    for i, (src, _) in enumerate(columns):
        if expected[i] is not None:
            want_columns.append(expected[i])
        else:  # ARRAY / MAP / ROW -> STRING
            values = [r[i + 1] for r in rows]
            want_columns.append([None if v is None else _nested_text(src, v, element_text) for v in values])
    want = [[r[0]] + [col[n] if n < len(col) else None for col in want_columns] for n, r in enumerate(rows)]
    table = Table.load(table_path)
    names = ["id"] + [f"{s}->{d}" for s, d in columns]
    core = sorted(plain_rows(table.to_arrow()), key=lambda r: r[0])
    assert core == want, row_differences(core, want, names)
    via_spark = _spark_plain(spark, table_path)
    assert via_spark == spark_rows(want, table.arrow_schema()), row_differences(
        via_spark, spark_rows(want, table.arrow_schema()), names)
