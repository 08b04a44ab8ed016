"""External data paths (Paimon 1.x `data-file.external-paths`): new data files under other roots.

With `data-file.external-paths` set and `data-file.external-paths.strategy` other than `none`, a data
(or changelog) file keeps its table layout `<partition>/bucket-N/<name>` but below one of the external
roots, and its manifest entry records the full location in `_EXTERNAL_PATH`; readers open that path
(`Split.file_path`), and expiry and orphan removal delete there. Which root a file goes to:

- `round-robin`: the roots in turn, starting at a random one for each bucket writer;
- `specific-fs`: round-robin over the roots of one scheme (`data-file.external-paths.specific-fs`);
- `weight-robin`: a random root, chosen with `data-file.external-paths.weights`;
- `entropy-inject`: roots in turn, with four directories of the name's hash (murmur3) before the name.

Locations are written as Paimon's (Hadoop) Path prints them: `file:/x/...`, `s3://bucket/...`.
"""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..options.registry import OptionError

if TYPE_CHECKING:
    from .file_store import FileStore

PATHS = "data-file.external-paths"
STRATEGY = "data-file.external-paths.strategy"
SPECIFIC_FS = "data-file.external-paths.specific-fs"
WEIGHTS = "data-file.external-paths.weights"


def path_string(uri: str) -> str:
    """A root as Paimon's Path prints it: `file:///x/` -> `file:/x`, `s3://b/x/` -> `s3://b/x`."""
    parts = urlsplit(uri)
    path = re.sub("/+", "/", parts.path)
    path = path.rstrip("/") if path != "/" else path
    return f"{parts.scheme}://{parts.netloc}{path}" if parts.netloc else f"{parts.scheme}:{path}"


def external_roots(table: FileStore) -> list[str]:
    """The roots new data files go under; empty when the table writes in its own directory."""
    opts = table.options
    given = opts.get(PATHS) or []
    strategy = opts.get(STRATEGY)
    if not given or strategy == "none":
        return []
    specific = opts.get(SPECIFIC_FS)
    if strategy == "specific-fs" and not specific:
        raise OptionError(f"'{SPECIFIC_FS}' must name a scheme when '{STRATEGY}' is specific-fs")
    roots = []
    for root in given:
        scheme = urlsplit(root).scheme
        if not scheme:
            raise OptionError(f"external path {root!r} has no scheme (write e.g. file:///dir or s3://bucket/dir)")
        if strategy != "specific-fs" or scheme.lower() == str(specific).strip().lower():
            roots.append(path_string(root))
    if not roots:
        raise OptionError(f"no external path of '{PATHS}' = {opts.raw.get(PATHS)!r} is on {specific!r} "
                          f"('{SPECIFIC_FS}')")
    return roots


class ExternalPathProvider:
    """Picks the location of each new data file of one bucket (Paimon's ExternalPathProvider)."""

    def __init__(self, table: FileStore, roots: list[str], bucket_rel: str) -> None:
        self.roots = roots
        self.bucket_rel = bucket_rel.strip("/")
        self.strategy = table.options.get(STRATEGY)
        weights = table.options.get(WEIGHTS)
        self.weights: list[int] | None = None
        if self.strategy == "weight-robin" and len(roots) >= 2 and weights:
            self.weights = weights
            if len(self.weights) != len(roots):
                raise OptionError(f"'{WEIGHTS}' gives {len(self.weights)} weights for {len(roots)} external paths")
        # round-robin starts at a random root, so that many writers do not all begin on the first
        self.position = 0 if self.strategy == "entropy-inject" else random.randrange(len(roots))

    def next_path(self, file_name: str) -> str:
        if self.weights is not None:
            root = random.choices(self.roots, weights=self.weights)[0]
        else:
            self.position = (self.position + 1) % len(self.roots)
            root = self.roots[self.position]
        # entropy-inject: hash directories spread files over an object store's key prefixes
        name = f"{entropy_dirs(file_name)}/{file_name}" if self.strategy == "entropy-inject" else file_name
        rel = f"{self.bucket_rel}/{name}" if self.bucket_rel else name
        return f"{root.rstrip('/')}/{rel}"


def new_data_file_path(table: FileStore, directory: str, file_name: str) -> tuple[str, str | None]:
    """(path to write, `_EXTERNAL_PATH` or None) of a new data file of the bucket at ``directory``.

    One provider per store object and bucket directory keeps the round-robin going across files.
    """
    providers = table.path_providers
    if "roots" not in providers:
        providers["roots"] = external_roots(table)
    roots = providers["roots"]
    if not roots:
        return f"{directory}/{file_name}", None
    provider = providers.get(directory)
    if provider is None:
        root = table.root.rstrip("/")
        rel = directory[len(root):] if directory.startswith(root) else directory
        provider = providers[directory] = ExternalPathProvider(table, roots, rel)
    path = provider.next_path(file_name)
    return path, path


def entropy_dirs(file_name: str) -> str:
    """The 20 low bits of the name's murmur3_32 (Guava's, seed 0) as `bbbb/bbbb/bbbb/bbbbbbbb`."""
    bits = format((murmur3_32(file_name.encode("utf-8")) | 0x80000000) & 0xFFFFFFFF, "032b")[-20:]
    return f"{bits[0:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` as an unsigned int (the public-domain algorithm)."""
    mask = 0xFFFFFFFF

    def scramble(k: int) -> int:
        k = (k * 0xCC9E2D51) & mask
        k = ((k << 15) | (k >> 17)) & mask
        return (k * 0x1B873593) & mask

    h = seed & mask
    n_full = len(data) // 4 * 4
    for i in range(0, n_full, 4):
        h ^= scramble(int.from_bytes(data[i:i + 4], "little"))
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[n_full:]
    if tail:
        h ^= scramble(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)
