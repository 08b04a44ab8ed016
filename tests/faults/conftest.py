"""The fault runs leave hundreds of small tables behind them, each checked by the harness already: they are
deleted when their test (or module) ends, so that the suite-wide native-read check (tests/spark/test_native_read.py,
marker after_suite) spends its time on the other tests' tables."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def drop_run_tables(request: pytest.FixtureRequest) -> Iterator[None]:
    # taken before the test, so that tmp_path is torn down after this fixture
    path = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
