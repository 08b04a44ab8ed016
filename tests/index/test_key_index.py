"""The on-disk key index (paimon_ds/index/key_index.py): KeyIndex lookups and writes, and KeyIndexLoader's
external sort (all in memory, or spilled sorted runs merged into the index)."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds.format.binary_row import serialize_row
from paimon_ds.index.cross_partition import (
    BOOTSTRAP_SCHEMA,
)
from paimon_ds.index.key_index import KeyIndex
from paimon_ds.index.keys import KeySet, encode_keys
from paimon_ds.operation.index_bootstrap import GlobalIndexAssigner
from tests.index.test_cross_partition import (
    create_table,
    stats_by_value,
)


@pytest.mark.parametrize("buffer", [1 << 30, 300_000])
def test_bootstrap_load_sorts_externally(tmp_path, buffer):
    """Bootstrap keys arrive in any order and in pieces: loaded at once (all in the buffer) or spilled as
    sorted runs per key length and k-way merged into the index; a key given twice fails, even across runs."""
    table = create_table(str(tmp_path / "t"), pa.schema([pa.field("pt", pa.int32()),
                                                         pa.field("pk", pa.string(), nullable=False)]))
    rng = np.random.default_rng(2)
    ids = rng.permutation(60_000)
    names = [("k" * (i % 3 * 6)) + str(i) for i in ids.tolist()]  # 8, 16 and 24-byte keys, inline or not
    keys = encode_keys(pa.RecordBatch.from_pydict({"pk": names}), ["pk"], [table.table_schema.field("pk").type])
    parts = pa.array([serialize_row([p], [table.table_schema.field("pt").type]) for p in range(4)]).take(ids % 4)
    buckets = (ids % 7).astype(np.int32)
    with GlobalIndexAssigner(table, str(tmp_path / "w"), bootstrap_buffer_bytes=buffer) as a:
        for s in range(0, len(ids), 7_000):
            a.bootstrap_keys(pa.RecordBatch.from_arrays(
                [keys.slice(s, 7_000), parts.slice(s, 7_000), pa.array(buckets[s:s + 7_000])],
                schema=BOOTSTRAP_SCHEMA))
        assert (a.loader.runs is not None) == (buffer < 1 << 20)
        a.end_bootstrap()
        assert a.loader.runs is None and not os.path.exists(os.path.join(a.directory, "runs"))
        found, packed = a.index.get(keys)
        assert found.all()
        assert [a.partition_values(v >> 32)[0] for v in packed.tolist()] == (ids % 4).tolist()
        assert (packed & 0xFFFFFFFF).tolist() == buckets.tolist()
        assert a.index.size == len(ids)
        assert stats_by_value(a) == {p: dict(Counter(b for i, b in zip(ids.tolist(), buckets.tolist()) if i % 4 == p))
                                     for p in range(4)}
    with GlobalIndexAssigner(table, str(tmp_path / "w"), bootstrap_buffer_bytes=buffer) as a:
        for s in (0, 30_000, 29_999):  # the key at 29_999 comes twice, in different runs when spilling
            a.bootstrap_keys(pa.RecordBatch.from_arrays(
                [keys.slice(s, 30_000), parts.slice(s, 30_000), pa.array(buckets[s:s + 30_000])],
                schema=BOOTSTRAP_SCHEMA).slice(0, 30_000 if s != 29_999 else 1))
        with pytest.raises(RuntimeError, match="contains duplicates"):
            a.end_bootstrap()


# ------------------------------------------------------------------------------------ store

def test_key_index_store(tmp_path):
    """Mixed key lengths in one call; replace; bulk load refuses an existing key."""
    os.makedirs(tmp_path / "i")
    idx = KeyIndex(str(tmp_path / "i"), 1 << 20)
    raw = [b"\0" * 8, b"a" * 16, b"b" * 16, b"c" * 24, b"\1" * 8, b"a" * 16]
    keys, kid = KeySet.of_array(pa.array(raw, pa.large_binary()))
    assert len(keys) == 5 and kid[1] == kid[5]
    assert keys.to_arrow().to_pylist() == [b"\0" * 8, b"\1" * 8, b"a" * 16, b"b" * 16, b"c" * 24]  # by length, bytes
    values = np.empty(5, np.int64)
    values[kid] = [1, 2, 3, 4, 5, 2]
    idx.put(keys, values, new_only=True)
    probe = pa.array([b"b" * 16, b"zz" * 8, b"\1" * 8, b"c" * 24, b"\0" * 16, b"b" * 16], pa.binary())
    found, got = idx.get(probe.slice(0))
    assert found.tolist() == [True, False, True, True, False, True] and got[found].tolist() == [3, 5, 4, 3]
    assert idx.get(probe.slice(2, 2))[1].tolist() == [5, 4]  # a slice of a buffer
    again, _ = KeySet.of_array(pa.array([b"b" * 16], pa.large_binary()))
    idx.put(again, np.array([9 << 32 | 7]))
    assert idx.get(pa.array([b"b" * 16], pa.large_binary()))[1].tolist() == [9 << 32 | 7]
    assert keys.take(np.array([1, 3])).to_arrow().to_pylist() == [b"\1" * 8, b"b" * 16]
    import sqlite3
    with pytest.raises(sqlite3.IntegrityError):
        idx.put(KeySet.of_array(pa.array([b"c" * 24], pa.large_binary()))[0], np.array([0]), new_only=True)
    with pytest.raises(ValueError, match="not a BinaryRow"):
        idx.get(pa.array([b"abc"], pa.large_binary()))
    idx.close()
