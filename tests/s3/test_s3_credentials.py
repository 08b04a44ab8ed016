"""Where S3 credentials come from, as the planning-time check sees it
(paimon_ds.options.storage.missing_s3_credentials).

botocore's chain runs for real in this process, with the environment made empty of credentials: no AWS_*
keys, no profile files, and, where a test says so, an instance metadata service that never answers.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from paimon_ds.options.storage import (
    CREDENTIALS_CHECK_SECONDS,
    NO_CREDENTIALS,
    environment_has_credentials,
    missing_s3_credentials,
)

PATH = "s3://bucket/warehouse/db.db/t"


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    """An environment where botocore's chain finds nothing (the metadata service is refused on loopback)."""
    import os
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused at once
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}/")
    yield monkeypatch
    closed.close()


@pytest.fixture
def silent_metadata_service(no_aws_credentials):
    """An instance metadata service that accepts connections and never answers (a firewall that drops)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    no_aws_credentials.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}/")
    yield no_aws_credentials
    server.close()
    for conn in accepted:
        conn.close()


def test_where_credentials_come_from(no_aws_credentials):
    assert environment_has_credentials() is False
    assert missing_s3_credentials(PATH, None) == NO_CREDENTIALS
    assert missing_s3_credentials(PATH.replace("s3://", "s3a://"), {"fs.s3a.endpoint": "http://x:9000"}) == \
        NO_CREDENTIALS
    assert missing_s3_credentials("/local/warehouse/db.db/t", None) is None
    # keys in Paimon's names, Hadoop's, or s3fs's own
    assert missing_s3_credentials(PATH, {"s3.access-key": "k", "s3.secret-key": "s"}) is None
    assert missing_s3_credentials(PATH, {"fs.s3a.access.key": "k", "fs.s3a.secret.key": "s"}) is None
    assert missing_s3_credentials(PATH, {"key": "k", "secret": "s"}) is None
    # half a pair: botocore refuses it whatever the environment holds
    assert missing_s3_credentials(PATH, {"fs.s3a.access.key": "k"}) == "an access key but no secret key"
    assert missing_s3_credentials(PATH, {"s3.secret-key": "s"}) == "a secret key but no access key"
    # anonymous access needs none; a named profile is botocore's to resolve
    anonymous = {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    assert missing_s3_credentials(PATH, anonymous) is None
    assert missing_s3_credentials(PATH, {"profile": "dev"}) is None
    # the environment's own keys
    no_aws_credentials.setenv("AWS_ACCESS_KEY_ID", "k")
    no_aws_credentials.setenv("AWS_SECRET_ACCESS_KEY", "s")
    assert environment_has_credentials() is True
    assert missing_s3_credentials(PATH, None) is None


def test_a_silent_metadata_service_delays_the_check_by_its_bound_at_most(silent_metadata_service):
    # botocore's defaults: it gives up after 1 s for the IMDSv2 token and 1 s for IMDSv1, within the bound
    start = time.monotonic()
    assert missing_s3_credentials(PATH, None) == NO_CREDENTIALS
    assert 1.9 < time.monotonic() - start < CREDENTIALS_CHECK_SECONDS
    # configured to try longer than the bound: undecided, so the job goes on (its requests find out)
    silent_metadata_service.setenv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "5")
    start = time.monotonic()
    assert environment_has_credentials(timeout=1.0) is None
    assert missing_s3_credentials(PATH, None, timeout=1.0) is None
    assert time.monotonic() - start < 3.5  # two checks of 1 s each
