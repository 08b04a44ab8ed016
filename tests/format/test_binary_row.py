"""BinaryRow encoding: bytes Java Paimon wrote, round trips, and the vectorised path against a reference."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.format.binary_row import (
    EMPTY_ROW,
    deserialize_row,
    encode_rows,
    fixed_width_rows,
    header_bytes,
    serialize_row,
)
from paimon_ds.schema.types import DataType, parse_type, to_arrow_type

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_DATE = dt.date(1970, 1, 1)
# 38-digit decimals must not be rounded by Python's default 28-digit context
CTX = decimal.Context(prec=60)


def types_of(*names: str) -> list[DataType]:
    return [parse_type(n) for n in names]


def dec(unscaled: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-scale, CTX)


# ------------------------------------------------------------------ bytes written by Java Paimon 0.9

JAVA_TYPES = ["BIGINT", "STRING", "STRING", "INT", "BOOLEAN"]


def test_java_row_with_long_strings_and_a_null() -> None:
    expected = (b"\x00\x00\x00\x05\x00\x08\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x000"
                b"\x00\x00\x00\n\x00\x00\x00@\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                b"\x00\x00bbbbbbbbbbbbbbbb2024-01-02\x00\x00\x00\x00\x00\x00")
    row = [2, "bbbbbbbbbbbbbbbb", "2024-01-02", None, False]
    assert serialize_row(row, types_of(*JAVA_TYPES)) == expected
    assert deserialize_row(expected, types_of(*JAVA_TYPES)) == row


def test_java_row_with_inline_string() -> None:
    expected = (b"\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00a\x00\x00\x00\x00"
                b"\x00\x00\x81\n\x00\x00\x000\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"
                b"\x00\x002024-01-01\x00\x00\x00\x00\x00\x00")
    row = [1, "a", "2024-01-01", 1, True]
    assert serialize_row(row, types_of(*JAVA_TYPES)) == expected
    assert deserialize_row(expected, types_of(*JAVA_TYPES)) == row


def test_java_partition_row() -> None:
    expected = (b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\n\x00\x00\x00\x10\x00\x00\x002024-01-01"
                b"\x00\x00\x00\x00\x00\x00")
    assert serialize_row(["2024-01-01"], types_of("STRING")) == expected
    assert deserialize_row(expected, types_of("STRING")) == ["2024-01-01"]


def test_empty_row() -> None:
    assert serialize_row([], []) == b"\x00\x00\x00\x00" + bytes(8)
    assert EMPTY_ROW == b"\x00\x00\x00\x00" + bytes(8)
    assert deserialize_row(EMPTY_ROW, []) == []


# ------------------------------------------------------------------ round trips of every atomic type

def f32(x: float) -> float:
    """The float a FLOAT column stores for ``x``."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


ROUND_TRIP: dict[str, list[Any]] = {
    "TINYINT": [0, 1, -1, 127, -128],
    "SMALLINT": [0, 300, -300, 32767, -32768],
    "INT": [0, 7, -7, 2**31 - 1, -(2**31)],
    "BIGINT": [0, 2**40, -(2**40), 2**63 - 1, -(2**63)],
    "FLOAT": [0.0, 1.5, -0.25, f32(3.14159), f32(-1e30), f32(1e-30)],
    "DOUBLE": [0.0, 2.5, -1e300, 1e-300, 3.141592653589793],
    "DECIMAL(10, 2)": [dec(0, 2), dec(12345, 2), dec(-12345, 2), dec(9999999999, 2), dec(-9999999999, 2)],
    "DECIMAL(30, 5)": [dec(0, 5), dec(1, 5), dec(-1, 5), dec(-128, 5), dec(127, 5), dec(128, 5),
                       dec(-129, 5), dec(-(2**63), 5), dec(2**63, 5), dec(10**30 - 1, 5), dec(-(10**30 - 1), 5)],
    "DECIMAL(38, 10)": [dec(10**38 - 1, 10), dec(-(10**38 - 1), 10), dec(-(2**120), 10)],
    "STRING": ["", "a", "abcdefg", "abcdefgh", "é中", "中文字", "a" * 1000, "😀 emoji and more text"],
    "VARCHAR(10)": ["short", "ten chars!"],
    "CHAR(3)": ["abc"],
    "BYTES": [b"", b"\x00", b"\x00\xff\x10\x80abc", b"\x01" * 8, bytes(range(256))],
    "BINARY(4)": [b"\x01\x02\x03\x04"],
    "DATE": [EPOCH_DATE, dt.date(2024, 2, 29), dt.date(1900, 1, 1), dt.date(9999, 12, 31)],
    "TIME(3)": [dt.time(0, 0), dt.time(23, 59, 59, 999000), dt.time(12, 30, 1, 5000)],
    "TIMESTAMP(3)": [EPOCH, dt.datetime(2024, 1, 2, 3, 4, 5, 678000), dt.datetime(1901, 12, 13, 20, 45, 52, 1000)],
    "TIMESTAMP(6)": [EPOCH, dt.datetime(2024, 1, 2, 3, 4, 5, 678901), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                     dt.datetime(1800, 6, 1, 0, 0, 0, 1)],
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": [EPOCH_UTC, dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc),
                                          dt.datetime(1960, 5, 5, 5, 5, 5, 5, tzinfo=dt.timezone.utc)],
    "BOOLEAN": [True, False],
}


