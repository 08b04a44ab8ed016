"""Unions of roaring bitmaps exactly as Java's RoaringBitmap library computes and serializes them.

Paimon's `rbm32` and `rbm64` aggregates (FieldRoaringBitmap32Agg / FieldRoaringBitmap64Agg) deserialize the
accumulated bitmap and the next one, OR them in place and serialize the result after `runOptimize`, with the
RoaringBitmap release Paimon bundles (1.0.5 in Paimon 0.9 and 1.0). The values of the union are plain set
algebra; the bytes are not: they depend on each container's kind (array, bitmap, run), which the in-place OR
decides from the kinds of its two operands (a run container can stay a run where a fresh array would not
become one), and for 64-bit bitmaps on the history of the structure. So the union here is done one pair at
a time, as Java folds a key's rows, with Java's rules for the result kinds written out below.

32-bit (`RoaringBitmap`): the portable format (deletionvectors/roaring.py).

64-bit (`Roaring64Bitmap.serialize(DataOutput)`, little-endian): a byte 0 (empty) or 1, then
* the adaptive radix tree (ART) over the 48 high bits of the values (6 key bytes, big-endian): its key count
  (i64), then its nodes in pre-order, children in key order. A node is its type (0 Node4, 1 Node16, 2 Node48,
  3 Node256, 4 leaf), its child count (i16), its compressed-path prefix (a length byte and the bytes) and a
  body: Node4 and Node16 their sorted child key bytes (4 / 16 positions, written as little-endian i32 / two
  i64 of big-endian positions), Node48 a 256-byte table of key byte -> child slot (0xFF none; eight per i64,
  likewise), Node256 a 256-bit mask (four i64), a leaf its 6 key bytes and its container index (i64);
* the containers, an array of slots that grows as Java's ArrayList does (capacity 1, then x1.5): the level
  count (i32), per level 0xFE, its capacity (i32) and per slot 0 (empty) or 1, the kind (0 run, 1 bitmap,
  2 array), the cardinality (i32) and the body (runs: u16 count and (start, length - 1) u16 pairs; bitmap:
  1024 i64; array: the u16 values); then the container count (i64) and the last slot used (two i32).
The slot order is the order keys were first added, and Node48's slots likewise: the union keeps the parsed
structure and adds new keys the way Java's ART insert does, so the bytes equal Java's.
"""

from __future__ import annotations

import struct

import numpy as np

from ..deletionvectors.roaring import (
    ARRAY,
    BITMAP,
    RUN,
    RoaringFormatError,
    container_stats,
    read32_many,
    write32_many,
)

_ARRAY_MAX = 4096
_BITMAP_SIZE = 8192  # a bitmap container's serialized bytes
_FULL = 1 << 16

Container = tuple[int, np.ndarray]  # (kind, sorted uint16 low values)


