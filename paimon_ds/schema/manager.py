"""Table schemas (`schema/schema-N`) and their manager."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from ..errors import EXIT_NOT_FOUND, PaimonDsError, reading_file
from ..fs.file_io import FileIO
from ..options.registry import Options
from .types import DEFAULT_VALUE_METADATA, DataField, SchemaError, fields_from_arrow, to_arrow_schema

SCHEMA_VERSION = 3


class TableNotFound(PaimonDsError, FileNotFoundError):
    """No Paimon table at the given path."""

    exit_code = EXIT_NOT_FOUND


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    # ---------------------------------------------------------------- derived views
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def column_names(self) -> list[str]:
        """The column names in table order (pyiceberg's name; the same as field_names)."""
        return self.field_names

    def field(self, name: str) -> DataField:
        """The column ``name`` (its id, name, type and description); SchemaError if the table has none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no column {name!r} in the table (columns: {', '.join(self.field_names)})")

    def find_field(self, name_or_id: str | int) -> DataField:
        """The column with this name or field id (as pyiceberg's Schema.find_field)."""
        if isinstance(name_or_id, int) and not isinstance(name_or_id, bool):
            for f in self.fields:
                if f.id == name_or_id:
                    return f
            raise SchemaError(f"no column with field id {name_or_id} in the table "
                              f"(ids: {', '.join(str(f.id) for f in self.fields)})")
        return self.field(name_or_id)

    @property
    def partition_fields(self) -> list[DataField]:
        return [self.field(k) for k in self.partition_keys]

    @property
    def bucket_keys(self) -> list[str]:
        keys = Options(self.options).get("bucket-key")
        if keys:
            return keys
        return [k for k in self.primary_keys if k not in self.partition_keys]

    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self.fields)

    def as_arrow(self) -> pa.Schema:
        """The schema as Arrow types (the public name, as pyiceberg's Schema.as_arrow); a column's description
        (its SQL COMMENT) is the field's metadata `description`, as pypaimon gives it; a column's DEFAULT is the
        metadata `default-value`."""
        fields = []
        for f, d in zip(self.arrow_schema(), self.fields):
            metadata = {key: value for key, value in ((b"description", d.description),
                                                      (DEFAULT_VALUE_METADATA, d.default_value)) if value is not None}
            fields.append(f.with_metadata(metadata) if metadata else f)
        return pa.schema(fields)

    def __repr__(self) -> str:
        columns = ", ".join(f"{f.name} {f.type.sql()}" for f in self.fields)
        parts = [f"id={self.id}", f"columns=[{columns}]"]
        if self.primary_keys:
            parts.append(f"primary_keys={list(self.primary_keys)}")
        if self.partition_keys:
            parts.append(f"partition_keys={list(self.partition_keys)}")
        if self.options:
            parts.append(f"options={dict(self.options)}")
        return f"Schema({', '.join(parts)})"

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> str:
        return json.dumps({
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }, indent=2)

    @staticmethod
    def from_json(text: str) -> TableSchema:
        obj: dict[str, Any] = json.loads(text)
        return TableSchema(
            id=obj["id"],
            fields=tuple(DataField.from_json(f) for f in obj["fields"]),
            highest_field_id=obj["highestFieldId"],
            partition_keys=tuple(obj.get("partitionKeys") or ()),
            primary_keys=tuple(obj.get("primaryKeys") or ()),
            options=dict(obj.get("options") or {}),
            comment=obj.get("comment"),
            time_millis=obj.get("timeMillis", 0),
            version=obj.get("version", 1),
        )

    @staticmethod
    def from_arrow(schema: pa.Schema, partition_keys: list[str], primary_keys: list[str],
                   options: dict[str, str], comment: str | None = None) -> TableSchema:
        fields, highest = fields_from_arrow(schema)
        names = [f.name for f in fields]
        lowered = [n.lower() for n in names]
        if len(set(lowered)) != len(names):
            twice = sorted({n for n in names if lowered.count(n.lower()) > 1})
            raise SchemaError(f"column(s) {twice} appear more than once (names compared case-insensitively) "
                              f"in {names}")
        for what, keys in (("partition", partition_keys), ("primary-key", primary_keys),
                           ("bucket-key", Options(options).get("bucket-key") or [])):
            missing = [k for k in keys if k not in names]
            if missing:
                raise SchemaError(f"{what} column(s) {missing} are not in the data (columns: {', '.join(names)})")
        if primary_keys:
            # Paimon: primary-key columns are NOT NULL
            fields = [replace(f, type=f.type.copy(False)) if f.name in primary_keys else f
                      for f in fields]
        if Options(options).get("bucket") > 0 and not primary_keys and not options.get("bucket-key"):
            raise SchemaError("an append table with a fixed bucket count needs 'bucket-key' "
                              "(the columns whose hash picks the bucket)")
        return TableSchema(0, tuple(fields), highest, tuple(partition_keys), tuple(primary_keys),
                           dict(options), comment, int(time.time() * 1000))


class SchemaManager:
    """Reads and creates `schema-N` files under a table path."""

    def __init__(self, io: FileIO, table_path: str) -> None:
        self.io = io
        self.dir = f"{table_path}/schema"

    def path(self, schema_id: int) -> str:
        return f"{self.dir}/schema-{schema_id}"

    def list_ids(self) -> list[int]:
        ids = []
        for name in self.io.list_names(self.dir):
            if name.startswith("schema-") and name[7:].isdigit():
                ids.append(int(name[7:]))
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        path = self.path(schema_id)
        data = self.io.read_bytes(path)
        with reading_file(path, "schema", len(data)):
            return TableSchema.from_json(data.decode("utf-8"))

    def create(self, schema: TableSchema) -> TableSchema:
        """Write schema-0 if no schema exists; return whichever schema won."""
        if self.io.try_create(self.path(schema.id), schema.to_json().encode()):
            return schema
        return self.schema(schema.id)
