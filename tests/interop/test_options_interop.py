"""Options against Java Paimon 0.9: its own refusal of a changed immutable option through dynamic options (the rule
paimon_ds follows), and tables Java creates: the engine and tuning options they store never block paimon_ds, a
refused key they store blocks the writes it would change, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.options.registry import OptionError

ROWS = pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})

JAVA_COPY = """
import json
out = {}
for name, dynamic in CASES:
    try:
        table._j_table.copy(dynamic)
        out[name] = "accepted"
    except Exception as e:
        out[name] = str(e.java_exception.getMessage()) if hasattr(e, "java_exception") else str(e)
print(json.dumps(out))
"""


def listing(root: str) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in Path(root).rglob("*") if p.is_file())


def test_java_refuses_a_changed_immutable_option_as_paimon_ds_does(java_oracle, table_path) -> None:
    """AbstractFileStoreTable.copy -> checkImmutability (Paimon 0.9): a dynamic value of an @Immutable option that
    differs from the stored text is refused. Java compares the text: it also refuses `deduplicate` on a table that
    does not store merge-engine, and `Deduplicate` for a stored `deduplicate`; paimon_ds compares the parsed values
    (the same merge either way) and takes those two."""
    java_oracle.write(table_path, ROWS, primary_key="id", bucket=1, options={"sequence.field": "v"})
    cases = [("first-row", {"merge-engine": "first-row"}), ("same-text", {"sequence.field": "v"}),
             ("other-field", {"sequence.field": "id"}), ("default-spelled", {"merge-engine": "deduplicate"}),
             ("bucket", {"bucket": "2"}), ("tuning", {"write-buffer-size": "64 mb"})]
    java = json.loads(java_oracle.exec(table_path, JAVA_COPY.replace("CASES", repr(cases))).strip().splitlines()[-1])
    assert java == {"first-row": "Change 'merge-engine' is not supported yet.", "same-text": "accepted",
                    "other-field": "Change 'sequence.field' is not supported yet.",
                    "default-spelled": "Change 'merge-engine' is not supported yet.",
                    "bucket": "Cannot change bucket number through dynamic options. You might need to rescale bucket.",
                    "tuning": "accepted"}
    for name, dynamic in cases:
        if java[name] == "accepted" or name == "default-spelled":
            Table.load(table_path, dynamic)
        else:
            key = next(iter(dynamic))
            with pytest.raises(OptionError, match=f"option {key}="):
                Table.load(table_path, dynamic)


def test_a_java_table_with_engine_and_tuning_options_is_written_and_read_both_ways(java_oracle, table_path) -> None:
    # what a Flink job's DDL typically stores: sink and scan parallelism, lookup-join caching, commit tuning
    stored = {"sink.parallelism": "2", "scan.parallelism": "2", "lookup.cache-rows": "1000",
              "write-buffer-for-append": "true", "snapshot.expire.limit": "5", "scan.plan-sort-partition": "true",
              "tag.automatic-creation": "none", "continuous.discovery-interval": "5 s"}
    java_oracle.write(table_path, ROWS, primary_key="id", bucket=1, options=stored)
    Table.load(table_path).append(pa.table({"id": pa.array([2, 3], pa.int32()), "v": ["B", "c"]}))
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert Table.load(table_path).to_arrow().sort_by("id").to_pylist() == expected
    assert java_oracle.read(table_path).sort_by("id").to_pylist() == expected


def test_a_java_table_with_automatic_tags_is_continued_by_paimon_ds(java_oracle, table_path) -> None:
    """`tag.automatic-creation` is honoured since issue 32 (tests/interop/test_auto_tag_interop.py compares the tags
    with Java's): a Java table that uses it takes paimon_ds writes, and reads as Java's."""
    java_oracle.write(table_path, ROWS, primary_key="id", bucket=1,
                      options={"tag.automatic-creation": "process-time", "tag.creation-period": "daily",
                               "sink.parallelism": "2"})
    Table.load(table_path).append(pa.table({"id": pa.array([3], pa.int32()), "v": ["c"]}))
    expected = ROWS.to_pylist() + [{"id": 3, "v": "c"}]
    assert Table.load(table_path).to_arrow().sort_by("id").to_pylist() == expected
    assert java_oracle.read(table_path).sort_by("id").to_pylist() == expected
