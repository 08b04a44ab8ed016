"""The write buffer's key sort (mergetree.kv.stable_argsort): exactly numpy's stable argsort, on every spread
of int64 keys (the split by top byte is only a faster route to the same order)."""

from __future__ import annotations

import numpy as np
import pytest

from paimon_ds.mergetree.kv import MIN_SPLIT_ROWS, stable_argsort

N = MIN_SPLIT_ROWS * 3
RNG = np.random.default_rng(11)
CASES = {
    "full int64 range": RNG.integers(-(2**63), 2**63 - 1, N),
    "a permutation of 0..n": RNG.permutation(N).astype(np.int64),
    "many duplicates": RNG.integers(0, 500, N),
    "negative and positive": RNG.integers(-1000, 1000, N) * 1_000_003,
    "the two extremes": np.tile(np.array([2**63 - 1, -(2**63)], dtype=np.int64), N // 2),
    "bunched with an outlier": np.concatenate([RNG.integers(0, 100, N - 1), [2**62]]),
    "all equal": np.full(N, -7, dtype=np.int64),
    "small": RNG.integers(-50, 50, 1000),
}


@pytest.mark.parametrize("name", list(CASES))
def test_stable_argsort_is_numpys_stable_argsort(name: str) -> None:
    values = CASES[name]
    got = stable_argsort(values)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(values, kind="stable"))
