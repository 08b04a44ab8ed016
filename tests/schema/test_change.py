"""ALTER TABLE through the catalog (paimon_ds.schema.change), with Paimon 0.9's rules, read back by
paimon_ds and by both oracles."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.catalog import Catalog, DatabaseNotFound, TableAlreadyExists
from paimon_ds.options.registry import OptionError
from paimon_ds.schema.change import (
    AddColumn,
    After,
    ColumnAlreadyExists,
    ColumnNotFound,
    DropColumn,
    First,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
)
from paimon_ds.schema.manager import SchemaManager, TableSchema
from paimon_ds.schema.types import SchemaError
from paimon_ds.table import TableNotFound

EVENTS = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()), ("score", pa.float32())])
ORDERS = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("amount", pa.int32()), ("note", pa.string()), ("extra", pa.float64())])


def write(table: Table, rows: dict) -> None:
    w = table.new_write()
    w.write_arrow(pa.table(rows, schema=table.arrow_schema()))
    table.new_commit().commit(w.prepare_commit())


def schema_json(path: str, schema_id: int) -> dict:
    return json.loads((Path(path) / "schema" / f"schema-{schema_id}").read_text())


def tree(root: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*"))


def rows(table: Table, by: str = "id") -> list[dict]:
    return table.to_arrow().sort_by(by).to_pylist()


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "warehouse"))
    c.create_database("db")
    return c


@pytest.fixture
def events(catalog) -> Table:
    """An append table with one snapshot: (1, a, 1.5), (2, b, 2.5)."""
    t = catalog.create_table("db.events", EVENTS)
    write(t, {"id": [1, 2], "name": ["a", "b"], "score": [1.5, 2.5]})
    return catalog.get_table("db.events")


@pytest.fixture
def orders(catalog) -> Table:
    """A partitioned primary-key table (dt, id), 2 buckets, sequence.field-free, with one snapshot."""
    t = catalog.create_table("db.orders", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "2"})
    write(t, {"dt": ["d1", "d1", "d2"], "id": [1, 2, 3], "amount": [10, 20, 30], "note": ["x", "y", "z"],
              "extra": [0.5, 1.5, 2.5]})
    return catalog.get_table("db.orders")


# ------------------------------------------------------------------------------------ options

def test_set_and_remove_options(catalog, events):
    t = catalog.alter_table("db.events", [SetOption("write-buffer-size", "64mb"),
                                          SetOption("snapshot.num-retained.max", "17")])
    assert t.table_schema.id == 1 and SchemaManager(t.io, t.root).list_ids() == [0, 1]
    loaded = Table.load(events.path)
    assert loaded.options.raw == {"write-buffer-size": "64mb", "snapshot.num-retained.max": "17"}
    assert loaded.options.get("write-buffer-size") == 64 << 20
    assert schema_json(events.path, 1)["options"] == {"write-buffer-size": "64mb", "snapshot.num-retained.max": "17"}

    catalog.alter_table("db.events", RemoveOption("write-buffer-size"))
    catalog.alter_table("db.events", RemoveOption("target-file-size"))  # a known key not set: nothing to remove
    loaded = Table.load(events.path)
    assert loaded.table_schema.id == 3 and loaded.options.raw == {"snapshot.num-retained.max": "17"}
    assert loaded.options.get("write-buffer-size") == 256 << 20
    # the data and the field ids are untouched
    assert [f["id"] for f in schema_json(events.path, 3)["fields"]] == [0, 1, 2]
    assert rows(loaded) == [{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": 2.5}]
    # Paimon's SchemaValidation: a retention it refuses (a maximum below the minimum, 10 by default) is refused
    with pytest.raises(SchemaError, match=r"snapshot.num-retained.min \(10\) should not be larger than "
                                          r"snapshot.num-retained.max \(7\)"):
        catalog.alter_table("db.events", SetOption("snapshot.num-retained.max", "7"))
    assert Table.load(events.path).schema().id == 3


def test_immutable_options_change_only_while_the_table_is_empty(catalog):
    catalog.create_table("db.kv", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"})
    # no snapshot yet: Paimon lets immutable options and the bucket count change
    t = catalog.alter_table("db.kv", [SetOption("merge-engine", "partial-update"), SetOption("bucket", "4")])
    assert t.table_schema.options == {"bucket": "4", "merge-engine": "partial-update"}
    write(t, {"dt": ["d1"], "id": [1], "amount": [1], "note": ["n"], "extra": [None]})
    write(t, {"dt": ["d1"], "id": [1], "amount": [None], "note": ["m"], "extra": [2.0]})
    assert rows(catalog.get_table("db.kv")) == [{"dt": "d1", "id": 1, "amount": 1, "note": "m", "extra": 2.0}]
    before = tree(t.path)
    with pytest.raises(OptionError, match="cannot set option 'merge-engine': it cannot change once the table"):
        catalog.alter_table("db.kv", SetOption("merge-engine", "deduplicate"))
    with pytest.raises(OptionError, match="cannot change 'bucket' from 4 to 8"):
        catalog.alter_table("db.kv", SetOption("bucket", "8"))
    with pytest.raises(OptionError, match="Cannot reset bucket"):
        catalog.alter_table("db.kv", RemoveOption("bucket"))
    with pytest.raises(OptionError, match="cannot remove option 'merge-engine'"):
        catalog.alter_table("db.kv", RemoveOption("merge-engine"))
    assert tree(t.path) == before
    # setting the bucket count it already has is no change
    assert catalog.alter_table("db.kv", SetOption("bucket", "4")).schema().options["bucket"] == "4"


# ------------------------------------------------------------------------------------ columns

def test_add_column_reads_null_for_old_rows(catalog, events):
    t = catalog.alter_table("db.events", [AddColumn("tag", pa.string(), comment="a tag"),
                                          AddColumn("pos", pa.int64(), position="first"),
                                          AddColumn("kv", pa.struct([("k", pa.string()), ("v", pa.int32())]),
                                                    position=After("id"))])
    assert t.table_schema.field_names == ["pos", "id", "kv", "name", "score", "tag"]
    fields = schema_json(t.path, 1)["fields"]
    assert [(f["id"], f["name"]) for f in fields] == [(4, "pos"), (0, "id"), (5, "kv"), (1, "name"), (2, "score"),
                                                      (3, "tag")]
    assert fields[5] == {"id": 3, "name": "tag", "type": "STRING", "description": "a tag"}
    assert [(f["id"], f["name"]) for f in fields[2]["type"]["fields"]] == [(6, "k"), (7, "v")]
    assert schema_json(t.path, 1)["highestFieldId"] == 7
    write(t, {"pos": [30], "id": [3], "kv": [{"k": "q", "v": 9}], "name": ["c"], "score": [3.5], "tag": ["t"]})
    assert rows(catalog.get_table("db.events")) == [
        {"pos": None, "id": 1, "kv": None, "name": "a", "score": 1.5, "tag": None},
        {"pos": None, "id": 2, "kv": None, "name": "b", "score": 2.5, "tag": None},
        {"pos": 30, "id": 3, "kv": {"k": "q", "v": 9}, "name": "c", "score": 3.5, "tag": "t"},
    ]


def test_rename_and_drop_columns_follow_field_ids(catalog, events):
    t = catalog.alter_table("db.events", [RenameColumn("name", "label"), DropColumn("score")])
    assert [(f.id, f.name) for f in t.table_schema.fields] == [(0, "id"), (1, "label")]
    write(t, {"id": [3], "label": ["c"]})
    assert rows(catalog.get_table("db.events")) == [{"id": 1, "label": "a"}, {"id": 2, "label": "b"},
                                                    {"id": 3, "label": "c"}]
    # a dropped name added back is a new column (new id): the old values do not come back
    t = catalog.alter_table("db.events", AddColumn("score", pa.float32()))
    assert t.table_schema.field("score").id == 3
    assert rows(t) == [{"id": 1, "label": "a", "score": None}, {"id": 2, "label": "b", "score": None},
                       {"id": 3, "label": "c", "score": None}]
    # the files written under each schema still say which one
    assert sorted(e.file.schema_id for e in t.new_scan().read_entries(None)) == [0, 1]


def test_widen_column_types(catalog):
    schema = pa.schema([("i", pa.int8()), ("f", pa.float32()), ("d", pa.decimal128(5, 2)),
                        pa.field("n", pa.int32(), nullable=False)])
    t = catalog.create_table("db.nums", schema)
    write(t, {"i": [-128, 127], "f": [0.5, -2.25], "d": [Decimal("123.45"), Decimal("-0.01")], "n": [1, 2]})
    t = catalog.alter_table("db.nums", [UpdateColumnType("i", pa.int16()), UpdateColumnType("i", "BIGINT"),
                                        UpdateColumnType("f", pa.float64()), UpdateColumnType("d", "DECIMAL(10, 3)"),
                                        UpdateColumnType("n", pa.int64())])
    assert [f["type"] for f in schema_json(t.path, 1)["fields"]] == ["BIGINT", "DOUBLE", "DECIMAL(10, 3)",
                                                                      "BIGINT NOT NULL"]  # nullability kept
    assert t.arrow_schema() == pa.schema([("i", pa.int64()), ("f", pa.float64()), ("d", pa.decimal128(10, 3)),
                                          pa.field("n", pa.int64(), nullable=False)])
    write(t, {"i": [1 << 40], "f": [1e300], "d": [Decimal("1234567.891")], "n": [3]})
    got = catalog.get_table("db.nums").to_arrow().sort_by("n")
    assert got.schema == t.arrow_schema()
    assert got.to_pylist() == [
        {"i": -128, "f": 0.5, "d": Decimal("123.450"), "n": 1},
        {"i": 127, "f": -2.25, "d": Decimal("-0.010"), "n": 2},
        {"i": 1 << 40, "f": 1e300, "d": Decimal("1234567.891"), "n": 3},
    ]
    before = tree(t.path)
    # narrowing casts are allowed as in Paimon 0.9 (tests/interop/test_evolution_interop.py); no cast: refused
    with pytest.raises(SchemaError, match=r"from DECIMAL\(10, 3\) to DATE"):
        catalog.alter_table("db.nums", UpdateColumnType("d", "DATE"))
    with pytest.raises(SchemaError, match=r"from BIGINT to BINARY\(4\)"):
        catalog.alter_table("db.nums", UpdateColumnType("i", "BINARY(4)"))
    assert tree(t.path) == before


def test_comments_and_nullability(catalog, events):
    t = catalog.alter_table("db.events", [UpdateComment("clicks"), UpdateColumnComment("name", "who"),
                                          UpdateColumnNullability("id")])
    doc = schema_json(t.path, 1)
    assert doc["comment"] == "clicks"
    assert doc["fields"][:2] == [{"id": 0, "name": "id", "type": "INT"},
                                 {"id": 1, "name": "name", "type": "STRING", "description": "who"}]
    t = catalog.alter_table("db.events", [UpdateComment(None), UpdateColumnComment("name", None)])
    doc = schema_json(t.path, 2)
    assert doc["comment"] is None and doc["fields"][1] == {"id": 1, "name": "name", "type": "STRING"}
    write(t, {"id": [None], "name": ["n"], "score": [None]})
    assert t.to_arrow().column("id").to_pylist() == [1, 2, None]


def test_primary_key_table_evolves_under_merge(catalog, orders):
    t = catalog.alter_table("db.orders", [AddColumn("qty", pa.int32(), position=After("id")),
                                          RenameColumn("note", "memo"), DropColumn("extra"),
                                          UpdateColumnType("amount", pa.int64())])
    assert t.table_schema.field_names == ["dt", "id", "qty", "amount", "memo"]
    # upsert a key written under schema 0, and add one
    write(t, {"dt": ["d1", "d2"], "id": [2, 4], "qty": [5, 6], "amount": [1 << 33, 40], "memo": ["y2", "w"]})
    assert rows(catalog.get_table("db.orders")) == [
        {"dt": "d1", "id": 1, "qty": None, "amount": 10, "memo": "x"},
        {"dt": "d1", "id": 2, "qty": 5, "amount": 1 << 33, "memo": "y2"},
        {"dt": "d2", "id": 3, "qty": None, "amount": 30, "memo": "z"},
        {"dt": "d2", "id": 4, "qty": 6, "amount": 40, "memo": "w"},
    ]


# ------------------------------------------------------------------------------------ refusals

REFUSALS = [
    ("drop partition", DropColumn("dt"), SchemaError, "cannot drop partition column 'dt'"),
    ("drop primary key", DropColumn("id"), SchemaError, "cannot drop primary-key column 'id'"),
    ("rename partition", RenameColumn("dt", "day"), SchemaError, "cannot rename partition column 'dt'"),
    ("rename primary key", RenameColumn("id", "key"), SchemaError, "cannot rename primary-key column 'id'"),
    ("retype primary key", UpdateColumnType("id", pa.decimal128(20, 0)), SchemaError,
     "cannot change the type of primary-key column 'id'"),
    ("retype partition", UpdateColumnType("dt", "VARCHAR(20)"), SchemaError,
     "cannot change the type of partition column 'dt'"),
    ("no cast", UpdateColumnType("amount", "DATE"), SchemaError,
     r"cannot change column 'amount' from INT to DATE: Paimon's cast table has no cast"),
    ("double to boolean", UpdateColumnType("extra", "BOOLEAN"), SchemaError, "from DOUBLE to BOOLEAN"),
    ("double to date", UpdateColumnType("extra", "DATE"), SchemaError, "from DOUBLE to DATE"),
    ("nullable primary key", UpdateColumnNullability("id"), SchemaError, "nullability of primary-key column 'id'"),
    ("not null", UpdateColumnNullability("amount", False), SchemaError, "cannot make column 'amount' NOT NULL"),
    ("duplicate add", AddColumn("note", pa.string()), ColumnAlreadyExists, "column 'note' already exists"),
    ("duplicate add, other case", AddColumn("NOTE", pa.int32()), ColumnAlreadyExists, "as 'note'; names are case"),
    ("duplicate rename", RenameColumn("note", "amount"), ColumnAlreadyExists, "column 'amount' already exists"),
    ("add not null", AddColumn("n", pa.int32(), nullable=False), SchemaError, "cannot be added as NOT NULL"),
    ("add system name", AddColumn("_SEQUENCE_NUMBER", pa.int64()), SchemaError, "reserved by Paimon"),
    ("add key prefix", AddColumn("_KEY_x", pa.int64()), SchemaError, "reserved by Paimon"),
    ("add after missing", AddColumn("n", pa.int32(), position=After("nope")), ColumnNotFound, "no column 'nope'"),
    ("drop missing", DropColumn("nope"), ColumnNotFound, "no column 'nope' in the table"),
    ("rename missing", RenameColumn("nope", "x"), ColumnNotFound, "no column 'nope'"),
    ("bad option value", SetOption("write-buffer-size", "lots"), OptionError,
     "invalid value 'lots' for option 'write-buffer-size'"),
    ("bad bucket", SetOption("bucket", "0"), OptionError, "invalid value '0' for option 'bucket'"),
    ("unknown option", SetOption("write-bufer-size", "1mb"), OptionError,
     "unknown option 'write-bufer-size' \\(did you mean 'write-buffer-size'\\?\\)"),
    ("unknown option removed", RemoveOption("write-bufer-size"), OptionError, "unknown option 'write-bufer-size'"),
    ("immutable option", SetOption("merge-engine", "first-row"), OptionError, "cannot set option 'merge-engine'"),
    ("immutable sequence.field", SetOption("sequence.field", "amount"), OptionError, "'sequence.field'"),
    ("bucket change", SetOption("bucket", "3"), OptionError, "cannot change 'bucket' from 2 to 3"),
    ("primary-key option", SetOption("primary-key", "id"), OptionError, "primary-key is fixed when it is created"),
    ("per-job option", SetOption("scan.snapshot-id", "1"), OptionError, "per-job read/write option"),
    ("unsupported option combination", [SetOption("deletion-vectors.enabled", "true"),
                                         SetOption("changelog-producer", "full-compaction")], SchemaError,
     "deletion-vectors.enabled is not supported with changelog-producer=full-compaction"),
    ("option naming a missing column", SetOption("fields.nope.aggregate-function", "sum"), SchemaError,
     r"option 'fields.nope.aggregate-function' names column\(s\) \['nope'\]"),
    ("the last change fails", [AddColumn("ok", pa.int32()), SetOption("target-file-size", "1mb"),
                               DropColumn("dt")], SchemaError, "cannot drop partition column 'dt'"),
]


@pytest.mark.parametrize("changes,error,match", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refused_changes_write_nothing(catalog, orders, changes, error, match):
    before = tree(orders.path)
    with pytest.raises(error, match=match):
        catalog.alter_table("db.orders", changes)
    assert tree(orders.path) == before
    assert Table.load(orders.path).schema().to_json() == orders.schema().to_json()


def test_refusals_that_need_other_tables(catalog, events):
    with pytest.raises(TableNotFound, match="table db.nope does not exist"):
        catalog.alter_table("db.nope", SetOption("write-buffer-size", "1mb"))
    with pytest.raises(TableNotFound, match="table other.nope does not exist"):
        catalog.alter_table("other.nope", SetOption("write-buffer-size", "1mb"))
    assert catalog.alter_table("db.nope", SetOption("write-buffer-size", "1mb"), ignore_if_not_exists=True) is None
    assert not (Path(catalog.warehouse) / "db.db" / "nope").exists()

    before = tree(events.path)
    catalog.alter_table("db.events", DropColumn("score"))  # fine: two columns left
    with pytest.raises(SchemaError, match="'name': it is the last column"):
        catalog.alter_table("db.events", [DropColumn("id"), DropColumn("name")])
    after_one = tree(events.path)
    assert len(after_one) == len(before) + 1

    # an append table's bucket key: not droppable, not retyped
    t = catalog.create_table("db.bucketed", EVENTS, options={"bucket": "2", "bucket-key": "name"})
    before = tree(t.path)
    with pytest.raises(SchemaError, match=r"bucket-key column\(s\) \['name'\] are not columns"):
        catalog.alter_table("db.bucketed", DropColumn("name"))
    with pytest.raises(SchemaError, match="cannot change the type of bucket-key column 'name'"):
        catalog.alter_table("db.bucketed", UpdateColumnType("name", "BYTES"))
    with pytest.raises(SchemaError, match="append table with a fixed bucket count needs 'bucket-key'"):
        catalog.alter_table("db.bucketed", RemoveOption("bucket-key"))
    assert tree(t.path) == before


def test_a_problem_the_table_already_had_does_not_block_other_changes():
    # e.g. a table created elsewhere with options paimon_ds does not write together
    bad = {"bucket": "2", "changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"}
    old = TableSchema.from_arrow(ORDERS, ["dt"], ["dt", "id"], bad)
    new = apply_changes(old, [SetOption("write-buffer-size", "64mb"), AddColumn("qty", pa.int32())])
    assert new.id == 1 and new.highest_field_id == 5
    assert new.options == {**bad, "write-buffer-size": "64mb"}
    with pytest.raises(SchemaError, match=r"rowkind.field column\(s\) \['nope'\] are not columns"):
        apply_changes(old, SetOption("rowkind.field", "nope"), has_snapshots=False)
    with pytest.raises(TypeError, match="is not a schema change"):
        apply_changes(old, [("bucket", "3")])


def test_a_concurrent_alter_is_retried_on_the_newer_schema(catalog, events, monkeypatch):
    real_create = SchemaManager.create
    raced = []

    def create(self, schema):
        if not raced:  # another writer commits schema-1 between our read and our create
            raced.append(True)
            theirs = apply_changes(self.latest(), SetOption("write-buffer-size", "64mb"))
            assert real_create(self, theirs) is theirs
        return real_create(self, schema)

    monkeypatch.setattr(SchemaManager, "create", create)
    t = catalog.alter_table("db.events", AddColumn("tag", pa.string()))
    assert t.table_schema.id == 2 and raced == [True]
    assert schema_json(events.path, 1)["options"] == {"write-buffer-size": "64mb"}
    assert [f["name"] for f in schema_json(events.path, 1)["fields"]] == ["id", "name", "score"]
    doc = schema_json(events.path, 2)
    assert doc["options"] == {"write-buffer-size": "64mb"} and doc["highestFieldId"] == 3
    assert [f["name"] for f in doc["fields"]] == ["id", "name", "score", "tag"]


def test_rename_table(catalog, events):
    catalog.create_database("arch")
    t = catalog.rename_table("db.events", "arch.clicks")
    assert t.path == f"{catalog.warehouse}/arch.db/clicks"
    assert catalog.list_tables("db") == [] and catalog.list_tables("arch") == ["clicks"]
    assert rows(catalog.get_table("arch.clicks")) == [{"id": 1, "name": "a", "score": 1.5},
                                                     {"id": 2, "name": "b", "score": 2.5}]
    catalog.create_table("db.other", EVENTS)
    with pytest.raises(TableAlreadyExists, match="table db.other already exists"):
        catalog.rename_table("arch.clicks", "db.other")
    with pytest.raises(TableNotFound, match="table db.events does not exist"):
        catalog.rename_table("db.events", "db.x")
    with pytest.raises(DatabaseNotFound, match="database 'nodb' does not exist"):
        catalog.rename_table("arch.clicks", "nodb.x")
    assert catalog.list_tables("arch") == ["clicks"] and catalog.list_tables("db") == ["other"]


# ------------------------------------------------------------------------------------ oracles

def test_oracles_read_an_altered_table(catalog, orders, java_oracle, pypaimon_oracle):
    """Add + rename + drop + widen on a partitioned primary-key table, rows upserted before and after."""
    t = catalog.alter_table("db.orders", [AddColumn("qty", pa.int32(), position=After("id")),
                                          RenameColumn("note", "memo"), DropColumn("extra"),
                                          UpdateColumnType("amount", pa.int64())])
    write(t, {"dt": ["d1", "d2"], "id": [2, 4], "qty": [5, 6], "amount": [1 << 33, 40], "memo": ["y2", "w"]})
    t = catalog.alter_table("db.orders", AddColumn("flag", pa.bool_(), position=First()))
    write(t, {"flag": [True], "dt": ["d2"], "id": [3], "qty": [7], "amount": [31], "memo": [None]})
    expected = [
        {"flag": None, "dt": "d1", "id": 1, "qty": None, "amount": 10, "memo": "x"},
        {"flag": None, "dt": "d1", "id": 2, "qty": 5, "amount": 1 << 33, "memo": "y2"},
        {"flag": True, "dt": "d2", "id": 3, "qty": 7, "amount": 31, "memo": None},
        {"flag": None, "dt": "d2", "id": 4, "qty": 6, "amount": 40, "memo": "w"},
    ]
    ours = catalog.get_table("db.orders").to_arrow().sort_by("id")
    assert ours.to_pylist() == expected
    for oracle in (java_oracle, pypaimon_oracle):
        got = oracle.read(t.path).sort_by("id")
        assert got.column_names == ours.column_names, oracle.impl
        assert got.to_pylist() == expected, oracle.impl


# ------------------------------------------------------------------------------------ nested fields

NESTED = pa.schema([pa.field("id", pa.int32(), nullable=False),
                    ("s", pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.float64())])),
                    ("arr", pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())])))])


def test_nested_field_changes_read_by_field_id(catalog, pypaimon_oracle):
    """ADD / RENAME / DROP of struct fields (Paimon 1.0's SchemaChange with fieldNames; Java 0.9 refuses them:
    its SparkCatalog.validateAlterNestedField throws "Alter nested column is not supported", and its
    SchemaChange.AddColumn / RenameColumn / DropColumn hold one field name). Files written before read with
    the new layout by field id: an added field null, a dropped one gone, a renamed one with its values; also
    through an ARRAY's element. pypaimon 2.1 reads the schema files written here value for value. (Java 0.9's
    reader refuses such a table's older files: SchemaEvolutionUtil line 396, "Only support column type evolution
    in atomic data type"; it is not an oracle here.)"""
    t = catalog.create_table("db.nested", NESTED)
    old_ids = {f.name: f.id for f in t.table_schema.field("s").type.fields}
    highest = t.table_schema.highest_field_id
    write(t, {"id": [1, 2], "s": [{"a": 1, "b": "p", "c": 0.5}, None],
              "arr": [[{"x": 1, "y": "u"}], [{"x": 2, "y": None}, None]]})
    t = catalog.alter_table("db.nested", [
        AddColumn(("s", "z"), pa.int64(), position=After("a")), RenameColumn(("s", "b"), "bee"),
        DropColumn(("s", "c")), AddColumn(("s", "f"), "STRING", position="first"),
        RenameColumn(("arr", "element", "y"), "why"), AddColumn(["arr", "element", "w"], pa.bool_())])
    s_type = t.table_schema.field("s").type
    # added fields take the next ids in order of the changes (z, f, then w); renamed ones keep theirs
    assert [(f.name, f.id) for f in s_type.fields] == [
        ("f", highest + 2), ("a", old_ids["a"]), ("z", highest + 1), ("bee", old_ids["b"])]
    assert t.table_schema.highest_field_id == highest + 3
    write(t, {"id": [3], "s": [{"f": "n", "a": 3, "z": 30, "bee": "q"}], "arr": [[{"x": 3, "why": "v", "w": True}]]})
    expected = [
        {"id": 1, "s": {"f": None, "a": 1, "z": None, "bee": "p"}, "arr": [{"x": 1, "why": "u", "w": None}]},
        {"id": 2, "s": None, "arr": [{"x": 2, "why": None, "w": None}, None]},
        {"id": 3, "s": {"f": "n", "a": 3, "z": 30, "bee": "q"}, "arr": [{"x": 3, "why": "v", "w": True}]},
    ]
    assert rows(catalog.get_table("db.nested")) == expected
    got = pypaimon_oracle.read(t.path).sort_by("id")
    assert got.to_pylist() == expected


