"""What paimon_ds requires of a table's schema and options: the checks a new table gets, which a schema changed by
ALTER or by a write's merge-schema passes again, and the table layouts this version writes correctly.

Table.check_writable and the schema changes both call here, so the checks do not depend on the facade.
"""

from __future__ import annotations

import datetime as dt

from ..casts.defaults import default_array
from ..format.data_file import check_format_types
from ..format.partition import POSTPONE_BUCKET
from ..mergetree.kv import KeyValueLayout
from ..mergetree.merge import merge_engine
from ..options.registry import (
    TAG,
    WRITE,
    OptionError,
    Options,
    check_supported,
    check_values,
    parse_list,
    unsupported_stored,
)
from ..snapshot.retention import check_retention
from ..snapshot.tag_period import TagPeriod
from ..store.row_tracking import check_table
from .manager import TableSchema
from .types import SchemaError

# Paimon's SystemColumns.SYSTEM_FIELD_NAMES and KEY_FIELD_PREFIX: names its key-value files use.
SYSTEM_FIELD_NAMES = frozenset({"_VALUE_COUNT", "_SEQUENCE_NUMBER", "_VALUE_KIND"})
KEY_FIELD_PREFIX = "_KEY_"
# the path named in the messages of a schema checked before it belongs to a table
_UNSAVED_TABLE = "memory://paimon_ds-schema-check"


def is_reserved_name(name: str) -> bool:
    """Whether Paimon reserves the column name for its key-value files."""
    return name in SYSTEM_FIELD_NAMES or name.startswith(KEY_FIELD_PREFIX)


def check_writable(path: str, schema: TableSchema, options: Options) -> None:
    """Refuse, before any data is written, a table layout this version cannot write correctly (``options``: the
    table's, with the job's overlaid; ``path`` names the table in messages), and a table whose options ask Paimon's
    writers for what paimon_ds's do not do (refused keys of `paimon_option_keys.txt`, e.g. set by Java Paimon)."""
    try:
        check_values(options)
    except OptionError as e:
        raise OptionError(f"Paimon table {path}: {e}; nothing was written (fix it with ALTER TABLE ... SET "
                          "TBLPROPERTIES, or schema.change.SetOption)") from None
    _check_layout(path, schema, options)
    check_supported(options, WRITE, path)
    check_maintenance(path, options)


# the options of the maintenance a commit runs (operation.partition_expire, operation.auto_tag)
MAINTENANCE_KEYS = ("partition.expiration-time", "partition.expiration-check-interval", "partition.expiration-strategy",
                    "partition.expiration-max-num", "partition.expiration-batch-size", "partition.timestamp-formatter",
                    "partition.timestamp-pattern", "end-input.check-partition-expire", "tag.automatic-creation",
                    "tag.creation-period", "tag.creation-period-duration", "tag.creation-delay", "tag.period-formatter",
                    "tag.num-retained-max", "tag.default-time-retained", "tag.time-expire-enabled",
                    "tag.automatic-completion", "tag.batch.customized-name", "sink.watermark-time-zone",
                    "sink.process-time-zone")


def check_maintenance(path: str, options: Options) -> None:
    """Refuse, before a write, maintenance options its commit could not act on as Paimon's committer does: an
    invalid value (a table Java Paimon wrote may store one), a tag delay not shorter than its period (Paimon
    refuses to create the committer), and tag automation on a table whose tag options paimon_ds does not honour
    (callbacks, success files)."""
    for key in MAINTENANCE_KEYS:
        options.get(key)
    mode = options.get("tag.automatic-creation")
    if mode in ("process-time", "watermark"):
        try:
            TagPeriod.of(options).check_delay(dt.timedelta(milliseconds=options.get("tag.creation-delay")))
        except ValueError as e:
            raise OptionError(f"Paimon table {path}: {e}") from None
    if mode != "none" or options.get("tag.default-time-retained") is not None:
        found = unsupported_stored(options.raw, TAG)
        if found:
            reasons = "; ".join(f"{key}={value!r}: with it, Paimon {line.note}" for key, value, line in found)
            raise OptionError(f"Paimon table {path}: its option(s) {reasons}. paimon_ds does not do that, and its "
                              "commits create or delete tags here (tag.automatic-creation, tag.default-time-retained): "
                              f"nothing was written. Remove {', '.join(k for k, _, _ in found)}, or turn the tag "
                              "automation off, or use Java Paimon here")