@pytest.mark.parametrize("type_name", list(ROUND_TRIP))
def test_round_trip_each_type(type_name: str) -> None:
    t = parse_type(type_name)
    for v in ROUND_TRIP[type_name]:
        blob = serialize_row([v], [t])
        assert len(blob) % 8 == 4  # arity prefix + 8-byte words
        back = deserialize_row(blob, [t])
        assert back == [v], (type_name, v, back)
        assert type(back[0]) is type(v)
        # a null of the type round-trips too
        assert deserialize_row(serialize_row([None], [t]), [t]) == [None]


def test_round_trip_keeps_decimal_scale_and_digits() -> None:
    t = parse_type("DECIMAL(38, 5)")
    v = decimal.Decimal("123456789012345678901234567890123.45678")
    (back,) = deserialize_row(serialize_row([v], [t]), [t])
    assert str(back) == str(v)


def test_short_strings_sit_inline_long_ones_in_the_variable_part() -> None:
    t = types_of("STRING")
    assert serialize_row(["abcdefg"], t) == b"\x00\x00\x00\x01" + bytes(8) + b"abcdefg\x87"
    assert len(serialize_row(["é中"], t)) == 4 + 8 + 8  # 5 UTF-8 bytes: inline
    eight = serialize_row(["abcdefgh"], t)
    # slot = offset 16 << 32 | length 8, then the bytes in the variable part
    assert eight == b"\x00\x00\x00\x01" + bytes(8) + struct.pack("<Q", 16 << 32 | 8) + b"abcdefgh"
    nine = serialize_row(["中文字"], t)  # 9 bytes: padded to 16
    assert nine[4 + 16:] == "中文字".encode() + bytes(7)


ALL_TYPES = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(30, 5)",
             "STRING", "BYTES", "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE",
             "BOOLEAN", "TIME(3)"]
ALL_VALUES = [ROUND_TRIP[n][1] for n in ALL_TYPES]


def test_round_trip_nulls_in_every_position() -> None:
    types = types_of(*ALL_TYPES)
    assert deserialize_row(serialize_row(ALL_VALUES, types), types) == ALL_VALUES
    for i in range(len(types)):
        row = list(ALL_VALUES)
        row[i] = None
        assert deserialize_row(serialize_row(row, types), types) == row, ALL_TYPES[i]
        only = [None] * len(types)
        only[i] = ALL_VALUES[i]
        assert deserialize_row(serialize_row(only, types), types) == only, ALL_TYPES[i]
    assert deserialize_row(serialize_row([None] * len(types), types), types) == [None] * len(types)


def test_null_bitset_spanning_two_words() -> None:
    assert header_bytes(56) == 8 and header_bytes(57) == 16
    n = 70
    types = [parse_type("BIGINT")] * 35 + [parse_type("STRING")] * 35
    values: list[Any] = [i * 1000 - 7 for i in range(35)] + [f"value number {i}" for i in range(35)]
    nulls = {0, 1, 55, 56, 57, 63, 64, 69}
    row = [None if i in nulls else v for i, v in enumerate(values)]
    blob = serialize_row(row, types)
    assert blob[:4] == struct.pack(">i", n)
    header = int.from_bytes(blob[4:20], "little")
    assert header & 0xFF == 0  # row kind +I
    assert {i for i in range(n) if header >> (i + 8) & 1} == nulls
    assert deserialize_row(blob, types) == row


# ------------------------------------------------------------------ a pure-Python reference encoder

