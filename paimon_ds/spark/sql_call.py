"""paimon_ds.sql's `CALL sys.<procedure>(...)`: Paimon's Spark procedures, with Paimon's argument names
(positional or named), run through paimon_ds.procedures; compact runs the package's compaction job.
Each returns a DataFrame of what Paimon's procedure returns.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from .. import procedures
from ..format.binary_row import deserialize_row
from ..format.partition import parse_partition_specs, partition_filter
from ..operation.partition_expire import partition_entries
from ..options.registry import parse_duration_ms
from ..store.row_tracking import data_evolution_enabled
from ..table import Table
from .cluster import compact
from .sql import SqlContext, SqlError, constant_value, name_parts, plan_kind, scala_list
from .types import spark_schema

# Each procedure's arguments, in Paimon's order (for positional calls)
PROCEDURE_ARGS = {
    "compact": ("table", "partitions", "compact_strategy", "order_strategy", "order_by", "where", "options",
                "partition_idle_time"),
    "expire_snapshots": ("table", "retain_max", "retain_min", "older_than", "max_deletes", "options"),
    "create_tag": ("table", "tag", "snapshot", "time_retained"),
    "replace_tag": ("table", "tag", "snapshot", "time_retained"),
    "delete_tag": ("table", "tag"),
    "rollback": ("table", "version", "snapshot", "tag"),
    "rollback_to_timestamp": ("table", "timestamp"),
    "create_tag_from_timestamp": ("table", "tag", "timestamp", "time_retained"),
    "rename_tag": ("table", "tag", "target_tag"),
    "expire_tags": ("table", "older_than"),
    "expire_partitions": ("table", "expiration_time", "timestamp_formatter", "timestamp_pattern",
                          "expire_strategy", "max_expires", "options"),
    "mark_partition_done": ("table", "partitions"),
    "purge_files": ("table",),
    "compact_manifest": ("table",),
    "remove_orphan_files": ("table", "older_than", "dry_run", "parallelism", "mode"),
    "create_branch": ("table", "branch", "tag", "ignoreIfExists"),
    "delete_branch": ("table", "branch"),
    "rename_branch": ("table", "from_branch", "to_branch"),
    "fast_forward": ("table", "branch"),
    "reset_consumer": ("table", "consumerId", "nextSnapshotId"),
    "clear_consumers": ("table", "includingConsumers", "excludingConsumers"),
}
# a procedure's catalog, as Paimon's Spark catalogs are named (its tests call `paimon.sys.compact`)
CATALOG_NAMES = ("paimon", "spark_catalog")
# `db.t$branch_<name>`: a procedure's table on one of its branches, as Paimon's identifiers name it
BRANCH_SUFFIX = "$branch_"


def call(ctx: SqlContext, plan: Any) -> DataFrame:
    parts = name_parts(plan.procedure())
    if len(parts) == 3 and parts[0].lower() in CATALOG_NAMES:  # `paimon.sys.compact`, as Paimon's catalog names it
        parts = parts[1:]
    name = parts[-1].lower()
    if len(parts) != 2 or parts[0].lower() != "sys" or name not in PROCEDURE_ARGS:
        raise SqlError(f"unknown procedure {'.'.join(parts)}; available: "
                       + ", ".join(f"sys.{p}" for p in PROCEDURE_ARGS))
    expected = PROCEDURE_ARGS[name]
    by_lower = {e.lower(): e for e in expected}  # Spark's parser lower-cases named arguments
    args: dict[str, Any] = {}
    for i, arg in enumerate(scala_list(plan.args())):
        if plan_kind(arg) == "NamedArgumentExpression":
            key, value = str(arg.key()), constant_value(ctx.spark, arg.value())
        else:
            if i >= len(expected):
                raise SqlError(f"sys.{name} takes at most {len(expected)} arguments ({', '.join(expected)})")
            key, value = expected[i], constant_value(ctx.spark, arg)
        if key.lower() not in by_lower:
            raise SqlError(f"sys.{name} has no argument {key!r}; its arguments: {', '.join(expected)}")
        args[by_lower[key.lower()]] = value
    if "table" not in args:
        raise SqlError(f"sys.{name} needs table => 'database.table'")
    parts = _identifier_parts(str(args.pop("table")))
    if name == "remove_orphan_files" and len(parts) == 2 and parts[1] == "*":  # a database's tables (Paimon 1.x)
        counts = [_remove_orphan_files(ctx.table([parts[0], t])[1], args) for t in ctx.catalog.list_tables(parts[0])]
        return ctx.spark.createDataFrame([(sum(c for c, _ in counts), sum(s for _, s in counts))], ORPHANS_RESULT)
    parts[-1], _, branch = parts[-1].partition(BRANCH_SUFFIX)
    _, table = ctx.table(parts)
    if branch:
        table = Table.load(table.path, {"branch": branch}, table.storage_options)  # raises naming a missing one
    spark = ctx.spark
    if name in ("create_branch", "delete_branch", "rename_branch", "fast_forward"):
        return _branch_procedure(spark, name, table, args)
    if name == "reset_consumer":
        if args.get("consumerId") in (None, ""):
            raise SqlError("sys.reset_consumer needs consumerId => 'id'")
        next_snapshot = args.get("nextSnapshotId")
        procedures.reset_consumer(table, str(args["consumerId"]),
                                  None if next_snapshot is None else _snapshot_id(next_snapshot))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "clear_consumers":
        including, excluding = args.get("includingConsumers"), args.get("excludingConsumers")
        procedures.clear_consumers(table, None if including is None else str(including),
                                   None if excluding is None else str(excluding))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "compact":
        return _compact(spark, table, args, branch)
    if name == "expire_snapshots":
        options = _parse_options(args.get("options"))  # table options for this call (Paimon 1.x)
        if options:
            table = table.reload({**table.dynamic_options, **options})
        result = procedures.expire_snapshots(table, args.get("retain_max"), args.get("retain_min"),
                                             args.get("older_than"), args.get("max_deletes"))
        return spark.createDataFrame([(len(result.expired),)], "deleted_snapshots_count int")
    if name in ("create_tag", "replace_tag"):
        if "tag" not in args:
            raise SqlError(f"sys.{name} needs tag => 'name'")
        retained = args.get("time_retained")
        tag_procedure = procedures.create_tag if name == "create_tag" else procedures.replace_tag
        tag_procedure(table, str(args["tag"]), args.get("snapshot"),
                      time_retained=None if retained is None else str(retained))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "delete_tag":
        if "tag" not in args:
            raise SqlError("sys.delete_tag needs tag => 'name'")
        for tag in str(args["tag"]).split(","):
            procedures.delete_tag(table, tag.strip())
        return spark.createDataFrame([(True,)], "result boolean")
    if name in TAG_AND_PARTITION_PROCEDURES:
        return _tag_or_partition_procedure(spark, name, table, args)
    return spark.createDataFrame([_remove_orphan_files(table, args)], ORPHANS_RESULT)


def _compact(spark: SparkSession, table: Table, args: dict[str, Any], branch: str) -> DataFrame:
    """sys.compact with Paimon 1.4's arguments and checks; `where` (a partition predicate) runs in Spark on the
    table's partitions, as Paimon resolves it; `partition_idle_time` leaves out partitions written since. Returns
    true, as Paimon's procedure does, also when no bucket needed compaction."""
    def given(key: str) -> str | None:
        value = args.get(key)
        return None if value is None or not str(value).strip() else str(value)

    partitions, where, idle = given("partitions"), given("where"), given("partition_idle_time")
    order, order_by = (given("order_strategy") or "none").lower(), given("order_by")
    if order == "none" and order_by:
        raise SqlError('sys.compact: order_strategy "none" cannot work with order_by columns.')
    if idle and order != "none":
        raise SqlError("sys.compact: sort compact do not support 'partition_idle_time'.")
    strategy = (given("compact_strategy") or "full").lower()
    if strategy not in ("full", "minor"):
        raise SqlError(f"sys.compact: compact_strategy must be 'full' or 'minor', got {strategy!r}")
    if partitions and where:
        raise SqlError("sys.compact: partitions and where cannot be used together.")
    keys = table.partition_keys
    sort_columns = [c.strip() for c in order_by.split(",")] if order_by else []
    if any(c in keys for c in sort_columns):
        raise SqlError(f"sys.compact: order_by should not contain partition cols, because it is meaningless, your "
                       f"order_by cols are {sort_columns}, and partition cols are {keys}")
    selected = _compact_partitions(spark, table, partitions, where)
    if order != "none" and data_evolution_enabled(table.options):
        raise SqlError("sys.compact: Data Evolution table cannot be sorted!")
    if order != "none":
        raise SqlError(f"sys.compact: order_strategy {order!r} (sort compact) is not supported by paimon_ds")
    if idle:
        newest = partition_entries(table)
        before = int(time.time() * 1000) - parse_duration_ms(idle)
        idle_ones = {p for p, created in newest.items() if created <= before}
        selected = idle_ones if selected is None else selected & idle_ones
    options = {**_parse_options(args.get("options")), **({"branch": branch} if branch else {})}
    if selected is not None and not selected:
        return spark.createDataFrame([(True,)], "result boolean")  # no partition to compact
    compact(spark, table.path, strategy == "full", options,
            None if selected is None else (lambda p, chosen=frozenset(selected): p in chosen))
    return spark.createDataFrame([(True,)], "result boolean")


