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
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ..deletionvectors.maintainer import dv_enabled
from ..errors import RowLevelError
from ..operation.delete_rows import append_deletions
from ..operation.messages import CommitConflict
from ..operation.row_level import Delete, Insert, Update, check_clauses, check_engine, check_update
from ..snapshot.manager import Snapshot
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
from .session import activate
from .types import spark_schema

Expr = str | Column

FILE_COLUMN = "__paimon_ds_file"
POSITION_COLUMN = "__paimon_ds_position"
KIND_COLUMN = "__paimon_ds_row_kind"
ACTION_COLUMN = "__paimon_ds_action"


def _column(e: Expr) -> Column:
    return F.expr(e) if isinstance(e, str) else e


def _holds(e: Expr | None) -> Column:
    """SQL truth: a NULL condition does not hold."""
    return F.lit(True) if e is None else F.coalesce(_column(e), F.lit(False))


def _target(spark: SparkSession, table: Table, snapshot: Snapshot, file_column: bool = False,
            only_files: Sequence[str] | None = None, position_column: bool = False) -> DataFrame:
    # the table's own rows only: a scan.fallback-branch's rows are not the table's to change (as in Paimon)
    activate(spark)  # this thread may be new: the source is looked up in its active session
    reader = spark.read.format("paimon").options(**storage_job_options(table.storage_options)) \
        .option("scan.snapshot-id", str(snapshot.id)).option("scan.fallback-branch", "")
    if file_column:
        reader = reader.option(FILE_COLUMN_OPTION, FILE_COLUMN)
    if position_column:
        reader = reader.option(POSITION_COLUMN_OPTION, POSITION_COLUMN)
    if only_files is not None:
        reader = reader.option(ONLY_FILES_OPTION, json.dumps(sorted(only_files)))
    return reader.load(table.path)


_CONFLICT = re.compile(r"CommitConflict: (.*)")


def _write(df: DataFrame, table: Table, job_options: Mapping[str, str]) -> Snapshot | None:
    before = table.snapshot_manager.latest_id()
    try:
        if table.table_schema.primary_keys and table.bucket == -1:  # dynamic buckets: through the bucket assigners
            clustered_write(df, table.path, "append", {**storage_job_options(table.storage_options), **job_options})
        else:
            activate(df.sparkSession)
            writer = df.write.format("paimon").mode("append").options(**storage_job_options(table.storage_options))
            for k, v in job_options.items():
                writer = writer.option(k, v)
            writer.save(table.path)
    except Exception as e:
        # a concurrent commit removed files this statement rewrites: the source's commit() raised CommitConflict,
        # which Spark wraps in its own error; the statement fails with ours (nothing was changed)
        conflict = _CONFLICT.search(str(e))
        if conflict is None:
            raise
        raise CommitConflict(conflict.group(1).strip()) from None
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
           storage_options: dict[str, Any] | None = None, alias: str | None = None) -> Snapshot | None:
    """DELETE FROM the table WHERE ``condition`` (None: every row). Returns the new snapshot, or None if
    no row matched. ``alias``: the name the condition may qualify the table's columns with."""
    table, snapshot = _load(spark, path, storage_options)
    check_engine(table, "DELETE")
    if snapshot is None:
        return None

    def target(**kw: Any) -> DataFrame:
        df = _target(spark, table, snapshot, **kw)
        return df.alias(alias) if alias else df

    if table.table_schema.primary_keys:
        rows = target().where(_holds(condition))
        return _write(rows.withColumn(KIND_COLUMN, F.lit("-D")), table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})
    if dv_enabled(table.store):
        return _delete_with_vectors(target(file_column=True, position_column=True), table, snapshot, condition)
    files = _touched_files(target(file_column=True).where(_holds(condition)))
    if not files:
        return None
    kept = target(file_column=True, only_files=files).where(~_holds(condition)).drop(FILE_COLUMN)
    return _write(kept, table, {REPLACE_FILES_OPTION: json.dumps(files)})