@pytest.mark.parametrize("change, error, match", [
    (AddColumn(("s", "A"), pa.int32()), ColumnAlreadyExists, "already exists"),
    (AddColumn(("s", "q"), pa.int32(), nullable=False), SchemaError, "NOT NULL"),
    (AddColumn(("s", "q"), pa.int32(), position=After("nope")), ColumnNotFound, "nope"),
    (AddColumn(("id", "q"), pa.int32()), SchemaError, "not a struct"),
    (AddColumn(("t", "q"), pa.int32()), ColumnNotFound, "'t'"),
    (RenameColumn(("s", "a"), "b"), ColumnAlreadyExists, "already exists"),
    (RenameColumn(("s", "nope"), "k"), ColumnNotFound, "nope"),
    (DropColumn(("s", "nope")), ColumnNotFound, "nope"),
    (UpdateColumnType(("s", "a"), pa.int64()), SchemaError, "only AddColumn, RenameColumn and DropColumn"),
])
def test_refused_nested_changes(catalog, change, error, match):
    t = catalog.create_table("db.nested", NESTED)
    with pytest.raises(error, match=match):
        catalog.alter_table("db.nested", change)
    assert catalog.get_table("db.nested").table_schema == t.table_schema


def test_dropping_a_structs_last_field_is_refused(catalog):
    catalog.create_table("db.one", pa.schema([("id", pa.int32()), ("s", pa.struct([("a", pa.int32())]))]))
    with pytest.raises(SchemaError, match="last field"):
        catalog.alter_table("db.one", DropColumn(("s", "a")))
