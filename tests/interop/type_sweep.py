"""The columns of the type sweep: every Paimon type at its smallest and largest precision, nested types
holding the hard ones, in the plain form of java_rows (six rows each).

``columns(fmt, writer)`` gives the columns a writer can put into a table of format ``fmt``, adapted where Paimon
or the writer cannot hold a value, each adaptation saying why:
- Avro: Paimon keeps TIMESTAMP up to precision 6 and TIME up to precision 3 there (it refuses more);
- ORC written by Java: CHAR(n) of ORC pads every value to n characters in memory, so Java's ORC writer cannot
  take CHAR(2147483647) (a negative array size): CHAR(255), Hive's largest, is the largest there;
- ORC written by paimon_ds: pyarrow's ORC writer cannot store a timestamp before 1970 with a fraction of a
  second (paimon_ds refuses it), so those are whole seconds there;
- Java 0.9 cannot read its own parquet TIMESTAMP(7..9) before 1970 with digits below the millisecond (a negative
  nano-of-millisecond from INT96; fixed in Paimon 1.x), so those Java writes are whole milliseconds;
- pypaimon 2.1 has no MULTISET, and in Avro no MAP and no null element in an ARRAY of DECIMAL.
"""

from __future__ import annotations

from typing import Any

ROWS = 6
MS = 1_000_000

# epoch nanoseconds: after 2023, before 1970 with nanos, 1970, just before 1970, 2009, a day before 1970
_TIMESTAMPS = [1_700_000_000_123_456_789, -1_000_000_001, 0, -1, 1_234_567_891_011, -86_400_000_000_001]


def _ts(p: int, before_1970_fraction: str) -> list[Any]:
    """Values of TIMESTAMP(p): ``before_1970_fraction`` is "keep", "ms" (whole milliseconds) or "s"."""
    step = 10 ** (9 - p)
    out: list[Any] = []
    for i, v in enumerate(_TIMESTAMPS):
        if i == 2:
            out.append(None)
            continue
        v -= v % step
        if v < 0 and before_1970_fraction == "ms":
            v -= v % MS
        elif v < 0 and before_1970_fraction == "s":
            v -= v % 1_000_000_000
        out.append(v)
    return out


