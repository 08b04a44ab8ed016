"""Parquet files another writer (Spark's own, for paimon_ds.write's native path) staged inside an append table,
turned into the table's data files: moved to Paimon's names and directories (`k=v/bucket-N/data-<uuid>-N.parquet`)
with their DataFileMeta (row count, size, value stats from the footers as `metadata.stats-mode` says).

Each staged file holds the rows of one (partition, bucket) and every column of the table (partition columns
included, as Paimon keeps them). Staging directories are `_paimon_ds-staging-<job prefix>` under the table root:
hidden from Hadoop and Spark listings, never referenced by a snapshot, and removed by remove-orphans once older
than its margin (a job that died before cleaning up).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from ..format.binary_row import serialize_arrow_row
from ..format.partition import bucket_path, partition_path
from ..format.stats import StatsCollector
from ..io.data_files import now_local_wall
from ..io.names import DataFileNamer
from ..manifest.meta import DataFileMeta, FileSource
from ..schema.types import conform_array
from .messages import CommitMessage

if TYPE_CHECKING:
    from ..store.file_store import FileStore

STAGING_PREFIX = "_paimon_ds-staging-"
_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW", "VARIANT")


def staging_dir(table: FileStore, job_prefix: str) -> str:
    return f"{table.root}/{STAGING_PREFIX}{job_prefix}"


@dataclass
class StagedFile:
    path: str  # full local path of the staged parquet file
    bucket: int  # its bucket (0 for unaware-bucket tables, whose messages say bucket 0 as Paimon's do)


def adopt_staged_files(table: FileStore, staged: Sequence[StagedFile], job_prefix: str) -> list[CommitMessage]:
    """Move ``staged`` into the table as data files (not yet committed); one CommitMessage per (partition, bucket).
    A failure moves nothing further and deletes the files already moved (the staged ones are the caller's)."""
    schema = table.table_schema
    arrow_schema = table.arrow_schema()
    types = [f.type for f in schema.fields]
    part_idx = [schema.field_names.index(k) for k in schema.partition_keys]
    part_types = [f.type for f in schema.partition_fields]
    default_name = table.options.get("partition.default-name")
    stats_mode = table.options.get("metadata.stats-mode")
    total_buckets = table.bucket if table.bucket > 0 else -1
    namer = DataFileNamer(job_prefix)
    messages: dict[tuple[bytes, int], CommitMessage] = {}
    moved: list[str] = []
    try:
        for item in staged:
            pf = pq.ParquetFile(item.path)
            md = pf.metadata
            if md.num_rows == 0:
                continue
            stats = _footer_stats(pf, arrow_schema, types, stats_mode)
            part_key, rel = serialize_arrow_row([], []), ""
            if part_idx:
                first = pf.read_row_group(0, columns=[schema.field_names[i] for i in part_idx]).slice(0, 1)
                cols = [conform_array(first.column(j).combine_chunks(), arrow_schema.field(i).type)
                        for j, i in enumerate(part_idx)]
                values = [c[0].as_py() for c in cols]
                _check_one_partition(pf, item.path, [schema.field_names[i] for i in part_idx], values)
                part_key = serialize_arrow_row(cols, part_types)
                rel = partition_path(schema.partition_keys, values, default_name, part_types)
            directory = f"{table.root}/{bucket_path(rel, item.bucket)}"
            name = namer.next(".parquet")
            table.io.mkdirs(directory)
            table.io.fs.mv(item.path, f"{directory}/{name}")
            moved.append(f"{directory}/{name}")
            meta = DataFileMeta(
                file_name=name, file_size=table.io.size(f"{directory}/{name}"), row_count=md.num_rows,
                value_stats=stats, min_sequence_number=0, max_sequence_number=md.num_rows - 1,
                schema_id=schema.id, level=0, creation_time=now_local_wall(), delete_row_count=0,
                file_source=FileSource.APPEND)
            message = messages.get((part_key, item.bucket))
            if message is None:
                message = messages[(part_key, item.bucket)] = CommitMessage(part_key, item.bucket, total_buckets,
                                                                            [], rel)
            message.new_files.append(meta)
    except BaseException:
        for path in moved:
            table.io.delete_quietly(path)
        raise
    return list(messages.values())


def _footer_stats(pf: pq.ParquetFile, arrow_schema: pa.Schema, types: list, mode: str):
    """The file's value stats, as StatsCollector gives them for the same rows: bounds from the row groups'
    statistics (a row group without them, e.g. a string over parquet-mr's 4 KB limit or a float column holding a
    NaN, leaves the column without bounds); nested columns' null counts from their top-level values."""
    md = pf.metadata
    collector = StatsCollector(types, mode)
    leaf_of = {md.schema.column(j).path: j for j in range(md.num_columns)}
    with_minmax = mode not in ("none", "counts")
    for i, (field, t) in enumerate(zip(arrow_schema, types)):
        if t.root in _NESTED:
            collector.nulls[i] = pf.read(columns=[field.name]).column(0).null_count
            continue
        j = leaf_of[field.name]
        for g in range(md.num_row_groups):
            col = md.row_group(g).column(j)
            st = col.statistics
            rows = md.row_group(g).num_rows
            if st is None or not st.has_null_count:
                nulls = pf.read_row_group(g, columns=[field.name]).column(0).null_count
            else:
                nulls = st.null_count
            collector.nulls[i] += nulls
            if not with_minmax or nulls == rows or t.root in ("BINARY", "VARBINARY"):
                continue
            if st is None or not st.has_min_max:
                collector.add_bounds(i, None, None)
                continue
            try:
                bounds = conform_array(pa.array([st.min, st.max]), field.type).to_pylist()
            except (pa.ArrowException, TypeError, ValueError):
                bounds = [None, None]  # a value Arrow cannot take back: the column has no bounds
            collector.add_bounds(i, bounds[0], bounds[1])
    return collector.result()


def _check_one_partition(pf: pq.ParquetFile, path: str, names: list[str], values: list) -> None:
    """Every row of the file is in the partition of its first row (the writer clustered them by a hash of the
    partition values; where the footer says otherwise, the file would land in a wrong partition)."""
    md = pf.metadata
    leaf_of = {md.schema.column(j).path: j for j in range(md.num_columns)}
    for name, value in zip(names, values):
        j = leaf_of.get(name)
        for g in range(md.num_row_groups):
            st = md.row_group(g).column(j).statistics if j is not None else None
            if st is None or not st.has_null_count:
                continue
            rows = md.row_group(g).num_rows
            mixed = (st.null_count not in (0, rows)) or (value is None and st.null_count != rows) \
                or (value is not None and st.null_count == rows)
            if not mixed and value is not None and st.has_min_max and isinstance(value, (int, str, dt.date)) \
                    and not isinstance(value, bool):
                mixed = st.min != st.max
            if mixed:
                raise RuntimeError(f"staged file {path} holds rows of several partitions ({name}); "
                                   "nothing was committed")
