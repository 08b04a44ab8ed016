"""Paimon's fixed bucket as a Spark SQL expression, so a shuffle by bucket needs no trip to Python.

Paimon's bucket is ``abs(murmur3_32(BinaryRow(bucket key), seed 42) % numBuckets)``. Spark's ``hash()`` of
one BINARY value is murmur3_32 with seed 42 over the bytes' 4-byte little-endian words and then the tail
bytes one by one; a BinaryRow's length is a multiple of 8, so there is no tail and the two agree. The
expression below builds the key's BinaryRow bytes (format/binary_row.py has the layout) as a hex string:
  header: 8 bytes (up to 56 fields): row kind 0, bit i+8 set when field i is null;
  fixed part: an 8-byte little-endian slot per field;
  variable part: strings of more than 7 bytes and timestamps of precision > 3, each padded to 8 bytes,
  their slot holding ``offset << 32 | length`` (timestamps: ``offset << 32 | nanoOfMillisecond``; a null
  timestamp keeps its 8 zero bytes there and its offset in the slot).
Key types without an expression here (floating point, wide decimals, CHAR, nested) return None: callers
then compute the bucket in Python (format/bucket.py), which covers every type.
"""

from __future__ import annotations

from ..schema.manager import TableSchema
from ..schema.types import DataType

SLOT_HEX = 16  # hex digits of an 8-byte slot
ZERO_SLOT = "'" + "0" * SLOT_HEX + "'"
MAX_FIELDS = 55  # one 8-byte header word (bit 63 would not fit a BIGINT literal)
INT_BYTES = {"TINYINT": 1, "SMALLINT": 2, "INT": 4, "INTEGER": 4, "BIGINT": 8, "DATE": 4}


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def little_endian_hex(value_sql: str, width: int) -> str:
    """The low ``width`` bytes of a BIGINT expression, least significant first, as hex, padded to a slot.
    Spark's hex() of a BIGINT is its two's complement (so -1 is sixteen Fs)."""
    big_endian = f"lpad(hex(CAST({value_sql} AS BIGINT)), 16, '0')"
    digits = ", ".join(f"substr({big_endian}, {15 - 2 * i}, 2)" for i in range(width))
    pad = "0" * (SLOT_HEX - 2 * width)
    return f"concat({digits}, '{pad}')" if pad else f"concat({digits})"


def micros_sql(column: str, data_type: DataType) -> str:
    """Microseconds since the epoch of a TIMESTAMP_LTZ (Spark TIMESTAMP) or TIMESTAMP (Spark TIMESTAMP_NTZ)."""
    if data_type.root == "TIMESTAMP_LTZ":
        return f"unix_micros({column})"
    return f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {column})"


def floor_millis_sql(column: str, data_type: DataType) -> str:
    """Epoch milliseconds, floored (Paimon's Timestamp keeps floorDiv(micros, 1000) and the rest as nanos)."""
    micros = micros_sql(column, data_type)
    return f"(({micros} - pmod({micros}, 1000)) div 1000)"


def is_supported(data_type: DataType) -> bool:
    root = data_type.root
    if root in INT_BYTES or root in ("BOOLEAN", "VARCHAR", "VARBINARY"):
        return True
    if root == "DECIMAL":
        return data_type.precision <= 18  # compact: the unscaled long sits in the slot
    return root in ("TIMESTAMP", "TIMESTAMP_LTZ")


