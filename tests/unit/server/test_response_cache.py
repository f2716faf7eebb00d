"""The response cache: what makes two requests the same, and what it keeps."""

from __future__ import annotations

import numpy as np

from modelyard.server.response_cache import ENTRY_OVERHEAD_BYTES, ResponseCache


def _key(**changes: object) -> bytes:
    request: dict[str, object] = {
        "model": "m",
        "generation": 1,
        "inputs": {"x": np.arange(4, dtype=np.float32).reshape(1, 4)},
        "outputs": ["y"],
    }
    request.update(changes)
    return ResponseCache.key(**request)  # type: ignore[arg-type]


def test_the_same_request_has_the_same_key_and_any_difference_another() -> None:
    same = _key(inputs={"x": np.arange(4, dtype=np.float32).reshape(1, 4).copy()})
    assert same == _key()
    different = [
        _key(model="n"),
        _key(generation=2),  # the same version, loaded again
        _key(outputs=["y", "z"]),
        _key(inputs={"x": np.arange(4, dtype=np.float32).reshape(2, 2)}),  # same bytes
        _key(inputs={"x": np.arange(4, dtype=np.int32).reshape(1, 4)}),
        _key(inputs={"x": np.array([[0, 1, 2, 3.5]], dtype=np.float32)}),
        _key(inputs={"z": np.arange(4, dtype=np.float32).reshape(1, 4)}),
        _key(inputs={"x": np.array([b"ab", b"c"], dtype=object)}),
        _key(inputs={"x": np.array([b"a", b"bc"], dtype=object)}),
    ]
    assert len({_key(), *different}) == len(different) + 1


def test_kept_results_are_copies_and_each_hit_gets_its_own() -> None:
    cache = ResponseCache(1 << 20)
    batch = np.arange(8, dtype=np.float32).reshape(2, 4)
    cache.put(b"k", {"y": batch[:1]})  # a view of a batch's output
    batch[0, 0] = 99.0
    first = cache.get(b"k")
    assert first is not None and first["y"][0, 0] == 0.0
    first["y"][0, 0] = 1.0  # a step that changes its input in place
    second = cache.get(b"k")
    assert second is not None and second["y"][0, 0] == 0.0


def test_the_least_recently_used_entries_go_first_and_the_bytes_stay_bounded() -> None:
    entry = ENTRY_OVERHEAD_BYTES + 400
    cache = ResponseCache(3 * entry)
    for key in (b"a", b"b", b"c"):
        cache.put(key, {"y": np.zeros(100, dtype=np.float32)})
    assert cache.get(b"a") is not None  # a is now the most recently used
    cache.put(b"d", {"y": np.zeros(100, dtype=np.float32)})
    assert cache.get(b"b") is None
    assert all(cache.get(k) is not None for k in (b"a", b"c", b"d"))
    assert cache.used_bytes == 3 * entry <= cache.capacity_bytes


def test_a_result_bigger_than_the_cache_is_never_kept() -> None:
    cache = ResponseCache(1000)
    cache.put(b"small", {"y": np.zeros(10, dtype=np.float32)})
    cache.put(b"big", {"y": np.zeros(1000, dtype=np.float32)})
    assert cache.get(b"big") is None
    assert cache.get(b"small") is not None