def _delete_with_vectors(target: DataFrame, table: Table, snapshot: Snapshot, condition: Expr | None
                         ) -> Snapshot | None:
    """Append tables with deletion vectors: the matching rows' positions go into their files' vectors
    (no file is rewritten), as Paimon's Spark DELETE does with deletion vectors enabled."""
    rows = target.where(_holds(condition)).select(FILE_COLUMN, POSITION_COLUMN)
    hits = rows.toArrow()
    if hits.num_rows == 0:
        return None
    grouped = hits.group_by(FILE_COLUMN, use_threads=False).aggregate([(POSITION_COLUMN, "list")])
    deleted = {name: np.asarray(positions, dtype=np.int64) for name, positions in zip(
        grouped.column(FILE_COLUMN).to_pylist(), grouped.column(f"{POSITION_COLUMN}_list").to_pylist())}
    return append_deletions(table, snapshot, deleted)


def update(spark: SparkSession, path: str, assignments: Mapping[str, Expr], condition: Expr | None = None,
           storage_options: dict[str, Any] | None = None, alias: str | None = None) -> Snapshot | None:
    """UPDATE the table SET ``assignments`` (column -> expression over the old row) WHERE ``condition``.
    ``alias``: the name the condition and values may qualify the table's columns with."""
    table, snapshot = _load(spark, path, storage_options)
    check_update(table, assignments)
    if snapshot is None:
        return None

    def target(**kw: Any) -> DataFrame:
        df = _target(spark, table, snapshot, **kw)
        return df.alias(alias) if alias else df

    names = table.table_schema.field_names
    if table.table_schema.primary_keys:
        rows = target()
        values = _typed(table, rows, assignments, "UPDATE")
        rows = rows.where(_holds(condition)).select(*[values.get(c, F.col(c)).alias(c) for c in names])
        return _write(rows.withColumn(KIND_COLUMN, F.lit("+U")), table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})
    rows = target(file_column=True)
    values = _typed(table, rows, assignments, "UPDATE")
    files = _touched_files(rows.where(_holds(condition)))
    if not files:
        return None
    hit = _holds(condition)
    rows = target(file_column=True, only_files=files).select(
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
    more than one source row is an error. Expressions name columns as `t.col` / `s.col`; an unqualified
    column resolves as Spark resolves MERGE for a V2 table: in WHEN MATCHED against both sides (a name
    both have is ambiguous), in WHEN NOT MATCHED against the source only, in WHEN NOT MATCHED BY SOURCE
    against the target only (each kind of clause is evaluated over its own rows: the joined pairs, the
    source rows no target row matches, the target rows no source row matches)."""
    table, snapshot = _load(spark, path, storage_options)
    check_engine(table, "MERGE")
    check_clauses(table, when_matched, when_not_matched, when_not_matched_by_source)
    pk = list(table.table_schema.primary_keys)
    names = table.table_schema.field_names

    def read_target() -> DataFrame:
        if snapshot is None:  # an empty table: nothing can match
            return spark.createDataFrame([], _target_schema(spark, table, not pk))
        return _target(spark, table, snapshot, file_column=not pk, position_column=not pk)

    # NOT MATCHED BY SOURCE joins its own read of the target: with one read shared by the inner join and the anti
    # join of one union, the inner join's rows (WHEN MATCHED) were lost (Spark 4.x, tests/operation/test_row_level.py
    # test_same_rows_as_the_spark_path)
    target = read_target()
    t, s = target.alias(target_alias), source.alias(source_alias)
    condition = _column(on)
    # a target row's identity: its key (primary-key tables), else its file and position
    identity = pk or [FILE_COLUMN, POSITION_COLUMN]

    def tcol(c: str) -> Column:
        return F.col(f"`{target_alias}`.`{c}`")

    def scol(c: str) -> Column:
        return F.col(f"`{source_alias}`.`{c}`")

    parts: list[tuple[DataFrame, Sequence[Update | Delete | Insert]]] = []
    if when_matched:
        matched = t.join(s, condition, "inner")
        twice = matched.groupBy(*[tcol(c) for c in identity]).count().where("count > 1").limit(1).collect()
        if twice:
            raise RowLevelError("MERGE: a target row matched more than one source row (ON "
                                f"{on if isinstance(on, str) else 'condition'}); make the source unique per key")
        parts.append((matched, when_matched))
    if when_not_matched:
        parts.append((s.join(t, condition, "left_anti"), when_not_matched))
    if when_not_matched_by_source:
        parts.append((read_target().alias(target_alias).join(s, condition, "left_anti"), when_not_matched_by_source))

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

    def acting(frame: DataFrame, clauses: Sequence[Update | Delete | Insert]) -> DataFrame:
        """The part's rows with the index of the first clause whose condition holds (null: none)."""
        action = F.lit(None).cast("int")
        for i, clause in reversed(list(enumerate(clauses))):
            action = F.when(_holds(clause.condition), F.lit(i)).otherwise(action)
        return frame.withColumn(ACTION_COLUMN, action)

    def new_rows(frame: DataFrame, clauses: Sequence[Update | Delete | Insert], kinds: bool) -> DataFrame:
        """The rows the part's UPDATE / INSERT clauses write (and, with ``kinds``, the deletes as -D)."""
        wanted = [i for i, c in enumerate(clauses) if kinds or not isinstance(c, Delete)]
        out = []
        for c in names:
            v = F.lit(None)
            for i in reversed(wanted):
                v = F.when(F.col(ACTION_COLUMN) == i, value(c, clauses[i])).otherwise(v)
            out.append(v.cast(types[c]).alias(c))
        if kinds:
            kind = F.lit(None).cast("string")
            for i in reversed(wanted):
                kind = F.when(F.col(ACTION_COLUMN) == i, F.lit(_KINDS[type(clauses[i])])).otherwise(kind)
            out.append(kind.alias(KIND_COLUMN))
        return frame.where(F.col(ACTION_COLUMN).isin(wanted)).select(*out)

    acted = [(acting(frame, clauses), clauses) for frame, clauses in parts]
    if pk:
        rows = _union([new_rows(frame, clauses, kinds=True) for frame, clauses in acted])
        if rows is None:
            return None
        return _write(rows, table, {ROW_KIND_COLUMN_OPTION: KIND_COLUMN})

    # append table: rewrite the files holding a target row an UPDATE or DELETE clause acts on, add the inserts
    changed = _union([frame.where(F.col(ACTION_COLUMN).isNotNull()).select(
        *[tcol(c).alias(c) for c in identity]) for frame, clauses in acted if not isinstance(clauses[0], Insert)])
    files = _touched_files(changed) if changed is not None else []
    written = [new_rows(frame, clauses, kinds=False) for frame, clauses in acted]
    if files:
        kept = (_target(spark, table, snapshot, file_column=True, position_column=True, only_files=files)
                .join(changed, identity, "left_anti").select(*names))
        written.append(kept)
    rows = _union(written)
    if rows is None:
        return None
    return _write(rows, table, {REPLACE_FILES_OPTION: json.dumps(files)})


_KINDS = {Update: "+U", Delete: "-D", Insert: "+I"}


def _union(frames: Sequence[DataFrame]) -> DataFrame | None:
    out = None
    for f in frames:
        out = f if out is None else out.unionByName(f)
    return out


def _target_schema(spark: SparkSession, table: Table, file_column: bool) -> StructType:
    schema = spark_schema(table.arrow_schema())
    if not file_column:
        return schema
    return schema.add(StructField(FILE_COLUMN, StringType(), False)) \
        .add(StructField(POSITION_COLUMN, LongType(), False))
