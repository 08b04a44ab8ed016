"""VARIANT and BLOB, the Paimon 1.x types pypaimon 2.1 writes (Java Paimon 0.9 has neither).

VARIANT: pypaimon stores it as its value and metadata bytes (the Parquet Variant encoding), a struct of two
binaries, in parquet, ORC and Avro files alike; paimon_ds reads those bytes exactly (the core as the same struct,
Spark as its VariantType, whose Arrow form this is), writes them to parquet (the only format Java Paimon writes a
VARIANT to; ORC and Avro are refused), and pypaimon reads what paimon_ds and Spark (`parse_json`) write.
A shredded VARIANT (pypaimon's `variant.shreddingSchema`) is refused with an error naming the column.
BLOB: pypaimon keeps BLOB values in `.blob` files of row-tracking, data-evolution tables, which paimon_ds does not
read: every read and write of such a table is refused with an error naming the type, the column and the table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.schema.types import SchemaError

# pypaimon: a table (FIELDS, OPTIONS) written with ROWS of (id, a Python value made a VARIANT by pypaimon's
# GenericVariant, or None); prints the rows written as (id, [value hex, metadata hex])
PYPAIMON_VARIANT = """
import json, os
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.data.generic_variant import GenericVariant
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

catalog = CatalogFactory.create({"warehouse": os.path.dirname(os.path.dirname(path))})
catalog.create_database("db", True)
name = "db." + os.path.basename(path)
fields = [DataTypeParser.parse_data_field({"id": 0, "name": "id", "type": "INT"}),
          DataTypeParser.parse_data_field({"id": 1, "name": "v", "type": "VARIANT"})]
catalog.create_table(name, Schema(fields=fields, options=OPTIONS), False)
t = catalog.get_table(name)
variants = GenericVariant.to_arrow_array([None if x is None else GenericVariant.from_python(x) for x in VALUES])
data = pa.table({"id": pa.array(range(len(VALUES)), pa.int32()), "v": variants})
commit_arrow(t, data.cast(PyarrowFieldParser.from_paimon_schema(t.table_schema.fields)))
print(json.dumps([[r["id"], None if r["v"] is None else [r["v"]["value"].hex(), r["v"]["metadata"].hex()]]
                  for r in data.to_pylist()]))
"""

# pypaimon: the table's rows as (id, Python value of the VARIANT or None)
PYPAIMON_DECODE = """
import json
from pypaimon.data.generic_variant import GenericVariant
rb = table.new_read_builder()
rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
print(json.dumps(sorted([[r["id"], None if r["v"] is None else
                          GenericVariant(r["v"]["value"], r["v"]["metadata"]).to_python()] for r in rows]),
                 default=float))  # (Spark's parse_json keeps 3.5 as a decimal)
