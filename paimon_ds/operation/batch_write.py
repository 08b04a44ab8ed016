"""A write of Arrow data or a pandas frame in this process: Table.append / Table.overwrite / write_arrow.

The Spark write's two phases run here in one process: a TableWrite writes the files (bucketed, primary-key runs
sorted, dynamic buckets assigned as the table's single assigner) and returns commit messages, then one TableCommit
makes them one atomic snapshot, with the same conflict checks and overwrite semantics (whole table, dynamic
partitions, or a static partition). Any failure, in the data or in the commit, deletes the files written, so the
table is left as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..format.partition import PartitionFilter
from ..index.cross_partition import needs_global_index
from ..options.registry import OptionError
from ..schema.checks import check_writable
from ..schema.types import SchemaError, conform_array, name_index
from ..snapshot.manager import Snapshot
from .compact import new_commit
from .write import CLOSE_WORKERS, BucketRestore, TableWrite

if TYPE_CHECKING:
    from ..store.file_store import FileStore


def input_batches(data: Any) -> tuple[pa.Schema | None, Iterator[pa.RecordBatch]]:
    """The data's schema and its record batches, read lazily where the data is a stream: a pyarrow Table,
    RecordBatch or RecordBatchReader, a pandas DataFrame (its index left out), any object with an Arrow C stream
    (a Polars frame, a DuckDB relation, a Scan), or an iterable of record batches (schema None if it is empty)."""
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
        try:
            table = pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"the pandas DataFrame cannot be converted to Arrow: {e}") from None
        return table.schema, iter(table.to_batches())
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        batches = iter(data)
        first = next(batches, None)
        if first is None:
            return None, iter(())
        if isinstance(first, pa.Table):
            return first.schema, chain.from_iterable(_table_batches(t) for t in chain([first], batches))
        if not isinstance(first, pa.RecordBatch):
            raise SchemaError(f"an iterable of pyarrow RecordBatches is expected, got an element {type(first)}")
        return first.schema, chain([first], batches)
    raise SchemaError(f"cannot write {type(data).__name__}: give a pyarrow Table, RecordBatch or RecordBatchReader, "
                      "a pandas DataFrame, an object with an Arrow C stream, or an iterable of RecordBatches")


def _table_batches(t: Any) -> list[pa.RecordBatch]:
    if not isinstance(t, pa.Table):
        raise SchemaError(f"an iterable of pyarrow Tables is expected, got an element {type(t)}")
    return t.to_batches()


def castable(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a column of ``source`` may be written into a column of ``target``: the same kind of value in
    another width or Arrow form (int8 into BIGINT, large_string into STRING, a dictionary of strings, ns
    timestamps into TIMESTAMP(6)); values that do not fit are refused by the write. No text into numbers."""
    if source == target or pa.types.is_null(source):
        return True
    if pa.types.is_dictionary(source):
        return castable(source.value_type, target)
    kinds = (
        lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t),
        lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t),
        lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t),
        pa.types.is_date, pa.types.is_time, pa.types.is_boolean,
    )
    if any(kind(source) and kind(target) for kind in kinds):
        return not (pa.types.is_floating(source) and pa.types.is_integer(target))  # 1.5 has no INT
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None)  # a local time is not an instant
    if pa.types.is_nested(source) and pa.types.is_nested(target):
        try:  # a struct / list / map of castable fields: Arrow's cast decides
            pa.array([], source).cast(target)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return False
    return False


def check_input_schema(source: pa.Schema, target: pa.Schema, path: str, filled: Iterable[str] = ()) -> None:
    """SchemaError naming every column missing, extra, or of a type that cannot be written into the table's;
    ``filled``: columns the write supplies itself (a static partition's keys)."""
    filled = set(filled)
    names = source.names
    problems = []
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        problems.append(f"column(s) {twice} appear more than once")
    missing = [n for n in target.names if n not in names and n not in filled]
    if missing:
        problems.append(f"missing column(s) {missing}")
    extra = [n for n in names if n not in target.names]
    if extra:
        problems.append(f"column(s) {extra} not in the table")
    for field in target:
        if field.name in names and field.name not in twice and not castable(source.field(field.name).type, field.type):
            problems.append(f"column {field.name!r} is {source.field(field.name).type} in the data, which cannot "
                            f"be written as the table's {field.type}")
    if problems:
        raise SchemaError(f"the data does not fit Paimon table {path}: " + "; ".join(problems)
                          + ". Table columns: " + ", ".join(f"{f.name} {f.type}" for f in target))


def _castable_by_name(source: pa.DataType, target: pa.DataType) -> bool:
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        names = [source.field(i).name for i in range(source.num_fields)]
        return all(name_index(names, f.name) < 0 or _castable_by_name(source.field(name_index(names, f.name)).type,
                                                                      f.type) for f in target)
    if pa.types.is_list(target) and (pa.types.is_list(source) or pa.types.is_large_list(source)):
        return _castable_by_name(source.value_type, target.value_type)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _castable_by_name(source.key_type, target.key_type) and \
            _castable_by_name(source.item_type, target.item_type)
    return castable(source, target)


