"""Rows of any Paimon type written and read by Java Paimon 0.9 itself, value by value, for exact comparisons.

The oracle's Arrow bridge cannot carry every type (it builds timestamps before 1970 with a negative
nano-of-millisecond, which Paimon refuses, and has no TIME, MULTISET or nanosecond path it handles
everywhere), so these scripts build Paimon's own `BinaryRow`s in the oracle's JVM field by field with
`BinaryRowWriter` (which also keeps TINYINT, SMALLINT and FLOAT typed across py4j: a boxed Byte crossing
py4j becomes a Python int) and read rows back through Paimon's `TableRead`, field by field.

Values cross in a *plain* form that both sides compute exactly (``plain_column`` here, ``plain_of``
in the JVM script): timestamps as epoch nanoseconds (Python ints, any year), TIME as milliseconds of
the day, DATE as epoch days, DECIMAL as its plain string, binaries as hex, floats as floats ("NaN",
"Infinity" as strings), MAP and MULTISET as lists of [key, value] pairs, ROW as a list of its fields.
"""

from __future__ import annotations

import json
import math
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa

_PER_NANO = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _plain_float(v: float | None) -> Any:
    if v is None:
        return None
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def plain_column(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The plain form of every value of an Arrow column (see the module docstring)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_timestamp(t):
        per = _PER_NANO[t.unit]
        return [None if v is None else v * per for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_time(t):
        ints = arr.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).to_pylist()
        per_ms = {"s": 1 / 1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        return [None if v is None else int(v // per_ms) if per_ms >= 1 else v * 1000 for v in ints]
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_decimal(t):
        return [None if v is None else format(v, "f") for v in arr.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if v is None else v.hex() for v in arr.to_pylist()]
    if pa.types.is_float32(t):  # as a float32 value, whichever double spelled it
        return [_plain_float(None if v is None else _f32(v)) for v in arr.to_pylist()]
    if pa.types.is_floating(t):
        return [_plain_float(v) for v in arr.to_pylist()]
    if pa.types.is_struct(t):
        children = [plain_column(arr.field(i)) for i in range(t.num_fields)]
        valid = arr.is_valid().to_pylist()
        return [[c[i] for c in children] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_map(t):
        keys, items = plain_column(arr.keys), plain_column(arr.items)
        offsets, valid = arr.offsets.to_pylist(), arr.is_valid().to_pylist()
        base = offsets[0]
        return [[[keys[j - base], items[j - base]] for j in range(offsets[i], offsets[i + 1])] if valid[i] else None
                for i in range(len(arr))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = plain_column(arr.values)
        offsets, valid = arr.offsets.to_pylist(), arr.is_valid().to_pylist()
        base = offsets[0]
        return [values[offsets[i] - base:offsets[i + 1] - base] if valid[i] else None for i in range(len(arr))]
    return arr.to_pylist()


def plain_rows(table: pa.Table) -> list[list[Any]]:
    """The plain form of a table, row by row."""
    columns = [plain_column(c) for c in table.columns]
    return [list(r) for r in zip(*columns)] if columns else []


def row_differences(got: list[list[Any]], want: list[list[Any]], names: list[str] | None = None) -> list[str]:
    """The cells where two lists of plain rows differ, readably (for assertion messages)."""
    out = [f"{len(got)} rows against {len(want)}"] if len(got) != len(want) else []
    for n, (a, b) in enumerate(zip(got, want)):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                out.append(f"row {n} column {names[i] if names else i}: {x!r} != {y!r}")
    return out


def sort_plain(rows: list[list[Any]]) -> list[list[Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def as_spark_reads(values: list[Any], t: pa.DataType) -> list[Any]:
    """Plain values of Arrow type ``t`` as Spark reads them: nanosecond timestamps truncated (floored) to
    microseconds, nested ones too (Spark holds microseconds only, as Paimon's Spark connector reads them)."""
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return [None if v is None else v - v % 1000 for v in values]
    if pa.types.is_struct(t):
        columns = [as_spark_reads([None if v is None else v[i] for v in values], t.field(i).type)
                   for i in range(t.num_fields)]
        return [None if v is None else [c[n] for c in columns] for n, v in enumerate(values)]
    if pa.types.is_map(t):
        return [None if v is None else [[as_spark_reads([k], t.key_type)[0], as_spark_reads([x], t.item_type)[0]]
                                        for k, x in v] for v in values]
    if pa.types.is_list(t):
        return [None if v is None else as_spark_reads(v, t.value_type) for v in values]
    return values


def spark_rows(rows: list[list[Any]], schema: pa.Schema) -> list[list[Any]]:
    """Plain rows of a table of ``schema`` as Spark reads them (see as_spark_reads)."""
    columns = [as_spark_reads([r[i] for r in rows], f.type) for i, f in enumerate(schema)]
    return [list(r) for r in zip(*columns)] if columns else []


def arrow_from_plain(values: list[Any], t: pa.DataType) -> pa.Array:
    """Plain values back to an Arrow column of type ``t`` (for tests that build data from plain rows)."""
    if pa.types.is_timestamp(t):
        per = _PER_NANO[t.unit]
        return pa.array([None if v is None else v // per for v in values], pa.int64()).cast(t)
    if pa.types.is_time32(t):
        return pa.array(values, pa.int32()).cast(t) if t.unit == "ms" else pa.array(
            [None if v is None else v // 1000 for v in values], pa.int32()).cast(t)
    if pa.types.is_time64(t):
        per = {"us": 1000, "ns": 1_000_000}[t.unit]
        return pa.array([None if v is None else v * per for v in values], pa.int64()).cast(t)
    if pa.types.is_date32(t):
        return pa.array(values, pa.int32()).cast(t)
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else Decimal(v) for v in values], t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.array([None if v is None else bytes.fromhex(v) for v in values], t)
    if pa.types.is_floating(t):
        return pa.array([float(v) if isinstance(v, str) else v for v in values], t)
    if pa.types.is_struct(t):
        children = [arrow_from_plain([None if v is None else v[i] for v in values], t.field(i).type)
                    for i in range(t.num_fields)]
        mask = pa.array([v is None for v in values])
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_map(t):
        offsets = [0]
        for v in values:
            offsets.append(offsets[-1] + len(v or []))
        pairs = [p for v in values for p in (v or [])]
        keys = arrow_from_plain([p[0] for p in pairs], t.key_type)
        items = arrow_from_plain([p[1] for p in pairs], t.item_type)
        mask = pa.array([v is None for v in values])
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=t, mask=mask)
    if pa.types.is_list(t):
        offsets = [0]
        for v in values:
            offsets.append(offsets[-1] + len(v or []))
        inner = arrow_from_plain([x for v in values for x in (v or [])], t.value_type)
        mask = pa.array([v is None for v in values])
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), inner, type=t, mask=mask)
    return pa.array(values, t)


def arrow_table_from_plain(rows: list[list[Any]], schema: pa.Schema) -> pa.Table:
    columns = [arrow_from_plain([r[i] for r in rows], f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


# Runs in the Java oracle (java_oracle.exec). Defines:
#   jtype(json_type) -> Paimon DataType; create_table(fields, pk, partition, options)
#   write_rows(rows, kinds=None): one commit of plain rows (kinds: "+I", "-D", ... per row)
#   read_rows(snapshot=None) -> plain rows of the table as Java reads it
JAVA_ROWS = r'''
import json
import struct
from pypaimon.py4j.java_gateway import get_gateway

J = jvm.org.apache.paimon
D = J.data
GW = get_gateway()
JSON_NODE = jvm.java.lang.Class.forName("org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode")
MILLIS_PER_DAY = 86400000


def jtype(obj):
    node = J.utils.JsonSerdeUtil.asSpecificNodeType(json.dumps(obj), JSON_NODE)
    return J.types.DataTypeJsonParser.parseDataType(node)


def root(t):
    return str(t.getTypeRoot().name())


def precision(t):
    return t.getPrecision()  # TimestampType, LocalZonedTimestampType


def children(t):
    return list(t.getFieldTypes())  # a RowType's field types


def create_table(fields, pk=(), partition=(), options=None):
    catalog._j_catalog.createDatabase(ident.split(".")[0], True)
    b = J.schema.Schema.newBuilder()
    for name, typ in fields:
        b.column(name, jtype(typ))
    if pk:
        keys = jvm.java.util.ArrayList()
        for k in pk:
            keys.add(k)
        b.primaryKey(keys)
    if partition:
        parts = jvm.java.util.ArrayList()
        for k in partition:
            parts.add(k)
        b.partitionKeys(parts)
    for k, v in (options or {}).items():
        b.option(k, v)
    catalog._j_catalog.createTable(J.catalog.Identifier.fromString(ident), b.build(), False)


def jfloat(v):
    return float(v) if isinstance(v, str) else v


def write_value(w, pos, t, v, in_array):
    r = root(t)
    if v is None:
        if in_array:
            w.setNullAt(pos, t)
        else:
            w.setNullAt(pos)
        return
    if r == "BOOLEAN":
        w.writeBoolean(pos, v)
    elif r == "TINYINT":
        w.writeByte(pos, v)
    elif r == "SMALLINT":
        w.writeShort(pos, v)
    elif r in ("INTEGER", "DATE", "TIME_WITHOUT_TIME_ZONE"):
        w.writeInt(pos, v)
    elif r == "BIGINT":
        w.writeLong(pos, v)
    elif r == "FLOAT":
        w.writeFloat(pos, jfloat(v))
    elif r == "DOUBLE":
        w.writeDouble(pos, jfloat(v))
    elif r in ("CHAR", "VARCHAR"):
        w.writeString(pos, D.BinaryString.fromString(v))
    elif r in ("BINARY", "VARBINARY"):
        w.writeBinary(pos, bytearray(bytes.fromhex(v)))
    elif r == "DECIMAL":
        p, s = t.getPrecision(), t.getScale()
        w.writeDecimal(pos, D.Decimal.fromBigDecimal(jvm.java.math.BigDecimal(v), p, s), p)
    elif r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        w.writeTimestamp(pos, D.Timestamp.fromEpochMillis(v // 1000000, v % 1000000), precision(t))
    elif r == "ARRAY":
        e = t.getElementType()
        w.writeArray(pos, make_array(e, v), D.serializer.InternalArraySerializer(e))
    elif r == "MAP":
        k, val = t.getKeyType(), t.getValueType()
        w.writeMap(pos, make_map(k, val, v), D.serializer.InternalMapSerializer(k, val))
    elif r == "MULTISET":
        e, count = t.getElementType(), J.types.DataTypes.INT().copy(False)
        w.writeMap(pos, make_map(e, count, v), D.serializer.InternalMapSerializer(e, count))
    elif r == "ROW":
        w.writeRow(pos, make_row(children(t), v), D.serializer.InternalRowSerializer(t))
    else:
        raise ValueError("no writer for " + str(t))


def make_row(types, values, kind=None):
    row = D.BinaryRow(len(types))
    w = D.BinaryRowWriter(row)
    if kind is not None:
        w.writeRowKind(kind)
    for i, (t, v) in enumerate(zip(types, values)):
        write_value(w, i, t, v, False)
    w.complete()
    return row


def make_array(t, values):
    arr = D.BinaryArray()
    w = D.BinaryArrayWriter(arr, len(values), D.BinaryArray.calculateFixLengthPartSize(t))
    for i, v in enumerate(values):
        write_value(w, i, t, v, True)
    w.complete()
    return arr


def make_map(kt, vt, pairs):
    return D.BinaryMap.valueOf(make_array(kt, [p[0] for p in pairs]), make_array(vt, [p[1] for p in pairs]))


KINDS = {"+I": "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}


def write_rows(rows, kinds=None, io_dir=None):
    t = catalog.get_table(ident)._j_table
    types = children(t.rowType())
    wb = jvm.InvocationUtil.getBatchWriteBuilder(t)
    w = wb.newWrite()
    if io_dir is not None:
        w = w.withIOManager(J.disk.IOManager.create(io_dir))
    c = wb.newCommit()
    for n, values in enumerate(rows):
        kind = getattr(J.types.RowKind, KINDS[kinds[n]]) if kinds else None
        w.write(make_row(types, values, kind))
    c.commit(w.prepareCommit())
    w.close()
    c.close()


def jfloat_out(v):
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def plain_of(data, pos, t):
    """The plain value at ``pos`` of a Paimon InternalRow or InternalArray."""
    if data.isNullAt(pos):
        return None
    r = root(t)
    if r == "BOOLEAN":
        return data.getBoolean(pos)
    if r == "TINYINT":
        return data.getByte(pos)
    if r == "SMALLINT":
        return data.getShort(pos)
    if r in ("INTEGER", "DATE", "TIME_WITHOUT_TIME_ZONE"):
        return data.getInt(pos)
    if r == "BIGINT":
        return data.getLong(pos)
    if r == "FLOAT":  # py4j hands a float over as its shortest decimal: back to the float32 value
        return jfloat_out(struct.unpack("<f", struct.pack("<f", data.getFloat(pos)))[0])
    if r == "DOUBLE":
        return jfloat_out(data.getDouble(pos))
    # a cast that gives null (a DECIMAL too large for its precision) reads as null through a not-null position
    if r in ("CHAR", "VARCHAR"):
        v = data.getString(pos)
        return None if v is None else v.toString()
    if r in ("BINARY", "VARBINARY"):
        v = data.getBinary(pos)
        return None if v is None else bytes(v).hex()
    if r == "DECIMAL":
        v = data.getDecimal(pos, t.getPrecision(), t.getScale())
        return None if v is None else format(v.toBigDecimal(), "f")
    if r in ("TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
        ts = data.getTimestamp(pos, precision(t))
        return None if ts is None else ts.getMillisecond() * 1000000 + ts.getNanoOfMillisecond()
    if r == "ARRAY":
        a, e = data.getArray(pos), t.getElementType()
        return [plain_of(a, i, e) for i in range(a.size())]
    if r in ("MAP", "MULTISET"):
        m = data.getMap(pos)
        kt = t.getKeyType() if r == "MAP" else t.getElementType()
        vt = t.getValueType() if r == "MAP" else J.types.DataTypes.INT()
        ks, vs = m.keyArray(), m.valueArray()
        return [[plain_of(ks, i, kt), plain_of(vs, i, vt)] for i in range(m.size())]
    if r == "ROW":
        fields = children(t)
        inner = data.getRow(pos, len(fields))
        return [plain_of(inner, i, f) for i, f in enumerate(fields)]
    raise ValueError("no reader for " + str(t))


def read_rows(snapshot=None):
    t = catalog.get_table(ident)._j_table
    if snapshot is not None:
        t = t.copy({"scan.snapshot-id": str(snapshot)})
    types = children(t.rowType())
    rb = jvm.InvocationUtil.getReadBuilder(t)
    read = rb.newRead()
    out = []
    for split in rb.newScan().plan().splits():
        it = J.reader.RecordReaderIterator(read.createReader(split))  # (py4j misses default methods)
        while it.hasNext():
            row = it.next()
            out.append([plain_of(row, i, f) for i, f in enumerate(types)])
        it.close()
    return out
'''


def java_script(body: str, **values: Any) -> str:
    """A script for java_oracle.exec: the JAVA_ROWS helpers, then ``values`` as globals (via JSON), then
    ``body``."""
    head = "".join(f"{k} = json.loads({json.dumps(json.dumps(v))})\n" for k, v in values.items())
    return JAVA_ROWS + head + body


def java_read_plain(java_oracle, path: str, snapshot: int | None = None) -> list[list[Any]]:
    out = java_oracle.exec(path, java_script("print(json.dumps(read_rows(SNAPSHOT)))", SNAPSHOT=snapshot))
    return json.loads(out.strip().splitlines()[-1])


def canonical(rows: list[dict[str, Any]], unordered: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows (dicts with an ``id``) sorted by id, with the list values of ``unordered`` columns (collect_set's
    and the like, whose order no engine fixes) sorted too: two readers' rows compare equal when they agree."""
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        r = dict(r)
        for c in unordered:
            if r.get(c) is not None:
                r[c] = sorted(r[c], key=repr)
        out.append(r)
    return out
