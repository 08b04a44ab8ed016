"""The option audit: every key Paimon defines carries its effect in paimon_ds (honoured, no effect on results, or
refused), no honoured key goes unread, and a refused key is refused when set and when a table stores it."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds.options.registry as options_module
from paimon_ds import Table, write_arrow
from paimon_ds.operation.maintenance import create_tag, expire_snapshots
from paimon_ds.options.registry import (
    EFFECTS,
    HONOURED,
    IMMUTABLE_OPTIONS,
    KEY_EFFECTS,
    OPTIONS,
    REFUSED,
    TUNING,
    OptionError,
    effect_of,
    key_effect,
    validate,
)
from paimon_ds.schema.change import AddColumn, SetOption, UpdateColumnType, commit_changes
from paimon_ds.schema.manager import SchemaManager
from paimon_ds.schema.types import SchemaError

PACKAGE = Path(options_module.__file__).resolve().parents[1]

# Keys honoured in a way the static check below cannot see, with where they are read.
READ_ELSEWHERE = {
    "path": "the table's location: every entry point takes it as `path` (spark/options.table_path, Table.load)",
    "partition": "TableSchema.partition_keys, set from the option when a table is created",
    "primary-key": "TableSchema.primary_keys, set from the option when a table is created",
}


# ------------------------------------------------------------------ classification
def test_every_paimon_key_is_classified() -> None:
    for line in KEY_EFFECTS.values():
        assert line.effect in EFFECTS, line
        if line.effect == REFUSED:
            # a refused key says what Paimon does with it, and what a stored value refuses
            assert line.note and line.blocks <= {"write", "read", "expire", "tag"}, line
        else:
            assert not line.no_ops and not line.blocks, line
    effects = {line.effect for line in KEY_EFFECTS.values()}
    assert effects == set(EFFECTS)
    assert len(KEY_EFFECTS) > 500  # Paimon 0.9's and 1.x's keys, and the field-level families


def test_every_registered_option_carries_its_effect() -> None:
    for option in OPTIONS.values():
        effect = effect_of(option)
        assert effect in (HONOURED, TUNING, REFUSED), option.key
        line = KEY_EFFECTS.get(option.key)
        if line is not None:
            assert effect == line.effect, f"{option.key}: the registry and paimon_option_keys.txt disagree"


def test_issue_32_keys_are_listed_separately() -> None:
    maintenance = {k for k, line in KEY_EFFECTS.items() if line.issue == "32"}
    for key in ("snapshot.time-retained", "changelog.num-retained.max", "partition.expiration-time",
                "tag.automatic-creation", "consumer-id", "consumer.expiration-time", "full-compaction.delta-commits",
                "num-sorted-run.compaction-trigger", "compaction.min.file-num"):
        assert key in maintenance, key
    # the commit-time actions paimon_ds does not take are refused when a user sets them
    for key, value in (("tag.callbacks", "com.example.Callback"), ("tag.create-success-file", "true"),
                       ("consumer.changelog-only", "true")):
        with pytest.raises(OptionError, match=re.escape(f"option {key}={value!r} is not supported by paimon_ds")):
            validate({key: value})


# ------------------------------------------------------------------ every honoured key is read by code
def _string_constants() -> dict[str, set[str]]:
    """Module-level NAME = "text" (or a tuple/set of texts) across the package, by name."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values = _texts(node.value, {})
                if values:
                    out.setdefault(node.targets[0].id, set()).update(values)
    return out


