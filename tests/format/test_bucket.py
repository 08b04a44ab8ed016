"""The fixed-bucket hash: murmur3 x86_32 (seed 42) over BinaryRow bytes, Java's truncating remainder."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.format.binary_row import encode_rows, serialize_row
from paimon_ds.format.bucket import bucket_ids, hash_rows, row_hashes
from paimon_ds.schema.types import DataType, parse_type, to_arrow_type

from .test_binary_row import ref_encode

EPOCH = dt.datetime(1970, 1, 1)
CTX = decimal.Context(prec=60)
TYPE_NAMES = ["INT", "BIGINT", "STRING", "DECIMAL(10, 2)", "DECIMAL(30, 5)", "TIMESTAMP(3)", "TIMESTAMP(6)",
              "SMALLINT", "BOOLEAN", "DATE"]


def java_bucket(h: int, n: int) -> int:
    """Java's Math.abs(hash % n): the remainder truncates toward zero."""
    return abs(int(math.fmod(h, n)))


def _value(rng: random.Random, name: str) -> Any:
    if rng.random() < 0.15:
        return None
    if name == "INT":
        return rng.randint(-(2**31), 2**31 - 1)
    if name == "BIGINT":
        return rng.randint(-(2**63), 2**63 - 1)
    if name == "SMALLINT":
        return rng.randint(-(2**15), 2**15 - 1)
    if name == "STRING":
        return "".join(rng.choice("abcxyz019 -é中😀") for _ in range(rng.randint(0, 40)))
    if name == "DECIMAL(10, 2)":
        return decimal.Decimal(rng.randint(-(10**10) + 1, 10**10 - 1)).scaleb(-2, CTX)
    if name == "DECIMAL(30, 5)":
        return decimal.Decimal(rng.randint(-(10**30) + 1, 10**30 - 1)).scaleb(-5, CTX)
    if name == "TIMESTAMP(3)":
        return EPOCH + dt.timedelta(milliseconds=rng.randint(-4 * 10**12, 4 * 10**12))
    if name == "TIMESTAMP(6)":
        return EPOCH + dt.timedelta(microseconds=rng.randint(-4 * 10**15, 4 * 10**15))
    if name == "BOOLEAN":
        return rng.random() < 0.5
    if name == "DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-40000, 40000))
    raise AssertionError(name)


@pytest.fixture(scope="module")
def random_batch() -> tuple[list[list[Any]], list[DataType], list[pa.Array]]:
    rng = random.Random(42)
    types = [parse_type(n) for n in TYPE_NAMES]
    rows = [[_value(rng, n) for n in TYPE_NAMES] for _ in range(2500)]
    cols = [pa.array([r[i] for r in rows], type=to_arrow_type(t)) for i, t in enumerate(types)]
    return rows, types, cols


def test_row_hashes_equal_mmh3_of_each_row(random_batch) -> None:
    rows, types, cols = random_batch
    hashes = row_hashes(cols, types)
    assert hashes.dtype == np.int32 and len(hashes) == len(rows)
    # rows encoded by the test's own reference encoder, hashed by the mmh3 library
    expected = [mmh3.hash(ref_encode(r, types), 42) for r in rows]
    assert hashes.tolist() == expected
    assert expected[:50] == [mmh3.hash(serialize_row(r, types)[4:], 42) for r in rows[:50]]


@pytest.mark.parametrize("width", [1, 2, 3, 5])
def test_row_hashes_on_key_subsets(random_batch, width: int) -> None:
    # bucket keys of different widths (and so different row lengths) hash like the whole row does
    rows, types, cols = random_batch
    idx = list(range(width))
    hashes = row_hashes([cols[i] for i in idx], [types[i] for i in idx])
    expected = [mmh3.hash(ref_encode([r[i] for i in idx], [types[i] for i in idx]), 42) for r in rows]
    assert hashes.tolist() == expected


def test_hash_rows_of_rows_with_different_lengths() -> None:
    # strings of lengths 0..40 give rows of 16..56 bytes in one batch: the ragged word loop
    types = [parse_type("STRING")]
    values = ["x" * n for n in range(41)] + [None]
    data, offsets = encode_rows([pa.array(values)], types)
    assert len(set(np.diff(offsets).tolist())) > 1
    assert hash_rows(data, offsets).tolist() == [mmh3.hash(serialize_row([v], types)[4:], 42) for v in values]


@pytest.mark.parametrize(("type_name", "values"), [
    ("BIGINT", [0, 1, -1, 2**63 - 1, -(2**63), 123456789012345]),  # no nulls: zero header words, mixed once
    ("BIGINT", [None, None]),  # all null: the header word differs from zero in every row
    ("INT", [7, None, -7, 0]),
    ("STRING", ["", "a", "abcdefg", None]),  # short strings inline: rows of one length
])
def test_hash_rows_of_rows_of_one_length(type_name: str, values: list) -> None:
    types = [parse_type(type_name)]
    data, offsets = encode_rows([pa.array(values, to_arrow_type(types[0]))], types)
    assert len(set(np.diff(offsets).tolist())) == 1
    assert hash_rows(data, offsets).tolist() == [mmh3.hash(serialize_row([v], types)[4:], 42) for v in values]


@pytest.mark.parametrize("n", [1, 3, 7, 16])
def test_bucket_ids_use_java_remainder(random_batch, n: int) -> None:
    rows, types, cols = random_batch
    key = [cols[0], cols[2]]
    key_types = [types[0], types[2]]
    got = bucket_ids(key, key_types, n)
    expected = [java_bucket(mmh3.hash(ref_encode([r[0], r[2]], key_types), 42), n) for r in rows]
    assert got.tolist() == expected
    assert got.min() >= 0 and got.max() < n
    if n > 1:
        # negative hashes exist in the sample, and for them a floor modulo would differ
        negatives = [h for h in row_hashes(key, key_types).tolist() if h < 0 and h % n != 0]
        assert negatives and any(java_bucket(h, n) != h % n for h in negatives)


def test_bucket_of_known_int_keys() -> None:
    # a single INT key: bucket = abs(java_remainder(mmh3(BinaryRow(k)), n)); spelled out for k = 0..9
    types = [parse_type("INT")]
    keys = list(range(10))
    expected = []
    for k in keys:
        row = bytes(8) + k.to_bytes(4, "little", signed=True) + bytes(4)  # header word, then the slot
        expected.append(java_bucket(mmh3.hash(row, 42), 4))
    assert bucket_ids([pa.array(keys, pa.int32())], types, 4).tolist() == expected