def _compact_partitions(spark: SparkSession, table: Table, partitions: str | None,
                        where: str | None) -> set[bytes] | None:
    """The partitions sys.compact's `partitions` (`k=v,k2=v2;k=w`, values bare or quoted) or `where` names (None:
    all). A `where` is a Spark predicate of the partition columns, evaluated by Spark on the table's partitions."""
    if partitions is None and where is None:
        return None
    keys = table.partition_keys
    if not keys:
        raise SqlError("sys.compact: Table should be a partitioned table when using partition predicate.")
    existing = list(partition_entries(table))
    types = [f.type for f in table.table_schema.partition_fields]
    values = [deserialize_row(p, types) for p in existing]
    if partitions is not None:
        specs = parse_partition_specs(partitions)
        for spec in specs:
            if any(k not in keys for k in spec):
                raise SqlError(f"sys.compact: Only partition predicate is supported, your predicate is "
                               f"{partitions!r}, but partition keys are {keys}")
            for k, v in spec.items():  # Paimon reads the spec as a Spark predicate: "p1" is a string literal
                if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                    spec[k] = v[1:-1]
        accept = partition_filter(table, specs)
        return {p for p in existing if accept is None or accept(p)}
    arrow = table.arrow_schema()
    schema = spark_schema(pa.schema([arrow.field(k) for k in keys]).append(pa.field(INDEX_COLUMN, pa.int32())))
    df = spark.createDataFrame([(*v, i) for i, v in enumerate(values)], schema)
    try:
        matched = df.where(where).select(INDEX_COLUMN).collect()
    except AnalysisException as e:
        raise SqlError(f"sys.compact: Only partition predicate is supported, your predicate is {where!r}, but "
                       f"partition keys are {keys} ({str(e).splitlines()[0]})") from None
    return {existing[r[0]] for r in matched}


