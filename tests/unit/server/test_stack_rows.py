"""Batches are stacked along the batch axis, whatever their arrays' layout in memory."""

from __future__ import annotations

import numpy as np

from modelyard.server.scheduler import stack_rows


def test_plain_arrays_are_stacked_into_one_writable_array() -> None:
    body = np.arange(12, dtype="<f4").tobytes()
    views = [np.ndarray((1, 4), "<f4", body, 0), np.ndarray((2, 4), "<f4", body, 16)]  # read-only
    stacked = stack_rows(views)
    assert stacked.tolist() == np.concatenate(views).tolist()
    assert stacked.dtype == np.dtype("<f4") and stacked.flags.writeable


def test_strided_object_and_empty_arrays_are_stacked_too() -> None:
    strided = [np.arange(8, dtype=np.float64).reshape(4, 2).T, np.ones((1, 4))]
    assert stack_rows(strided).tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [1, 1, 1, 1]]
    texts = [np.array([[b"a"]], dtype=object), np.array([[b"bc"], [b"d"]], dtype=object)]
    assert stack_rows(texts).tolist() == [[b"a"], [b"bc"], [b"d"]]
    assert stack_rows([np.zeros((1, 0), np.float32)] * 3).shape == (3, 0)