def _texts(node: ast.AST, constants: dict[str, set[str]]) -> set[str]:
    """The option keys an expression names: a string, an f-string (its fields as `#`), a constant, or a collection
    of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.JoinedStr):
        return {"".join(v.value if isinstance(v, ast.Constant) else "#" for v in node.values)}
    if isinstance(node, ast.Name):
        return constants.get(node.id, set())
    if isinstance(node, ast.Attribute):
        return constants.get(node.attr, set())
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_texts(e, constants) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return set().union(*(_texts(a, constants) for a in node.args)) if node.args else set()
    return set()


def read_keys() -> set[str]:
    """Every key a code path of the package reads: the argument of a `.get` / `.is_set` / `.pop` call (an Options',
    a dict's), a subscript, the left of an `in` test, or a loop over a constant collection of keys, as a string,
    f-string or string constant. The registry
    and the key classification (options/registry.py) do not count: they define keys, they do not read them."""
    constants = _string_constants()
    read: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "options" / "registry.py":
            source = path.read_text()
            # the registry reads a few keys itself (check_job_options): only its functions after the registry count
            tree = ast.parse(source[source.index("def refuse_setting("):])
        else:
            tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "is_set", "pop", "setdefault") and node.args):
                read |= _texts(node.args[0], constants)
            elif _field_option_suffix(node) is not None:
                # a column's option read through mergetree.aggregators.field_option / Aggregator.opt
                read |= {f"fields.#.{suffix}" for suffix in _texts(_field_option_suffix(node), constants)}
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("startswith", "endswith") and node.args):
                # keys matched by their family's parts (`key.endswith(SEQUENCE_GROUP)`): fields.#.<suffix>
                read |= {f"fields.#.{t}" for t in _texts(node.args[0], constants) if node.func.attr == "endswith"}
            elif isinstance(node, ast.Subscript):
                read |= _texts(node.slice, constants)
            elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
                read |= _texts(node.left, constants)
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name):
                read |= _texts(node.iter, constants)  # for key in SOME_KEYS: options.get(key)
    return read


def _field_option_suffix(node: ast.AST) -> ast.AST | None:
    """The suffix argument of a `field_option(options, column, suffix)` or `<aggregator>.opt(suffix)` call."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id == "field_option" and len(node.args) == 3:
        return node.args[2]
    if isinstance(node.func, ast.Attribute) and node.func.attr == "opt" and len(node.args) == 1:
        return node.args[0]
    return None


def _is_read(key: str, read: set[str]) -> bool:
    if key in read:
        return True
    if "#" in key:  # a family: read as an f-string with the same fixed parts
        pattern = re.compile(re.escape(key).replace("\\#", ".+"))
        return any(pattern.fullmatch(k.replace("#", "x")) for k in read)
    return False


def test_every_honoured_option_is_read_by_a_code_path() -> None:
    read = read_keys()
    honoured = {o.key for o in OPTIONS.values() if effect_of(o) in (HONOURED, TUNING)}
    honoured |= {k for k, line in KEY_EFFECTS.items() if line.effect == HONOURED}
    unread = sorted(k for k in honoured - set(READ_ELSEWHERE) if not _is_read(k, read))
    assert unread == [], ("options classified honoured that no code path reads (accepted and silently ignored): "
                          f"{unread}; read them, or classify them (paimon_option_keys.txt / Option.effect)")


def test_the_static_check_sees_an_unread_key() -> None:
    # the check above is not vacuous: a key nothing reads is not in read_keys()
    read = read_keys()
    # read as a literal, through a constant (external_paths.STRATEGY), in a loop over constant keys (spark/stream.py)
    assert {"merge-engine", "data-file.external-paths.strategy", "read.stream.maxRowsPerTrigger"} <= read
    assert not _is_read("sink.parallelism", read) and not _is_read("no-such.key", read)


# ------------------------------------------------------------------ refused keys: set, and stored
REFUSED_KEYS = sorted(k for k, line in KEY_EFFECTS.items() if line.effect == REFUSED)


@pytest.mark.parametrize("key", REFUSED_KEYS)
def test_a_refused_key_is_refused_when_set_unless_a_no_op(key: str) -> None:
    line = KEY_EFFECTS[key]
    name = key.replace("#", "price")
    with pytest.raises(OptionError) as err:
        validate({name: "something-else"})
    assert f"option {name}='something-else' is not supported by paimon_ds: with it, Paimon {line.note}" \
        in str(err.value)
    for value in line.no_ops:
        validate({name: value.upper()})  # no-op values change nothing: accepted, in any case


def _listing(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def _store_options(path: str, options: dict[str, str]) -> None:
    """Store options in the table's schema as another writer (Java Paimon) would: a new schema file, unchecked."""
    table = Table.load(path)
    manager = SchemaManager(table.io, table.root)
    schema = table.table_schema
    new = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, **options})
    assert manager.create(new).id == schema.id + 1