INDEX_COLUMN = "_paimon_ds_partition_index"


# Paimon 1.0+'s remove_orphan_files result (0.9 returned a `result` row per file)
ORPHANS_RESULT = "deletedFileCount bigint, deletedFileTotalLenInBytes bigint"


def _remove_orphan_files(table: Table, args: dict[str, Any]) -> tuple[int, int]:
    """Remove (or with dry_run only find) a table's orphan files: their count and total size. `mode` (`local` /
    `distributed`) and `parallelism` choose how Paimon runs it; here it always runs in the driver."""
    mode = str(args.get("mode") or "distributed").lower()
    if mode not in ("local", "distributed"):
        raise SqlError(f"sys.remove_orphan_files: mode must be 'local' or 'distributed', got {mode!r}")
    older_than, dry_run = args.get("older_than"), bool(args.get("dry_run") or False)
    candidates = procedures.remove_orphan_files(table, older_than, True)
    root = table.path.rstrip("/")
    sizes = {f: table.io.size(f if "://" in f or f.startswith("/") else f"{root}/{f}") for f in candidates}
    removed = candidates if dry_run else procedures.remove_orphan_files(table, older_than, False)
    return len(removed), sum(sizes.get(f, 0) for f in removed)


# Paimon 1.2+'s rollback result (0.9 - 1.1 returned `result boolean`)
ROLLBACK_RESULT = "previous_snapshot_id bigint, current_snapshot_id bigint"
TAG_AND_PARTITION_PROCEDURES = ("rollback", "rollback_to_timestamp", "create_tag_from_timestamp", "rename_tag",
                                "expire_tags", "expire_partitions", "mark_partition_done", "purge_files",
                                "compact_manifest")