def ref_encode(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """One BinaryRow (without the arity prefix), written field by field from the documented layout."""
    arity = len(types)
    head = (arity + 63 + 8) // 64 * 8
    fixed = bytearray(head + 8 * arity)
    var = bytearray()

    def put_var(data: bytes, reserve: int) -> int:
        offset = len(fixed) + len(var)
        var.extend(data + bytes(reserve - len(data)))
        return offset

    for i, (v, t) in enumerate(zip(values, types)):
        slot = head + 8 * i
        r = t.root
        non_compact_dec = r == "DECIMAL" and t.precision > 18
        non_compact_ts = r in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 3
        if v is None:
            bit = i + 8
            fixed[bit // 8] |= 1 << (bit % 8)
            # Paimon's generated projection writes these nulls with writeDecimal/writeTimestamp(null),
            # which keep the variable-part space and its offset (size 0)
            if non_compact_dec:
                struct.pack_into("<Q", fixed, slot, put_var(b"", 16) << 32)
            elif non_compact_ts:
                struct.pack_into("<Q", fixed, slot, put_var(b"", 8) << 32)
            continue
        if r == "BOOLEAN":
            fixed[slot] = 1 if v else 0
        elif r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"):
            struct.pack_into({"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q",
                              "FLOAT": "<f", "DOUBLE": "<d"}[r], fixed, slot, v)
        elif r == "DATE":
            struct.pack_into("<i", fixed, slot, (v - EPOCH_DATE).days)
        elif r in ("VARCHAR", "CHAR", "VARBINARY", "BINARY"):
            data = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            if len(data) <= 7:
                fixed[slot:slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                offset = put_var(data, (len(data) + 7) // 8 * 8)
                struct.pack_into("<Q", fixed, slot, offset << 32 | len(data))
        elif r == "DECIMAL":
            unscaled = int(v.scaleb(t.scale, CTX))
            if not non_compact_dec:
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                # Java's BigInteger.toByteArray: minimal two's complement, big-endian
                bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
                data = unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
                struct.pack_into("<Q", fixed, slot, put_var(data, 16) << 32 | len(data))
        elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            micros = (v - (EPOCH_UTC if v.tzinfo else EPOCH)) // dt.timedelta(microseconds=1)
            millis, micro_of_milli = divmod(micros, 1000)
            if not non_compact_ts:
                struct.pack_into("<q", fixed, slot, millis)
            else:
                offset = put_var(struct.pack("<q", millis), 8)
                struct.pack_into("<Q", fixed, slot, offset << 32 | micro_of_milli * 1000)
        else:
            raise AssertionError(f"reference encoder does not know {t.sql()}")
    return bytes(fixed + var)


def _text(rng: random.Random) -> str:
    alphabet = "abcXYZ09 é中😀"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))


def _micros(rng: random.Random) -> int:
    return rng.randint(-4 * 10**15, 4 * 10**15)  # about 1843..2096


GENERATORS: dict[str, Callable[[random.Random], Any]] = {
    "TINYINT": lambda r: r.randint(-128, 127),
    "SMALLINT": lambda r: r.randint(-(2**15), 2**15 - 1),
    "INT": lambda r: r.randint(-(2**31), 2**31 - 1),
    "BIGINT": lambda r: r.randint(-(2**63), 2**63 - 1),
    "FLOAT": lambda r: f32(r.uniform(-1e6, 1e6)),
    "DOUBLE": lambda r: r.uniform(-1e12, 1e12),
    "DECIMAL(10, 2)": lambda r: dec(r.randint(-(10**10) + 1, 10**10 - 1), 2),
    "DECIMAL(30, 5)": lambda r: dec(r.choice([r.randint(-(10**30) + 1, 10**30 - 1), r.randint(-300, 300),
                                              -(2 ** r.randint(0, 90))]), 5),
    "STRING": _text,
    "BYTES": lambda r: bytes(r.getrandbits(8) for _ in range(r.randint(0, 20))),
    "DATE": lambda r: EPOCH_DATE + dt.timedelta(days=r.randint(-40000, 40000)),
    "TIMESTAMP(3)": lambda r: EPOCH + dt.timedelta(milliseconds=_micros(r) // 1000),
    "TIMESTAMP(6)": lambda r: EPOCH + dt.timedelta(microseconds=_micros(r)),
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": lambda r: EPOCH_UTC + dt.timedelta(microseconds=_micros(r)),
    "BOOLEAN": lambda r: r.random() < 0.5,
}


def random_rows(rng: random.Random, names: Sequence[str], n: int, null_rate: float = 0.15) -> list[list[Any]]:
    return [[None if rng.random() < null_rate else GENERATORS[name](rng) for name in names] for _ in range(n)]


def columns_of(rows: list[list[Any]], types: Sequence[DataType]) -> list[pa.Array]:
    return [pa.array([row[i] for row in rows], type=to_arrow_type(t)) for i, t in enumerate(types)]


def test_encode_rows_matches_reference_encoder_on_random_rows() -> None:
    rng = random.Random(20240101)
    names = list(GENERATORS)
    types = types_of(*names)
    rows = random_rows(rng, names, 3000)
    data, offsets = encode_rows(columns_of(rows, types), types)
    assert len(offsets) == len(rows) + 1 and offsets[0] == 0 and offsets[-1] == len(data)
    buf = data.tobytes()
    for i, row in enumerate(rows):
        assert buf[offsets[i]:offsets[i + 1]] == ref_encode(row, types), (i, row)


@pytest.mark.parametrize("name", list(GENERATORS))
def test_encode_rows_single_column_matches_reference(name: str) -> None:
    # one column at a time isolates a wrong type from the others
    rng = random.Random(hash(name) % 1000)
    types = types_of(name)
    rows = random_rows(rng, [name], 500, null_rate=0.2)
    data, offsets = encode_rows(columns_of(rows, types), types)
    buf = data.tobytes()
    got = [buf[offsets[i]:offsets[i + 1]] for i in range(len(rows))]
    assert got == [ref_encode(row, types) for row in rows]


def test_encode_rows_agrees_with_serialize_row() -> None:
    rng = random.Random(7)
    names = list(GENERATORS)
    types = types_of(*names)
    rows = random_rows(rng, names, 300, null_rate=0.3)
    data, offsets = encode_rows(columns_of(rows, types), types)
    buf = data.tobytes()
    for i, row in enumerate(rows):
        assert buf[offsets[i]:offsets[i + 1]] == serialize_row(row, types)[4:], i
        assert deserialize_row(struct.pack(">i", len(types)) + buf[offsets[i]:offsets[i + 1]], types) == row


def test_encode_rows_on_sliced_and_chunked_input() -> None:
    # Arrow arrays with an offset (slices) and chunked arrays encode like fresh ones
    rng = random.Random(11)
    names = ["STRING", "DECIMAL(30, 5)", "DECIMAL(10, 2)", "TIMESTAMP(6)", "BIGINT", "BYTES"]
    types = types_of(*names)
    rows = random_rows(rng, names, 200, null_rate=0.25)
    cols = columns_of(rows, types)
    sliced = [c.slice(50, 100) for c in cols]
    data, offsets = encode_rows(sliced, types)
    buf = data.tobytes()
    assert [buf[offsets[i]:offsets[i + 1]] for i in range(100)] == [ref_encode(r, types) for r in rows[50:150]]
    chunked = [pa.chunked_array([c.slice(0, 70), c.slice(70)]) for c in cols]
    data, offsets = encode_rows(chunked, types)
    buf = data.tobytes()
    assert [buf[offsets[i]:offsets[i + 1]] for i in range(200)] == [ref_encode(r, types) for r in rows]


def test_fixed_width_rows_are_the_encoded_rows_as_words() -> None:
    types = [parse_type(t) for t in ("INT", "BIGINT", "DOUBLE", "DATE", "DECIMAL(10, 2)", "TIMESTAMP(3)", "BOOLEAN")]
    values = [[1, -2, 0.5, dt.date(2024, 2, 29), decimal.Decimal("12.34"), dt.datetime(2024, 1, 1, 1, 2, 3), True],
              [None, 2**63 - 1, None, None, None, None, None],
              [-(2**31), None, -0.0, dt.date(1969, 12, 31), decimal.Decimal("-0.01"), None, False]]
    cols = [pa.array([r[i] for r in values], to_arrow_type(t)) for i, t in enumerate(types)]
    data, offsets = encode_rows(cols, types)
    words = fixed_width_rows(cols, types)
    assert words is not None and words.dtype == np.uint32
    assert words.tobytes() == data.tobytes() and words.shape == (3, len(data) // 12)
    # a variable-length field (or a non-compact decimal or timestamp): no fixed width
    assert fixed_width_rows([pa.array(["a"])], [parse_type("STRING")]) is None
    assert fixed_width_rows([pa.array([decimal.Decimal(1)], pa.decimal128(30, 0))], [parse_type("DECIMAL(30, 0)")]) \
        is None