def default_problems(schema: TableSchema) -> list[str]:
    """The column defaults Paimon's rules cannot read as their column's type (CatalogUtils.validateTableSchema)."""
    problems = []
    for f in schema.fields:
        if f.default_value is not None:
            try:
                default_array(f.default_value, f.type)
            except SchemaError as e:
                problems.append(f"column {f.name!r}: {e}")
    return problems


def _check_layout(path: str, schema: TableSchema, options: Options) -> None:
    defaults = default_problems(schema)
    if defaults:
        raise SchemaError(f"Paimon table {path}: " + "; ".join(defaults))
    check_table(schema, options)  # row-tracking / data-evolution tables: Paimon's rules
    check_retention(options)  # snapshot / changelog retention: 1 <= min <= max, as Paimon's SchemaValidation
    check_format_types(options, schema.fields, path)
    pk = list(schema.primary_keys)
    bucket = options.get("bucket")
    if not pk:
        if bucket == POSTPONE_BUCKET:
            raise SchemaError(f"bucket=-2 (postpone bucket) of {path} is for primary-key tables (Paimon: \"The number "
                              "of buckets needs to be greater than 0\" for an append table that is not -1)")
        return
    missing = [k for k in schema.partition_keys if k not in pk]
    if missing and bucket != -1:
        # Paimon: a key that may move between partitions needs the global index of bucket=-1
        raise SchemaError(f"the primary key {pk} lacks the partition key(s) {missing}: a cross-partition upsert "
                          "table needs dynamic bucket mode, 'bucket' = '-1'")
    if bucket == -1:
        # dynamic bucket mode (Paimon's HASH_DYNAMIC): buckets come from the hash index
        if Options(schema.options).get("bucket-key") or options.get("bucket-key"):
            raise OptionError("Cannot define 'bucket-key' with bucket -1, please specify a bucket number "
                              "(as Paimon refuses it)")
        options.get("dynamic-bucket.target-row-num")  # parsed here: an invalid value is refused before writing
        options.get("dynamic-bucket.max-buckets")
    elif bucket == POSTPONE_BUCKET:
        _check_postpone(schema, options)
    elif bucket <= 0:
        raise OptionError(f"bucket={bucket} is not supported for primary-key tables by this version of "
                          "paimon_ds: set 'bucket' to N > 0 (fixed), -1 (dynamic) or -2 (postpone)")
    else:
        outside = [k for k in schema.bucket_keys if k not in pk]
        if outside:
            raise OptionError(f"bucket-key column(s) {outside} must be part of the primary key {pk}")
    KeyValueLayout(schema).key_fields  # noqa: B018 - raises if only partition keys are primary keys
    KeyValueLayout(schema).sequence_fields  # noqa: B018 - raises naming a missing sequence.field
    rowkind = options.get("rowkind.field")
    if rowkind:
        schema.field(rowkind)
    engine = merge_engine(schema, options)
    problems = engine.strict_problems()
    if problems:
        raise OptionError(problems[0])
    check_record_level_expire(schema, options)
    if options.get("merge-engine") == "first-row" and Options(schema.options).get("sequence.field"):
        raise OptionError("the first-row merge engine does not take a 'sequence.field' (as in Paimon): "
                          "the first row written wins")
    producer = options.get("changelog-producer")
    # Paimon's SchemaValidation: the combinations its writers refuse
    if options.get("merge-engine") == "first-row" and producer not in ("none", "lookup"):
        raise OptionError(f"changelog-producer={producer} is not supported with the first-row merge engine (as in "
                          "Paimon): use none or lookup")
    if options.get("deletion-vectors.enabled"):
        if producer not in ("none", "input", "lookup"):
            raise OptionError(f"deletion-vectors.enabled is not supported with changelog-producer={producer} (as in "
                              "Paimon): use none, input or lookup")
        if options.get("merge-engine") == "first-row":
            raise OptionError("deletion-vectors.enabled is not supported with the first-row merge engine (as in "
                              "Paimon: it never deletes old rows)")


