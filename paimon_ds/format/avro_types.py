"""Paimon's mapping of types to Avro, and the conversions between Arrow columns and Avro's plain values.

Avro follows Paimon's own mapping (its AvroSchemaConverter), so that Paimon reads what we write and we read
what it writes: nullable columns are unions `["null", T]`; TINYINT/SMALLINT/INT are `int`; DATE is
`int`/date; TIME is `int`/time-millis; TIMESTAMP(p) is `long`/timestamp-millis (p <= 3) or timestamp-micros
(p <= 6) and TIMESTAMP_LTZ the local-timestamp-* of the same; DECIMAL is `bytes`/decimal (big-endian two's
complement of the unscaled value); ROW is a record named after its path
(`org.apache.paimon.avro.generated.record_<field>...`); ARRAY is an array; MAP with a string key is an Avro
map and any other MAP an array of `{key, value}` records marked with logicalType `map`.

Values cross as plain ints, longs and bytes (logical types stripped, see avro_file): `plain_values` lowers an
Arrow column to them, vectorised, and `with_logical_types` lifts the plain column read back to its Arrow type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

AVRO_ROOT_RECORD = "org.apache.paimon.avro.generated.record"


# ---------------------------------------------------------------------------------------------- schemas

def avro_schema(arrow_schema: pa.Schema) -> list[Any]:
    """Paimon's Avro schema of a data file with these columns (Arrow nullability = Paimon's); the row itself
    is nullable, as the row type Paimon converts."""
    return ["null", _avro_type(pa.struct(list(arrow_schema)), AVRO_ROOT_RECORD)]


def _avro_nullable(schema: Any, nullable: bool) -> Any:
    return ["null", schema] if nullable else schema


def _avro_type(t: pa.DataType, row_name: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t):
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        return {"type": "long", "logicalType": f"{'local-' if t.tz else ''}timestamp-{unit}"}
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_struct(t):
        return {"type": "record", "name": row_name, "fields": [
            {"name": f.name, "type": _avro_nullable(_avro_type(f.type, f"{row_name}_{f.name}"), f.nullable),
             **({"default": None} if f.nullable else {})} for f in t]}
    if pa.types.is_map(t):
        value = _avro_nullable(_avro_type(t.item_type, f"{row_name}_value" if not _string_key(t) else row_name),
                               t.item_field.nullable)
        if _string_key(t):
            return {"type": "map", "values": value}
        key = _avro_nullable(_avro_type(t.key_type, f"{row_name}_key"), t.key_field.nullable)
        entry = {"type": "record", "name": row_name, "fields": [
            {"name": "key", "type": key}, {"name": "value", "type": value, **(
                {"default": None} if t.item_field.nullable else {})}]}
        return {"type": "array", "items": entry, "logicalType": "map"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _avro_nullable(_avro_type(t.value_type, row_name), t.value_field.nullable)}
    raise ValueError(f"Avro data files cannot hold {t}")


def _string_key(t: pa.MapType) -> bool:
    return pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)


def non_null(schema: Any) -> tuple[Any, bool]:
    """(the non-null branch of a `["null", T]` union, nullable)."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise ValueError(f"unsupported Avro union {schema!r}")
        return branches[0], len(branches) != len(schema)
    return schema, False


def strip_logical_types(schema: Any) -> Any:
    """An Avro schema with every logicalType removed: fastavro then hands over plain ints and bytes."""
    if isinstance(schema, dict):
        out = {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
        if "fields" in out:
            out["fields"] = [{**f, "type": strip_logical_types(f["type"])} for f in schema["fields"]]
        return out
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    return schema


def plain_arrow_type(schema: Any) -> pa.DataType:
    """The Arrow type holding fastavro's plain values of ``schema`` (logical types not applied yet)."""
    s, _ = non_null(schema)
    name = s if isinstance(s, str) else s["type"]
    if name in ("int", "long", "float", "double", "boolean", "string", "bytes"):
        return {"int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
                "boolean": pa.bool_(), "string": pa.string(), "bytes": pa.binary()}[name]
    if name == "record":
        return pa.struct([pa.field(f["name"], plain_arrow_type(f["type"])) for f in s["fields"]])
    if name == "array":
        return pa.list_(plain_arrow_type(s["items"]))
    if name == "map":
        return pa.map_(pa.string(), plain_arrow_type(s["values"]))
    if name == "fixed":
        return pa.binary()
    raise ValueError(f"unsupported Avro type {s!r}")


# ---------------------------------------------------------------------------------------------- reading

def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _decimal_from_bytes(arr: pa.Array, precision: int, scale: int) -> pa.Array:
    """Big-endian two's complement unscaled values (any length up to 16 bytes) -> decimal128, vectorised."""
    arr = arr.cast(pa.binary())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if n and lengths.max() > 16:
        raise ValueError(f"decimal({precision}, {scale}) value wider than 16 bytes")
    out = np.zeros((n, 16), dtype=np.uint8)
    has = lengths > 0
    negative = np.zeros(n, dtype=bool)
    negative[has] = data[offsets[:-1][has]] >= 0x80
    out[negative] = 0xFF  # sign extension
    rows = np.repeat(np.arange(n), lengths)
    pos = np.arange(offsets[0], offsets[-1])
    out[rows, 16 - lengths[rows] + (pos - offsets[rows])] = data[pos]
    little = np.ascontiguousarray(out[:, ::-1])
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.decimal128(precision, scale), n, [validity, pa.py_buffer(little.tobytes())],
                                 null_count=arr.null_count)


