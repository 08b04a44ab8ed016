"""The global key index on disk: serialized key -> packed (partition id, bucket), and its bulk load.

The value is ``partition id << 32 | bucket`` (partition ids map to the serialized partition in the assigner's
memory, as Paimon's ``IDMapping``), plus the write time in seconds with an index TTL (Paimon: RocksDB
``TtlDB``; bootstrapped keys get the bootstrap time as Paimon's ``BulkLoader`` does). Paimon keys its RocksDB
by the trimmed primary key (minus partition fields); the whole key is the same thing when the key has no
partition field and the right identity when it has some.

``KeyIndex`` is an SQLite database (stdlib ``sqlite3``: no new package; a well-kept embedded B-tree): one
``WITHOUT ROWID`` table, journal and fsync off (a private file, rebuilt by every bootstrap), mmap off, and
a page cache of ``cache_bytes`` (default ``sink.cross-partition.managed-memory``, Paimon's budget for its
RocksDB, 256 MiB), which bounds the index's resident memory: the index itself lives in the file.
``sqlite3`` costs per statement and per Python object, so nothing crosses it row by row: the distinct
keys of a batch (``keys.KeySet``: grouped by length, sorted bytewise by numpy on big-endian words) go in as
one blob per key length, their values as another, and one statement walks them inside SQLite with
``json_each`` and ``substr``; a lookup returns its hits as two ``group_concat`` strings parsed by numpy.
Sorted keys visit B-tree pages in order.

``KeyIndexLoader`` is the bootstrap's external sort, as Paimon's (BinaryExternalSortBuffer then RocksDB bulk
load): sorted runs of ``buffer_bytes`` of keys are spilled, k-way merged by numpy and appended to the B-tree
in key order.

Measured on this 2-core machine: 100k sorted keys against a 2M-key index, 0.16 s to look up
(``executemany`` / ``IN`` lists: 0.35-0.65 s) and 0.2 s to insert (``executemany``: 0.6-0.8 s);
20M keys loaded in 1M-key sorted chunks 46 s, appended in global key order 20 s (SQLite's own
``ORDER BY`` sorter: 81 s). Sorted runs of our own would rebuild what SQLite gives (a page cache with an
exact bound, in-place updates, variable-length keys) without a measurable gain over these figures, so
SQLite is used. End-to-end figures: index/cross_partition.py.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from .keys import KeySet

DUPLICATE_KEYS = ("Exception in bulkLoad, the most suspicious reason is that your data contains duplicates, "
                  "please check your sink table. (The likelihood of duplication is that you used multiple jobs "
                  "to write the same dynamic bucket table, it only supports single write)")


def _index_json(n: int) -> str:
    return "[" + "0," * (n - 1) + "0]"


class KeyIndex:
    """Serialized key -> packed (partition id, bucket) in an SQLite file whose page cache bounds memory.

    ``ttl_seconds``: entries older than it read as absent (Paimon: RocksDB TtlDB).
    """

    def __init__(self, directory: str, cache_bytes: int, ttl_seconds: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = os.path.join(directory, "key-index.db")
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "locking_mode = EXCLUSIVE",
                       "secure_delete = OFF", "mmap_size = 0", "temp_store = FILE",
                       f"cache_size = -{max(1024, cache_bytes // 1024)}"):
            self.db.execute(f"PRAGMA {pragma}")
        ttl_col = ", t INTEGER NOT NULL" if ttl_seconds is not None else ""
        # v: the packed (partition id, bucket) as 8 little-endian bytes, so values travel as one blob too
        self.db.execute(f"CREATE TABLE idx (k BLOB PRIMARY KEY, v BLOB NOT NULL{ttl_col}) WITHOUT ROWID")
        self.size = 0  # rows inserted (bootstrap) or put; an upper bound of the live keys

    def _now(self) -> int:
        return int(self.clock())

    def lookup(self, keys: KeySet) -> tuple[np.ndarray, np.ndarray]:
        """(found, packed value) of every key id; an expired entry is not found."""
        found = np.zeros(len(keys), dtype=bool)
        values = np.zeros(len(keys), dtype=np.int64)
        ttl = self.ttl_seconds is not None
        base = 0
        for length, mat in keys.groups:
            # one row back: the hits' positions and their values as hex, parsed by numpy (no object per hit)
            sql = (f"SELECT group_concat(j.key), group_concat(hex(idx.v), '') FROM json_each(?2) AS j "
                   f"JOIN idx ON idx.k = substr(?1, j.key * {length} + 1, {length})"
                   + (" WHERE idx.t >= ?3" if ttl else ""))
            params: tuple[Any, ...] = (mat.tobytes(), _index_json(len(mat)))
            if ttl:
                params += (self._now() - int(self.ttl_seconds or 0),)
            hits, hexed = self.db.execute(sql, params).fetchone()
            if hits:
                at = base + np.fromstring(hits, dtype=np.int64, sep=",")
                found[at] = True
                values[at] = np.frombuffer(bytes.fromhex(hexed), dtype="<i8")
            base += len(mat)
        return found, values

    def get(self, keys: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """``lookup`` for an array of serialized keys, aligned with it."""
        key_set, kid = KeySet.of_array(keys)
        found, values = self.lookup(key_set)
        return found[kid], values[kid]

    def put(self, keys: KeySet, values: np.ndarray, new_only: bool = False) -> None:
        """Write the entries (``values`` by key id); ``new_only``: fail on a key already present (bulk load)."""
        ttl = self.ttl_seconds is not None
        verb = "INSERT" if new_only else "INSERT OR REPLACE"
        packed = np.ascontiguousarray(values, dtype="<i8")
        base = 0
        for length, mat in keys.groups:
            sql = (f"{verb} INTO idx (k, v{', t' if ttl else ''}) SELECT substr(?1, j.key * {length} + 1, {length}), "
                   f"substr(?2, j.key * 8 + 1, 8){', ?4' if ttl else ''} FROM json_each(?3) AS j")
            params: tuple[Any, ...] = (mat.tobytes(), packed[base:base + len(mat)].tobytes(), _index_json(len(mat)))
            if ttl:
                params += (self._now(),)
            self.db.execute(sql, params)
            base += len(mat)
            self.size += len(mat)

    def close(self) -> None:
        self.db.close()


class KeyIndexLoader:
    """Bulk load of a new KeyIndex from (key, value) pairs in any order: an external sort.

    Pairs are buffered up to ``buffer_bytes`` of keys; if they all fit they are sorted and loaded at once,
    else each full buffer is spilled as a sorted run per key length (files under ``directory/runs``) and
    ``finish`` k-way merges the runs into the index in key order. A key given twice fails (DUPLICATE_KEYS).
    """

    def __init__(self, index: KeyIndex, directory: str, buffer_bytes: int) -> None:
        self.index = index
        self.directory = directory
        self.buffer_bytes = buffer_bytes
        self._pending: list[tuple[pa.Array, np.ndarray]] = []
        self._pending_bytes = 0
        self.runs: dict[int, list[tuple[str, int]]] | None = None  # spilled sorted runs by key length

    def add(self, keys: pa.Array | pa.ChunkedArray, values: np.ndarray) -> None:
        """Buffer serialized keys with their packed values; spill a sorted run when the buffer is full."""
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        self._pending.append((keys if keys.type == pa.large_binary() else keys.cast(pa.large_binary()), values))
        self._pending_bytes += keys.nbytes
        if self._pending_bytes >= self.buffer_bytes:
            self._flush()

    def finish(self) -> None:
        """Load what is buffered and merge the spilled runs into the index."""
        self._flush(final=True)

    def _flush(self, final: bool = False) -> None:
        """Sort the buffered keys; load them at once if they are all there are, else spill a sorted run."""
        if self._pending:
            keys, kid = KeySet.of_array(pa.concat_arrays([k for k, _ in self._pending]))
            values = np.empty(len(keys), dtype=np.int64)
            values[kid] = np.concatenate([v for _, v in self._pending])
            self._pending, self._pending_bytes = [], 0
            if len(keys) < len(kid):
                raise RuntimeError(DUPLICATE_KEYS)
            if final and self.runs is None:
                self._load_sorted(keys, values)
                return
            self._spill(keys, values)
        if final and self.runs is not None:
            self._merge_runs()

    def _load_sorted(self, keys: KeySet, values: np.ndarray) -> None:
        try:
            self.index.put(keys, values, new_only=True)
        except sqlite3.IntegrityError as e:
            raise RuntimeError(DUPLICATE_KEYS) from e

    def _spill(self, keys: KeySet, values: np.ndarray) -> None:
        """Write each key length's sorted keys and values as one run of files (an external sort's run)."""
        if self.runs is None:
            self.runs = {}
            os.makedirs(os.path.join(self.directory, "runs"), exist_ok=True)
        base = 0
        for length, mat in keys.groups:
            runs = self.runs.setdefault(length, [])
            path = os.path.join(self.directory, "runs", f"run-{length}-{len(runs)}")
            mat.tofile(path + ".keys")
            values[base:base + len(mat)].astype("<i8").tofile(path + ".values")
            runs.append((path, len(mat)))
            base += len(mat)

    def _merge_runs(self) -> None:
        """K-way merge of the spilled runs of each key length, loaded into the index in key order (an
        append to its B-tree, as Paimon bulk-loads sorted keys into RocksDB). Vectorised by watermark: every
        key up to the smallest last key of the runs' current blocks is complete, and is sorted at once."""
        assert self.runs is not None
        for length, runs in sorted(self.runs.items()):
            words_per_key = length // 8
            block = max(4096, self.buffer_bytes // (len(runs) * (length + 8)))
            cursors = [_RunCursor(path, count, length, block) for path, count in runs]
            cursors = [c for c in cursors if c.keys is not None]
            while cursors:
                lasts = np.stack([c.words[-1] for c in cursors])
                watermark = lasts[np.lexsort(lasts.T[::-1])[0]]
                pieces = [c.take_upto(watermark) for c in cursors]
                mat = np.concatenate([p[0] for p in pieces])
                vals = np.concatenate([p[1] for p in pieces])
                words = mat.view(">u8").astype(np.uint64).reshape(-1, words_per_key)
                order = np.lexsort(words.T[::-1]) if len(pieces) > 1 else np.arange(len(mat))
                words = words[order]
                if len(words) > 1 and (words[1:] == words[:-1]).all(axis=1).any():
                    raise RuntimeError(DUPLICATE_KEYS)
                self._load_sorted(KeySet([(length, mat[order])]), vals[order])
                cursors = [c for c in cursors if c.keys is not None]
        shutil.rmtree(os.path.join(self.directory, "runs"), ignore_errors=True)
        self.runs = None


class _RunCursor:
    """Reads a spilled sorted run block by block."""

    def __init__(self, path: str, count: int, length: int, block: int) -> None:
        self.path, self.count, self.length, self.block = path, count, length, block
        self.pos = 0
        self.keys: np.ndarray | None = None
        self._next()

    def _next(self) -> None:
        n = min(self.block, self.count - self.pos)
        if n <= 0:
            self.keys = None
            return
        self.keys = np.fromfile(self.path + ".keys", dtype=np.uint8, count=n * self.length,
                                offset=self.pos * self.length).reshape(n, self.length)
        self.values = np.fromfile(self.path + ".values", dtype="<i8", count=n, offset=self.pos * 8)
        self.words = self.keys.view(">u8").astype(np.uint64).reshape(n, -1)
        self.pos += n

    def take_upto(self, watermark: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Remove and return the block's keys (and values) that are <= watermark (bytewise)."""
        assert self.keys is not None
        less = np.zeros(len(self.words), dtype=bool)
        equal = np.ones(len(self.words), dtype=bool)
        for c in range(self.words.shape[1]):
            less |= equal & (self.words[:, c] < watermark[c])
            equal &= self.words[:, c] == watermark[c]
        cut = int((less | equal).sum())  # the block is sorted: a prefix
        out = (self.keys[:cut], self.values[:cut])
        if cut == len(self.keys):
            self._next()
        else:
            self.keys, self.values, self.words = self.keys[cut:], self.values[cut:], self.words[cut:]
        return out