class _Field:
    """One key field's slot hex and variable-part hex (SQL expressions), given where the variable part is."""

    def __init__(self, column: str, data_type: DataType) -> None:
        self.column = column
        self.type = data_type

    def var_length_sql(self) -> str:
        """Bytes this field adds to the variable part (0 when null or inline)."""
        root, c = self.type.root, self.column
        if root in ("VARCHAR", "VARBINARY"):
            return f"(CASE WHEN {c} IS NULL OR octet_length({c}) <= 7 THEN 0 " \
                   f"ELSE (octet_length({c}) + 7) div 8 * 8 END)"
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and self.type.precision > 3:
            return "8"  # reserved even for a null (zeros), as Java's BinaryRowWriter does
        return "0"

    def slot_sql(self, offset_sql: str) -> str:
        root, c, t = self.type.root, self.column, self.type
        if root in INT_BYTES:
            value = f"unix_date({c})" if root == "DATE" else c
            body = little_endian_hex(value, INT_BYTES[root])
        elif root == "BOOLEAN":
            body = f"(CASE WHEN {c} THEN '01{'0' * 14}' ELSE '{'0' * 16}' END)"
        elif root == "DECIMAL":
            body = little_endian_hex(f"{c} * CAST(1{'0' * t.scale} AS DECIMAL(19, 0))", 8)
        elif root in ("VARCHAR", "VARBINARY"):
            inline = f"concat(rpad(hex({c}), 14, '0'), hex(128 + octet_length({c})))"
            pointer = little_endian_hex(f"shiftleft(CAST({offset_sql} AS BIGINT), 32) + octet_length({c})", 8)
            body = f"(CASE WHEN octet_length({c}) <= 7 THEN {inline} ELSE {pointer} END)"
        elif t.precision <= 3:  # compact timestamp: epoch milliseconds (floored)
            body = little_endian_hex(floor_millis_sql(c, t), 8)
        else:
            nanos_of_milli = f"pmod({micros_sql(c, t)}, 1000) * 1000"
            body = little_endian_hex(f"shiftleft(CAST({offset_sql} AS BIGINT), 32) + {nanos_of_milli}", 8)
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 3:
            null_slot = little_endian_hex(f"shiftleft(CAST({offset_sql} AS BIGINT), 32)", 8)
        else:
            null_slot = ZERO_SLOT
        return f"(CASE WHEN {c} IS NULL THEN {null_slot} ELSE {body} END)"

    def var_sql(self) -> str | None:
        root, c, t = self.type.root, self.column, self.type
        if root in ("VARCHAR", "VARBINARY"):
            padded = f"rpad(hex({c}), CAST((octet_length({c}) + 7) div 8 * 16 AS INT), '0')"
            return f"(CASE WHEN {c} IS NULL OR octet_length({c}) <= 7 THEN '' ELSE {padded} END)"
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 3:
            millis = little_endian_hex(floor_millis_sql(c, t), 8)
            return f"(CASE WHEN {c} IS NULL THEN {ZERO_SLOT} ELSE {millis} END)"
        return None


def binary_row_hex_sql(columns: list[str], types: list[DataType]) -> str | None:
    """The hex of the BinaryRow of ``columns`` (SQL expressions already typed as Spark holds ``types``),
    or None when a type has no expression here."""
    if len(columns) > MAX_FIELDS or not all(is_supported(t) for t in types):
        return None
    fields = [_Field(c, t) for c, t in zip(columns, types)]
    null_bits = " + ".join(f"(CASE WHEN {f.column} IS NULL THEN {1 << (i + 8)} ELSE 0 END)"
                           for i, f in enumerate(fields))
    parts = [little_endian_hex(null_bits, 8)]
    var_parts: list[str] = []
    offset_terms = [str(8 + 8 * len(fields))]  # the variable part starts after the header and the slots
    for f in fields:
        parts.append(f.slot_sql(" + ".join(offset_terms)))
        var = f.var_sql()
        if var is not None:
            var_parts.append(var)
            offset_terms.append(f.var_length_sql())
    return f"concat({', '.join(parts + var_parts)})"


def bucket_sql(schema: TableSchema, num_buckets: int, columns: dict[str, str] | None = None) -> str | None:
    """Paimon's fixed bucket of a row as a Spark SQL expression over its bucket-key columns (``columns``:
    each key's SQL expression, by default the column itself), or None when a key type needs Python."""
    keys = schema.bucket_keys
    exprs = [(columns or {}).get(k, quoted(k)) for k in keys]
    row_hex = binary_row_hex_sql(exprs, [schema.field(k).type for k in keys])
    if row_hex is None:
        return None
    return f"abs(hash(unhex({row_hex})) % {int(num_buckets)})"


# --------------------------------------------------------------------------- fixed-width keys: arithmetic
# Keys whose BinaryRow has no variable part (integers, dates, booleans, compact decimals and timestamps) are
# hashed with BIGINT arithmetic instead of building bytes: each 4-byte word of the row goes through murmur3's
# mixing, one projection per word. 32-bit products are split into 16-bit halves so that no BIGINT overflows
# (Spark's ANSI mode would raise). Several times cheaper than the hex string per row.
MASK32 = 0xFFFFFFFF
SEED = 42
C1, C2 = 0xCC9E2D51, 0x1B873593


def _mul32(a: str, c: int) -> str:
    """(a * c) mod 2**32 for 0 <= a < 2**32, without overflowing a BIGINT."""
    return f"((({a}) * {c & 0xFFFF} + shiftleft((({a}) * {c >> 16}) & 65535, 16)) & {MASK32})"