def with_logical_types(arr: pa.Array, schema: Any) -> pa.Array:
    """Apply ``schema``'s logical types to the plain values read (recursively into nested types)."""
    s, _ = non_null(schema)
    if isinstance(s, str):
        return arr
    logical, kind = s.get("logicalType"), s["type"]
    if kind == "record":
        children = [with_logical_types(arr.field(i), f["type"]) for i, f in enumerate(s["fields"])]
        if all(c is arr.field(i) for i, c in enumerate(children)):
            return arr
        return pa.StructArray.from_arrays(children, names=[f["name"] for f in s["fields"]], mask=_mask(arr))
    if kind == "array":
        values = with_logical_types(arr.values, s["items"])
        if logical == "map":  # Paimon's map with a non-string key: an array of {key, value} records
            return pa.MapArray.from_arrays(arr.offsets, values.field(0), values.field(1), mask=_mask(arr))
        return arr if values is arr.values else pa.ListArray.from_arrays(arr.offsets, values, mask=_mask(arr))
    if kind == "map":
        items = with_logical_types(arr.items, s["values"])
        return arr if items is arr.items else pa.MapArray.from_arrays(arr.offsets, arr.keys, items, mask=_mask(arr))
    if logical == "date":
        return arr.cast(pa.date32())
    if logical == "time-millis":
        return arr.cast(pa.time32("ms"))
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        unit = "ms" if logical.endswith("millis") else "us"
        return arr.cast(pa.timestamp(unit, tz="UTC" if logical.startswith("local") else None))
    if logical == "decimal":
        return _decimal_from_bytes(arr, s["precision"], s.get("scale", 0))
    return arr


# ---------------------------------------------------------------------------------------------- writing

def _decimal_to_bytes(arr: pa.Array) -> pa.Array:
    """decimal128 -> minimal big-endian two's complement bytes of the unscaled value, vectorised."""
    arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale)) if arr.type.bit_width != 128 else arr
    n = len(arr)
    little = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=n * 16, offset=arr.offset * 16).reshape(n, 16)
    big = little[:, ::-1]
    sign = np.where(big[:, 0] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    # a leading byte is redundant when it only repeats the sign and the next byte carries the sign bit
    redundant = (big[:, :15] == sign[:, None]) & ((big[:, 1:] & 0x80) == (sign[:, None] & 0x80))
    lead = np.cumprod(redundant, axis=1).sum(axis=1)
    keep = np.arange(16)[None, :] >= lead[:, None]
    lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), 16 - lead, 0)
    keep &= lengths[:, None] > 0
    data = big[keep].tobytes()
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    validity = arr.is_valid().buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)],
                                 null_count=arr.null_count)


def _offsets(arr: pa.Array) -> pa.Array:
    """The offsets of a list/map array, rebased so they index its ``values`` as sliced by Arrow."""
    offsets = arr.offsets
    return offsets if offsets[0].as_py() == 0 else pc.subtract(offsets, offsets[0])


def plain_values(arr: pa.Array) -> pa.Array:
    """Arrow values -> the plain values Paimon's Avro holds (ints, longs, bytes), recursively; maps become
    lists of {key, value} (avro_file turns those of string-key maps into dicts)."""
    t = arr.type
    if pa.types.is_date32(t):
        return arr.cast(pa.int32())
    if pa.types.is_time(t):
        return arr.cast(pa.time32("ms")).cast(pa.int32())
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"
        return arr.cast(pa.timestamp(unit, tz=t.tz)).cast(pa.int64())
    if pa.types.is_decimal(t):
        return _decimal_to_bytes(arr)
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([plain_values(c) for c in arr.flatten()], names=[f.name for f in t],
                                          mask=_mask(arr))
    if pa.types.is_map(t):
        entries = pa.StructArray.from_arrays([plain_values(arr.keys), plain_values(arr.items)], names=["key", "value"])
        return pa.ListArray.from_arrays(_offsets(arr), entries, mask=_mask(arr))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.ListArray.from_arrays(_offsets(arr), plain_values(arr.values), mask=_mask(arr))
    return arr