def _pk_table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": [1, 2], "v": ["a", "b"]}), primary_key="id", options={"bucket": "1"})
    return path


@pytest.mark.parametrize("stored", [
    {"partition.timestamp-format.strict": "true"}, {"data-file.thin-mode": "true"},
    {"commit.callbacks": "com.example.Callback"}, {"sequence.snapshot-ordering": "true"},
])
def test_a_table_storing_a_refused_value_refuses_writes_before_anything_is_written(tmp_path, stored) -> None:
    path = _pk_table(tmp_path)
    _store_options(path, stored)
    before = _listing(Path(path))
    key, value = next(iter(stored.items()))
    with pytest.raises(OptionError) as err:
        Table.load(path).append(pa.table({"id": [1], "v": ["new"]}))
    assert f"its option(s) {key}={value!r}: with it, Paimon {KEY_EFFECTS[key].note}" in str(err.value)
    assert "nothing was written" in str(err.value)
    with pytest.raises(OptionError, match=re.escape(key)):
        write_arrow(path, pa.table({"id": [1], "v": ["new"]}))
    assert _listing(Path(path)) == before


def test_a_table_storing_a_read_changing_value_refuses_reads(tmp_path) -> None:
    # Paimon 0.9 fills a column's nulls with `fields.<f>.default-value` when reading; paimon_ds does not
    path = _pk_table(tmp_path)
    _store_options(path, {"fields.v.default-value": "x"})
    with pytest.raises(OptionError, match=re.escape("fields.v.default-value='x': with it, Paimon fills the column's "
                                                    "nulls with this value when reading")):
        Table.load(path).to_arrow()
    with pytest.raises(OptionError, match="nothing was read"):
        Table.load(path).scan().to_arrow()
    # writes are not changed by it (Paimon 0.9 applies it on read only)
    Table.load(path).append(pa.table({"id": [3], "v": [None]}))


def test_a_table_storing_expiry_or_tag_options_refuses_those_procedures(tmp_path) -> None:
    path = _pk_table(tmp_path)
    _store_options(path, {"consumer.changelog-only": "true", "tag.callbacks": "com.example.Callback"})
    before = _listing(Path(path))
    with pytest.raises(OptionError, match="consumer.changelog-only='true'.*nothing was expired"):
        expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    with pytest.raises(OptionError, match="tag.callbacks='com.example.Callback'.*nothing was created"):
        create_tag(Table.load(path), "t1")
    assert _listing(Path(path)) == before
    # neither changes what a write does: writes go on
    Table.load(path).append(pa.table({"id": [3], "v": ["c"]}))


def test_no_op_and_no_effect_values_stored_by_another_engine_block_nothing(tmp_path) -> None:
    # what a Flink job stores in a table Java created: tuning, engine and catalog keys, and refused keys at no-op
    path = _pk_table(tmp_path)
    stored = {"sink.parallelism": "4", "write-buffer-for-append": "true", "lookup.cache-rows": "5000",
              "snapshot.expire.limit": "20", "metastore.partitioned-table": "true", "tag.automatic-creation": "none",
              "partition.legacy-name": "true", "scan.plan-sort-partition": "true", "changelog-file.format": "avro",
              "file-index.bloom-filter.columns": "v", "consumer.mode": "at-least-once"}
    _store_options(path, stored)
    Table.load(path).append(pa.table({"id": [2, 3], "v": ["B", "c"]}))
    assert Table.load(path).to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]


def test_refused_keys_are_refused_at_every_setting(tmp_path) -> None:
    path = _pk_table(tmp_path)
    before = _listing(Path(path))
    for options in ({"scan.file-creation-time-millis": "1"}, {"incremental-to-auto-tag": "t"}, {"scan.bucket": "0"}):
        key = next(iter(options))
        with pytest.raises(OptionError, match=re.escape(f"option {key}=")):
            Table.load(path, options)  # a read option
    with pytest.raises(OptionError, match=re.escape("option tag.callbacks='com.example.Callback' is not supported")):
        commit_changes(path, [SetOption("tag.callbacks", "com.example.Callback")])
    with pytest.raises(OptionError, match=re.escape("option bucket-function.type='mod' is not supported")):
        write_arrow(str(tmp_path / "new"), pa.table({"id": [1]}), options={"bucket-function.type": "mod"})
    assert _listing(Path(path)) == before and not (tmp_path / "new").exists()