def columns(fmt: str, writer: str) -> list[tuple[str, Any, list[Any]]]:
    """(name, Paimon type (schema-file form), six plain values) of every column ``writer`` puts in ``fmt``."""
    fraction = "s" if (fmt == "orc" and writer == "paimon_ds") else "keep"
    high_fraction = "ms" if writer == "java" and fmt == "parquet" else fraction  # precision 7..9
    cols: list[tuple[str, Any, list[Any]]] = [
        ("bo", "BOOLEAN", [True, False, None, True, False, True]),
        ("ti", "TINYINT", [-128, 127, None, 0, 1, -1]),
        ("si", "SMALLINT", [-32768, 32767, None, 0, 1, -1]),
        ("i", "INT", [-2**31, 2**31 - 1, None, 0, 1, -1]),
        ("bi", "BIGINT", [-2**63, 2**63 - 1, None, 0, 1, -1]),
        ("f", "FLOAT", [1.5, -0.0, None, 3.4028234663852886e38, 1.401298464324817e-45, "NaN"]),
        ("d", "DOUBLE", [1.5, -0.0, None, 1.7976931348623157e308, 5e-324, "-Infinity"]),
        ("de1", "DECIMAL(1, 0)", ["9", "-9", None, "0", "1", "-1"]),
        ("de18", "DECIMAL(18, 4)", ["99999999999999.9999", "-99999999999999.9999", None, "0.0000", "1.5000",
                                    "-0.0001"]),
        ("de19", "DECIMAL(19, 0)", ["9999999999999999999", "-9999999999999999999", None, "0", "1", "-1"]),
        ("de38", "DECIMAL(38, 38)", ["0." + "9" * 38, "-0." + "9" * 38, None, "0." + "0" * 38, "0." + "0" * 37 + "1",
                                     "-0.5" + "0" * 37]),
        ("de38s0", "DECIMAL(38, 0)", ["9" * 38, "-" + "9" * 38, None, "0", "1", "-1"]),
        ("c1", "CHAR(1)", ["a", "é", None, "z", "日", "0"]),
        ("cmax", "CHAR(255)" if fmt == "orc" and writer == "java" else "CHAR(2147483647)",
         ["abc", "", None, "x" * 40, "日本", "a "]),
        ("v1", "VARCHAR(1)", ["a", "", None, "b", "c", "😀"]),
        ("s", "STRING", ["hello world long string", "", None, "日本語", "a", "ü😀" * 20]),
        ("b1", "BINARY(1)", ["00", "ff", None, "7f", "80", "01"]),
        ("bmax", "BINARY(2147483647)", ["0001", "", None, "ff" * 20, "aa", "bb"]),
        ("vb1", "VARBINARY(1)", ["00", "", None, "ff", "01", "02"]),
        ("by", "BYTES", ["deadbeef" * 3, "", None, "00", "ff", "0102"]),
        ("dt", "DATE", [0, -1, None, 2932896, -719162, 19000]),
        ("tm0", "TIME(0)", [0, 86399000, None, 3600000, 1000, 43200000]),
        ("tm9", "TIME(3)" if fmt == "avro" else "TIME(9)", [0, 86399999, None, 3600001, 1, 43200123]),
    ]
    for p in (0, 3, 4, 6, 7, 9):
        if fmt == "avro" and p > 6:
            continue
        values = _ts(p, high_fraction if p > 6 else fraction)
        cols.append((f"ts{p}", f"TIMESTAMP({p})", values))
        cols.append((f"ltz{p}", f"TIMESTAMP({p}) WITH LOCAL TIME ZONE", values))
    nanos = "TIMESTAMP(6)" if fmt == "avro" else "TIMESTAMP(9)"
    ts_nested = _ts(6 if fmt == "avro" else 9, high_fraction)
    cols += [
        ("arr", {"type": "ARRAY", "element": nanos}, [[ts_nested[0], None, ts_nested[1]], [], None, [0], [123456000],
                                                     [ts_nested[5]]]),
        ("arrd", {"type": "ARRAY NOT NULL", "element": "DECIMAL(38, 2)"},
         [["1.00", None if not (writer == "pypaimon" and fmt == "avro") else "2.00"], [], [],
          ["-999999999999999999999999999999999999.99"], ["0.01"], ["5.55"]]),
        ("m", {"type": "MAP", "key": "INT NOT NULL", "value": "STRING"},
         [[[1, "a"], [2, None]], [], None, [[-1, "x"]], [[0, ""]], [[5, "五"]]]),
        ("ms", {"type": "MAP", "key": "STRING NOT NULL", "value": "TIMESTAMP(3)"},
         [[["a", 1000 * MS]], [], None, [["b", None]], [["c", -1000 * MS if fraction != "s" else -1_000_000_000]],
          [["", 0]]]),
        ("mset", {"type": "MULTISET", "element": "STRING NOT NULL"},
         [[["a", 2], ["b", 1]], [], None, [["x", 1]], [["y", 3]], [["z", 1]]]),
        ("r", {"type": "ROW", "fields": [{"id": 100, "name": "x", "type": "INT"},
                                         {"id": 101, "name": "y", "type": nanos},
                                         {"id": 102, "name": "z", "type": {"type": "ARRAY", "element": "SMALLINT"}}]},
         [[1, ts_nested[0], [1, None]], [None, 7, None], None, [2, ts_nested[1], []], [3, 0, [-32768]],
          [4, ts_nested[3], [32767]]]),
    ]
    if writer == "pypaimon":
        cols = [c for c in cols if c[0] != "mset"]
        if fmt == "avro":
            cols = [c for c in cols if c[0] not in ("m", "ms")]
    if fmt == "avro":
        cols = [c for c in cols if c[0] not in ("arr", "r")] + [
            ("r", {"type": "ROW", "fields": [{"id": 100, "name": "x", "type": "INT"},
                                             {"id": 101, "name": "y", "type": "TIMESTAMP(6)"}]},
             [[1, ts_nested[0]], [None, 7000], None, [2, ts_nested[1]], [3, 0], [4, ts_nested[3]]])]
    return [("id", "INT NOT NULL", list(range(ROWS)))] + cols


def rows(cols: list[tuple[str, Any, list[Any]]]) -> list[list[Any]]:
    return [[c[2][i] for c in cols] for i in range(ROWS)]


def fields_json(cols: list[tuple[str, Any, list[Any]]]) -> list[list[Any]]:
    return [[name, t] for name, t, _ in cols]
