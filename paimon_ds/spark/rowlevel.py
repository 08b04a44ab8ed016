"""Row-level DELETE, UPDATE and MERGE INTO, which Spark refuses for Python data sources.

Each statement reads the table at one snapshot and writes its changes in one commit:
- primary-key tables take the changes as rows of their kind (-D for a delete, +U for an update,
  +I for an insert), merged by key like any upsert, as Paimon's Spark connector writes them;
- append tables are rewritten copy-on-write: only the data files holding a changed row are read
  again and replaced, in one OVERWRITE snapshot that fails (changing nothing) if another commit
  removed one of those files meanwhile.
Conditions and values are Spark SQL expressions (strings) or Columns; they are evaluated by Spark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ..deletionvectors.maintainer import dv_enabled
from ..errors import RowLevelError
from ..operation.delete_rows import append_deletions
from ..operation.row_level import Delete, Insert, Update, check_clauses, check_engine, check_update
from ..snapshot import Snapshot
from ..table import Table
from .cluster import write as clustered_write
from .options import (
    FILE_COLUMN_OPTION,
    ONLY_FILES_OPTION,
    POSITION_COLUMN_OPTION,
    REPLACE_FILES_OPTION,
    ROW_KIND_COLUMN_OPTION,
    session_storage,
    storage_job_options,
)
from .types import spark_schema

Expr = str | Column

FILE_COLUMN = "__paimon_ds_file"
POSITION_COLUMN = "__paimon_ds_position"
KIND_COLUMN = "__paimon_ds_row_kind"
ACTION_COLUMN = "__paimon_ds_action"
TARGET_PRESENT = "__paimon_ds_target"
SOURCE_PRESENT = "__paimon_ds_source"
ROW_ID = "__paimon_ds_row_id"


def _column(e: Expr) -> Column:
    return F.expr(e) if isinstance(e, str) else e


def _holds(e: Expr | None) -> Column:
    """SQL truth: a NULL condition does not hold."""
    return F.lit(True) if e is None else F.coalesce(_column(e), F.lit(False))


def _target(spark: SparkSession, table: Table, snapshot: Snapshot, file_column: bool = False,
            only_files: Sequence[str] | None = None, position_column: bool = False) -> DataFrame:
    # the table's own rows only: a scan.fallback-branch's rows are not the table's to change (as in Paimon)
    reader = spark.read.format("paimon").options(**storage_job_options(table.storage_options)) \
        .option("scan.snapshot-id", str(snapshot.id)).option("scan.fallback-branch", "")
    if file_column:
        reader = reader.option(FILE_COLUMN_OPTION, FILE_COLUMN)
    if position_column:
        reader = reader.option(POSITION_COLUMN_OPTION, POSITION_COLUMN)
    if only_files is not None:
        reader = reader.option(ONLY_FILES_OPTION, json.dumps(sorted(only_files)))
    return reader.load(table.path)


def _write(df: DataFrame, table: Table, job_options: Mapping[str, str]) -> Snapshot | None:
    before = table.snapshot_manager.latest_id()
    if table.table_schema.primary_keys and table.bucket == -1:  # dynamic buckets: through the bucket assigners
        clustered_write(df, table.path, "append", {**storage_job_options(table.storage_options), **job_options})
    else:
        writer = df.write.format("paimon").mode("append").options(**storage_job_options(table.storage_options))
        for k, v in job_options.items():
            writer = writer.option(k, v)
        writer.save(table.path)
    latest = table.snapshot_manager.latest()
    return latest if latest is not None and latest.id != before else None


def _load(spark: SparkSession, path: str, storage_options: dict[str, Any] | None,
          ) -> tuple[Table, Snapshot | None]:
    table = Table.load(path, None, {**session_storage(spark), **(storage_options or {})})
    return table, table.snapshot_manager.latest()


def _typed(table: Table, target: DataFrame, values: Mapping[str, Expr], what: str) -> dict[str, Column]:
    """Check the assigned columns and cast each value to its column's type."""
    names = table.table_schema.field_names
    unknown = [c for c in values if c not in names]
    if unknown:
        raise RowLevelError(f"{what}: {unknown} are not columns of {table.path} (columns: {', '.join(names)})")
    types = {f.name: f.dataType for f in target.schema.fields}
    return {c: _column(v).cast(types[c]) for c, v in values.items()}