def test_field_level_keys_must_be_a_known_family() -> None:
    # `fields.` keys are no longer accepted wholesale: a typo in one would be silently ignored
    validate({"fields.price.aggregate-function": "sum", "fields.a,b.sequence-group": "c",
              "fields.price.stats-mode": "full"})
    with pytest.raises(OptionError, match=r"unknown option 'fields.price.agregate-function' \(did you mean"):
        validate({"fields.price.agregate-function": "sum"})


def test_immutable_options_are_paimon_0_9_and_1_x_ones() -> None:
    java_0_9 = {"bucket-key", "merge-engine", "ignore-delete", "sequence.field", "rowkind.field", "primary-key",
                "partition", "force-lookup", "partial-update.remove-record-on-delete"}
    assert java_0_9 <= IMMUTABLE_OPTIONS
    assert {"sequence.field.sort-order", "aggregation.remove-record-on-delete", "data-file.path-directory",
            "partial-update.remove-record-on-sequence-group", "bucket-function.type", "row-tracking.enabled",
            "data-evolution.enabled", "index-file-in-data-file-dir", "type", "dynamic-bucket.initial-buckets",
            "pk-clustering-override", "sequence.snapshot-ordering", "primary-key.nullable"} <= IMMUTABLE_OPTIONS
    assert all(key_effect(k) is not None or k in OPTIONS or k.startswith("blob-external") for k in IMMUTABLE_OPTIONS)


# ------------------------------------------------------------------ ALTER options paimon_ds honours (Paimon 1.x)
def test_add_column_before_partition(tmp_path) -> None:
    """Paimon 1.x SchemaManager.commitChanges: with `add-column-before-partition`, an AddColumn without a position
    goes before the first partition column of a partitioned table (the option as stored before the change)."""
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": [1], "dt": ["d1"], "v": ["a"]}), partition_by="dt",
                options={"add-column-before-partition": "true"})
    commit_changes(path, [AddColumn("x", pa.int64()), AddColumn("y", pa.int64(), position="first")])
    assert Table.load(path).schema().field_names == ["y", "id", "x", "dt", "v"]
    unpartitioned = str(tmp_path / "u")
    write_arrow(unpartitioned, pa.table({"id": [1]}), options={"add-column-before-partition": "true"})
    commit_changes(unpartitioned, AddColumn("x", pa.int64()))
    assert Table.load(unpartitioned).schema().field_names == ["id", "x"]
    # without it (Paimon's default) an added column goes last
    plain = str(tmp_path / "p")
    write_arrow(plain, pa.table({"id": [1], "dt": ["d1"]}), partition_by="dt")
    commit_changes(plain, AddColumn("x", pa.int64()))
    assert Table.load(plain).schema().field_names == ["id", "dt", "x"]


def test_disable_explicit_type_casting(tmp_path) -> None:
    """Paimon 1.x: with `disable-explicit-type-casting`, ALTER changes a column's type by implicit casts only;
    paimon_ds takes the widenings (a subset of those) and refuses the rest, which it otherwise allows."""
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"id": pa.array([1], pa.int32()), "n": pa.array([5], pa.int64())}),
                options={"disable-explicit-type-casting": "true"})
    before = _listing(Path(path))
    with pytest.raises(SchemaError, match="sets 'disable-explicit-type-casting', so only widening changes"):
        commit_changes(path, UpdateColumnType("n", pa.int32()))
    with pytest.raises(SchemaError, match="disable-explicit-type-casting"):
        commit_changes(path, UpdateColumnType("n", pa.string()))
    assert _listing(Path(path)) == before
    commit_changes(path, UpdateColumnType("id", pa.int64()))
    assert Table.load(path).to_arrow().to_pylist() == [{"id": 1, "n": 5}]
    # without it, the explicit cast BIGINT -> INT is allowed, as in Paimon
    plain = str(tmp_path / "p")
    write_arrow(plain, pa.table({"n": pa.array([5], pa.int64())}))
    commit_changes(plain, UpdateColumnType("n", pa.int32()))
    assert Table.load(plain).to_arrow().to_pylist() == [{"n": 5}]
