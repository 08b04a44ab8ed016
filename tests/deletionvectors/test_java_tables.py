"""Tables with deletion vectors written by Java Paimon 0.9, read by paimon_ds exactly as Java reads them."""

from __future__ import annotations

import pyarrow as pa
from conftest import sort_table

from paimon_ds import Table
from paimon_ds.deletionvectors.index_file import read_index_file, serialize_vector
from paimon_ds.index.manifest import DELETION_VECTORS_INDEX, IndexManifestFile
from paimon_ds.index.paths import index_file_path

from .java_scripts import append_deletes, pk_writes

DV = {"deletion-vectors.enabled": "true"}


def upsert_commits(n: int, parts: list[str]) -> list[list]:
    """A first commit of ids 0..n-1 per partition, then upserts and deletes over overlapping ids."""
    commits = [[("+I", i, p, f"{p}-a{i}") for p in parts for i in range(n)]]
    for r in range(4):
        rows = [("+I", i, p, f"{p}-r{r}-{i}") for p in parts for i in range(r * 5, n + 20, 7)]
        rows += [("-D", i, p, None) for p in parts for i in range(r, n, 11 + r)]
        commits.append(rows)
    return commits


def dv_entries(path: str, snapshot_id: int | None = None) -> list:
    t = Table.load(path)
    snap = t.snapshot_manager.snapshot(snapshot_id) if snapshot_id else t.latest_snapshot()
    if not snap.index_manifest:
        return []
    return [e for e in IndexManifestFile(t.io, t.root).read(snap.index_manifest)
            if e.index_file.index_type == DELETION_VECTORS_INDEX]


def assert_frames_equal_java(path: str) -> int:
    """Every vector of every snapshot's DV index files re-serialized by paimon_ds: the bytes Java wrote."""
    t = Table.load(path)
    checked = 0
    entries = {e.index_file.file_name: e for sid in t.snapshot_manager.list_ids() for e in dv_entries(path, sid)}
    for e in entries.values():
        path = index_file_path(t.store, e.partition, e.bucket, e.index_file)
        data = t.io.read_bytes(path)
        vectors = read_index_file(t.io, path, e.index_file)
        for name, offset, length in e.index_file.dv_ranges:
            assert serialize_vector(vectors[name]) == data[offset:offset + length + 8]
            checked += 1
    return checked


def assert_reads_as_java(path: str, java_oracle, snapshots: list[int] | None = None) -> None:
    """paimon_ds reads each snapshot (default: all) as Java does."""
    for sid in snapshots or Table.load(path).snapshot_manager.list_ids():
        ours = Table.load(path, {"scan.snapshot-id": str(sid)}).to_arrow()
        java = java_oracle.read(path, snapshot=sid)
        assert sort_table(ours).equals(sort_table(java.cast(ours.schema))), f"snapshot {sid}"


def test_primary_key_table_from_java(java_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/pk")
    java_oracle.exec(path, pk_writes(upsert_commits(120, ["x"]), {**DV, "bucket": "2"}, str(tmp_path / "io")))
    entries = dv_entries(path)
    assert entries and sum(len(e.index_file.dv_ranges) for e in entries) > 0
    assert assert_frames_equal_java(path) > 0
    ours = Table.load(path).to_arrow()
    java = java_oracle.read(path)
    assert sort_table(ours).equals(sort_table(java.cast(ours.schema)))
    # the expected contents, computed independently: every reader must see the last write of each key
    live: dict[int, str] = {}
    for rows in upsert_commits(120, ["x"]):
        for kind, i, _, v in rows:
            if kind == "+I":
                live[i] = v
            else:
                live.pop(i, None)
    assert sorted(zip(ours.column("id").to_pylist(), ours.column("v").to_pylist())) == sorted(live.items())
    ids = Table.load(path).snapshot_manager.list_ids()
    assert_reads_as_java(path, java_oracle, [ids[1], ids[len(ids) // 2], ids[-2]])


def test_partitioned_primary_key_table_from_java(java_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/pkp")
    java_oracle.exec(path, pk_writes(upsert_commits(60, ["a", "b"]), {**DV, "bucket": "1"}, str(tmp_path / "io"),
                                     partition=["p"]))
    assert assert_frames_equal_java(path) > 0
    ids = Table.load(path).snapshot_manager.list_ids()
    assert_reads_as_java(path, java_oracle, [ids[len(ids) // 2], ids[-1]])


def _append_data(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int32()), "p": pa.array(["a", "b"] * (n // 2)),
                     "v": pa.array([f"v{i}" for i in range(n)])})


def test_bucketed_append_table_from_java(java_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/ap")
    java_oracle.write(path, _append_data(200), partition="p", bucket=2,
                      options={**DV, "bucket-key": "id"})
    java_oracle.write(path, _append_data(100), options=DV)
    java_oracle.exec(path, append_deletes(0, 3))
    java_oracle.exec(path, append_deletes(1, 5))  # merges into the existing vectors
    assert assert_frames_equal_java(path) > 0
    ours = Table.load(path).to_arrow()
    assert ours.num_rows < 300
    ids = Table.load(path).snapshot_manager.list_ids()
    assert_reads_as_java(path, java_oracle, ids[-2:])


def test_unaware_append_table_from_java(java_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/au")
    java_oracle.write(path, _append_data(100), bucket=-1, options=DV)
    java_oracle.write(path, _append_data(50), options=DV)
    java_oracle.exec(path, append_deletes(2, 4))
    assert len(dv_entries(path)) >= 1 and assert_frames_equal_java(path) > 0
    assert_reads_as_java(path, java_oracle, Table.load(path).snapshot_manager.list_ids()[-1:])