def or_kinds(acc: np.ndarray, other: np.ndarray, cards: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """The kind of ``acc.ior(other)`` (RoaringBitmap 1.0.5) per container, for a union of ``cards`` values
    in ``runs`` runs; where one side has no container (-1), the other's container is copied as it is."""
    run_size = 2 + 4 * runs
    by_card = np.where(cards <= _ARRAY_MAX, ARRAY, BITMAP)
    # RunContainer.toEfficientContainer: a run container stays one unless an array or a bitmap is smaller
    # (on a tie it stays a run, where an array's runOptimize would keep the array)
    efficient = np.where(run_size <= np.minimum(_BITMAP_SIZE, 2 + 2 * cards), RUN, by_card)
    mixed = ((acc == RUN) & (other == ARRAY)) | ((acc == ARRAY) & (other == RUN))
    both = np.where(
        cards == _FULL, RUN,  # every path ends in RunContainer.full(), or a full bitmap runOptimize makes a run
        np.where((acc == ARRAY) & (other == ARRAY), by_card,  # union2by2, or a lazy bitmap repaired to an array
                 np.where((acc == RUN) & (other == RUN),  # toBitmapIfNeeded (RoaringBitmap 1.2: toEfficientContainer)
                          np.where(run_size < _BITMAP_SIZE, RUN, BITMAP),
                          np.where(mixed, efficient, BITMAP))))  # runs merged, toEfficientContainer; else a bitmap
    return np.where((acc >= 0) & (other >= 0), both, np.where(acc >= 0, acc, other)).astype(np.int8)


def run_optimize_kinds(kinds: np.ndarray, cards: np.ndarray, runs: np.ndarray, wide: bool) -> np.ndarray:
    """`runOptimize` before serializing. RoaringBitmap replaces every container with its optimised form
    (a run container may become an array or a bitmap); Roaring64Bitmap only puts run containers in."""
    run_size = 2 + 4 * runs
    to_run = ((kinds == ARRAY) & (2 * cards > run_size)) | ((kinds == BITMAP) & (_BITMAP_SIZE > run_size))
    out = np.where(to_run, RUN, kinds).astype(np.int8)
    if not wide:
        by_card = np.where(cards <= _ARRAY_MAX, ARRAY, BITMAP)
        stays_run = run_size <= np.minimum(_BITMAP_SIZE, 2 + 2 * cards)
        out = np.where((kinds == RUN) & ~stays_run, by_card, out).astype(np.int8)
        # a bitmap of <= 4096 values (a union of two run containers of >= 2048 runs) has no portable form:
        # Java 1.0.5 writes a bitmap body under an array's cardinality; written here as the array
        out[(out == BITMAP) & (cards <= _ARRAY_MAX)] = ARRAY
    return out


def or_kind(acc: int, other: int, card: int, runs: int) -> int:
    """or_kinds for one container of each side (the same rules, for the 64-bit fold's few containers)."""
    run_size = 2 + 4 * runs
    by_card = ARRAY if card <= _ARRAY_MAX else BITMAP
    if card == _FULL:
        return RUN
    if acc == ARRAY and other == ARRAY:
        return by_card
    if acc == RUN and other == RUN:
        return RUN if run_size < _BITMAP_SIZE else BITMAP
    if (acc, other) in ((RUN, ARRAY), (ARRAY, RUN)):
        return RUN if run_size <= min(_BITMAP_SIZE, 2 + 2 * card) else by_card
    return BITMAP


def run_optimize_wide(kind: int, card: int, runs: int) -> int:
    """run_optimize_kinds(wide=True) for one container: Roaring64Bitmap.runOptimize."""
    run_size = 2 + 4 * runs
    if (kind == ARRAY and 2 * card > run_size) or (kind == BITMAP and _BITMAP_SIZE > run_size):
        return RUN
    return kind


def _run_count(low: np.ndarray) -> int:
    return int(np.count_nonzero(np.diff(low.astype(np.int32)) != 1)) + 1


def _sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The union of two ascending arrays, ascending (np.union1d hashes, which is slower here)."""
    out = np.concatenate([a, b])
    out.sort(kind="stable")
    return out[np.append(True, out[1:] != out[:-1])] if len(out) else out


def _lookup(conts: np.ndarray, kinds: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The kind of each ``wanted`` container id among ``conts`` (ascending), -1 where absent."""
    at = np.minimum(np.searchsorted(conts, wanted), max(len(conts) - 1, 0))
    found = (conts[at] == wanted) if len(conts) else np.zeros(len(wanted), dtype=bool)
    return np.where(found, kinds[at] if len(conts) else -1, -1)


# ------------------------------------------------------------------------------------------------ 32-bit

class Bitmaps32:
    """Many 32-bit bitmaps as roaring.read32_many gives them: ``ids`` (bitmap << 32 | value, ascending), and
    per container (``conts``: ids >> 16, ascending) its ``kinds``."""

    __slots__ = ("ids", "conts", "kinds")

    def __init__(self, ids: np.ndarray, kinds: np.ndarray, conts: np.ndarray | None = None) -> None:
        self.ids, self.kinds = ids, kinds
        self.conts = container_stats(ids)[1] if conts is None else conts

    def only(self, keep: np.ndarray) -> Bitmaps32:
        """The bitmaps whose index is flagged in ``keep``."""
        c = keep[self.conts >> 16]
        return Bitmaps32(self.ids[keep[self.ids >> 32]], self.kinds[c], self.conts[c])


def or32(acc: Bitmaps32, other: Bitmaps32) -> Bitmaps32:
    """Each bitmap of ``acc`` OR'ed in place with the same-numbered one of ``other`` (RoaringBitmap.or:
    containers of one side copied, those of both OR'ed), then runOptimize."""
    ids = _sorted_union(acc.ids, other.ids)
    _, conts, cards, runs = container_stats(ids)
    kinds = or_kinds(_lookup(acc.conts, acc.kinds, conts), _lookup(other.conts, other.kinds, conts), cards, runs)
    return Bitmaps32(ids, run_optimize_kinds(kinds, cards, runs, wide=False), conts)


def _read(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids, kinds, read_to = read32_many(buf, starts)
    if (read_to > ends).any():
        raise RoaringFormatError("roaring bitmap truncated")
    return ids, kinds


def fold32(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The left fold of each group of bitmaps (``sizes[g]`` values, at consecutive ``starts`` .. ``ends`` of
    ``buf``) as Paimon folds a key's rbm32 values: (bytes, count + 1 offsets) of the results. All groups
    advance together, a group leaving when its values are done."""
    count = len(sizes)
    firsts = np.cumsum(sizes) - sizes
    acc = Bitmaps32(*_read(buf, starts[firsts], ends[firsts]))
    done: list[Bitmaps32] = []
    for step in range(1, int(sizes.max(initial=1))):
        active = np.flatnonzero(sizes > step)
        ids, kinds = _read(buf, starts[firsts[active] + step], ends[firsts[active] + step])
        ids = (active[ids >> 32] << 32) | (ids & 0xFFFFFFFF)  # the input's bitmap i is group active[i]
        acc = or32(acc, Bitmaps32(ids, kinds))
        last = np.zeros(count, dtype=bool)
        last[active[sizes[active] == step + 1]] = True
        if last.any():
            done.append(acc.only(last))
            acc = acc.only(~last)
    ids = np.concatenate([d.ids for d in done]) if done else np.empty(0, np.int64)
    conts = np.concatenate([d.conts for d in done]) if done else np.empty(0, np.int64)
    kinds = np.concatenate([d.kinds for d in done]) if done else np.empty(0, np.int8)
    return write32_many(np.sort(ids), kinds[np.argsort(conts, kind="stable")], count)


# ------------------------------------------------------------------------------------------------ 64-bit

NODE4, NODE16, NODE48, NODE256, LEAF = range(5)
_EMPTY_SLOT = 0xFF
_KEY_BYTES = 6
_NOT_TRIMMED = 0xFE
_KIND_CODES = {RUN: 0, BITMAP: 1, ARRAY: 2}
_KINDS = {code: kind for kind, code in _KIND_CODES.items()}


class Node:
    """One ART node as Java holds it. Inner nodes: ``keys`` (Node4/16: the child key bytes by position;
    Node48: key byte -> slot) and ``children`` (by position, slot or key byte); leaves: ``key`` (6 bytes)
    and ``container`` (its container index)."""

    __slots__ = ("type", "count", "prefix", "keys", "children", "key", "container")

    def __init__(self, type_: int, prefix: bytes = b"", count: int = 0) -> None:
        self.type = type_
        self.count = count
        self.prefix = prefix
        self.key = b""
        self.container = 0
        if type_ == NODE4:
            self.keys, self.children = bytearray(4), [None] * 4
        elif type_ == NODE16:
            self.keys, self.children = bytearray(16), [None] * 16
        elif type_ == NODE48:
            self.keys, self.children = bytearray([_EMPTY_SLOT]) * 256, [None] * 48
        elif type_ == NODE256:
            self.keys, self.children = bytearray(), [None] * 256
        else:
            self.keys, self.children = bytearray(), []

    @classmethod
    def leaf(cls, key: bytes, container: int) -> Node:
        node = cls(LEAF)
        node.key, node.container = key, container
        return node

    def child_keys(self) -> list[int]:
        """The key bytes of the children, ascending (Java's getNextLargerPos order)."""
        if self.type in (NODE4, NODE16):
            return list(self.keys[:self.count])
        if self.type == NODE48:
            return [k for k in range(256) if self.keys[k] != _EMPTY_SLOT]
        return [k for k in range(256) if self.children[k] is not None]

    def child(self, k: int) -> Node | None:
        if self.type in (NODE4, NODE16):
            pos = self.keys.find(k, 0, self.count)
            return self.children[pos] if pos >= 0 else None
        if self.type == NODE48:
            return self.children[self.keys[k]] if self.keys[k] != _EMPTY_SLOT else None
        return self.children[k]

    def replace_child(self, k: int, node: Node) -> None:
        if self.type in (NODE4, NODE16):
            self.children[self.keys.find(k, 0, self.count)] = node
        elif self.type == NODE48:
            self.children[self.keys[k]] = node
        else:
            self.children[k] = node

    def ordered_children(self) -> list[Node]:
        return [self.child(k) for k in self.child_keys()]


def _sorted_insert(node: Node, child: Node, k: int) -> None:
    """Node4/Node16 insert below capacity: the new key at position `count`, then insertion sort."""
    pos = node.count
    while pos > 0 and node.keys[pos - 1] > k:
        node.keys[pos] = node.keys[pos - 1]
        node.children[pos] = node.children[pos - 1]
        pos -= 1
    node.keys[pos] = k
    node.children[pos] = child
    node.count += 1


def _insert_child(node: Node, child: Node, k: int) -> Node:
    """Node.insertLeaf: the node, or the bigger node it grew into."""
    if node.type == NODE4:
        if node.count < 4:
            _sorted_insert(node, child, k)
            return node
        grown = Node(NODE16, node.prefix, 4)
        grown.keys[:4] = node.keys  # Node16's first long is Node4's key int, shifted up
        grown.children[:4] = node.children
        return _insert_child(grown, child, k)
    if node.type == NODE16:
        if node.count < 16:
            _sorted_insert(node, child, k)
            return node
        grown = Node(NODE48, node.prefix, 16)
        for slot in range(16):
            grown.keys[node.keys[slot]] = slot
            grown.children[slot] = node.children[slot]
        return _insert_child(grown, child, k)
    if node.type == NODE48:
        if node.count < 48:
            slot = node.count if node.children[node.count] is None else node.children.index(None)
            node.children[slot] = child
            node.keys[k] = slot
            node.count += 1
            return node
        grown = Node(NODE256, node.prefix, node.count)
        for key in node.child_keys():
            grown.children[key] = node.child(key)
        return _insert_child(grown, child, k)
    node.children[k] = child
    node.count += 1
    return node


def _insert(node: Node | None, key: bytes, depth: int, container: int) -> Node:
    """Art.insert (RoaringBitmap 1.0.5) of a key not yet in the tree: the subtree's new root."""
    if node is None:
        return Node.leaf(key, container)
    if node.type == LEAF:
        common = next(i for i in range(_KEY_BYTES - depth) if node.key[depth + i] != key[depth + i])
        node.prefix = b""  # a leaf may carry a prefix from an earlier shrink: Java resets it here
        split = Node(NODE4, key[depth:depth + common])
        _insert_child(split, node, node.key[depth + common])
        _insert_child(split, Node.leaf(key, container), key[depth + common])
        return split
    if node.prefix:
        plen = len(node.prefix)
        mismatch = next((i for i in range(plen) if node.prefix[i] != key[depth + i]), plen)
        if mismatch != plen:
            split = Node(NODE4, node.prefix[:mismatch])
            _insert_child(split, node, node.prefix[mismatch])
            node.prefix = node.prefix[mismatch + 1:]
            _insert_child(split, Node.leaf(key, container), key[depth + mismatch])
            return split
        depth += plen
    child = node.child(key[depth])
    if child is not None:
        fresh = _insert(child, key, depth + 1, container)
        if fresh is not child:
            node.replace_child(key[depth], fresh)
        return node
    return _insert_child(node, Node.leaf(key, container), key[depth])


def _find(node: Node | None, key: bytes) -> int | None:
    depth = 0
    while node is not None:
        if node.type == LEAF:
            return node.container if node.key == key else None
        if node.prefix:
            if key[depth:depth + len(node.prefix)] != node.prefix:
                return None
            depth += len(node.prefix)
        node = node.child(key[depth])
        depth += 1
    return None


def _leaves(node: Node | None) -> list[Node]:
    if node is None:
        return []
    if node.type == LEAF:
        return [node]
    return [leaf for child in node.ordered_children() for leaf in _leaves(child)]


class Bitmap64:
    """A Roaring64Bitmap as Java holds it: the ART (``root``, ``key_count``) and the container slots
    (``levels``, ``size``, ``first``/``second``: the last slot used)."""

    __slots__ = ("root", "key_count", "levels", "size", "first", "second")

    def __init__(self) -> None:
        self.root: Node | None = None
        self.key_count = 0
        self.levels: list[list[Container | None]] = []
        self.size = 0
        self.first, self.second = -1, 0

    def container(self, index: int) -> Container:
        return self.levels[index >> 32][index & 0xFFFFFFFF]

    def set_container(self, index: int, container: Container) -> None:
        self.levels[index >> 32][index & 0xFFFFFFFF] = container

    def add_container(self, container: Container) -> int:
        """Containers.addContainer: the next slot, the slot array grown by half when full."""
        if self.first == -1:  # (a second level starts only after 2^31 - 10 slots)
            self.levels.append([None])
            self.first, self.second = self.first + 1, 0
        else:
            self.second += 1
        level = self.levels[self.first]
        if self.second + 1 > len(level):
            level.extend([None] * max(len(level) >> 1, self.second + 1 - len(level)))
        level[self.second] = container
        self.size += 1
        return (self.first << 32) | self.second

    def values(self) -> np.ndarray:
        """The bitmap's values as uint64, ascending (unsigned)."""
        parts = [(np.uint64(int.from_bytes(leaf.key, "big")) << np.uint64(16))
                 | self.container(leaf.container)[1].astype(np.uint64) for leaf in _leaves(self.root)]
        return np.concatenate(parts) if parts else np.empty(0, np.uint64)


_STRUCTS: dict[str, struct.Struct] = {}


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> tuple:
        layout = _STRUCTS.get(fmt) or _STRUCTS.setdefault(fmt, struct.Struct(fmt))
        end = self.pos + layout.size
        if end > len(self.buf):
            raise RoaringFormatError("64-bit roaring bitmap truncated")
        out = layout.unpack_from(self.buf, self.pos)
        self.pos = end
        return out

    def raw(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise RoaringFormatError("64-bit roaring bitmap truncated")
        out = self.buf[self.pos:end]
        self.pos = end
        return bytes(out)


def _read_node(r: _Reader) -> Node:
    type_, count, plen = r.take("<Bhb")
    if type_ > LEAF or plen < 0:
        raise RoaringFormatError(f"not a 64-bit roaring bitmap: ART node type {type_}, prefix length {plen}")
    node = Node(type_, r.raw(plen), count)
    if type_ == LEAF:
        node.key = r.raw(_KEY_BYTES)
        (node.container,) = r.take("<q")
        return node
    if type_ == NODE4:
        node.keys[:] = r.raw(4)[::-1]
    elif type_ == NODE16:
        body = r.raw(16)
        node.keys[:] = body[7::-1] + body[15:7:-1]
    elif type_ == NODE48:
        body = r.raw(256)
        node.keys[:] = b"".join(body[i:i + 8][::-1] for i in range(0, 256, 8))
    else:
        mask = int.from_bytes(r.raw(32), "little")
        slots = [k for k in range(256) if mask >> k & 1]
    children = [_read_node(r) for _ in range(count)]
    if type_ in (NODE4, NODE16):
        node.children[:count] = children
    elif type_ == NODE48:
        for k, child in zip((k for k in range(256) if node.keys[k] != _EMPTY_SLOT), children):
            node.children[node.keys[k]] = child
    else:
        for k, child in zip(slots, children):
            node.children[k] = child
    return node


def _read_container(r: _Reader) -> Container:
    code, card = r.take("<bi")
    kind = _KINDS.get(code)
    if kind == RUN:
        (runs,) = r.take("<H")
        pairs = np.frombuffer(r.raw(4 * runs), dtype="<u2").astype(np.int64)
        starts, lengths = pairs[0::2], pairs[1::2] + 1
        ends = np.cumsum(lengths)
        low = np.arange(ends[-1] if runs else 0, dtype=np.int64) - np.repeat(ends - lengths - starts, lengths)
    elif kind == BITMAP:
        low = np.flatnonzero(np.unpackbits(np.frombuffer(r.raw(_BITMAP_SIZE), dtype=np.uint8), bitorder="little"))
    elif kind == ARRAY:
        low = np.frombuffer(r.raw(2 * card), dtype="<u2")
    else:
        raise RoaringFormatError(f"not a 64-bit roaring bitmap: container kind {code}")
    return kind, np.asarray(low, dtype=np.uint16)


def _container_body(kind: int, low: np.ndarray) -> bytes:
    if kind == RUN:
        starts = np.flatnonzero(np.diff(low.astype(np.int32), prepend=-2) != 1)
        pairs = np.empty(2 * len(starts), dtype="<u2")
        pairs[0::2] = low[starts]
        pairs[1::2] = np.diff(np.append(starts, len(low))) - 1
        return struct.pack("<H", len(starts)) + pairs.tobytes()
    if kind == BITMAP:
        bits = np.zeros(_FULL, dtype=np.uint8)
        bits[low] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    return low.astype("<u2").tobytes()


def parse64(buf: bytes) -> Bitmap64:
    """A Roaring64Bitmap from Java's serialization (RoaringBitmap 1.0.5: `Roaring64Bitmap.serialize`)."""
    r = _Reader(buf)
    bitmap = Bitmap64()
    (tag,) = r.take("<B")
    if tag == 0:
        return bitmap
    if tag != 1:
        raise RoaringFormatError(f"not a 64-bit roaring bitmap: first byte {tag}")
    (bitmap.key_count,) = r.take("<q")
    bitmap.root = _read_node(r)
    (levels,) = r.take("<i")
    for _ in range(levels):
        _, capacity = r.take("<Bi")
        level: list[Container | None] = []
        for _ in range(capacity):
            (present,) = r.take("<B")
            level.append(_read_container(r) if present else None)
        bitmap.levels.append(level)
    bitmap.size, bitmap.first, bitmap.second = r.take("<qii")
    return bitmap


_BODY_BYTES = {NODE4: 4, NODE16: 16, NODE48: 256, NODE256: 32}


def parse64_leaves(buf: bytes) -> list[tuple[bytes, Container]]:
    """(key, container) of each key of a serialized Roaring64Bitmap, ascending: the ART's nodes are written
    in pre-order with children in key order, so its leaves come in key order, and the inner nodes can be
    skipped (the right side of an OR needs nothing else)."""
    r = _Reader(buf)
    (tag,) = r.take("<B")
    if tag == 0:
        return []
    if tag != 1:
        raise RoaringFormatError(f"not a 64-bit roaring bitmap: first byte {tag}")
    (key_count,) = r.take("<q")
    leaves = []
    while len(leaves) < key_count:
        type_, _, plen = r.take("<Bhb")
        if type_ > LEAF or plen < 0:
            raise RoaringFormatError(f"not a 64-bit roaring bitmap: ART node type {type_}, prefix length {plen}")
        r.pos += plen
        if type_ == LEAF:
            key = r.raw(_KEY_BYTES)
            leaves.append((key, r.take("<q")[0]))
        else:
            r.pos += _BODY_BYTES[type_]
    (levels,) = r.take("<i")
    slots: list[list[Container | None]] = []
    for _ in range(levels):
        _, capacity = r.take("<Bi")
        slots.append([_read_container(r) if r.take("<B")[0] else None for _ in range(capacity)])
    try:
        return [(key, slots[index >> 32][index & 0xFFFFFFFF]) for key, index in leaves]
    except IndexError as e:
        raise RoaringFormatError("not a 64-bit roaring bitmap: a key's container is missing") from e


def _write_node(node: Node, out: list[bytes]) -> None:
    out.append(struct.pack("<Bhb", node.type, node.count, len(node.prefix)) + node.prefix)
    if node.type == LEAF:
        out.append(node.key + struct.pack("<q", node.container))
        return
    if node.type == NODE4:
        out.append(bytes(node.keys[::-1]))
    elif node.type == NODE16:
        out.append(bytes(node.keys[7::-1] + node.keys[15:7:-1]))
    elif node.type == NODE48:
        out.append(b"".join(bytes(node.keys[i:i + 8][::-1]) for i in range(0, 256, 8)))
    else:
        mask = sum(1 << k for k in range(256) if node.children[k] is not None)
        out.append(mask.to_bytes(32, "little"))
    for child in node.ordered_children():
        _write_node(child, out)


def serialize64(bitmap: Bitmap64) -> bytes:
    if bitmap.root is None:
        return b"\x00"
    out = [b"\x01", struct.pack("<q", bitmap.key_count)]
    _write_node(bitmap.root, out)
    out.append(struct.pack("<i", len(bitmap.levels)))
    for level in bitmap.levels:
        out.append(struct.pack("<Bi", _NOT_TRIMMED, len(level)))
        for container in level:
            if container is None:
                out.append(b"\x00")
            else:
                kind, low = container
                out.append(struct.pack("<Bbi", 1, _KIND_CODES[kind], len(low)))
                out.append(_container_body(kind, low))
    out.append(struct.pack("<qii", bitmap.size, bitmap.first, bitmap.second))
    return b"".join(out)


def _optimise(bitmap: Bitmap64, indexes: list[int]) -> None:
    """runOptimize of the containers at ``indexes``."""
    for i in indexes:
        kind, low = bitmap.container(i)
        bitmap.set_container(i, (run_optimize_wide(kind, len(low), _run_count(low)), low))


def _all_indexes(bitmap: Bitmap64) -> list[int]:
    return [(level << 32) | slot for level, slots in enumerate(bitmap.levels)
            for slot, container in enumerate(slots) if container is not None]


def or64(acc: Bitmap64, other: list[tuple[bytes, Container]], optimised: bool = True) -> Bitmap64:
    """Roaring64Bitmap.or (in place) then runOptimize: ``other``'s keys (parse64_leaves) in ascending order,
    each OR'ed into ``acc``'s container of the same key or added (a copy in a new slot, the key inserted
    into the ART). ``optimised``: acc's containers came from runOptimize already (it is idempotent), so
    only the containers this union touches need it."""
    for key, theirs in other:
        index = _find(acc.root, key)
        if index is None:
            kind, low = theirs
            runs = _run_count(low)
            index = acc.add_container((run_optimize_wide(kind, len(low), runs), low))
            acc.root = _insert(acc.root, key, 0, index)
            acc.key_count += 1
        else:
            ours = acc.container(index)
            low = _sorted_union(ours[1], theirs[1])
            card, runs = len(low), _run_count(low)
            acc.set_container(index, (run_optimize_wide(or_kind(ours[0], theirs[0], card, runs), card, runs), low))
    if not optimised:  # (again for the containers just set: runOptimize is idempotent)
        _optimise(acc, _all_indexes(acc))
    return acc


def fold64(values: list[bytes]) -> bytes:
    """The left fold of rbm64 values as Paimon folds a key's rows."""
    acc = parse64(values[0])
    for i, value in enumerate(values[1:]):
        acc = or64(acc, parse64_leaves(value), optimised=i > 0)
    return serialize64(acc)


def encode64(values: np.ndarray) -> bytes:
    """A Roaring64Bitmap of ``values`` (uint64, any order) as Java builds it by adding them in that order
    (keys get slots in order of first appearance) and serializes it after runOptimize."""
    values = np.asarray(values, dtype=np.uint64)
    bitmap = Bitmap64()
    highs = values >> np.uint64(16)
    order, first_seen = np.unique(highs, return_index=True)
    for high in order[np.argsort(first_seen, kind="stable")]:
        low = np.unique((values[highs == high] & np.uint64(0xFFFF)).astype(np.uint16))
        key = int(high).to_bytes(_KEY_BYTES, "big")
        kind = ARRAY if len(low) <= _ARRAY_MAX else BITMAP  # Java's add makes an array a bitmap past 4096
        bitmap.root = _insert(bitmap.root, key, 0, bitmap.add_container((kind, low)))
        bitmap.key_count += 1
    _optimise(bitmap, _all_indexes(bitmap))
    return serialize64(bitmap)
