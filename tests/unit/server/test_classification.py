"""Triton's classification extension (``classify``): the top k of each row, largest
first, written as Triton's std::to_string writes the value."""

from __future__ import annotations

import numpy as np
import pytest

from modelyard.server.local_dataplane import classify


@pytest.mark.parametrize(
    ("dtype", "values", "top"),
    [
        (np.int8, [-128, 115, 127, 0], [b"127:2", b"115:1", b"0:3", b"-128:0"]),
        (np.uint8, [0, 255, 1, 128], [b"255:1", b"128:3", b"1:2", b"0:0"]),
        (np.int64, [-(2**63), 2**63 - 1, 5, 5], [b"9223372036854775807:1", b"5:2", b"5:3",
                                                  b"-9223372036854775808:0"]),
        (np.float32, [0.5, -1.0, 2.25, 0.5], [b"2.250000:2", b"0.500000:0", b"0.500000:3",
                                               b"-1.000000:1"]),
    ],
)  # fmt: skip
def test_the_extremes_of_a_type_sort_where_they_belong(
    dtype: type, values: list[int], top: list[bytes]
) -> None:
    """The smallest signed value is the smallest (negating it overflowed: int8's -128
    came first) and unsigned values do not wrap; ties keep their index order."""
    row = np.array(values, dtype=dtype)
    assert classify(row, 4, None, batched=False).tolist() == top
    batch = np.stack([row, row])
    assert classify(batch, 2, None, batched=True).tolist() == [top[:2], top[:2]]


def test_a_label_follows_the_index() -> None:
    answer = classify(np.array([3, 9], dtype=np.int32), 1, ["cat", "dog"], batched=False)
    assert answer.tolist() == [b"9:1:dog"]
