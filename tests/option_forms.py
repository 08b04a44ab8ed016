"""Option values and what Java Paimon makes of them: the table that tests/options/test_registry.py checks paimon_ds's
parsers against, and that tests/interop/test_option_parsing.py checks against Java Paimon 0.9 itself.

Paimon's MemorySize and TimeUtils come from Flink, and their parser tests are Flink's `MemorySizeTest` and
`TimeUtilsTest` (flink-core; Paimon's own repository has no test of either): every input of those tests is here,
valid and invalid, followed by the forms issue 22 named and edge cases of the same grammar (Java's trim, ASCII
digits, 64-bit overflow at each unit, look-alike characters). ``None`` means Java refuses the text.
"""

from __future__ import annotations

KB, MB, GB, TB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
LONG_MAX = 2**63 - 1
SECOND, MS, US = 1_000_000_000, 1_000_000, 1_000  # nanoseconds

# MemorySize.parse(text).getBytes()
SIZES: list[tuple[str, int | None]] = [
    # MemorySizeTest.testParseBytes
    ("1234", 1234), ("1234b", 1234), ("1234 b", 1234), ("1234bytes", 1234), ("1234 bytes", 1234),
    # testParseKibiBytes / MebiBytes / GibiBytes / TebiBytes
    ("667766k", 667766 * KB), ("667766 k", 667766 * KB), ("667766kb", 667766 * KB), ("667766 kb", 667766 * KB),
    ("667766kibibytes", 667766 * KB), ("667766 kibibytes", 667766 * KB),
    ("7657623m", 7657623 * MB), ("7657623 m", 7657623 * MB), ("7657623mb", 7657623 * MB),
    ("7657623 mb", 7657623 * MB), ("7657623mebibytes", 7657623 * MB), ("7657623 mebibytes", 7657623 * MB),
    ("987654g", 987654 * GB), ("987654 g", 987654 * GB), ("987654gb", 987654 * GB), ("987654 gb", 987654 * GB),
    ("987654gibibytes", 987654 * GB), ("987654 gibibytes", 987654 * GB),
    ("1234567t", 1234567 * TB), ("1234567 t", 1234567 * TB), ("1234567tb", 1234567 * TB),
    ("1234567 tb", 1234567 * TB), ("1234567tebibytes", 1234567 * TB), ("1234567 tebibytes", 1234567 * TB),
    # testUpperCase
    ("1 B", 1), ("1 K", KB), ("1 M", MB), ("1 G", GB), ("1 T", TB),
    # testTrimBeforeParse
    ("      155      ", 155), ("      155      bytes   ", 155),
    # testParseWithDefaultUnit's texts, parsed without a default unit
    ("7", 7), ("7340032", 7340032), ("7m", 7 * MB), ("7 m", 7 * MB), ("7mb", 7 * MB), ("7 mb", 7 * MB),
    ("7mebibytes", 7 * MB), ("7 mebibytes", 7 * MB),
    # testParseInvalid, testParseNumberOverflow, testParseNumberTimeUnitOverflow
    ("", None), ("     ", None), ("foobar or fubar or foo bazz", None), ("16 gjah", None),
    ("16 16 17 18 bytes", None), ("-100 bytes", None), ("100000000000000000000000000000000 bytes", None),
    ("100000000000000 tb", None),
    # issue 22: what paimon_ds used to take and Java refuses, and what Java takes that paimon_ds refused
    ("128mib", None), ("1gib", None), ("1 KiB", None), ("64 MiB", None),
    ("1 mebibytes", MB), ("2 gibibytes", 2 * GB), ("3 TEBIBYTES", 3 * TB), ("4 Kibibytes", 4 * KB),
    # edges: the largest value at each unit, and one more
    ("9223372036854775807", LONG_MAX), ("9223372036854775807 b", LONG_MAX), ("9223372036854775808", None),
    ("9007199254740991 kb", 9007199254740991 * KB), ("9007199254740992 kb", None),
    ("8796093022207 m", 8796093022207 * MB), ("8796093022208 m", None),
    ("8589934591 g", 8589934591 * GB), ("8589934592 g", None),
    ("8388607 tb", 8388607 * TB), ("8388608 tb", None),
    ("0", 0), ("0 tb", 0), ("00012 kb", 12 * KB),
    # edges: what is not digits and a unit
    ("1.5gb", None), ("+5", None), ("5-", None), ("1_000", None), ("1e3", None), ("1 kb b", None),
    ("1kbytes", None), ("mb", None), ("\u0661\u0662 mb", None),  # Arabic-Indic digits: Java reads ASCII only
    # edges: Java trims characters up to U+0020 (tabs, newlines) but not a no-break space
    ("1\tkb", KB), ("\n64 MB\n", 64 * MB), ("\t\r 3 g \x0b", 3 * GB), ("1\u00a0mb", None), ("\u00a01 mb", None),
    # edges: the Kelvin sign lower-cases to k in Java as in Python
    ("1 \u212ab", KB),
]

