"""One array of each V2 datatype, at the edges of its range, for the codec tests."""

from __future__ import annotations

import numpy as np

# datatypes whose values numpy holds as they travel
NUMERIC = {
    "BOOL": np.array([[True, False, True]]),
    "INT8": np.array([[-128, 0, 127]], dtype=np.int8),
    "INT16": np.array([[-32768, 1, 32767]], dtype=np.int16),
    "INT32": np.array([[-(2**31), 2, 2**31 - 1]], dtype=np.int32),
    "INT64": np.array([[-(2**63), 3, 2**63 - 1]], dtype=np.int64),
    "UINT8": np.array([[0, 4, 255]], dtype=np.uint8),
    "UINT16": np.array([[0, 5, 65535]], dtype=np.uint16),
    "UINT32": np.array([[0, 6, 2**32 - 1]], dtype=np.uint32),
    "UINT64": np.array([[0, 7, 2**64 - 1]], dtype=np.uint64),
    "FP16": np.array([[-1.5, 0.0, 65504.0]], dtype=np.float16),
    "FP32": np.array([[-1.5, 0.25, 3.4e38]], dtype=np.float32),
    "FP64": np.array([[-1.5, 0.125, 1e308]], dtype=np.float64),
}

# every datatype: BF16 travels as float32 values exact in BF16, BYTES as an object array
EVERY = {
    **NUMERIC,
    "BF16": np.array([[1.0, -2.5, 3.140625]], dtype=np.float32),
    "BYTES": np.array([[b"a", b"", "gr\u00f6\u00dfe".encode()]], dtype=object),
}
