"""A text model's answers by text: least recently used first out, within a memory budget.

Opt-in per model (``embedding_cache_size`` in its config's parameters: bytes, or with a
K/M/G suffix). A text's key is a BLAKE2b hash of its bytes as sent (a text pair's two,
each with its length), so a caller's texts are never kept as keys. The cache belongs to
one load of one version: a new version, a reload or an unload starts without it, so no
answer of another model's weights is ever served. Lookups happen on the event loop when
a request is queued, and answers are kept by the instance threads that computed them.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

ENTRY_OVERHEAD_BYTES = 200  # the key, the dict entry and the arrays' headers, roughly
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int | None:
    """``'64M'`` → 67108864; None when the text is no size."""
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = text[-1:] if text[-1:] in ("K", "M", "G") else ""
    number = text[: len(text) - len(unit)].strip()
    if not number.isdigit():
        return None
    return int(number) * _UNITS[unit]


def text_key(texts: Sequence[bytes]) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for text in texts:
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text)
    return digest.digest()


class EmbeddingCache:
    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._entries: OrderedDict[bytes, tuple[dict[str, np.ndarray], int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> dict[str, np.ndarray] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: bytes, answer: dict[str, np.ndarray]) -> None:
        """Keep one text's answer (its own copy: a batch's arrays are not held)."""
        kept = {name: np.array(array, copy=True) for name, array in answer.items()}
        size = ENTRY_OVERHEAD_BYTES + sum(array.nbytes for array in kept.values())
        if size > self.budget_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (kept, size)
            self.bytes += size
            while self.bytes > self.budget_bytes:
                _, (_, freed) = self._entries.popitem(last=False)
                self.bytes -= freed
                self.evictions += 1
