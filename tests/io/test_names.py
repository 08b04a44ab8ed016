"""File names: one uuid per namer, the job prefix that finds every file of a job, sibling kinds.

(tests/io has no __init__.py: as a package it would be named `io` and shadow the standard library.)"""

from __future__ import annotations

import re

from paimon_ds.io.names import DataFileNamer, job_file_prefix, new_job_prefix


def test_names_count_up_under_one_uuid():
    namer = DataFileNamer()
    names = [namer.next(), namer.next(".orc"), namer.next()]
    uuid = names[0][len("data-"):-len("-0.parquet")]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", uuid)
    assert names == [f"data-{uuid}-0.parquet", f"data-{uuid}-1.orc", f"data-{uuid}-2.parquet"]
    assert namer.changelog_namer().next() == f"changelog-{uuid}-0.parquet"


def test_a_job_prefix_finds_every_file_of_the_job_and_no_other():
    prefix = new_job_prefix()
    assert re.fullmatch(r"[0-9a-f]{12}", prefix)
    starts = job_file_prefix(prefix)
    ours = [DataFileNamer(prefix).next(), DataFileNamer(prefix).changelog_namer().next(),
            DataFileNamer(prefix).sibling("index", "").next()]
    assert all(name.startswith(starts) for name in ours)
    assert len({n.split("-")[5] for n in ours}) == 3  # each namer its own uuid tail
    others = [DataFileNamer(new_job_prefix()).next(), DataFileNamer().next()]
    assert not any(name.startswith(starts) for name in others)
