"""Serialized keys of the cross-partition index (paimon_ds/index/keys.py): assigner channels are Paimon's key hash."""

from __future__ import annotations

from paimon_ds.index.keys import encode_keys, key_channels, row_channels
from tests.index.test_cross_partition import (
    batch,
    create_table,
)


def test_channels_are_paimons_key_hash(tmp_path):
    """row_channels (input rows) and key_channels (bootstrap keys) agree: abs(BinaryRow hash % n)."""
    from paimon_ds.format.bucket import bucket_ids
    table = create_table(str(tmp_path / "t"))
    rows = batch(*[(k % 3, k * 7919 - 50_000, k) for k in range(500)])
    for n in (1, 2, 5):
        by_rows = row_channels(table.table_schema, rows, n)
        by_keys = key_channels(encode_keys(rows, ["pk"], [table.table_schema.field("pk").type]), n)
        assert by_rows.tolist() == by_keys.tolist()
        assert by_rows.tolist() == bucket_ids([rows.column(1)], [table.table_schema.field("pk").type], n).tolist()
        assert set(by_rows.tolist()) == set(range(n))