# TimeUtils.parseDuration(text) as (getSeconds(), getNano()); the table gives nanoseconds
DURATIONS: list[tuple[str, int | None]] = [
    # TimeUtilsTest.testParseDurationNanos / Micros / Millis
    ("424562ns", 424562), ("424562nano", 424562), ("424562nanos", 424562), ("424562nanosecond", 424562),
    ("424562nanoseconds", 424562), ("424562 ns", 424562),
    ("565731\u00b5s", 565731 * US), ("565731micro", 565731 * US), ("565731micros", 565731 * US),
    ("565731microsecond", 565731 * US), ("565731microseconds", 565731 * US), ("565731 \u00b5s", 565731 * US),
    ("1234", 1234 * MS), ("1234ms", 1234 * MS), ("1234milli", 1234 * MS), ("1234millis", 1234 * MS),
    ("1234millisecond", 1234 * MS), ("1234milliseconds", 1234 * MS), ("1234 ms", 1234 * MS),
    # testParseDurationSeconds / Minutes / Hours / Days
    ("667766s", 667766 * SECOND), ("667766sec", 667766 * SECOND), ("667766secs", 667766 * SECOND),
    ("667766second", 667766 * SECOND), ("667766seconds", 667766 * SECOND), ("667766 s", 667766 * SECOND),
    ("7657623m", 7657623 * 60 * SECOND), ("7657623min", 7657623 * 60 * SECOND),
    ("7657623minute", 7657623 * 60 * SECOND), ("7657623minutes", 7657623 * 60 * SECOND),
    ("7657623 min", 7657623 * 60 * SECOND),
    ("987654h", 987654 * 3600 * SECOND), ("987654hour", 987654 * 3600 * SECOND),
    ("987654hours", 987654 * 3600 * SECOND), ("987654 h", 987654 * 3600 * SECOND),
    ("987654d", 987654 * 86400 * SECOND), ("987654day", 987654 * 86400 * SECOND),
    ("987654days", 987654 * 86400 * SECOND), ("987654 d", 987654 * 86400 * SECOND),
    # testParseDurationUpperCase
    ("1 NS", 1), ("1 MICRO", US), ("1 MS", MS), ("1 S", SECOND), ("1 MIN", 60 * SECOND), ("1 H", 3600 * SECOND),
    ("1 D", 86400 * SECOND),
    # testParseDurationTrim
    ("      155      ", 155 * MS), ("      155      ms   ", 155 * MS),
    # testParseDurationInvalid, testParseDurationNumberOverflow, testParseDurationNumberTimeUnitOverflow
    ("", None), ("     ", None), ("foobar or fubar or foo bazz", None), ("16 gjah", None), ("16 16 17 18 ms", None),
    ("-100 ms", None), ("100000000000000000000000000000000 ms", None), ("100000000000000000 h", None),
    # issue 22: what paimon_ds used to take and Java refuses
    ("5 us", None), ("3 mins", None), ("1 hr", None), ("2 hrs", None), ("1 msec", None), ("10 ds", None),
    ("7 hs", None),
    # edges: the largest value at each unit, and one more (Duration holds a long of seconds)
    ("9223372036854775807", LONG_MAX * MS), ("9223372036854775807 ns", LONG_MAX),
    ("9223372036854775807 s", LONG_MAX * SECOND), ("9223372036854775808 ns", None),
    ("153722867280912930 min", 153722867280912930 * 60 * SECOND), ("153722867280912931 min", None),
    ("2562047788015215 h", 2562047788015215 * 3600 * SECOND), ("2562047788015216 h", None),
    ("106751991167300 d", 106751991167300 * 86400 * SECOND), ("106751991167301 d", None),
    ("0", 0), ("0 d", 0), ("007 s", 7 * SECOND),
    # edges: what is not digits and a unit
    ("1.5 s", None), ("+1 s", None), ("PT1S", None), ("1 s s", None), ("1_000 ms", None), ("s", None),
    ("1 \u03bcs", None),  # Greek mu, not the micro sign
    ("1 \u00b5S", US), ("1 MICROS", US),
    # edges: Java's trim
    ("1\ts", SECOND), ("\n2 min\n", 120 * SECOND), ("1\u00a0s", None),
]

# Options.get of a boolean option (OptionsUtils.convertToBoolean)
BOOLEANS: list[tuple[str, bool | None]] = [
    ("true", True), ("false", False), ("TRUE", True), ("False", False), ("tRuE", True),
    (" true", None), ("true ", None), ("yes", None), ("1", None), ("0", None), ("", None), ("t", None),
    ("fal\u017fe", False),  # the long s upper-cases to S in Java as in Python
]

# Options.get of an int option (Integer.parseInt)
INTS: list[tuple[str, int | None]] = [
    ("0", 0), ("42", 42), ("-1", -1), ("+7", 7), ("007", 7), ("2147483647", 2**31 - 1), ("-2147483648", -(2**31)),
    ("2147483648", None), ("-2147483649", None), (" 1", None), ("1 ", None), ("1_000", None), ("1.0", None),
    ("", None), ("-", None), ("0x10", None), ("\u0661\u0662", 12),  # Java's parseInt reads any script's digits
]

# CoreOptions.mergeEngine() (an enum option, OptionsUtils.convertToEnum)
MERGE_ENGINES: list[tuple[str, str | None]] = [
    ("deduplicate", "deduplicate"), ("PARTIAL-UPDATE", "partial-update"), ("Aggregation", "aggregation"),
    ("first-ROW", "first-row"), (" deduplicate", None), ("partial_update", None), ("aggregate", None),
    ("", None),
]