def _rotl(x: str, r: int) -> str:
    return f"((shiftleft({x}, {r}) | shiftright({x}, {32 - r})) & {MASK32})"


def _mix(h: str, word: str) -> str:
    k = _mul32(_rotl(_mul32(word, C1), 15), C2)
    return f"(({_rotl(f'({h} ^ {k})', 13)} * 5 + {0xE6546B64}) & {MASK32})"


def fixed_width(data_type: DataType) -> bool:
    root = data_type.root
    return (root in INT_BYTES or root == "BOOLEAN" or (root == "DECIMAL" and data_type.precision <= 18)
            or (root in ("TIMESTAMP", "TIMESTAMP_LTZ") and data_type.precision <= 3))


def _slot_long(column: str, data_type: DataType) -> str:
    """The slot's 8 bytes as a BIGINT (two's complement, the bytes little-endian as Java writes them)."""
    root, t = data_type.root, data_type
    if root in INT_BYTES:
        value = f"unix_date({column})" if root == "DATE" else f"CAST({column} AS BIGINT)"
        width = INT_BYTES[root]
        return value if width == 8 else f"({value} & {(1 << (8 * width)) - 1})"
    if root == "BOOLEAN":
        return f"(CASE WHEN {column} THEN 1 ELSE 0 END)"
    if root == "DECIMAL":
        return f"CAST({column} * CAST(1{'0' * t.scale} AS DECIMAL(19, 0)) AS BIGINT)"
    return floor_millis_sql(column, t)


def row_words_sql(columns: list[str], types: list[DataType]) -> list[str] | None:
    """The BinaryRow of fixed-width fields as its 4-byte little-endian words (BIGINT SQL expressions in
    [0, 2**32)), or None when a field has a variable part."""
    if len(columns) > MAX_FIELDS or not all(fixed_width(t) for t in types):
        return None
    null_bits = " + ".join(f"(CASE WHEN {c} IS NULL THEN {1 << (i + 8)} ELSE 0 END)"
                           for i, c in enumerate(columns))
    header = f"CAST({null_bits} AS BIGINT)"  # (an INT would shift by 32 mod 32)
    words = [f"({header} & {MASK32})", f"(shiftright({header}, 32) & {MASK32})"]
    for c, t in zip(columns, types):
        slot = f"coalesce(CAST({_slot_long(c, t)} AS BIGINT), 0)"
        words += [f"({slot} & {MASK32})", f"(shiftright({slot}, 32) & {MASK32})"]
    return words


def with_bucket_column(df, schema: TableSchema, num_buckets: int, name: str, columns: dict[str, str] | None = None):
    """``df`` with Paimon's fixed bucket of each row in column ``name``, computed by Spark, or None when a
    key type needs Python. Fixed-width keys hash by arithmetic, one projection per word (see above); keys
    with strings or wide timestamps hash the hex of their BinaryRow (bucket_sql)."""
    keys = schema.bucket_keys
    exprs = [(columns or {}).get(k, quoted(k)) for k in keys]
    types = [schema.field(k).type for k in keys]
    words = row_words_sql(exprs, types)
    if words is None:
        expression = bucket_sql(schema, num_buckets, columns)
        return None if expression is None else df.selectExpr("*", f"CAST({expression} AS INT) AS {quoted(name)}")
    originals = [quoted(c) for c in df.columns]
    word_names = [f"`_paimon_ds_w{i}`" for i in range(len(words))]
    out = df.selectExpr(*originals, *(f"{w} AS {n}" for w, n in zip(words, word_names)))
    h = str(SEED)
    for i, w in enumerate(word_names):
        # one projection per word: the mixing refers to the running hash several times
        out = out.selectExpr(*originals, *word_names[i + 1:], f"{_mix(h, w)} AS `_paimon_ds_h`")
        h = "`_paimon_ds_h`"
    fmix = [lambda x: f"({x} ^ {4 * len(words)})", lambda x: f"({x} ^ shiftright({x}, 16))",
            lambda x: _mul32(x, 0x85EBCA6B), lambda x: f"({x} ^ shiftright({x}, 13))",
            lambda x: _mul32(x, 0xC2B2AE35), lambda x: f"({x} ^ shiftright({x}, 16))"]
    for step in fmix:
        out = out.selectExpr(*originals, f"{step(h)} AS `_paimon_ds_h`")
    signed = f"(CASE WHEN {h} >= 2147483648 THEN {h} - 4294967296 ELSE {h} END)"
    return out.selectExpr(*originals, f"CAST(abs({signed} % {int(num_buckets)}) AS INT) AS {quoted(name)}")
