"""The library says what it decided, through `logging`: the S3 conditional-write probe's verdict (paimon_ds.fs.file_io)
and a commit retried after losing the race for snapshot-N (paimon_ds.operation.commit)."""

from __future__ import annotations

import logging

from paimon_ds.fs.file_io import FileIO, StorageError

from .test_s3_commit import interleaved_commits, new_path


def messages(caplog, logger: str) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger]


def test_probe_verdict_is_logged(s3_server, s3_server_without_conditions, caplog):
    caplog.set_level(logging.INFO, logger="paimon_ds.fs.file_io")
    for server, verdict in ((s3_server, "honoured"),
                            (s3_server_without_conditions, "NOT honoured: commits need the single-writer setting")):
        bucket = server.new_bucket()
        io = FileIO(f"s3://{bucket}/t", server.options())
        try:
            io.try_create(io.join("snapshot", "snapshot-1"), b"x")
        except StorageError:
            assert server is s3_server_without_conditions
        endpoint = server.options()["s3.endpoint"]
        assert (logging.INFO, f"S3 store {endpoint}, bucket {bucket}: conditional writes (If-None-Match) {verdict}") \
            in messages(caplog, "paimon_ds.fs.file_io")


def test_commit_retry_is_logged(s3_server, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="paimon_ds.operation.commit")
    path = new_path(s3_server)
    out = interleaved_commits(path, s3_server.options(), monkeypatch)
    assert out["a_lost"] == 1
    assert messages(caplog, "paimon_ds.operation.commit") == [
        (logging.INFO, f"commit to {path}: snapshot 2 was taken by another writer (attempt 1 of 11); retrying")]