def check_record_level_expire(schema: TableSchema, options: Options) -> None:
    """Paimon's checks of `record-level.expire-time` / `record-level.time-field` (RecordLevelExpire.create and
    SchemaValidation): the time field exists and is INT, BIGINT or TIMESTAMP (0.9's time-field-type: INT with
    seconds-int, BIGINT with millis-long)."""
    field_name = options.get("record-level.time-field")
    if options.get("record-level.expire-time") is not None and field_name is None:
        raise OptionError("You should set time field for record-level expire ('record-level.time-field').")
    if field_name is None:
        return
    if field_name not in schema.field_names:
        raise OptionError(f"Can not find time field {field_name} for record level expire.")
    t = schema.field(field_name).type
    if t.root not in ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
        raise OptionError(f"The record level time field type should be one of INT, BIGINT, or TIMESTAMP, but field "
                          f"type is {t.sql()}.")
    kind = options.get("record-level.time-field-type")
    if kind is not None and (kind, t.root) not in (("seconds-int", "INT"), ("millis-long", "BIGINT")):
        raise OptionError(f"Record level time field {field_name!r} is {t.sql()}: 'record-level.time-field-type' = "
                          f"{kind!r} takes {'INT' if kind == 'seconds-int' else 'BIGINT'} (Paimon 0.9)")


def _check_postpone(schema: TableSchema, options: Options) -> None:
    """Postpone-bucket tables (bucket=-2): the combinations this version writes as Paimon does."""
    outside = [k for k in schema.bucket_keys if k not in schema.primary_keys]
    if outside:
        raise OptionError(f"bucket-key column(s) {outside} must be part of the primary key {list(schema.primary_keys)}")
    for key, allowed in (("deletion-vectors.enabled", False), ("changelog-producer", "none")):
        if options.get(key) != allowed:
            raise OptionError(f"{key}={options.get(key)} with bucket=-2 (postpone bucket) is not supported for writing "
                              f"by this version of paimon_ds (its postpone compaction keeps no deletion vectors and "
                              "produces no changelog); nothing was written")
    options.get("postpone.default-bucket-num")  # parsed here: an invalid value is refused before writing
    options.get("postpone.target-row-num-per-bucket")


def schema_problems(schema: TableSchema) -> list[str]:
    """What a new table with this schema would be refused for (empty: nothing)."""
    problems: list[str] = []
    names = schema.field_names
    if not names:
        problems.append("a table needs at least one column")
    lower = [n.lower() for n in names]
    dups = sorted({n for n in names if lower.count(n.lower()) > 1})
    if dups:
        problems.append(f"duplicate column name(s) {dups}")
    reserved = [n for n in names if is_reserved_name(n)]
    if reserved:
        problems.append(f"column name(s) {reserved} are reserved by Paimon")
    problems.extend(default_problems(schema))
    opts = Options(schema.options)
    for key in ("partition_keys", "primary_keys"):
        missing = [k for k in getattr(schema, key) if k not in names]
        if missing:
            problems.append(f"{key.replace('_', ' ')[:-1]} column(s) {missing} are not columns of the table")
    bucket_key = opts.get("bucket-key") or []
    missing = [k for k in bucket_key if k not in names]
    if missing:
        problems.append(f"bucket-key column(s) {missing} are not columns of the table")
    if [k for k in bucket_key if k in schema.partition_keys]:
        problems.append(f"bucket-key {bucket_key} must not hold partition columns")
    try:
        bucket = opts.get("bucket")
    except OptionError:
        bucket = -1  # an invalid value is refused by the option check
    if bucket == -1 and bucket_key:
        problems.append("'bucket-key' needs a fixed bucket count ('bucket' > 0)")
    if bucket == POSTPONE_BUCKET and not schema.primary_keys:
        problems.append("bucket -2 (postpone bucket) is for primary-key tables (Paimon: the number of buckets of an "
                        "append table must be -1 or above 0)")
    if bucket > 0 and not schema.primary_keys and not bucket_key:
        problems.append("an append table with a fixed bucket count needs 'bucket-key'")
    for key, columns in (("sequence.field", opts.get("sequence.field") or []),
                         ("rowkind.field", parse_list(opts.get("rowkind.field") or ""))):
        missing = [k for k in columns if k not in names]
        if missing:
            problems.append(f"{key} column(s) {missing} are not columns of the table")
    for key, value in opts.raw.items():
        if not key.startswith("fields."):
            continue
        parts = key.split(".")
        referenced = parts[1].split(",") if len(parts) > 2 else []
        if key.endswith(".sequence-group"):
            referenced += parse_list(value)
        missing = [k for k in referenced if k != "default-aggregate-function" and k not in names]
        if missing:
            problems.append(f"option {key!r} names column(s) {missing} that are not in the table")
    if not problems:
        problems += _writable_problems(schema)
    return problems


def _writable_problems(schema: TableSchema) -> list[str]:
    try:
        check_writable(_UNSAVED_TABLE, schema, Options(schema.options))
    except (SchemaError, OptionError, ValueError, KeyError) as e:
        return [str(e)]
    return []

