"""Partition directory names as Paimon writes them (`k1=v1/k2=v2/`)."""

from __future__ import annotations

import datetime as dt
import decimal
import unicodedata
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..casts.java import java_float_str
from ..schema.types import to_arrow_type, total_order_value
from .binary_row import deserialize_row

_ESCAPE = set(chr(c) for c in range(0x20)) | set('"#%\'*/:=?\\\x7f{}[]^')

# Paimon 1.x's postpone bucket (BucketMode.POSTPONE_BUCKET, `bucket` = -2): rows waiting for a real bucket
POSTPONE_BUCKET = -2


def bucket_dir_name(bucket: int) -> str:
    """A bucket's directory name: `bucket-N`, or `bucket-postpone` (FileStorePathFactory.relativeBucketPath)."""
    return "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"


def bucket_path(partition_rel: str, bucket: int) -> str:
    """`<partition dirs>/bucket-N` relative to the table (just the bucket's name when unpartitioned)."""
    return f"{partition_rel}/{bucket_dir_name(bucket)}" if partition_rel else bucket_dir_name(bucket)


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def _legacy_string(value: Any, root: str | None = None) -> str:
    """Java's toString of Paimon's internal value (partition.legacy-name=true, Paimon's default).

    ``root``: the column's Paimon type root, which tells FLOAT from DOUBLE (Java prints their shortest
    digits, `1.0E10` style outside 1e-3..1e7)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):  # Paimon's Timestamp.toString is LocalDateTime's ISO form
        text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
        nanos = value.microsecond * 1000 + getattr(value, "nanosecond", 0)  # pandas.Timestamp: precision 7..9
        if value.second or nanos:
            text += f":{value.second:02d}"
        if nanos:  # LocalDateTime prints 3, 6 or 9 fraction digits
            text += f".{nanos // 1_000_000:03d}" if nanos % 1_000_000 == 0 else \
                f".{nanos // 1000:06d}" if nanos % 1000 == 0 else f".{nanos:09d}"
        return text
    if isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)  # DATE is an int of days internally
    if isinstance(value, dt.time):  # TIME is an int of milliseconds of the day internally
        return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)
    if isinstance(value, float):
        return java_float_str(value, root == "FLOAT")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # BigDecimal.toPlainString
    return str(value)


# Java's Character.isWhitespace: a partition value of only these is a null partition in Paimon
_JAVA_SPACE = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")


def _blank(text: str) -> bool:
    return all(c in _JAVA_SPACE or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in "\xa0\u2007\u202f")
               for c in text)


def partition_path(names: Sequence[str], values: Sequence[Any], default_name: str,
                   types: Sequence[Any] | None = None) -> str:
    """`k1=v1/k2=v2` as Paimon names it: a null, empty or blank value is ``default_name``."""
    parts = []
    for i, (name, value) in enumerate(zip(names, values)):
        text = None if value is None else _legacy_string(value, types[i].root if types else None)
        if text is None or _blank(text):
            text = default_name
        parts.append(f"{escape_path_name(name)}={escape_path_name(text)}")
    return "/".join(parts)


def parse_partition_specs(text: str) -> list[dict[str, str]]:
    """Paimon procedures' partition argument: `dt=x,hr=1;dt=y` -> [{dt: x, hr: 1}, {dt: y}]."""
    specs = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        spec = {}
        for pair in filter(None, (p.strip() for p in part.split(","))):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"partition {part!r}: expected key=value pairs separated by ',' "
                                 "(and partitions separated by ';')")
            spec[key.strip()] = value.strip()
        specs.append(spec)
    return specs


class PartitionFilter:
    """The partitions that static specs name; a partial spec ({dt: x} of (dt, hr)) names all under it."""

    def __init__(self, partition_keys: Sequence[str], partition_types: Sequence[Any],
                 specs: Sequence[dict[str, Any]], default_name: str) -> None:

        self.types = list(partition_types)
        self.specs: list[dict[int, Any]] = []
        for spec in specs:
            unknown = [k for k in spec if k not in partition_keys]
            if unknown:
                raise ValueError(f"{unknown} are not partition keys of the table (partition keys: "
                                 f"{list(partition_keys) or 'none'})")
            typed = {}
            for key, value in spec.items():
                i = list(partition_keys).index(key)
                if value is None or value == default_name:
                    typed[i] = None
                    continue
                arrow_type = to_arrow_type(self.types[i])
                try:
                    typed[i] = pa.array([value]).cast(arrow_type)[0].as_py() \
                        if not isinstance(value, str) or not pa.types.is_string(arrow_type) else value
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise ValueError(f"partition value {key}={value!r} is not a {self.types[i]}: {e}") from None
            self.specs.append(typed)

    def __call__(self, partition: bytes) -> bool:
        # values equal as Paimon's partition predicates compare them (Double.compareTo: a NaN partition is NaN's,
        # -0.0's is not 0.0's)
        values = [total_order_value(v) for v in deserialize_row(partition, self.types)]
        return any(all(values[i] == total_order_value(v) for i, v in spec.items()) for spec in self.specs)


def partition_filter(table: Any, specs: str | Sequence[dict[str, Any]] | None) -> PartitionFilter | None:
    """A table's PartitionFilter for specs given as `dt=x,hr=1;dt=y` or dicts (None: every partition)."""
    if specs is None:
        return None
    if isinstance(specs, str):
        specs = parse_partition_specs(specs)
    if not specs:
        return None
    if not table.partition_keys:
        raise ValueError(f"table {table.path} is not partitioned; it has no partitions {list(specs)}")
    return PartitionFilter(table.partition_keys, [f.type for f in table.table_schema.partition_fields], specs,
                           table.options.get("partition.default-name"))