def delete(spark: SparkSession, path: str, condition: Expr | None = None,
           storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """DELETE FROM the table WHERE ``condition`` (None: every row). Returns the new snapshot, or None if
    no row matched."""
    table, snapshot = _load(spark, path, storage_options)
    check_engine(table, "DELETE")
    if snapshot is None:
        return None
    if table.table_schema.primary_keys:
        rows = _target(spark, table, snapshot).where(_holds(condition))
        return _write(rows.withColumn(KIND_COLUMN, F.lit("-D")), table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})
    if dv_enabled(table.store):
        return _delete_with_vectors(spark, table, snapshot, condition)
    files = _touched_files(_target(spark, table, snapshot, file_column=True).where(_holds(condition)))
    if not files:
        return None
    kept = (_target(spark, table, snapshot, file_column=True, only_files=files)
            .where(~_holds(condition)).drop(FILE_COLUMN))
    return _write(kept, table, {REPLACE_FILES_OPTION: json.dumps(files)})


def _delete_with_vectors(spark: SparkSession, table: Table, snapshot: Snapshot, condition: Expr | None
                         ) -> Snapshot | None:
    """Append tables with deletion vectors: the matching rows' positions go into their files' vectors
    (no file is rewritten), as Paimon's Spark DELETE does with deletion vectors enabled."""
    rows = (_target(spark, table, snapshot, file_column=True, position_column=True).where(_holds(condition))
            .select(FILE_COLUMN, POSITION_COLUMN))
    hits = rows.toArrow()
    if hits.num_rows == 0:
        return None
    grouped = hits.group_by(FILE_COLUMN, use_threads=False).aggregate([(POSITION_COLUMN, "list")])
    deleted = {name: np.asarray(positions, dtype=np.int64) for name, positions in zip(
        grouped.column(FILE_COLUMN).to_pylist(), grouped.column(f"{POSITION_COLUMN}_list").to_pylist())}
    return append_deletions(table, snapshot, deleted)


def update(spark: SparkSession, path: str, assignments: Mapping[str, Expr], condition: Expr | None = None,
           storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """UPDATE the table SET ``assignments`` (column -> expression over the old row) WHERE ``condition``."""
    table, snapshot = _load(spark, path, storage_options)
    check_update(table, assignments)
    if snapshot is None:
        return None
    names = table.table_schema.field_names
    if table.table_schema.primary_keys:
        target = _target(spark, table, snapshot)
        values = _typed(table, target, assignments, "UPDATE")
        rows = target.where(_holds(condition)).select(*[values.get(c, F.col(c)).alias(c) for c in names])
        return _write(rows.withColumn(KIND_COLUMN, F.lit("+U")), table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})
    target = _target(spark, table, snapshot, file_column=True)
    values = _typed(table, target, assignments, "UPDATE")
    files = _touched_files(target.where(_holds(condition)))
    if not files:
        return None
    hit = _holds(condition)
    rows = _target(spark, table, snapshot, file_column=True, only_files=files).select(
        *[F.when(hit, values[c]).otherwise(F.col(c)).alias(c) if c in values else F.col(c) for c in names])
    return _write(rows, table, {REPLACE_FILES_OPTION: json.dumps(files)})


def _touched_files(rows: DataFrame) -> list[str]:
    return sorted(r[0] for r in rows.select(FILE_COLUMN).distinct().collect())


