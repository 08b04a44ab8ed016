"""Per-job options may not change what a table's stored options fix: a job value of an immutable option that differs
from the table's is refused, with both values, at every core entry point, before anything is written; as Java
Paimon's AbstractFileStoreTable.copy -> checkImmutability refuses it ("Change 'merge-engine' is not supported yet").

The data-loss case of issue 31: before, `Table.load(p, {"merge-engine": "first-row"}).append(rows)` on a
deduplicate table was accepted, and compaction then dropped the new rows for good."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Catalog, Table, write_arrow
from paimon_ds.options.registry import OptionError, check_job_options
from paimon_ds.schema.change import RemoveOption, SetOption, commit_changes

ROWS = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "ts": [10, 10, 10]})
NEW = pa.table({"id": [1, 2], "v": ["A", "B"], "ts": [20, 20]})


def listing(root: str) -> list[tuple[str, int]]:
    """Every file of the table, with its size: what a refused job must leave as it was."""
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in Path(root).rglob("*") if p.is_file())


def rows(path: str) -> list[dict]:
    return Table.load(path).to_arrow().sort_by("id").to_pylist()


@pytest.fixture
def dedup(tmp_path) -> str:
    """A deduplicate primary-key table (merge-engine unset: Paimon's default) with one commit."""
    path = str(tmp_path / "dedup")
    write_arrow(path, ROWS, primary_key="id", options={"bucket": "2"})
    return path


@pytest.fixture
def sequenced(tmp_path) -> str:
    path = str(tmp_path / "seq")
    write_arrow(path, ROWS, primary_key="id", options={"bucket": "1", "sequence.field": "ts",
                                                       "merge-engine": "deduplicate"})
    return path


MESSAGE = ("option merge-engine='first-row' differs from the table's merge-engine 'deduplicate', the default: "
           "merge-engine cannot change once a table is created")


def test_the_data_loss_case_is_refused_and_the_table_is_unchanged(dedup) -> None:
    before = listing(dedup)
    with pytest.raises(OptionError, match=re.escape(MESSAGE)):
        Table.load(dedup, {"merge-engine": "first-row"}).append(NEW)
    assert listing(dedup) == before
    assert rows(dedup) == ROWS.to_pylist()


@pytest.mark.parametrize("entry", ["load", "for_write", "write_arrow", "write_arrow_overwrite", "catalog"])
def test_every_core_entry_point_refuses_a_changed_immutable_option(dedup, entry) -> None:
    job = {"merge-engine": "first-row"}
    before = listing(dedup)
    with pytest.raises(OptionError, match=re.escape(MESSAGE)):
        if entry == "load":
            Table.load(dedup, job).overwrite(NEW)
        elif entry == "for_write":
            Table.for_write(dedup, NEW.schema, job)
        elif entry == "write_arrow":
            write_arrow(dedup, NEW, options=job)
        elif entry == "write_arrow_overwrite":
            write_arrow(dedup, NEW, mode="overwrite", options=job)
        else:
            root = Path(dedup).parent / "wh"
            catalog = Catalog(str(root))
            catalog.create_database("db")
            catalog.create_table("db.t", ROWS.schema, primary_keys=["id"], options={"bucket": "1"})
            before = listing(str(root))
            catalog.get_table("db.t", job)
    assert listing(dedup) == before or entry == "catalog"
    if entry == "catalog":
        assert listing(str(Path(dedup).parent / "wh")) == before


def test_a_per_load_sequence_field_is_refused(dedup, sequenced) -> None:
    for path, stored in ((dedup, "(unset)"), (sequenced, "'ts'")):
        before = listing(path)
        with pytest.raises(OptionError, match=re.escape(
                f"option sequence.field='v' differs from the table's sequence.field {stored}: sequence.field cannot "
                "change once a table is created (Paimon: \"Change 'sequence.field' is not supported yet\")")):
            Table.load(path, {"sequence.field": "v"}).append(NEW)
        assert listing(path) == before


def test_reads_refuse_it_too(sequenced) -> None:
    # Paimon refuses the copy of a table for a read as for a write: a read option may not change the merge
    with pytest.raises(OptionError, match=re.escape("option merge-engine='first-row' differs from the table's "
                                                    "merge-engine 'deduplicate'")):
        Table.load(sequenced, {"merge-engine": "first-row"}).to_arrow()
    with pytest.raises(OptionError, match="option rowkind.field='v' differs"):
        Table.load(sequenced, {"rowkind.field": "v"}).scan().to_arrow()


@pytest.mark.parametrize("job", [
    {"merge-engine": "deduplicate"},  # the table's (unset: Paimon's default)
    {"merge-engine": "Deduplicate"},  # the same value spelled otherwise: Paimon's enum matching
    {"merge-engine": "DEDUPLICATE", "bucket": "2", "primary-key": "id", "bucket-key": "id", "ignore-delete": "false"},
    {"partial-update.ignore-delete": "FALSE", "sequence.field.sort-order": "ascending", "force-lookup": "false"},
    {"partition": "", "deletion-vectors.enabled": "false", "rowkind.field": None},
])
def test_the_table_s_own_value_is_accepted(dedup, job) -> None:
    Table.load(dedup, job).append(NEW)
    assert rows(dedup) == [{"id": 1, "v": "A", "ts": 20}, {"id": 2, "v": "B", "ts": 20}, {"id": 3, "v": "c", "ts": 10}]


def test_a_stored_value_is_matched_as_paimon_parses_it(sequenced) -> None:
    # stored `sequence.field` = `ts`, `merge-engine` = `deduplicate`: the same values, written otherwise
    write_arrow(sequenced, NEW, options={"sequence.field": " ts", "merge-engine": "DeDuplicate"})
    assert rows(sequenced)[0] == {"id": 1, "v": "A", "ts": 20}


def test_bucket_and_deletion_vectors(dedup) -> None:
    before = listing(dedup)
    with pytest.raises(OptionError, match=re.escape("option bucket=4 differs from the table's bucket 2")):
        Table.load(dedup, {"bucket": "4"})
    with pytest.raises(OptionError, match=re.escape(
            "option deletion-vectors.enabled='true' differs from the table's deletion-vectors.enabled 'false', "
            "the default: changing the deletion-vector mode could show rows twice")):
        Table.load(dedup, {"deletion-vectors.enabled": "true"}).append(NEW)
    assert listing(dedup) == before
    # Paimon 1.x's escape hatch, given by the job or stored by the table
    Table.load(dedup, {"deletion-vectors.enabled": "false", "deletion-vectors.modifiable": "true"})
    check_job_options({"deletion-vectors.modifiable": "true"}, {"deletion-vectors.enabled": "true"}, ["id"], [])


def test_a_fallback_key_of_an_immutable_option_is_refused_too(dedup) -> None:
    # `partial-update.ignore-delete` is read as `ignore-delete` (Paimon's fallback key), so it changes it
    with pytest.raises(OptionError, match=re.escape(
            "option partial-update.ignore-delete='true' differs from the table's ignore-delete 'false', the default")):
        Table.load(dedup, {"partial-update.ignore-delete": "true"})


def test_paimon_1_x_immutable_options(tmp_path) -> None:
    path = str(tmp_path / "append")
    write_arrow(path, pa.table({"id": [1]}), options={"row-tracking.enabled": "true", "bucket": "-1"})
    for job, stored in (({"row-tracking.enabled": "false"}, "'true'"), ({"data-evolution.enabled": "true"},
                                                                       "'false', the default"),
                        ({"index-file-in-data-file-dir": "true"}, "'false', the default"),
                        ({"sequence.field.sort-order": "descending"}, "'ascending', the default"),
                        ({"aggregation.remove-record-on-delete": "true"}, "'false', the default")):
        key, value = next(iter(job.items()))
        with pytest.raises(OptionError, match=re.escape(f"option {key}={value!r} differs from the table's {key} "
                                                        f"{stored}")):
            Table.load(path, job)
    Table.load(path, {"row-tracking.enabled": "TRUE", "type": "Table"})
    with pytest.raises(OptionError, match=re.escape("option type='format-table' is not supported by paimon_ds")):
        Table.load(path, {"type": "format-table"})  # a refused key is refused before it is compared
    with pytest.raises(OptionError, match=re.escape("option type='format-table' differs from the table's type 'table', "
                                                    "the default")):
        check_job_options({}, {"type": "format-table"}, [], [])
    with pytest.raises(OptionError, match=re.escape("option bucket-key='v' differs from the table's bucket-key "
                                                    "(unset: id)")):
        check_job_options({}, {"bucket-key": "v"}, ["id", "dt"], ["dt"])


def test_ignore_update_before_is_switched_on_but_never_off(tmp_path) -> None:
    """Paimon 1.x SchemaManager.checkAlterTableOption, for ALTER and dynamic options alike: "Cannot change
    ignore-update-before from true to false." Switching it on is allowed."""
    path = str(tmp_path / "t")
    write_arrow(path, ROWS, primary_key="id", options={"bucket": "1"})
    commit_changes(path, [SetOption("ignore-update-before", "true")])
    before = listing(path)
    with pytest.raises(OptionError, match="cannot change ignore-update-before from true to false"):
        Table.load(path, {"ignore-update-before": "false"}).append(NEW)
    with pytest.raises(OptionError, match="cannot change ignore-update-before from true to false"):
        commit_changes(path, [SetOption("ignore-update-before", "false")])
    with pytest.raises(OptionError, match="cannot change ignore-update-before from true to false"):
        commit_changes(path, [RemoveOption("ignore-update-before")])
    assert listing(path) == before
    Table.load(path, {"ignore-update-before": "true"}).append(NEW)  # the table's own value
    assert rows(path) == [{"id": 1, "v": "A", "ts": 20}, {"id": 2, "v": "B", "ts": 20}, {"id": 3, "v": "c", "ts": 10}]