def _required(name: str, args: dict[str, Any], *needed: str) -> None:
    missing = [a for a in needed if args.get(a) in (None, "")]
    if missing:
        raise SqlError(f"sys.{name} needs " + ", ".join(f"{a} => ..." for a in missing))


def _tag_or_partition_procedure(spark: SparkSession, name: str, table: Table, args: dict[str, Any]) -> DataFrame:
    """The procedures whose result rows are Paimon's own (column names and types as its Spark procedures)."""
    latest = table.snapshot_manager.latest_id()
    if name == "rollback":
        given = [a for a in ("version", "snapshot", "tag") if args.get(a) not in (None, "")]
        if len(given) != 1:
            raise SqlError("sys.rollback needs exactly one of version => snapshot id or tag name, snapshot => id, "
                           "tag => 'name'")
        value = args[given[0]]
        if latest is None:
            raise SqlError("sys.rollback: the table has no snapshot, there is nothing to roll back")
        if given[0] == "tag":
            target = procedures.rollback(table, tag=str(value))
        else:
            target = procedures.rollback(table, _snapshot_id(value) if given[0] == "snapshot" else value)
        return spark.createDataFrame([(latest, target.id)], ROLLBACK_RESULT)
    if name == "rollback_to_timestamp":
        _required(name, args, "timestamp")
        if latest is None:
            raise SqlError("sys.rollback_to_timestamp: the table has no snapshot, there is nothing to roll back")
        target = procedures.rollback_to_timestamp(table, args["timestamp"])
        return spark.createDataFrame([(latest, target.id)], ROLLBACK_RESULT)
    if name == "create_tag_from_timestamp":
        _required(name, args, "tag", "timestamp")
        retained = args.get("time_retained")
        s = procedures.create_tag_from_timestamp(table, str(args["tag"]), args["timestamp"],
                                                 None if retained in (None, "") else str(retained))
        return spark.createDataFrame([(str(args["tag"]), s.id, s.time_millis,
                                       "null" if s.watermark is None else str(s.watermark))],
                                     "tagName string, snapshot bigint, commit_time bigint, watermark string")
    if name == "rename_tag":
        _required(name, args, "tag", "target_tag")
        procedures.rename_tag(table, str(args["tag"]), str(args["target_tag"]))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "expire_tags":
        older = args.get("older_than")
        tags = procedures.expire_tags(table, None if older in (None, "") else older)
        return spark.createDataFrame([(t,) for t in tags] or [("No expired tags.",)], "expired_tags string")
    if name == "expire_partitions":
        options = _parse_options(args.get("options"))  # table options for this call (Paimon 1.x)
        if options:
            table = table.reload({**table.dynamic_options, **options})
        optional = {k: (None if args.get(k) in (None, "") else str(args[k]))
                    for k in ("expiration_time", "timestamp_formatter", "timestamp_pattern", "expire_strategy")}
        if optional["expiration_time"] is None and not table.options.raw.get("partition.expiration-time"):
            raise SqlError("sys.expire_partitions needs expiration_time => ... (or the table's "
                           "partition.expiration-time)")
        max_expires = args.get("max_expires")
        expired = procedures.expire_partitions(table, optional.pop("expiration_time"), **optional,
                                               max_expires=None if max_expires is None else int(max_expires))
        # Paimon prints each partition as Java's Map.toString without its braces: `k1=v1, k2=v2`
        rows = [(", ".join(f"{k}={v}" for k, v in p.items()),) for p in expired]
        return spark.createDataFrame(rows or [("No expired partitions.",)], "expired_partitions string")
    if name == "mark_partition_done":
        _required(name, args, "partitions")
        procedures.mark_partition_done(table, str(args["partitions"]))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "compact_manifest":
        procedures.compact_manifest(table)
        return spark.createDataFrame([(True,)], "result boolean")
    procedures.purge_files(table)
    return spark.createDataFrame([("Success",)], "result string")


