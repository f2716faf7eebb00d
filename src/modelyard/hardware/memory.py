"""Host memory accounting per model version, and the instance's memory budget.

A version's footprint is the growth of the process' own resident memory (anonymous
and shared-memory pages, not mapped files) while its engines load. A load is checked
twice against ``--memory-budget``: before, with an estimate (its files times
instances), and after, with the measured footprint; a load that does not fit is
refused with what it needs, what is free and which models hold the rest, instead of
letting the process grow until the kernel kills it.

Start-up objects (modules, engines, models) are frozen out of the garbage
collector once a server is up; an unload collects what it may have left
frozen, at most once every ``FROZEN_COLLECT_INTERVAL_S`` (``FrozenGarbage``).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import math
import re
import resource
from collections.abc import Callable
from pathlib import Path

from modelyard import error_rules
from modelyard.errors import ConfigError, ModelServerError

# unloads closer together than this share one collection of what they left frozen: each is
# a full collection (0.1-0.2 s with torch and onnxruntime imported) on the event loop, and
# residency unloads several models a second under a load it cannot hold
FROZEN_COLLECT_INTERVAL_S = 30.0
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError.of(
            error_rules.MEMORY_SIZE,
            f"memory size '{text}' is not a number with an optional K, M, G or T suffix",
        )
    return int(float(match[1]) * _UNITS[match[2].upper()])


def _trim() -> Callable[[int], object] | None:
    try:
        trim: Callable[[int], object] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to give back
        return None
    return trim


_MALLOC_TRIM = _trim()


def settled_resident_bytes() -> int:
    """The memory the process itself holds (``private_resident_bytes``) after the allocator
    gave back the memory freed but kept (glibc's malloc_trim): what live objects hold. A
    load reads its file, parses it and builds its tensors; the copies it let go of would
    otherwise count as its footprint (an ONNX table of 16 MB measured 27 to 44 MB without
    this, 17 with it)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    return private_resident_bytes()


def private_resident_bytes() -> int:
    """The resident anonymous and shared-memory pages (``RssAnon`` + ``RssShmem``), not the
    pages of files mapped (the libraries' code): the kernel drops those under memory
    pressure at any time and reads them back when used, so a load's measure would count
    their coming and going beside what the load holds."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if line.startswith("Rss"))
        return sum(int(fields[key].split()[0]) * 1024 for key in ("RssAnon", "RssShmem"))
    except (OSError, ValueError, KeyError):  # not Linux: the peak is the best we have
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def estimate_bytes(version_dir: Path, instances: int) -> int:
    """What a version will need: its files, once per engine instance."""
    total = 0
    for path in version_dir.rglob("*"):
        if path.is_file():
            total += path.stat().st_size
    return total * max(1, instances)


def _mb(value: int) -> str:
    return f"{value / (1 << 20):.1f} MB"


def check_budget(
    model: str,
    version: int,
    needed: int,
    held: list[tuple[str, int, int]],
    budget: int | None,
    measured: bool,
) -> None:
    """Raise if ``needed`` bytes do not fit next to what ``held`` versions hold."""
    if budget is None:
        return
    used = sum(size for _, _, size in held)
    if used + needed <= budget:
        return
    holders = ", ".join(
        f"{name}/{v} ({_mb(size)})" for name, v, size in sorted(held, key=lambda h: -h[2])[:5]
    )
    how = "measured at load" if measured else "estimated from its files x instances"
    raise ModelServerError.of(
        error_rules.MEMORY_BUDGET_EXCEEDED,
        f"model '{model}' version {version} needs {_mb(needed)} ({how}) but only "
        f"{_mb(max(0, budget - used))} of the memory budget {_mb(budget)} is free; "
        f"held by {holders or 'nothing else'}",
    )


def freeze_startup_objects() -> None:
    """Keep the objects of start-up (modules, engines, models) out of every later collection.

    A server that imported torch and onnxruntime holds ~200k objects; a full
    collection over them stops the event loop for ~100 ms, which showed up as
    a 100+ ms p99 under load. Frozen, collections scan only what requests make.
    """
    gc.collect()
    gc.freeze()


def collect_frozen_garbage() -> None:
    """After an unload: frozen objects of the unloaded model may now be garbage in cycles.

    Collects them once (a pause of about a full collection, on an admin
    operation) and freezes what is left again.
    """
    if gc.get_freeze_count():
        gc.unfreeze()
        gc.collect()
        gc.freeze()


class FrozenGarbage:
    """Collects what unloads left among frozen objects (``collect_frozen_garbage``) at most
    once every ``interval`` seconds: the first unload after a quiet spell at once, those
    that follow it within the interval together at its end. Until then a cycle an
    unloaded model left stays in memory; what the memory budget counts is unchanged (it
    counts the versions loaded, not the process)."""

    def __init__(
        self,
        interval: float = FROZEN_COLLECT_INTERVAL_S,
        collect: Callable[[], None] = collect_frozen_garbage,
    ) -> None:
        self.interval = interval
        self._collect = collect
        self._last = -math.inf
        self._pending: asyncio.TimerHandle | None = None
        self.collections = 0

    def after_unload(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._pending is not None:
            return  # the collection due will take this unload's garbage too
        wait = self._last + self.interval - loop.time()
        if wait <= 0:
            self._run(loop)
        else:
            self._pending = loop.call_later(wait, self._run, loop)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending = None
        self._last = loop.time()
        self._collect()
        self.collections += 1

    def close(self) -> None:
        """Collect now what is due (the server stops)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
            self._collect()
            self.collections += 1