"""

VALUES = [{"a": 1, "b": [1, 2, "x"]}, "text", 3.5, None, [True, None, {"c": -7}], 12345678901234]


def _bytes(t: pa.Table) -> list[list]:
    return sorted([r["id"], None if r["v"] is None else [r["v"]["value"].hex(), r["v"]["metadata"].hex()]]
                  for r in t.to_pylist())


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_pypaimon_variant_read(spark, pypaimon_oracle, table_path, fmt):
    written = json.loads(pypaimon_oracle.exec(table_path, f"OPTIONS = {{'file.format': {fmt!r}}}\n"
                                              f"VALUES = {VALUES!r}\n" + PYPAIMON_VARIANT).strip().splitlines()[-1])
    if fmt != "orc":  # pypaimon 2.1 cannot read back its own ORC VARIANT ("cannot cast nullable field to
        # non-nullable field"): the bytes it wrote are the reference there
        assert _bytes(pypaimon_oracle.read(table_path)) == written
    assert _bytes(Table.load(table_path).to_arrow()) == written
    df = spark.read.format("paimon").load(table_path)
    assert df.schema["v"].dataType.simpleString() == "variant"
    # (collect, not toArrow: pyspark 4's toArrow fails on any null VARIANT, paimon_ds' or parse_json's alike)
    assert sorted([r["id"], None if r["v"] is None else [bytes(r["v"].value).hex(), bytes(r["v"].metadata).hex()]]
                  for r in df.collect()) == written
    # Spark understands the bytes: the same JSON as the values written
    got = {r["id"]: r["j"] for r in df.selectExpr("id", "to_json(v) AS j").collect()}
    assert {i: None if j is None else json.loads(j) for i, j in got.items()} == dict(enumerate(VALUES))


def test_paimon_ds_variant_written_read_by_pypaimon(spark, pypaimon_oracle, table_path, tmp_path):
    # Spark makes the VARIANTs (parse_json); paimon_ds writes them to a new table; pypaimon decodes them
    df = spark.createDataFrame([(i, None if v is None else json.dumps(v)) for i, v in enumerate(VALUES)],
                               "id int, j string")
    df.selectExpr("id", "parse_json(j) AS v").write.format("paimon").mode("append").save(table_path)
    assert Table.load(table_path).schema().field("v").type.root == "VARIANT"
    decoded = json.loads(pypaimon_oracle.exec(table_path, PYPAIMON_DECODE).strip().splitlines()[-1])
    assert decoded == [[i, v] for i, v in enumerate(VALUES)]
    # the core API: the same bytes back, and into a second table by the Arrow struct alone
    data = Table.load(table_path).to_arrow()
    other = str(Path(table_path).parent / "copy")
    t = Table.for_write(other, data.schema, {})
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("u").commit(w.prepare_commit())
    assert _bytes(Table.load(other).to_arrow()) == _bytes(data) == _bytes(pypaimon_oracle.read(other))
    for fmt in ("orc", "avro"):  # Java Paimon writes a VARIANT to parquet only
        with pytest.raises(ValueError, match=f"column 'v' of table .* is VARIANT, which Paimon writes to parquet "
                                             f"files only \\(not {fmt}\\)"):
            Table.for_write(str(tmp_path / f"t_{fmt}"), data.schema, {"file.format": fmt})


def test_shredded_variant_refused(spark, pypaimon_oracle, table_path):
    shredding = json.dumps({"type": "ROW", "fields": [{"id": 0, "name": "v", "type": {"type": "ROW", "fields": [
        {"id": 1, "name": "a", "type": "INT"}]}}]})
    pypaimon_oracle.exec(table_path, f"OPTIONS = {{'variant.shreddingSchema': {shredding!r}}}\n"
                                     f"VALUES = {[{'a': 1}, {'a': 2}]!r}\n" + PYPAIMON_VARIANT)
    with pytest.raises(ValueError, match="VARIANT column 'v' of data file .* is stored shredded"):
        Table.load(table_path).to_arrow()


# pypaimon: a row-tracking, data-evolution append table with a BLOB column
PYPAIMON_BLOB = """
import os
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

catalog = CatalogFactory.create({"warehouse": os.path.dirname(os.path.dirname(path))})
catalog.create_database("db", True)
name = "db." + os.path.basename(path)
fields = [DataTypeParser.parse_data_field({"id": 0, "name": "id", "type": "INT"}),
          DataTypeParser.parse_data_field({"id": 1, "name": "picture", "type": "BLOB"})]
catalog.create_table(name, Schema(fields=fields, options={"row-tracking.enabled": "true",
                                                          "data-evolution.enabled": "true"}), False)
t = catalog.get_table(name)
data = pa.table({"id": pa.array([1, 2], pa.int32()), "picture": pa.array([b"\\x89PNG", b"GIF8"], pa.large_binary())})
commit_arrow(t, data.cast(PyarrowFieldParser.from_paimon_schema(t.table_schema.fields)))
"""


def test_blob_table_refused(spark, pypaimon_oracle, table_path):
    pypaimon_oracle.exec(table_path, PYPAIMON_BLOB)
    assert sorted(f.name.rsplit(".", 1)[-1] for f in Path(table_path).rglob("data-*")) == ["blob", "parquet"]
    message = f"Paimon table {table_path}: column 'picture' \\(BLOB\\): Paimon type BLOB .* is not supported"
    with pytest.raises(SchemaError, match=message):
        Table.load(table_path).to_arrow()
    with pytest.raises(Exception, match="column 'picture' \\(BLOB\\): Paimon type BLOB"):
        spark.read.format("paimon").load(table_path).collect()
    with pytest.raises(SchemaError, match=message):
        Table.for_write(table_path, pa.schema([("id", pa.int32()), ("picture", pa.large_binary())]), {}).new_write()