def by_name_problems(source: pa.Schema, target: pa.Schema) -> list[str]:
    """What keeps data of ``source`` from a write with `write.merge-schema` into a table of ``target`` (its schema
    already merged): columns matched by name, case-insensitively, missing ones filled with nulls unless NOT NULL."""
    problems = []
    lower = [n.lower() for n in source.names]
    twice = sorted({n for n in source.names if lower.count(n.lower()) > 1})
    if twice:
        problems.append(f"column(s) {twice} appear more than once (names compare case-insensitively)")
    for field in target:
        i = name_index(source.names, field.name)
        if i < 0:
            if not field.nullable:
                problems.append(f"missing NOT NULL column {field.name!r}")
        elif not _castable_by_name(source.field(i).type, field.type):
            problems.append(f"column {field.name!r} is {source.field(i).type} in the data, which cannot be "
                            f"written as the table's {field.type}")
    extra = [n for n in source.names if name_index(target.names, n) < 0]
    if extra:
        problems.append(f"column(s) {extra} not in the table")
    return problems


def conform_batch(batch: pa.RecordBatch, target: pa.Schema, constants: Mapping[str, pa.Scalar] | None = None,
                  ) -> pa.RecordBatch:
    """The batch with the table's columns in the table's order and Arrow types (``constants``: columns a static
    partition gives, checked where the data has them); SchemaError naming a value that does not fit."""
    constants = constants or {}
    arrays = []
    for field in target:
        if field.name in constants:
            value = constants[field.name]
            if field.name not in batch.schema.names:
                arrays.append(pa.repeat(value, batch.num_rows))
                continue
            column = _cast(batch.column(field.name), field)
            same = pc.is_null(column) if not value.is_valid else pc.fill_null(pc.equal(column, value), False)
            if not pc.all(same).as_py():
                raise SchemaError(f"column {field.name!r} holds values other than the partition's {value.as_py()!r}"
                                  " being overwritten")
            arrays.append(column)
            continue
        arrays.append(_cast(batch.column(field.name), field))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _cast(column: pa.Array, field: pa.Field) -> pa.Array:
    if column.type == field.type:
        return column
    try:
        if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(field.type):
            return conform_array(column, field.type)  # finer units are floored, as Paimon's writers truncate
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        return column.cast(field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column {field.name!r}: a value of the data's {column.type} does not fit the table's "
                          f"{field.type} ({e})") from None


def partition_constants(table: FileStore, partition: Mapping[str, Any]) -> dict[str, pa.Scalar]:
    """A static partition spec's values as scalars of their columns' types (OptionError naming a bad key or value)."""
    if not table.partition_keys:
        raise OptionError(f"Paimon table {table.path} is not partitioned: overwrite(partition=...) does not apply")
    unknown = [k for k in partition if k not in table.partition_keys]
    if unknown:
        raise OptionError(f"{unknown} are not partition keys of Paimon table {table.path} "
                          f"(partition keys: {table.partition_keys})")
    schema = table.arrow_schema()
    out = {}
    for key, value in partition.items():
        target = schema.field(key).type
        try:
            out[key] = pa.scalar(None, target) if value is None else pa.scalar(value).cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise OptionError(f"partition value {key}={value!r} is not a {target}: {e}") from None
    return out


def write_batches(table: FileStore, batches: Iterable[pa.RecordBatch], overwrite: bool = False,
                  partition: Mapping[str, Any] | None = None) -> Snapshot | None:
    """Write ``batches`` (already in the table's schema) and commit them as one snapshot; the new snapshot, or None
    when an append wrote nothing. ``overwrite``: replace the whole table, or with the `dynamic-partition-overwrite`
    option the partitions written; ``partition``: replace that static partition (a partial spec: every partition
    under it)."""
    if needs_global_index(table.table_schema, table.bucket):
        raise OptionError(f"Paimon table {table.path} is a cross-partition upsert table (its primary key "
                          f"{list(table.table_schema.primary_keys)} lacks a partition key, bucket=-1): its rows get "
                          "their "
                          "partition from a global key index that only paimon_ds.write (Spark) builds. Nothing was "
                          "written")
    check_writable(table.path, table.table_schema, table.options)
    partition_filter = None
    if partition is not None:
        overwrite = True
        partition_filter = PartitionFilter(table.partition_keys, [f.type for f in table.table_schema.partition_fields],
                                           [{k: v.as_py() for k, v in partition_constants(table, partition).items()}],
                                           table.options.get("partition.default-name"))
    # primary-key tables: the sequence numbers and hash index the writers start from, read once, and the commit's
    # guard against another writer adding to the same buckets since (as the Spark driver does)
    restore = BucketRestore.from_table(table) if table.table_schema.primary_keys else None
    # a large row group may become one file per core, encoded in parallel (io/data_files.AppendFileWriter)
    table_write = TableWrite(table, restore=restore, overwrite=overwrite, parallel_files=CLOSE_WORKERS)
    try:
        for batch in batches:
            table_write.write_arrow(batch)
        messages = table_write.prepare_commit()
    except BaseException:
        table_write.abort()
        raise
    commit = new_commit(table)
    try:
        if partition_filter is not None:
            return commit.overwrite(messages, partitions=partition_filter)
        if not overwrite:
            return commit.commit(messages, base_snapshot_id=restore.snapshot_id if restore else None)
        if table.options.get("dynamic-partition-overwrite") and table.partition_keys:
            return commit.overwrite(messages, partitions={m.partition for m in messages})
        return commit.overwrite(messages)
    except BaseException:
        commit.abort(messages)
        raise
