"""Arrow arrays as numpy values beside a validity mask, and back: how the cast executors keep nulls aside."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def valid_mask(col: pa.Array) -> np.ndarray:
    """Which values are not null, as a numpy bool array."""
    return col.is_valid().to_numpy(zero_copy_only=False)


def with_nulls(values: np.ndarray | list, arrow_type: pa.DataType, valid: np.ndarray) -> pa.Array:
    """``values`` as an Arrow array of ``arrow_type``, null where ``valid`` is false."""
    if isinstance(values, list):
        return pa.array([v if ok else None for v, ok in zip(values, valid)], arrow_type)
    return pa.array(values, arrow_type, mask=~valid)
