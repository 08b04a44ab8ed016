"""Where a bucket's index files live: hash indexes of dynamic buckets and deletion-vector files.

By default in the table's `index/` directory. With `index-file-in-data-file-dir` (Paimon 1.x; immutable, as
Paimon's option is) beside the bucket's data files, `<partition>/bucket-N/index-<uuid>-<n>`. Either way the
index manifest names only the file: readers derive its directory from the option and the entry's partition
and bucket (Paimon's FileStorePathFactory.indexFileFactory and IndexInDataFileDirPathFactory). Only when the
index file goes elsewhere, under a root of `data-file.external-paths` as data files do, does the entry record
its full location (`_EXTERNAL_PATH`), and a recorded location always wins (pypaimon also records one for
partitions with FLOAT / DOUBLE values, whose directory names depend on Java's number formatting).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..format.binary_row import deserialize_row
from ..format.partition import bucket_dir_name, bucket_path, partition_path
from ..options.registry import Options
from ..store.external_paths import new_data_file_path
from .manifest import IndexFileMeta

if TYPE_CHECKING:
    from ..store.file_store import FileStore

IN_DATA_DIR = "index-file-in-data-file-dir"
INDEX_DIR = "index"


def in_data_dir(table: FileStore) -> bool:
    """Whether the table keeps its index files in the buckets' data directories (its stored option)."""
    return Options(table.table_schema.options).get(IN_DATA_DIR)


def bucket_dir(table: FileStore, partition: bytes, bucket: int) -> str:
    """A bucket's data directory relative to the table (`k=v/bucket-N`), as its data files use it."""
    keys = table.table_schema.partition_keys
    if not keys:
        return bucket_dir_name(bucket)
    types = [f.type for f in table.table_schema.partition_fields]
    rel = partition_path(keys, deserialize_row(partition, types), table.options.get("partition.default-name"), types)
    return bucket_path(rel, bucket)


def index_file_rel(table: FileStore, partition: bytes, bucket: int, meta: IndexFileMeta) -> str:
    """An index file's location relative to the table, or its full location when it lies outside the table."""
    if meta.external_path:
        fs, stripped, _ = table.io.locate(meta.external_path)
        root = table.root.rstrip("/") + "/"
        if fs is table.io.fs and stripped.startswith(root):
            return stripped[len(root):]
        return meta.external_path
    if in_data_dir(table):
        return f"{bucket_dir(table, partition, bucket)}/{meta.file_name}"
    return f"{INDEX_DIR}/{meta.file_name}"


def index_file_path(table: FileStore, partition: bytes, bucket: int, meta: IndexFileMeta) -> str:
    """Where an index file of the bucket ``(partition, bucket)`` is read (and deleted)."""
    if meta.external_path:
        return meta.external_path
    return f"{table.root}/{index_file_rel(table, partition, bucket, meta)}"


def new_index_file_path(table: FileStore, partition: bytes, bucket: int, file_name: str) -> tuple[str, str | None]:
    """(where a new index file of the bucket is written, the `_EXTERNAL_PATH` its entry records, or None)."""
    if not in_data_dir(table):
        return f"{table.root}/{INDEX_DIR}/{file_name}", None
    # Paimon makes the path with the bucket's data file path factory: external roots apply as to data files
    return new_data_file_path(table, f"{table.root}/{bucket_dir(table, partition, bucket)}", file_name)
