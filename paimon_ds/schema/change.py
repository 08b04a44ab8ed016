"""ALTER TABLE: schema changes, applied with the rules of Paimon 0.9's `SchemaManager.commitChanges`.

A list of changes becomes one new `schema/schema-<id+1>` file, written create-if-absent; if another
writer created that id first, the changes are applied again to the newer schema. Columns keep their
field ids (files are read by id), so renamed columns keep their data, dropped ones disappear, and
added ones read as nulls in files written before. Every refusal raises before anything is written.

Rules (Paimon 0.9 unless marked "paimon_ds"):
- partition and primary-key columns cannot be dropped or renamed; the last column cannot be dropped;
  column names are unique (case-insensitively, as a new table's are: paimon_ds) and not Paimon's
  system names (`_SEQUENCE_NUMBER`, `_VALUE_KIND`, `_VALUE_COUNT`, `_KEY_*`);
- an added column is nullable (rows already written have no value for it) and takes the next field id;
- a column type changes as Paimon 0.9's explicit casts allow, files written before being cast on read
  (`paimon_ds.casts`): widening (TINYINT < SMALLINT < INT < BIGINT, FLOAT < DOUBLE, DECIMAL with
  more digits, longer VARCHAR/VARBINARY) and the casts Paimon applies on read: numbers to one another
  and to DECIMAL, numbers/BOOLEAN/DATE/TIMESTAMP/strings to CHAR/VARCHAR/STRING, strings to numbers
  (paimon_ds refuses the few casts Paimon allows that it cannot read back: to BOOLEAN/DATE/TIME/BINARY,
  strings to DECIMAL, DECIMAL to integers or floating point, narrowing timestamps); partition,
  primary-key and bucket-key columns keep their types (their bytes place rows in partitions and
  buckets; Paimon 0.9 refuses partition columns only);
- nullability only goes from NOT NULL to nullable, never for a primary-key column;
- options are checked as a new table's are (unknown keys, invalid values, keys paimon_ds refuses); once the table
  has a snapshot, Paimon's immutable options (`CoreOptions.IMMUTABLE_OPTIONS`: 0.9's and those 1.x added,
  `options.IMMUTABLE_OPTIONS`, which per-job options may not change either) cannot be set or removed, and
  neither can `bucket` (changing it needs a rescale of the data: paimon_ds refuses every change);
  `primary-key` and `partition` are fixed at creation; per-job options (scan.*, path) are not table options;
- an added column without a position goes last, or before the first partition column with
  `add-column-before-partition` (Paimon 1.x); with `disable-explicit-type-casting` (Paimon 1.x) a column type
  only widens;
- the new schema must pass the checks a new table gets (bucket keys, sequence and rowkind fields,
  `fields.<col>.*` options naming columns, the layouts paimon_ds writes: `paimon_ds.schema.checks`); a
  problem the table already had before the change does not block it (a table Java created with options
  paimon_ds does not write can still be altered).

The schema changes a write makes itself (`write.merge-schema`) are in `paimon_ds.schema.merge`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from ..casts.defaults import default_array
from ..casts.rules import INTEGERS, castable
from ..errors import EXIT_NOT_FOUND
from ..fs.file_io import FileIO
from ..options.registry import (
    IMMUTABLE_OPTIONS,
    LOCAL_KEYS,
    OptionError,
    Options,
    check_compressions,
    check_one_way,
    is_known_key,
    option_for,
    validate,
)
from ..snapshot.branch import MAIN_BRANCH, branch_path, load_branch_schema
from ..snapshot.manager import SnapshotManager
from .checks import KEY_FIELD_PREFIX, SYSTEM_FIELD_NAMES, is_reserved_name, schema_problems
from .manager import SCHEMA_VERSION, SchemaManager, TableNotFound, TableSchema
from .types import (
    ArrayType,
    DataField,
    DataType,
    FieldIdAllocator,
    MapType,
    MultisetType,
    RowType,
    SchemaError,
    from_arrow_type,
    parse_type,
)

# how many times a schema change is applied again onto a schema another writer created first
MAX_ATTEMPTS = 100

TypeLike = pa.DataType | DataType | str


class ColumnNotFound(SchemaError, LookupError):
    """A change names a column the table does not have."""

    exit_code = EXIT_NOT_FOUND


class ColumnAlreadyExists(SchemaError):
    """A change adds or renames to a name the table already has (names compare case-insensitively)."""


# ------------------------------------------------------------------------------------ changes

@dataclass(frozen=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    key: str


@dataclass(frozen=True)
class UpdateComment:
    comment: str | None


@dataclass(frozen=True)
class First:
    """AddColumn position: before every other column."""


@dataclass(frozen=True)
class After:
    """AddColumn position: right after ``column``."""
    column: str


# A column, or a field nested in one (Paimon 1.0's SchemaChange fieldNames): a name, or the path of names from the
# top-level column down (("s", "x"): field x of struct column s; through an ARRAY or MAP the path names its
# element or value, ("arr", "element", "x"), as Spark's and Paimon's do). A string is one name, dots and all.
ColumnPath = str | tuple[str, ...] | list[str]


@dataclass(frozen=True)
class AddColumn:
    """A new column, or (``name`` a path) a new field of a struct. ``type``: an Arrow type, a Paimon DataType or
    a Paimon type string ("BIGINT"). ``position``: None (last), First() or "first", After(column) (a sibling
    field's name, for a nested field)."""
    name: ColumnPath
    type: TypeLike
    comment: str | None = None
    nullable: bool = True
    position: First | After | str | None = None


@dataclass(frozen=True)
class RenameColumn:
    """``old``: a column or a nested field's path; ``new``: its new name (the last name only, for a path)."""
    old: ColumnPath
    new: str


@dataclass(frozen=True)
class DropColumn:
    name: ColumnPath


@dataclass(frozen=True)
class UpdateColumnComment:
    name: str
    comment: str | None


@dataclass(frozen=True)
class UpdateColumnType:
    """Widen a column's type (its nullability is kept; see UpdateColumnNullability)."""
    name: str
    type: TypeLike


@dataclass(frozen=True)
class UpdateColumnNullability:
    name: str
    nullable: bool = True


@dataclass(frozen=True)
class UpdateColumnDefaultValue:
    """Set a column's default (Paimon 1.x): the text writers read as the column's type and write in place of a
    null (see ``casts.defaults``); checked as Paimon checks it (``DefaultValueUtils.validateDefaultValue``)."""
    name: str
    default_value: str | None  # None: drop the default


SchemaChange = (SetOption | RemoveOption | UpdateComment | AddColumn | RenameColumn | DropColumn
                | UpdateColumnComment | UpdateColumnType | UpdateColumnNullability | UpdateColumnDefaultValue)


# ------------------------------------------------------------------------------------ applying

def apply_changes(schema: TableSchema, changes: Iterable[SchemaChange] | SchemaChange,
                  has_snapshots: bool = True) -> TableSchema:
    """The schema after ``changes`` (id + 1), or an error naming the first change that is refused.

    ``has_snapshots``: whether the table holds data; as in Paimon, immutable options may change only
    while it holds none.
    """
    changes = [changes] if not isinstance(changes, Iterable) else list(changes)
    state = _State(schema, has_snapshots)
    for change in changes:
        state.apply(change)
    if state.options != schema.options:
        # a compression the table's formats cannot write would block every later write (e.g. ORC and brotli)
        check_compressions(Options(state.options))
    new = TableSchema(schema.id + 1, tuple(state.fields), state.highest, schema.partition_keys,
                      schema.primary_keys, state.options, state.comment, int(time.time() * 1000), SCHEMA_VERSION)
    fresh = [p for p in schema_problems(new) if p not in set(schema_problems(schema))]
    if fresh:
        raise SchemaError("the altered schema is not valid: " + "; ".join(fresh))
    return new


class _State:
    def __init__(self, schema: TableSchema, has_snapshots: bool) -> None:
        self.old = schema
        self.has_snapshots = has_snapshots
        self.fields: list[DataField] = list(schema.fields)
        self.highest = schema.highest_field_id
        self.options = dict(schema.options)
        self.comment = schema.comment

    # ---------------------------------------------------------------- helpers
    def _index(self, name: str) -> int:
        if not isinstance(name, str):
            raise SchemaError(f"{name!r} is not a column name: only AddColumn, RenameColumn and DropColumn take the "
                              "path of a nested field")
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise ColumnNotFound(f"no column {name!r} in the table (columns: {', '.join(f.name for f in self.fields)})")

    def _check_new_name(self, name: Any, ignore: int | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise SchemaError(f"column name {name!r} is not valid: it must be a non-empty string")
        clash = [f.name for i, f in enumerate(self.fields) if i != ignore and f.name.lower() == name.lower()]
        if clash:
            raise ColumnAlreadyExists(f"column {name!r} already exists in the table"
                                      + (f" (as {clash[0]!r}; names are case-insensitive)" if clash[0] != name else ""))

    def _not_key(self, name: str, what: str) -> None:
        if name in self.old.partition_keys:
            raise SchemaError(f"cannot {what} partition column {name!r}: the partition key is fixed at creation")
        if name in self.old.primary_keys:
            raise SchemaError(f"cannot {what} primary-key column {name!r}: the primary key is fixed at creation")

    def _option_key(self, key: Any, verb: str) -> str:
        if not isinstance(key, str) or not key:
            raise OptionError(f"option key {key!r} is not valid")
        if key in ("primary-key", "partition"):
            raise OptionError(f"cannot {verb} option {key!r}: a table's {key} is fixed when it is created")
        option = option_for(key)
        if key in LOCAL_KEYS or key.startswith("paimon_ds.") or (option is not None and not option.table):
            raise OptionError(f"{key!r} is a per-job read/write option, not a table option: pass it when "
                              "reading or writing instead")
        if self.has_snapshots and key in IMMUTABLE_OPTIONS:
            raise OptionError(f"cannot {verb} option {key!r}: it cannot change once the table holds data "
                              "(Paimon: \"Change '" + key + "' is not supported yet\")")
        return key

    # ---------------------------------------------------------------- changes
    def apply(self, change: SchemaChange) -> None:
        handler = getattr(self, "_" + type(change).__name__, None)
        if handler is None or type(change).__module__ != __name__:
            raise TypeError(f"{change!r} is not a schema change "
                            "(use paimon_ds.schema.change.SetOption, AddColumn, ...)")
        handler(change)

    def _SetOption(self, c: SetOption) -> None:
        key = self._option_key(c.key, "set")
        if c.value is None:
            raise OptionError(f"option {key!r} needs a value: use RemoveOption({key!r}) to remove it")
        value = str(c.value).lower() if isinstance(c.value, bool) else str(c.value)
        validate({key: value})
        if key == "bucket" and self.has_snapshots and Options({key: value}).get(key) != Options(self.options).get(key):
            raise OptionError(f"cannot change 'bucket' from {self.options.get('bucket', '-1')} to {value}: the "
                              "table holds data placed by the old bucket count, and rescaling it is not supported")
        check_one_way(key, self.options.get(key), value)
        self.options[key] = value

    def _RemoveOption(self, c: RemoveOption) -> None:
        key = self._option_key(c.key, "remove")
        if key == "bucket" and self.has_snapshots:
            raise OptionError("cannot remove 'bucket' from a table that holds data (Paimon: \"Cannot reset bucket\")")
        if key not in self.options and not is_known_key(key):
            validate({key: ""})  # raises "unknown option ..." with a did-you-mean
        check_one_way(key, self.options.get(key), None)
        self.options.pop(key, None)

    def _UpdateComment(self, c: UpdateComment) -> None:
        self.comment = c.comment

    def _nested(self, path: tuple[str, ...], update: Callable[[list[DataField], str], None]) -> None:
        """Apply ``update`` to the fields of the struct holding the last name of ``path`` (Paimon 1.0's
        SchemaManager.NestedColumnModifier: through ROW fields, and an ARRAY's element or a MAP's value, whose
        name in the path is passed over); each struct on the way keeps its field id and nullability."""

        def walk(fields: list[DataField], depth: int) -> list[DataField]:
            if depth == len(path) - 1:
                update(fields, path[depth])
                return fields
            at = " / ".join(path[:depth + 1])
            i = next((i for i, f in enumerate(fields) if f.name == path[depth]), None)
            if i is None:
                raise ColumnNotFound(f"no column {at!r} in the table")
            f = fields[i]
            inner, skipped, wrap = _row_fields(f.type, at)
            fields[i] = replace(f, type=wrap(walk(inner, depth + skipped)))
            return fields
        self.fields = walk(list(self.fields), 0)

    def _AddColumn(self, c: AddColumn) -> None:
        path = _column_path(c.name)
        if len(path) > 1:
            return self._add_nested(c, path)
        c = replace(c, name=path[0])
        self._check_new_name(c.name)
        self._check_system_name(c.name)
        ids = FieldIdAllocator(self.highest + 1)
        field_id = ids.take()
        dtype = _to_paimon_type(c.type, True, ids)
        if not c.nullable or not dtype.nullable:
            raise SchemaError(f"column {c.name!r} cannot be added as NOT NULL: rows already in the table have "
                              "no value for it")
        self.highest = ids.highest
        field = DataField(field_id, c.name, dtype, c.comment)
        position = c.position
        if isinstance(position, str):
            if position.lower() != "first":
                raise SchemaError(f"position {position!r} is not valid: use None (last), 'first', First() or "
                                  "After(column)")
            position = First()
        if position is None and self.old.partition_keys and Options(self.old.options).get(
                "add-column-before-partition"):
            # Paimon 1.x: an added column without a position goes before the first partition column
            first = min(i for i, f in enumerate(self.fields) if f.name in self.old.partition_keys)
            self.fields.insert(first, field)
        elif position is None:
            self.fields.append(field)
        elif isinstance(position, First):
            self.fields.insert(0, field)
        elif isinstance(position, After):
            self.fields.insert(self._index(position.column) + 1, field)
        else:
            raise SchemaError(f"position {position!r} is not valid: use None (last), 'first', First() or After(column)")

    def _add_nested(self, c: AddColumn, path: tuple[str, ...]) -> None:
        """A field added to a struct (Paimon 1.0): nullable, the next field id, at its position among its
        siblings (FIRST, AFTER a sibling, else last)."""
        ids = FieldIdAllocator(self.highest + 1)
        field_id = ids.take()
        dtype = _to_paimon_type(c.type, True, ids)
        if not c.nullable or not dtype.nullable:
            raise SchemaError(f"field {'.'.join(path)!r} cannot be added as NOT NULL: rows already in the table "
                              "have no value for it")
        position = c.position
        if isinstance(position, str) and position.lower() == "first":
            position = First()
        if position is not None and not isinstance(position, (First, After)):
            raise SchemaError(f"position {position!r} is not valid: use None (last), 'first', First() or After(field)")

        def add(fields: list[DataField], name: str) -> None:
            _check_sibling_name(fields, name, path)
            field = DataField(field_id, name, dtype, c.comment)
            if isinstance(position, First):
                fields.insert(0, field)
            elif isinstance(position, After):
                sibling = _column_path(position.column)[-1]
                at = next((i for i, f in enumerate(fields) if f.name == sibling), None)
                if at is None:
                    raise ColumnNotFound(f"no field {sibling!r} beside {'.'.join(path)!r} to add it after "
                                         f"(fields: {', '.join(f.name for f in fields)})")
                fields.insert(at + 1, field)
            else:
                fields.append(field)
        self._nested(path, add)
        self.highest = ids.highest

    def _RenameColumn(self, c: RenameColumn) -> None:
        path = _column_path(c.old)
        if len(path) > 1:
            def rename(fields: list[DataField], name: str) -> None:
                i = _sibling_index(fields, name, path)
                _check_sibling_name(fields, c.new, path, ignore=i)
                f = fields[i]
                fields[i] = replace(f, name=c.new)
            return self._nested(path, rename)
        c = replace(c, old=path[0])
        i = self._index(c.old)
        self._not_key(c.old, "rename")
        self._check_new_name(c.new, ignore=i)
        self._check_system_name(c.new)
        f = self.fields[i]
        self.fields[i] = replace(f, name=c.new)

    def _DropColumn(self, c: DropColumn) -> None:
        path = _column_path(c.name)
        if len(path) > 1:
            def drop(fields: list[DataField], name: str) -> None:
                del fields[_sibling_index(fields, name, path)]
                if not fields:
                    raise SchemaError(f"cannot drop {'.'.join(path)!r}: it is the struct's last field, and a "
                                      "struct needs at least one (Paimon: \"Cannot drop all fields in table\")")
            return self._nested(path, drop)
        c = replace(c, name=path[0])
        i = self._index(c.name)
        self._not_key(c.name, "drop")
        if len(self.fields) == 1:
            raise SchemaError(f"cannot drop {c.name!r}: it is the last column, and a table needs at least one")
        del self.fields[i]

    def _UpdateColumnComment(self, c: UpdateColumnComment) -> None:
        i = self._index(c.name)
        f = self.fields[i]
        self.fields[i] = replace(f, description=c.comment)

    def _UpdateColumnDefaultValue(self, c: UpdateColumnDefaultValue) -> None:
        i = self._index(c.name)
        f = self.fields[i]
        if c.default_value is not None:
            default_array(c.default_value, f.type)
        self.fields[i] = replace(f, default_value=c.default_value)

    def _UpdateColumnType(self, c: UpdateColumnType) -> None:
        i = self._index(c.name)
        self._not_key(c.name, "change the type of")
        if c.name in self.old.bucket_keys:
            raise SchemaError(f"cannot change the type of bucket-key column {c.name!r}: its bytes are hashed to "
                              "place rows in buckets")
        f = self.fields[i]
        target = _to_paimon_type(c.type, f.type.nullable, FieldIdAllocator(0)).copy(f.type.nullable)
        if target != f.type and not _widens(f.type, target) and Options(self.old.options).get(
                "disable-explicit-type-casting"):
            # Paimon 1.x then takes implicit casts only; paimon_ds takes the widenings, a subset of them
            raise SchemaError(f"cannot change column {c.name!r} from {f.type.sql()} to {target.sql()}: the table "
                              "sets 'disable-explicit-type-casting', so only widening changes are allowed (paimon_ds "
                              "takes these: wider integers, FLOAT to DOUBLE, wider DECIMAL, longer VARCHAR/VARBINARY)")
        if target != f.type and not _widens(f.type, target) and not castable(f.type, target):
            raise SchemaError(f"cannot change column {c.name!r} from {f.type.sql()} to {target.sql()}: Paimon's "
                              "cast table has no cast that reads the values written before as the new type (it "
                              "casts among numbers, DECIMAL, BOOLEAN, strings, binaries, DATE, TIME and "
                              "timestamps as its rules allow; DATE, TIME and timestamps only to STRING itself)")
        self.fields[i] = replace(f, type=target)

    def _UpdateColumnNullability(self, c: UpdateColumnNullability) -> None:
        i = self._index(c.name)
        f = self.fields[i]
        if c.name in self.old.primary_keys:
            raise SchemaError(f"cannot change the nullability of primary-key column {c.name!r}: "
                              "primary-key columns are NOT NULL")
        if not c.nullable:
            if f.type.nullable:
                raise SchemaError(f"cannot make column {c.name!r} NOT NULL: rows already written may hold nulls "
                                  "(only NOT NULL to nullable is supported)")
            return
        self.fields[i] = replace(f, type=f.type.copy(True))

    @staticmethod
    def _check_system_name(name: str) -> None:
        if is_reserved_name(name):
            raise SchemaError(f"column name {name!r} is reserved by Paimon (system columns "
                              f"{', '.join(sorted(SYSTEM_FIELD_NAMES))} and the {KEY_FIELD_PREFIX}* prefix)")


# ------------------------------------------------------------------------------------ nested fields
def _column_path(name: Any) -> tuple[str, ...]:
    if isinstance(name, str):
        return (name,)
    if isinstance(name, (tuple, list)) and name and all(isinstance(n, str) for n in name):
        return tuple(name)
    raise SchemaError(f"column {name!r} is not valid: a name, or the path of names of a nested field "
                      "(('s', 'x'): field x of struct column s)")


def _row_fields(t: DataType, at: str) -> tuple[list[DataField], int, Callable[[list[DataField]], DataType]]:
    """The fields of the struct ``t`` is or holds (an ARRAY's element, a MAP's value, recursively), how many
    names of a path that takes (1 for the struct, +1 per ARRAY / MAP on the way), and how to put new fields in
    their place."""
    if isinstance(t, RowType):
        return list(t.fields), 1, lambda fields: RowType("ROW", (), t.nullable, tuple(fields))
    if isinstance(t, ArrayType):
        inner, n, wrap = _row_fields(t.element, at)
        return inner, n + 1, lambda fields: ArrayType("ARRAY", (), t.nullable, wrap(fields))
    if isinstance(t, MapType):
        inner, n, wrap = _row_fields(t.value, at)
        return inner, n + 1, lambda fields: MapType("MAP", (), t.nullable, t.key, wrap(fields))
    raise SchemaError(f"{at!r} is not a struct (nor an ARRAY or MAP of structs): it has no nested fields")


def _sibling_index(fields: list[DataField], name: str, path: tuple[str, ...]) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    raise ColumnNotFound(f"no field {'.'.join(path)!r} in the table (its struct's fields: "
                         f"{', '.join(f.name for f in fields)})")


def _check_sibling_name(fields: list[DataField], name: Any, path: tuple[str, ...], ignore: int | None = None) -> None:
    """A nested field's new name: non-empty, unique among its struct's fields (ignoring case, as top-level
    columns: Spark resolves struct fields so)."""
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"field name {name!r} is not valid: it must be a non-empty string")
    clash = [f.name for i, f in enumerate(fields) if i != ignore and f.name.lower() == name.lower()]
    if clash:
        raise ColumnAlreadyExists(f"field {name!r} already exists beside {'.'.join(path)!r}"
                                  + (f" (as {clash[0]!r}; names are case-insensitive)" if clash[0] != name else ""))


# ------------------------------------------------------------------------------------ types

def _to_paimon_type(t: TypeLike, nullable: bool, ids: FieldIdAllocator) -> DataType:
    """A change's type as a Paimon type, nested ROW fields given fresh ids from ``ids``."""
    if isinstance(t, pa.DataType):
        return from_arrow_type(t, nullable, ids)
    if isinstance(t, str):
        return reassign_field_ids(parse_type(t), ids)
    if isinstance(t, DataType):
        return reassign_field_ids(t, ids)
    raise SchemaError(f"{t!r} is not a type: give an Arrow type, a Paimon DataType or a type string like 'BIGINT'")


def reassign_field_ids(t: DataType, ids: FieldIdAllocator) -> DataType:
    """``t`` with its nested ROW fields numbered afresh from ``ids`` (depth first, as Paimon numbers them)."""
    if isinstance(t, RowType):
        fields = []
        for f in t.fields:
            fid = ids.take()
            fields.append(DataField(fid, f.name, reassign_field_ids(f.type, ids), f.description))
        return RowType("ROW", (), t.nullable, tuple(fields))
    if isinstance(t, ArrayType):
        return ArrayType("ARRAY", (), t.nullable, reassign_field_ids(t.element, ids))
    if isinstance(t, MultisetType):
        return MultisetType("MULTISET", (), t.nullable, reassign_field_ids(t.element, ids))
    if isinstance(t, MapType):
        return MapType("MAP", (), t.nullable, reassign_field_ids(t.key, ids), reassign_field_ids(t.value, ids))
    return t


def _widens(old: DataType, new: DataType) -> bool:
    """Whether every value of ``old`` is exactly a value of ``new`` (atomic types only)."""
    if type(old) is not DataType or type(new) is not DataType:
        return False
    a, b = old.root, new.root
    if a in INTEGERS and b in INTEGERS:
        return INTEGERS.index(a) <= INTEGERS.index(b)
    if (a, b) in (("FLOAT", "DOUBLE"),):
        return True
    if a == b == "DECIMAL":
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if a in ("CHAR", "VARCHAR") and b == "VARCHAR":
        return new.params[0] >= old.params[0]
    if a == b == "VARBINARY":
        return new.params[0] >= old.params[0]
    return False


# ------------------------------------------------------------------------------------ commit

def commit_changes(path: str, changes: Iterable[SchemaChange] | SchemaChange,
                   storage_options: dict[str, Any] | None = None, branch: str = MAIN_BRANCH) -> TableSchema:
    """Apply ``changes`` to the table at ``path`` (its ``branch``) as one new schema file; return the new schema.

    The schema file is created only if absent: when another writer created that id first, the
    changes are applied again to the newer schema (and checked again).
    """
    changes = [changes] if not isinstance(changes, Iterable) else list(changes)
    io = FileIO(path, storage_options)
    if branch != MAIN_BRANCH:
        load_branch_schema(io, path, branch)  # raises naming a missing branch
    schemas = SchemaManager(io, branch_path(io.root, branch))
    snapshots = SnapshotManager(io, branch_path(io.root, branch))
    for _ in range(MAX_ATTEMPTS):
        old = schemas.latest()
        if old is None:
            raise TableNotFound(f"no Paimon table at {path}")
        if not changes:
            return old
        new = apply_changes(old, changes, has_snapshots=snapshots.latest_id() is not None)
        if schemas.create(new) is new:
            return new
    raise SchemaError(f"could not alter {path}: other writers changed its schema {MAX_ATTEMPTS} times meanwhile")
