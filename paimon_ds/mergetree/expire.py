"""Record-level expiration (Paimon's RecordLevelExpire): `record-level.expire-time` with `record-level.time-field`.

As in Paimon, only compaction expires records: the records a compaction reads are dropped when their time field
is older than now minus the expire time (batch and stream reads see every record until a compaction rewrites its
file). The time field is INT (epoch seconds), BIGINT (seconds; milliseconds from 10^12 on, Paimon 1.x; always
milliseconds with Paimon 0.9's `record-level.time-field-type` = millis-long) or TIMESTAMP / TIMESTAMP_LTZ; a null
time never expires (Paimon 1.x; 0.9 failed on it). Paimon 1.x also rewrites, rather than moves up a level, a
file whose smallest time (its value stats) is expired, and a full compaction of a bucket already compacted into
one file rewrites that file then: expired_file.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.binary_row import deserialize_row
from ..manifest.meta import DataFileMeta

if TYPE_CHECKING:
    from ..store.file_store import FileStore

MILLIS_FROM = 1_000_000_000_000  # Paimon 1.x: a BIGINT time at least this large is in milliseconds


class RecordExpiry:
    def __init__(self, table: FileStore, field: str, expire_seconds: int, field_type: str | None) -> None:
        self.table = table
        self.field = table.table_schema.field(field)
        self.expire_seconds = expire_seconds
        self.field_type = field_type  # Paimon 0.9's record-level.time-field-type
        self.now = int(time.time())  # Java: System.currentTimeMillis() / 1000 when the compaction reader opens

    @staticmethod
    def of(table: FileStore) -> RecordExpiry | None:
        """The table's record expiry (None: `record-level.expire-time` unset)."""
        millis = table.options.get("record-level.expire-time")
        if millis is None:
            return None
        field = table.options.get("record-level.time-field")
        if field is None:
            raise ValueError("You should set time field for record-level expire.")
        return RecordExpiry(table, field, millis // 1000, table.options.get("record-level.time-field-type"))

    def seconds(self, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(epoch seconds, valid) of time field values, as Paimon converts them."""
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        root = self.field.type.root
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            unit = values.type.unit
            raw = values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
            per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
            millis = raw * 1000 if per_ms is None else np.floor_divide(raw, per_ms)
            return _java_div(millis, 1000), valid
        raw = values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        if root == "BIGINT":
            if self.field_type == "millis-long":
                return _java_div(raw, 1000), valid
            return np.where(raw >= MILLIS_FROM, _java_div(raw, 1000), raw), valid
        return raw, valid

    def keep(self, kv: pa.Table) -> pa.Table:
        """The records of ``kv`` (a compaction's input) that have not expired."""
        if kv.num_rows == 0:
            return kv
        col = kv.column(self.field.name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        secs, valid = self.seconds(col)
        alive = ~valid | (self.now <= secs + self.expire_seconds)
        return kv if alive.all() else kv.filter(pa.array(alive))

    def expired_file(self, f: DataFileMeta) -> bool:
        """Whether the file's smallest time (value stats) has expired (unknown: no)."""
        schema = self.table.schema_by_id(f.schema_id)
        fields = list(schema.fields)
        if f.value_stats_cols is not None:
            by_name = {x.name: x for x in fields}
            fields = [by_name[c] for c in f.value_stats_cols if c in by_name]
        position = next((i for i, x in enumerate(fields) if x.id == self.field.id), None)
        if position is None or fields[position].type.root != self.field.type.root:
            return False
        try:
            low = deserialize_row(f.value_stats.min_values, [x.type for x in fields])[position]
        except Exception:  # noqa: BLE001 - unreadable stats: not known to be expired
            return False
        if low is None:
            return False
        arr = pa.array([low], self._arrow_type())
        secs, _ = self.seconds(arr)
        return bool(self.now - self.expire_seconds > secs[0])

    def _arrow_type(self) -> pa.DataType:
        return self.table.arrow_schema().field(self.field.name).type


def _java_div(a: np.ndarray, b: int) -> np.ndarray:
    """Java's long division: truncates toward zero."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)