def merge(spark: SparkSession, path: str, source: DataFrame, on: Expr,
          when_matched: Sequence[Update | Delete] = (), when_not_matched: Sequence[Insert] = (),
          when_not_matched_by_source: Sequence[Update | Delete] = (), target_alias: str = "t",
          source_alias: str = "s", storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """MERGE INTO the table (as ``target_alias``) USING ``source`` (as ``source_alias``) ON ``on``, with
    SQL's semantics: for each row the first clause whose condition holds acts; a target row matched by
    more than one source row is an error. Expressions name columns as `t.col` / `s.col`."""
    table, snapshot = _load(spark, path, storage_options)
    check_engine(table, "MERGE")
    check_clauses(table, when_matched, when_not_matched, when_not_matched_by_source)
    pk = bool(table.table_schema.primary_keys)
    names = table.table_schema.field_names
    file_column = not pk
    if snapshot is not None:
        target = _target(spark, table, snapshot, file_column=file_column)
    else:  # an empty table: nothing can match
        target = spark.createDataFrame([], _target_schema(spark, table, file_column))
    target = target.withColumn(TARGET_PRESENT, F.lit(True)).withColumn(ROW_ID, F.monotonically_increasing_id())
    src = source.withColumn(SOURCE_PRESENT, F.lit(True))
    t, s = target.alias(target_alias), src.alias(source_alias)

    def tcol(c: str) -> Column:
        return F.col(f"`{target_alias}`.`{c}`")

    def scol(c: str) -> Column:
        return F.col(f"`{source_alias}`.`{c}`")

    changes_target = bool(when_matched or when_not_matched_by_source)
    keep_target_rows = bool(when_not_matched_by_source) or (not pk and changes_target)
    how = {(True, True): "full", (True, False): "left", (False, True): "right", (False, False): "inner"}[
        (keep_target_rows, bool(when_not_matched))]
    joined = t.join(s, _column(on), how)
    matched = tcol(TARGET_PRESENT).isNotNull() & scol(SOURCE_PRESENT).isNotNull()
    target_only = tcol(TARGET_PRESENT).isNotNull() & scol(SOURCE_PRESENT).isNull()
    source_only = tcol(TARGET_PRESENT).isNull() & scol(SOURCE_PRESENT).isNotNull()

    clauses: list[tuple[Column, Update | Delete | Insert]] = (
        [(matched, c) for c in when_matched] + [(source_only, c) for c in when_not_matched]
        + [(target_only, c) for c in when_not_matched_by_source])
    action = F.lit(None).cast("int")
    for i, (where, clause) in reversed(list(enumerate(clauses))):  # the first clause that holds wins
        action = F.when(where & _holds(clause.condition), F.lit(i)).otherwise(action)
    joined = joined.withColumn(ACTION_COLUMN, action)

    if when_matched:
        twice = joined.where(matched).groupBy(tcol(ROW_ID)).count().where("count > 1").limit(1).collect()
        if twice:
            raise RowLevelError("MERGE: a target row matched more than one source row (ON "
                                f"{on if isinstance(on, str) else 'condition'}); make the source unique per key")

    types = {f.name: f.dataType for f in target.schema.fields}
    source_names = set(source.columns)

    def value(c: str, clause: Update | Delete | Insert) -> Column:
        if isinstance(clause, Delete):
            return tcol(c)
        given = clause.set if isinstance(clause, Update) else clause.values
        if given is None:  # SET * / INSERT *: the source column of the same name
            if c not in source_names:
                raise RowLevelError(f"MERGE: {'UPDATE SET' if isinstance(clause, Update) else 'INSERT'} * needs "
                                    f"column {c!r} in the source (source columns: {', '.join(source.columns)})")
            return scol(c)
        if c in given:
            return _column(given[c])
        return tcol(c) if isinstance(clause, Update) else F.lit(None)

    def per_action(c: str, otherwise: Column | None) -> Column:
        out = otherwise if otherwise is not None else F.lit(None)
        for i, (_, clause) in reversed(list(enumerate(clauses))):
            out = F.when(F.col(ACTION_COLUMN) == i, value(c, clause)).otherwise(out)
        return out.cast(types[c]).alias(c)

    kinds = {Update: "+U", Delete: "-D", Insert: "+I"}
    if pk:
        kind = F.lit(None).cast("string")
        for i, (_, clause) in reversed(list(enumerate(clauses))):
            kind = F.when(F.col(ACTION_COLUMN) == i, F.lit(kinds[type(clause)])).otherwise(kind)
        rows = joined.where(F.col(ACTION_COLUMN).isNotNull()).select(
            *[per_action(c, None) for c in names], kind.alias(KIND_COLUMN))
        return _write(rows, table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})

    # append table: rewrite the files whose rows an UPDATE or DELETE clause changes, add the inserts
    changing = [i for i, (_, c) in enumerate(clauses) if not isinstance(c, Insert)]
    deleting = [i for i, (_, c) in enumerate(clauses) if isinstance(c, Delete)]
    inserting = [i for i, (_, c) in enumerate(clauses) if isinstance(c, Insert)]
    files = _touched_files(joined.where(F.col(ACTION_COLUMN).isin(changing))) if changing else []
    in_touched = tcol(TARGET_PRESENT).isNotNull() & tcol(FILE_COLUMN).isin(files)
    act = F.col(ACTION_COLUMN)
    keep = (in_touched & (act.isNull() | ~act.isin(deleting))) | act.isin(inserting)
    rows = joined.where(keep).select(*[per_action(c, tcol(c)) for c in names])
    return _write(rows, table, {REPLACE_FILES_OPTION: json.dumps(files)})


def _target_schema(spark: SparkSession, table: Table, file_column: bool) -> StructType:
    schema = spark_schema(table.arrow_schema())
    return schema.add(StructField(FILE_COLUMN, StringType(), False)) if file_column else schema
