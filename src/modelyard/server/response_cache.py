"""Triton's response cache: a model's results kept by a hash of the request.

A request's key is a 128-bit BLAKE2b digest of the model, version, each input's
name, datatype, shape and bytes, and the outputs asked for: a cryptographic hash,
so no caller can craft a request whose key collides with another's and be
answered with its results. One cache serves every model that enables it (``response_cache
{ enable: true }``), bounded in bytes (``--cache-config local,size=N``); the
least recently used entries go first, and a result bigger than the whole cache is
never kept. Kept arrays are copies, read-only, and a hit hands out copies of
them, so no request changes what the next one is answered with.

Used from the event loop's thread only (submits and their done callbacks run
there), so it takes no lock.
"""

from __future__ import annotations

import asyncio
import hashlib
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

if TYPE_CHECKING:
    from modelyard.clock import Clock
    from modelyard.server.scheduling import Submission
    from modelyard.server.stats import VersionStats

log = structlog.get_logger("modelyard.response_cache")

ENTRY_OVERHEAD_BYTES = 256  # the key, the dict entry and the arrays' headers, roughly


def _array_bytes(array: np.ndarray) -> int:
    if array.dtype == np.object_:
        return sum(len(item) if isinstance(item, bytes) else 64 for item in array.ravel())
    return array.nbytes


class ResponseCache:
    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._entries: OrderedDict[bytes, tuple[dict[str, np.ndarray], int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(
        model: str,
        generation: int,
        inputs: dict[str, np.ndarray],
        outputs: list[str],
        parameters: dict[str, Any] | None = None,
    ) -> bytes:
        """The key of a request to one load of a model (``generation``: a reload's differs);
        ``parameters``: those a model that reads requests sees, which can change its answer."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{model}\0{generation}\0".encode())
        if parameters:  # and whom they are for: a model's own calls are authorised by it
            principals = getattr(parameters, "principals", ())
            digest.update(repr((sorted(parameters.items()), principals)).encode() + b"\0")
        for name in sorted(inputs):
            array = inputs[name]
            digest.update(name.encode() + b"\0" + array.dtype.str.encode() + b"\0")
            digest.update(struct.pack(f"<{array.ndim + 1}q", array.ndim, *array.shape))
            if array.dtype == np.object_:
                for item in array.ravel():
                    data = item if isinstance(item, bytes) else str(item).encode()
                    digest.update(struct.pack("<q", len(data)) + data)
            else:
                digest.update(np.ascontiguousarray(array).data)
        digest.update("\0".join(sorted(outputs)).encode())
        return digest.digest()

    def get(self, key: bytes) -> dict[str, np.ndarray] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        # copies: what a request gets is its own, as a computed result is
        return {name: array.copy() for name, array in entry[0].items()}

    def put(self, key: bytes, results: dict[str, np.ndarray]) -> bool:
        """Keep ``results`` under ``key``; False when they are bigger than the whole cache."""
        if key in self._entries:
            return True
        kept: dict[str, np.ndarray] = {}
        size = ENTRY_OVERHEAD_BYTES
        for name, array in results.items():
            size += _array_bytes(array)
            if size > self.capacity_bytes:
                return False  # bigger than the whole cache: never kept
            copy = np.array(array, copy=True)
            copy.flags.writeable = False
            kept[name] = copy
        while self._entries and self.used_bytes + size > self.capacity_bytes:
            _, (_, freed) = self._entries.popitem(last=False)
            self.used_bytes -= freed
        self._entries[key] = (kept, size)
        self.used_bytes += size
        return True


def through_cache(
    cache: ResponseCache,
    request: Submission,
    generation: int,
    stats: VersionStats,
    clock: Clock,
    run: Callable[[], asyncio.Future[dict[str, np.ndarray]]],
    model: str,
    version: int,
) -> asyncio.Future[dict[str, np.ndarray]]:
    """A request answered from the response cache, or ``run`` and its results kept there
    (``generation``: the version's load, whose entries a reload's never meets); the lookups
    are counted as Triton counts them (``cache_hit``/``cache_miss``)."""
    start_ns = clock.monotonic_ns()
    key = cache.key(model, generation, request.inputs, request.outputs, request.parameters)
    kept = cache.get(key)
    if kept is not None:
        hit: asyncio.Future[dict[str, np.ndarray]] = asyncio.get_running_loop().create_future()
        hit.set_result(kept)
        stats.record_cache_hit(clock.monotonic_ns() - start_ns)
        return hit
    lookup_ns = clock.monotonic_ns() - start_ns
    future = run()

    def keep(done: asyncio.Future[dict[str, np.ndarray]]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        kept_from = clock.monotonic_ns()
        if not cache.put(key, done.result()):
            log.warning(  # Triton's words, which its QA suite looks for in the log
                "response_cache_insert_failed",
                model=model,
                version=version,
                reason="Failed to insert key into the response cache: the response is "
                f"bigger than the cache's {cache.capacity_bytes} bytes",
            )
        stats.record_cache_miss(lookup_ns + clock.monotonic_ns() - kept_from)

    future.add_done_callback(keep)
    return future
