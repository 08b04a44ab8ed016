"""Index manifests (`manifest/index-manifest-<uuid>-<n>`): which index file serves which bucket.

Paimon 0.9's IndexManifestEntry, one Avro record per index file, versioned (`_VERSION` 1):
_KIND (0 add; a stored manifest holds adds only), _PARTITION (serialized BinaryRow), _BUCKET,
_INDEX_TYPE (HASH or DELETION_VECTORS), _FILE_NAME (under `index/`, or the bucket's directory: see
paths.py), _FILE_SIZE, _ROW_COUNT (hashes in a HASH file) and _DELETIONS_VECTORS_RANGES (data file ->
offset, length; DV files only). Paimon 1.x adds _EXTERNAL_PATH (a file's full location when it lies
outside the table, see paths.py); a manifest holding such an entry is written with that field appended
(readers of either layout read fields by name), others keep 0.9's exact layout.

A snapshot's `indexManifest` lists every index file live at that snapshot, so each commit that
changes an index writes a whole new manifest: the previous entries, minus those replaced, plus the
new ones (IndexManifestFileHandler; hash index entries are replaced per (partition, bucket, type)).
A commit that changes no index keeps the previous manifest's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro

from ..manifest.files import AvroListFile
from ..manifest.meta import FileKind

HASH_INDEX = "HASH"
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
INDEX_MANIFEST_VERSION = 1

_NS = "org.apache.paimon.avro.generated.record"

# Exactly what Paimon 0.9 derives from IndexManifestEntry.SCHEMA (checked against a Java-written file).
_FIELDS_0_9 = [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_INDEX_TYPE", "type": "string"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_DELETIONS_VECTORS_RANGES", "default": None, "type": ["null", {"type": "array", "items": [
        "null", {"type": "record", "name": f"{_NS}__DELETIONS_VECTORS_RANGES", "fields": [
            {"name": "f0", "type": "string"},
            {"name": "f1", "type": "int"},
            {"name": "f2", "type": "int"},
        ]}]}]},
]
INDEX_MANIFEST_SCHEMA = fastavro.parse_schema({"type": "record", "name": _NS, "fields": _FIELDS_0_9})
# ... and with Paimon 1.x's _EXTERNAL_PATH, for manifests that hold an entry with a recorded location
INDEX_MANIFEST_SCHEMA_EXTERNAL = fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    *_FIELDS_0_9, {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None}]})


@dataclass(frozen=True)
class IndexFileMeta:
    """One index file: its type, name, size and row count (where it lives: paths.index_file_path).

    ``dv_ranges``: for deletion-vector files, (data file, offset, length) per data file, in order.
    ``external_path``: its full location, when recorded (Paimon 1.x `_EXTERNAL_PATH`).
    """

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[tuple[str, int, int], ...] | None = None
    external_path: str | None = None


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: FileKind
    partition: bytes  # serialized BinaryRow (4-byte arity, then the row), as in data manifests
    bucket: int
    index_file: IndexFileMeta

    @property
    def identifier(self) -> tuple[bytes, int, str]:
        """What a newer entry of the same index replaces: Paimon's BucketIdentifier."""
        return self.partition, self.bucket, self.index_file.index_type

    def to_avro(self) -> dict[str, Any]:
        f = self.index_file
        ranges = None if f.dv_ranges is None else [{"f0": n, "f1": o, "f2": ln} for n, o, ln in f.dv_ranges]
        record = {"_VERSION": INDEX_MANIFEST_VERSION, "_KIND": int(self.kind), "_PARTITION": self.partition,
                  "_BUCKET": self.bucket, "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name,
                  "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count, "_DELETIONS_VECTORS_RANGES": ranges}
        if f.external_path is not None:
            record["_EXTERNAL_PATH"] = f.external_path
        return record

    @staticmethod
    def from_avro(r: dict[str, Any]) -> IndexManifestEntry:
        version = r.get("_VERSION", INDEX_MANIFEST_VERSION)
        if version != INDEX_MANIFEST_VERSION:
            raise ValueError(f"index manifest entry version {version} is not supported (only {INDEX_MANIFEST_VERSION})")
        if r.get("_GLOBAL_INDEX") is not None:
            # global indexes (Paimon 1.x data evolution): not supported
            raise ValueError(f"index manifest entry {r['_FILE_NAME']} uses _GLOBAL_INDEX, a feature of a newer "
                             "Paimon that paimon_ds does not support")
        raw = r.get("_DELETIONS_VECTORS_RANGES")
        ranges = None if raw is None else tuple((x["f0"], x["f1"], x["f2"]) for x in raw if x is not None)
        return IndexManifestEntry(FileKind(r["_KIND"]), r["_PARTITION"], r["_BUCKET"], IndexFileMeta(
            r["_INDEX_TYPE"], r["_FILE_NAME"], r["_FILE_SIZE"], r["_ROW_COUNT"], ranges, r.get("_EXTERNAL_PATH")))


class IndexManifestFile(AvroListFile):
    """Writes and reads `manifest/index-manifest-<uuid>-<n>` (Avro, `manifest.compression`)."""

    kind = "index-manifest"
    schema = INDEX_MANIFEST_SCHEMA
    record = IndexManifestEntry

    def schema_for(self, records: Sequence[IndexManifestEntry]) -> dict:
        # 0.9's exact layout unless an entry records a location (Paimon 1.x's _EXTERNAL_PATH)
        if any(e.index_file.external_path is not None for e in records):
            return INDEX_MANIFEST_SCHEMA_EXTERNAL
        return INDEX_MANIFEST_SCHEMA


def combine(previous: Iterable[IndexManifestEntry], changes: Iterable[IndexManifestEntry]) -> list[IndexManifestEntry]:
    """The live entries after ``changes``: Paimon's CommonBucketCombiner for hash indexes (deletes
    first, then adds, keyed by (partition, bucket, type), so an add replaces the bucket's file).

    Other index types (deletion vectors, which Paimon keys by file name in unaware-bucket tables)
    are kept per file: paimon_ds never changes them, only carries them over or drops them.
    """
    def key(e: IndexManifestEntry) -> tuple:
        return e.identifier if e.index_file.index_type == HASH_INDEX else (*e.identifier, e.index_file.file_name)

    live: dict[tuple, IndexManifestEntry] = {}
    for e in previous:
        if e.kind != FileKind.ADD:
            raise ValueError(f"a stored index manifest holds only ADD entries, found {e}")
        live[key(e)] = e
    changes = list(changes)
    for e in changes:
        if e.kind == FileKind.DELETE:
            live.pop(key(e), None)
    for e in changes:
        if e.kind == FileKind.ADD:
            live[key(e)] = e
    return list(live.values())
