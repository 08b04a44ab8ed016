"""Fixtures of the ported Paimon Spark SQL suites: a fresh warehouse attached per test, with one database."""

from __future__ import annotations

import itertools

import pytest

import paimon_ds

_counter = itertools.count()


@pytest.fixture
def wh(spark, tmp_path):
    """A warehouse attached to the shared session, with database `ported_<n>` current; dropped views after."""
    warehouse = str(tmp_path / "warehouse")
    paimon_ds.attach(spark, warehouse)
    db = f"ported_{next(_counter)}"
    paimon_ds.sql(spark, f"CREATE DATABASE {db}")
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(db)
    yield warehouse
    spark.catalog.setCurrentDatabase(previous)
    for view in ("source", "deleted_ids", "updated_ids"):
        spark.catalog.dropTempView(view)