def _branch_procedure(spark: SparkSession, name: str, table: Table, args: dict[str, Any]) -> DataFrame:
    """sys.create_branch / delete_branch / rename_branch / fast_forward, with Paimon's argument names."""
    needed = {"rename_branch": ("from_branch", "to_branch")}.get(name, ("branch",))
    missing = [a for a in needed if args.get(a) in (None, "")]
    if missing:
        raise SqlError(f"sys.{name} needs " + ", ".join(f"{a} => 'name'" for a in missing))
    if name == "create_branch":
        ignore = str(args.get("ignoreIfExists") or "false").strip().lower()
        if ignore not in ("true", "false"):
            raise SqlError(f"sys.create_branch: ignoreIfExists must be true or false, got {ignore!r}")
        tag = args.get("tag")
        procedures.create_branch(table, str(args["branch"]), str(tag) if tag not in (None, "") else None,
                                 ignore == "true")
    elif name == "delete_branch":
        procedures.delete_branch(table, str(args["branch"]))
    elif name == "rename_branch":
        procedures.rename_branch(table, str(args["from_branch"]), str(args["to_branch"]))
    else:
        procedures.fast_forward(table, str(args["branch"]))
    return spark.createDataFrame([(True,)], "result boolean")


def _identifier_parts(text: str) -> list[str]:
    """A procedure's `table` argument as Spark reads a multipart name: `db.t`, ``db.`t$branch_b` `` (a part in
    backticks may hold dots; a doubled backtick is one)."""
    parts = [quoted.replace("``", "`") if quoted else plain.strip()
             for quoted, plain in re.findall(r"`((?:[^`]|``)*)`|([^.`]+)", text)]
    if not parts or not all(parts):
        raise SqlError(f"table {text!r} is not a table name (database.table)")
    return parts


def _snapshot_id(value: Any) -> int:
    """A snapshot id argument: a whole number (Paimon's procedures take a BIGINT)."""
    if isinstance(value, bool) or not isinstance(value, int):
        text = str(value).strip()
        if not text.lstrip("-").isdigit():
            raise SqlError(f"a snapshot id must be a whole number, got {value!r}")
        value = int(text)
    return value


def _parse_options(text: str | None) -> dict[str, str]:
    """Paimon's procedure options: `k1=v1,k2=v2`."""
    out = {}
    for pair in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = pair.partition("=")
        if not sep:
            raise SqlError(f"options {text!r}: expected key=value pairs separated by ','")
        out[key.strip()] = value.strip()
    return out
