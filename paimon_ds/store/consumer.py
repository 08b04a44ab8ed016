"""Consumers: a streaming reader's progress, kept as Paimon keeps it (org.apache.paimon.consumer).

A streaming read with option `consumer-id` records, in `consumer/consumer-<id>` under the table's (or branch's)
directory, the next snapshot it will read: `{"nextSnapshot" : N}` as Java's Jackson pretty printer writes it.
Two things follow, in Java Paimon, Flink and paimon_ds alike:

- expiry never removes snapshot N or a later one while a consumer file holds N (the minimum over the table's
  consumers: ExpireSnapshotsImpl bounds its range with ConsumerManager.minNextSnapshot);
- a new streaming read with the same consumer id starts at snapshot N (unless `consumer.ignore-progress`).

A consumer file not rewritten for `consumer.expiration-time` is deleted by the next commit's maintenance, before
snapshot expiry (TableCommitImpl.expire), so a reader that went away stops holding snapshots back.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..fs.file_io import FileIO
from ..options.registry import OptionError

if TYPE_CHECKING:
    from ..snapshot.manager import Snapshot
    from .file_store import FileStore

CONSUMER_DIR = "consumer"
CONSUMER_PREFIX = "consumer-"
# Java writes a consumer file in place (not atomically): a reader may catch it half-written, and retries as
# Consumer.fromPath does (5 reads, 100 ms apart)
_READ_ATTEMPTS = 5
_READ_RETRY_SECONDS = 0.1


class ConsumerError(OptionError):
    """A consumer id or consumer file paimon_ds cannot use."""


def check_consumer_id(consumer_id: str) -> str:
    """A consumer id as Paimon takes one (any text but the empty string); paimon_ds also refuses `/`, which would
    put the file outside `consumer/` where no lister finds it."""
    if not consumer_id:
        raise ConsumerError("consumer id cannot be empty string (as Paimon: consumer-id must name the consumer)")
    if "/" in consumer_id:
        raise ConsumerError(f"consumer id {consumer_id!r} contains '/': its file would not be in consumer/")
    return consumer_id


@dataclass(frozen=True)
class Consumer:
    next_snapshot: int

    def to_json(self) -> str:
        """As Paimon's JsonSerdeUtil.toJson writes it (Jackson's default pretty printer)."""
        return f'{{\n  "nextSnapshot" : {self.next_snapshot}\n}}'

    @staticmethod
    def from_json(text: str) -> Consumer:
        obj = json.loads(text)  # unknown fields are ignored, as Java's @JsonIgnoreProperties(ignoreUnknown)
        value = obj.get("nextSnapshot") if isinstance(obj, dict) else None
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"not a Paimon consumer: {text[:80]!r} (no integer nextSnapshot)")
        return Consumer(value)


class ConsumerManager:
    """The consumer files of one table branch (``root``: the table's directory, or `branch/branch-<name>`)."""

    def __init__(self, io: FileIO, root: str) -> None:
        self.io = io
        self.dir = f"{root.rstrip('/')}/{CONSUMER_DIR}"

    @staticmethod
    def of(table: FileStore) -> ConsumerManager:
        return ConsumerManager(table.io, table.branch_root)

    def path(self, consumer_id: str) -> str:
        return f"{self.dir}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id)}"

    def consumer(self, consumer_id: str) -> Consumer | None:
        """The consumer's record, or None if it has none."""
        path = self.path(consumer_id)
        error: Exception | None = None
        for attempt in range(_READ_ATTEMPTS):
            try:
                return Consumer.from_json(self.io.read_text(path))
            except FileNotFoundError:
                return None
            except ValueError as e:  # half-written by a Java writer: read again
                error = e
                if attempt + 1 < _READ_ATTEMPTS:
                    time.sleep(_READ_RETRY_SECONDS)
        raise ConsumerError(f"consumer file {path} cannot be read: {error}")

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """Record ``next_snapshot`` for the consumer (create or replace its file); readers see the old record or
        the new one, never part of one (a rename on local disk, one PUT on object stores)."""
        if next_snapshot < 0:
            raise ConsumerError(f"a consumer's next snapshot must be >= 0, got {next_snapshot}")
        self.io.write_bytes(self.path(consumer_id), Consumer(int(next_snapshot)).to_json().encode())

    def delete(self, consumer_id: str) -> None:
        self.io.delete(self.path(consumer_id))

    def _files(self) -> list[tuple[str, dict[str, Any]]]:
        """(consumer id, listing details) of each consumer file, by id."""
        listing = self.io.list_details(self.dir)
        out = []
        for info in listing:
            name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
            if name.startswith(CONSUMER_PREFIX) and info.get("type") != "directory":
                out.append((name[len(CONSUMER_PREFIX):], info))
        return sorted(out, key=lambda f: f[0])

    def ids(self) -> list[str]:
        return [consumer_id for consumer_id, _ in self._files()]

    def consumers(self) -> dict[str, int]:
        """Each consumer's next snapshot, by id (a file deleted while listing is left out, as in Java)."""
        out = {}
        for consumer_id in self.ids():
            found = self.consumer(consumer_id)
            if found is not None:
                out[consumer_id] = found.next_snapshot
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest next snapshot of the consumers (None: no consumer): the first snapshot one still needs."""
        return min(self.consumers().values(), default=None)

    def expire(self, before_ms: int) -> list[str]:
        """Delete the consumer files last modified before ``before_ms`` (epoch millis); their ids."""
        expired = []
        for consumer_id, info in self._files():
            if _mtime_ms(self.io, info) < before_ms:
                self.io.delete(self.path(consumer_id))
                expired.append(consumer_id)
        return expired

    def clear(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete the consumers whose id matches the regular expression ``including`` (whole id; unset or blank:
        every consumer) and not ``excluding`` (unset or blank: none), as Paimon 1.x's clearConsumers; their ids."""
        include, exclude = _pattern(including, "including"), _pattern(excluding, "excluding")
        cleared = []
        for consumer_id in self.ids():
            if include is not None and not include.fullmatch(consumer_id):
                continue
            if exclude is not None and exclude.fullmatch(consumer_id):
                continue
            self.delete(consumer_id)
            cleared.append(consumer_id)
        return cleared


def _pattern(text: str | None, what: str) -> re.Pattern[str] | None:
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise ConsumerError(f"{what} consumers: {text!r} is not a regular expression ({e})") from None


def _mtime_ms(io: FileIO, info: dict[str, Any]) -> int:
    value = info.get("mtime", info.get("LastModified"))
    if value is None:
        value = io.modified(info["name"])
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)


def protected_from(table: FileStore) -> int | None:
    """The first snapshot id the table's consumers still need (their minimum next snapshot; None: no consumer).
    Expiry keeps it and every later snapshot, as Paimon's ExpireSnapshotsImpl does."""
    return ConsumerManager.of(table).min_next_snapshot()


def expire_consumers(table: FileStore, now_ms: int | None = None) -> list[str]:
    """Delete the consumers not updated for `consumer.expiration-time` (unset: none expire), so that they no longer
    hold snapshots back; their ids."""
    expiration = table.options.get("consumer.expiration-time")
    if expiration is None:
        return []
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    return ConsumerManager.of(table).expire(now_ms - expiration)


def expire_consumers_after_commit(table: FileStore, snapshot: Snapshot) -> None:
    """The maintenance step Paimon's committer runs first after each commit (TableCommitImpl.expire)."""
    expire_consumers(table)
