"""The fault enumeration on S3: the same scenarios and checks as test_fault_enumeration.py, with the tables on a
loopback S3 server (moto) and the faults injected under s3fs (the faulty subclass of its S3FileSystem), so that
the conditional PUT, its 412 and the listings of an object store are what fails.

The scenarios open their tables by path alone, so the store's endpoint and keys come from the environment, as
botocore reads them (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). `make test` runs every fault
at one seeded call of S3_SCENARIOS; `make soak` at SOAK_POINTS calls each.
"""

from __future__ import annotations

import logging
import os
import random
import warnings
from collections.abc import Iterator

import pytest

from .faulty_fs import IN_PROCESS_FAULTS, INJECTOR, install
from .harness import Prepared, Storage, prepare, run_with_fault
from .scenarios import BY_NAME
from .test_fault_enumeration import SEED, report, sample_points

S3_SCENARIOS = ["append", "pk-upsert-and-compaction", "stream-commit", "expire-snapshots"]


class S3Storage(Storage):
    """The runs' tables under s3://<bucket>/runs, copied and listed with a plain (not faulty) s3fs."""

    def __init__(self, server, bucket: str) -> None:
        super().__init__(f"s3://{bucket}/runs")
        self.fs = server.fs()

    def copy(self, source: str, target: str) -> None:
        with INJECTOR.bypass():
            self.fs.copy(source.removeprefix("s3://") + "/", target.removeprefix("s3://") + "/", recursive=True)

    def make_table_dir(self, path: str) -> None:
        pass  # an object store has no directories to make

    def temporary_files(self, path: str) -> list[str]:
        return [p for p in self.fs.find(path.removeprefix("s3://")) if p.endswith(".tmp")]


@pytest.fixture(scope="module")
def s3_storage(s3_server) -> Iterator[S3Storage]:
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ENDPOINT_URL_S3=s3_server.endpoint, AWS_ACCESS_KEY_ID=s3_server.ACCESS_KEY,
                      AWS_SECRET_ACCESS_KEY=s3_server.SECRET_KEY, AWS_DEFAULT_REGION="us-east-1")
    uninstall = install()
    logger = logging.getLogger("paimon_ds")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield S3Storage(s3_server, s3_server.new_bucket("faults"))
    logger.setLevel(level)
    uninstall()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


_prepared: dict[str, Prepared] = {}


def prepared(name: str, storage: S3Storage) -> Prepared:
    if name not in _prepared:
        _prepared[name] = prepare(BY_NAME[name], storage)
    return _prepared[name]


@pytest.mark.parametrize("name", S3_SCENARIOS)
def test_sampled_faults_on_s3(name: str, s3_storage: S3Storage) -> None:
    """Every in-process fault at one seeded call of the scenario, the table on S3."""
    prep = prepared(name, s3_storage)
    [point] = sample_points(prep, random.Random(f"{SEED}-s3-{name}"), count=1)  # a write of the store
    results = [run_with_fault(prep, point, fault) for fault in IN_PROCESS_FAULTS]
    assert not any(r.problems for r in results), report(results)


SOAK_POINTS = 12  # calls per scenario in make soak (a run on S3 takes seconds: every call would take hours)


@pytest.mark.soak
@pytest.mark.parametrize("name", S3_SCENARIOS)
def test_many_faults_on_s3(name: str, s3_storage: S3Storage) -> None:
    """Every in-process fault at SOAK_POINTS seeded calls of the scenario (writes, reads and any), on S3."""
    prep = prepared(name, s3_storage)
    points = sample_points(prep, random.Random(f"{SEED}-s3-soak-{name}"), count=3)
    rng = random.Random(f"{SEED}-s3-soak-more-{name}")
    points = sorted(set(points) | set(rng.sample([c.index for c in prep.calls], min(SOAK_POINTS, len(prep.calls)))))
    results = [run_with_fault(prep, point, fault) for point in points[:SOAK_POINTS] for fault in IN_PROCESS_FAULTS]
    print(f"{name} on S3: {len(prep.calls)} calls, {len(results)} runs")
    assert not any(r.problems for r in results), report(results)
