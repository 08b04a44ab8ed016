"""Metadata of older and newer Paimon releases: snapshot versions 1-3, manifests with and without the
fields later releases added, index manifests of before and after deletion vectors.

Older files are made the way those releases wrote them, from files Java Paimon 0.9 wrote: a snapshot
rewritten as version 1 (Paimon 0.2: no `version`, no `changelogManifestList`, no record counts, a
string commitIdentifier) or version 2 (Paimon 0.3: no record counts); manifests rewritten without
`_CREATION_TIME`, `_DELETE_ROW_COUNT`, `_EMBEDDED_FILE_INDEX`, `_FILE_SOURCE` (before 0.5-0.9); an
index manifest without `_DELETIONS_VECTORS_RANGES` (before 0.9). Newer ones come from pypaimon 2.1
(`_VALUE_STATS_COLS`, `_EXTERNAL_PATH`, `_FIRST_ROW_ID`, `_WRITE_COLS`). paimon_ds must read every one
exactly as Java does, and keep writing on top of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pyarrow as pa

from paimon_ds import Table

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())])
FIRST = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}, schema=SCHEMA)
SECOND = pa.table({"id": pa.array([2, 4], pa.int32()), "v": ["B", "d"]}, schema=SCHEMA)
THIRD = pa.table({"id": pa.array([3, 5], pa.int32()), "v": ["C", "e"]}, schema=SCHEMA)
MERGED = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}, {"id": 4, "v": "d"}]
AFTER_THIRD = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "C"}, {"id": 4, "v": "d"},
               {"id": 5, "v": "e"}]


def rows(t: pa.Table) -> list[dict]:
    return t.sort_by("id").to_pylist()


def ours(path: str, snapshot: int | None = None) -> list[dict]:
    return rows(Table.load(path, {"scan.snapshot-id": str(snapshot)} if snapshot else None).to_arrow())


def write(path: str, data: pa.Table) -> None:
    t = Table.load(path)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("u").commit(w.prepare_commit())


def rewrite_snapshot(path: str, snapshot_id: int, version: int) -> dict:
    """Rewrite a snapshot as Paimon release of that ``version`` wrote it; the new JSON."""
    f = Path(path) / "snapshot" / f"snapshot-{snapshot_id}"
    doc = json.loads(f.read_text())
    for key in ("totalRecordCount", "deltaRecordCount", "changelogRecordCount", "watermark", "statistics",
                "indexManifest"):
        doc.pop(key, None)
    if version == 1:
        doc.pop("version")
        doc.pop("changelogManifestList", None)
        doc["commitIdentifier"] = str(doc["commitIdentifier"])
    else:
        doc["version"] = version
    f.write_text(json.dumps(doc, indent=2))
    return doc


def rewrite_avro(path: Path, drop: set[str], nested: str | None = None) -> None:
    """Rewrite an Avro file without the fields ``drop`` (top level, or in record field ``nested``)."""
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema = reader.writer_schema
        records = list(reader)
        codec = reader.codec
    target = schema if nested is None else next(f for f in schema["fields"] if f["name"] == nested)["type"]
    target["fields"] = [f for f in target["fields"] if f["name"] not in drop]
    for r in records:
        holder = r if nested is None else r[nested]
        for name in drop:
            holder.pop(name, None)
    with open(path, "wb") as fh:
        fastavro.writer(fh, fastavro.parse_schema(schema), records, codec=codec)


def avro_field_names(path: Path, nested: str | None = None) -> list[str]:
    with open(path, "rb") as fh:
        schema = fastavro.reader(fh).writer_schema
    fields = schema["fields"] if nested is None else next(f for f in schema["fields"] if f["name"] == nested)[
        "type"]["fields"]
    return [f["name"] for f in fields]


def test_snapshot_versions_1_to_3(java_oracle, table_path):
    java_oracle.write(table_path, FIRST, primary_key="id", bucket=2)
    java_oracle.write(table_path, SECOND, primary_key="id", bucket=2)
    v1 = rewrite_snapshot(table_path, 1, 1)
    v2 = rewrite_snapshot(table_path, 2, 2)
    assert "version" not in v1 and isinstance(v1["commitIdentifier"], str) and "totalRecordCount" not in v1
    assert v2["version"] == 2 and "changelogManifestList" in v2 and "deltaRecordCount" not in v2
    snap = Table.load(table_path).snapshot_manager.snapshot(1)
    assert (snap.version, snap.commit_identifier, snap.total_record_count) == (1, 2**63 - 1, 0)
    for sid, want in ((1, rows(FIRST)), (2, MERGED)):
        assert ours(table_path, sid) == rows(java_oracle.read(table_path, snapshot=sid)) == want
    assert ours(table_path) == MERGED
    # paimon_ds continues the table: a version-3 snapshot on top of the version-2 one, read alike by Java
    write(table_path, THIRD)
    doc = json.loads((Path(table_path) / "snapshot" / "snapshot-3").read_text())
    assert doc["version"] == 3 and doc["deltaRecordCount"] == 2
    assert ours(table_path) == rows(java_oracle.read(table_path)) == AFTER_THIRD


def test_manifests_of_older_releases(java_oracle, table_path):
    java_oracle.write(table_path, FIRST, primary_key="id", bucket=2)
    java_oracle.write(table_path, SECOND, primary_key="id", bucket=2)
    manifests = sorted(p for p in (Path(table_path) / "manifest").glob("manifest-*")
                       if not p.name.startswith("manifest-list"))
    assert manifests
    later = {"_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE"}
    for m in manifests:
        assert later <= set(avro_field_names(m, "_FILE"))
        rewrite_avro(m, later, nested="_FILE")
        assert not later & set(avro_field_names(m, "_FILE"))
    for sid, want in ((1, rows(FIRST)), (2, MERGED)):
        assert ours(table_path, sid) == want
    # writing on top rewrites nothing old; Java reads old and new manifests together
    write(table_path, THIRD)
    assert ours(table_path) == rows(java_oracle.read(table_path)) == AFTER_THIRD


def test_index_manifest_before_deletion_vectors(java_oracle, table_path):
    """A dynamic-bucket table's hash index, listed in an index manifest of Paimon < 0.9's layout."""
    java_oracle.write(table_path, FIRST, primary_key="id", bucket=-1)
    java_oracle.write(table_path, SECOND, primary_key="id", bucket=-1)
    index_manifests = sorted((Path(table_path) / "manifest").glob("index-manifest-*"))
    assert len(index_manifests) == 2
    for m in index_manifests:
        assert "_DELETIONS_VECTORS_RANGES" in avro_field_names(m)
        rewrite_avro(m, {"_DELETIONS_VECTORS_RANGES"})
    assert ours(table_path) == MERGED
    # the upsert of key 3 must find its bucket in the old index: one row per key afterwards
    write(table_path, THIRD)
    assert ours(table_path) == rows(java_oracle.read(table_path)) == AFTER_THIRD


def test_pypaimon_manifests_with_newer_fields(pypaimon_oracle, table_path):
    pypaimon_oracle.write(table_path, FIRST, primary_key="id", bucket=2)
    pypaimon_oracle.write(table_path, SECOND, primary_key="id", bucket=2)
    manifest = next(p for p in (Path(table_path) / "manifest").glob("manifest-*")
                    if not p.name.startswith("manifest-list"))
    assert {"_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS"} <= \
        set(avro_field_names(manifest, "_FILE"))
    for sid, want in ((1, rows(FIRST)), (2, MERGED)):
        assert ours(table_path, sid) == rows(pypaimon_oracle.read(table_path, snapshot=sid)) == want
    write(table_path, THIRD)
    assert ours(table_path) == rows(pypaimon_oracle.read(table_path)) == AFTER_THIRD
