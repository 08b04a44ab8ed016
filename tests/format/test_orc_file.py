"""ORC data files (paimon_ds.format.orc_file): TIME as Paimon's INT of milliseconds, sliced nested input, and the
pre-1970 fractional timestamps pyarrow's writer cannot store as Java reads them. The tail-level corrections
(CHAR, writer time zones) are paimon_ds.format.orc's, tested in interop/test_orc_timezones.py."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest
from interop.test_oracles import rows

import paimon_ds
from paimon_ds.format.orc_file import OrcFileReader, OrcFileWriter, has_pre_epoch_fraction
from paimon_ds.schema.types import parse_type


def test_time_is_an_int_of_millis():
    schema = pa.schema([("id", pa.int32()), ("t", pa.time32("ms")),
                        ("l", pa.list_(pa.struct([("t", pa.time32("ms"))])))])
    data = pa.table({"id": [1, 2, 3], "t": [dt.time(1, 2, 3, 4000), None, dt.time(0)],
                     "l": [[{"t": dt.time(0, 0, 1)}], None, []]}, schema=schema)
    buf = io.BytesIO()
    w = OrcFileWriter(buf, schema, "zstd")
    w.write(data.slice(0, 1))
    w.write(data.slice(1))  # sliced struct columns: written as a compact copy
    w.close()
    buf.seek(0)
    assert po.ORCFile(buf).schema.field("t").type == pa.int32()
    buf.seek(0)
    types = {"id": parse_type("INT"), "t": parse_type("TIME(3)"), "l": parse_type(
        {"type": "ARRAY", "element": {"type": "ROW", "fields": [{"id": 3, "name": "t", "type": "TIME(3)"}]}})}
    reader = OrcFileReader(buf, types)
    assert pa.Table.from_batches(list(reader.iter_batches(["l", "t", "id"], 2))).to_pylist() == \
        data.select(["l", "t", "id"]).to_pylist()


def test_pre_epoch_fractions_are_found_nested():
    before = pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 500000)], pa.timestamp("us"))
    whole = pa.array([dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(2024, 1, 1, 0, 0, 0, 1)], pa.timestamp("us"))
    assert has_pre_epoch_fraction(before) and not has_pre_epoch_fraction(whole)
    assert has_pre_epoch_fraction(pa.chunked_array([pa.ListArray.from_arrays([0, 1], before)]))
    assert not has_pre_epoch_fraction(pa.StructArray.from_arrays([whole], names=["ts"]))


def test_orc_refuses_pre_epoch_fractions(table_path):
    """pyarrow's ORC writer gives timestamps before 1970 with a sub-second part negative nanoseconds, which Java
    Paimon's ORC reader rejects (IllegalArgumentException): such rows are refused, nothing is committed."""
    data = rows(range(3)).select(["id", "ts"])
    t = paimon_ds.Table.for_write(table_path, data.schema, {"file.format": "orc"})
    w = t.new_write()
    with pytest.raises(ValueError, match="'ts' has timestamps before 1970 with a fraction of a second"):
        w.write_arrow(data)
        w.prepare_commit()
    assert not (Path(table_path) / "snapshot").exists()
