"""Partition directory names as Paimon writes them (`k1=v1/k2=v2/`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

_ESCAPE = set(chr(c) for c in range(0x20)) | set('"#%\'*/:=?\\\x7f{}[]^')


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def _legacy_string(value: Any) -> str:
    """Java's toString of Paimon's internal value (partition.legacy-name=true, Paimon's default)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    if isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)  # DATE is an int of days internally
    return str(value)


def partition_path(names: Sequence[str], values: Sequence[Any], default_name: str) -> str:
    parts = []
    for name, value in zip(names, values):
        text = default_name if value is None or value == "" else _legacy_string(value)
        parts.append(f"{escape_path_name(name)}={escape_path_name(text)}")
    return "/".join(parts)
