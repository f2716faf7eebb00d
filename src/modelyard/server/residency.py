"""Which models hold memory: every model of the repository servable, within a memory budget.

With ``serve --model-residency lru`` (and ``--memory-budget``), a model is loaded when a
request first names it, and the least recently used idle models are unloaded to make
room for it, as Triton users have asked for (its issues 4188 and 7279) and Ray Serve's
multiplexing and KServe ModelMesh do elsewhere. ``--model-residency cost`` chooses what
goes by what its absence would cost instead (GreedyDual-Size-Frequency): the idle model
with the least request rate (decayed, ``RATE_HALF_LIFE_S``) times its load time per byte
it holds goes first, so a small model asked for often stays while a large one asked for
now and then makes room; under a skewed law it serves more requests without a load than
recency does (bench/residency.py runs both).

* one load per model at a time: the requests that name a model while it loads wait
  behind it, each with its own deadline; a request whose deadline cannot cover the load
  (the model's last load time, or an estimate from its files) is refused at once, with a
  retry-after of that time;
* room is made by unloading the least recently used models that are idle: never a model
  with requests queued or executing, never one its config pins, never a step of a loaded
  ensemble (the ensemble goes first), and one loaded in the last ``PROTECTED_S`` seconds
  only when no other will do (so a model asked for about as often as the budget turns
  over does not load at every request), and so does one the repository API loaded in the
  last ``PLACED_S`` seconds (the control plane's copy of a group's hot model, given the
  time to draw its share of the requests); a load that cannot fit even so is refused with
  what the budget holds;
* a model's config may pin it (``parameters { key: "residency" value { string_value:
  "pinned" } }``: loaded at start, never unloaded) or warm it (``"warm"``: loaded at
  start, unloaded like any other).

Memory is the footprint the budget already counts (server/manager.py): the host memory
a version took when it loaded (measured once the allocator has given back what the load
freed), estimated from its files before its first load; a model counts the median of its
last ``FOOTPRINT_LOADS`` loads' measures and never less than its files, since a reload
often measures little (the memory an unload freed is reused) and a load beside busy
requests too much. Across a group, an instance publishes the models it loads when asked for
(LOADABLE) beside those it holds (READY): callers send a model no instance holds to one
instance only (rendezvous on its name), and the control plane keeps the group's hot
models on every instance (control/placement.py).
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from modelyard import error_rules
from modelyard.errors import ModelServerError
from modelyard.server.stats import Histogram

# how long requests waited for their model's load, seconds
LOAD_WAIT_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0,
)  # fmt: skip
PINNED = "pinned"
WARM = "warm"
RESIDENCY_KEY = "residency"  # the config parameter that pins or warms a model
# a model never loaded before: its files read at this pace, plus its engine's own start
ESTIMATED_LOAD_BYTES_PER_S = 200 << 20
ESTIMATED_LOAD_START_S = 0.2
# a model loaded this recently goes only when no other can: a model asked for about as often
# as the budget turns over would otherwise load at nearly every request (thrash)
PROTECTED_S = 20.0
# a model the repository API loaded (a copy the control plane placed) goes only when no
# other can for this long: the callers learn of the copy from the registry meanwhile
PLACED_S = 30.0
# a model's footprint is the median of this many of its last loads' measures
FOOTPRINT_LOADS = 5
LRU = "lru"
COST = "cost"
POLICIES = (LRU, COST)
# the request rate ``cost`` weighs halves in this many seconds without requests
RATE_HALF_LIFE_S = 30.0
# a model first asked for less than this long ago counts its requests over this long: one
# request is not yet a rate, and a model that became hot a moment ago reads as hot
RATE_MIN_WINDOW_S = 5.0


@dataclass(slots=True)
class ModelResidency:
    """What residency knows of one model: its use, its loads and unloads, their cost."""

    name: str
    last_used: float = 0.0  # monotonic seconds of its last request
    asked: int = 0  # requests queued for it here, over its loads (the control plane's rates)
    loads: int = 0
    loaded_at: float = 0.0  # monotonic seconds of its last load
    placed_at: float = -PLACED_S  # monotonic seconds the repository API last loaded it
    evictions: int = 0
    load_seconds: float = 0.0  # its last load's duration (0: never loaded here)
    files: int = 0  # what its files hold (times instances): its least footprint
    measured: deque[int] = field(default_factory=lambda: deque(maxlen=FOOTPRINT_LOADS))
    requests: float = 0.0  # its requests, each weighing half as much every RATE_HALF_LIFE_S
    requests_at: float = 0.0  # monotonic seconds ``requests`` was last brought up to
    first_asked: float | None = None  # monotonic seconds of its first request
    loading: asyncio.Future[None] | None = None  # the load requests wait for, while it runs
    # requests waiting for its load, until they are queued: it is not idle meanwhile (the
    # next load must not unload it between its load and their queueing)
    waiting: int = 0
    load_wait: Histogram = field(default_factory=lambda: Histogram(LOAD_WAIT_BUCKETS))

    @property
    def footprint(self) -> int:
        """The bytes it counts for: the median of its last loads' measures (a reload reads
        low where the allocator reuses what an unload freed, a load beside busy requests
        high), never less than its files; 0 while unknown."""
        if not self.measured:
            return self.files
        return max(self.files, statistics.median_low(self.measured))

    def waited_p99(self) -> float | None:
        """The bucket bound under which 99 % of the waits for its loads fell (None: none)."""
        counts = self.load_wait.counts
        total = sum(counts)
        if not total:
            return None
        running = 0
        for bound, count in zip((*self.load_wait.bounds, float("inf")), counts, strict=True):
            running += count
            if running >= 0.99 * total:
                return bound
        return None


class Residency:
    """The residency of a repository's models under a memory budget (see the module)."""

    def __init__(
        self, budget: int, now: Callable[[], float] = time.monotonic, policy: str = LRU
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"residency policy {policy!r} is not one of {POLICIES}")
        self.budget = budget
        self.now = now
        self.policy = policy
        self.models: dict[str, ModelResidency] = {}
        self.pinned: set[str] = set()

    def of(self, name: str) -> ModelResidency:
        found = self.models.get(name)
        if found is None:
            found = self.models[name] = ModelResidency(name)
        return found

    def touch(self, name: str) -> None:
        """A request named the model (its metadata, its readiness, an infer call routed to
        it): it is the most recently used."""
        self.of(name).last_used = self.now()

    def count_request(self, name: str) -> None:
        """A request for the model was queued (every path, a front door's fast lane too,
        which names no model to the manager): it is the most recently used, and its rate
        goes up."""
        state = self.of(name)
        state.asked += 1
        now = state.last_used = self.now()
        if self.policy == COST:
            state.requests = _decayed(state.requests, now - state.requests_at) + 1.0
            state.requests_at = now
            if state.first_asked is None:
                state.first_asked = now

    @staticmethod
    def rate(state: ModelResidency, now: float) -> float:
        """Its requests a second lately: the decayed count over the time it has been
        counted for (as decayed; RATE_MIN_WINDOW_S at the least)."""
        if state.first_asked is None:
            return 0.0
        counted = now - state.first_asked
        window = RATE_HALF_LIFE_S / math.log(2) * (1.0 - _decayed(1.0, counted))
        return _decayed(state.requests, now - state.requests_at) / max(window, RATE_MIN_WINDOW_S)

    def placed(self, name: str) -> None:
        """The repository API loaded the model: it stays a while (PLACED_S)."""
        self.of(name).placed_at = self.now()

    def _eviction_order(self, name: str, size: int, now: float) -> tuple[bool, bool, float]:
        """The key victims are sorted by, first to go first: those placed in the last
        PLACED_S last; then lru, the least recently used (those loaded in the last
        PROTECTED_S last); cost, the least rate times load time per byte."""
        state = self.of(name)
        placed = now - state.placed_at < PLACED_S
        if self.policy == COST:
            cost = max(state.load_seconds, ESTIMATED_LOAD_START_S)
            return placed, False, self.rate(state, now) * cost / max(size, 1)
        return placed, now - state.loaded_at < PROTECTED_S, state.last_used

    def expected_load_s(self, name: str, estimated_bytes: int) -> float:
        """How long the model's load takes: its last one here, else a guess from its files."""
        known = self.of(name).load_seconds
        if known:
            return known
        return ESTIMATED_LOAD_START_S + estimated_bytes / ESTIMATED_LOAD_BYTES_PER_S

    def refuse_if_too_slow(
        self, name: str, estimated_bytes: int, deadline: float | None, held: str
    ) -> None:
        """Refuse a request at once when its deadline (monotonic seconds) comes before the
        load it would wait for is likely done."""
        if deadline is None:
            return
        expected = self.expected_load_s(name, estimated_bytes)
        left = deadline - self.now()
        if left >= expected:
            return
        raise ModelServerError.of(
            error_rules.LOAD_TIME,
            f"model '{name}' is not resident and loads in about {expected:.2f} s, more than "
            f"the {max(left, 0.0):.2f} s left before the request's deadline (memory budget "
            f"{_mb(self.budget)}, resident: {held})",
            where="send it again after the retry-after (the model loads meanwhile), give the "
            f'request more time, or pin {name} (parameters residency: "pinned") or raise '
            "--memory-budget",
            retry_after=expected,
        )

    def victims(
        self,
        needed: int,
        held: dict[str, int],
        idle: Callable[[str], bool],
        keep: set[str],
    ) -> list[str] | None:
        """The models to unload, in the policy's order, so that ``needed`` more bytes fit
        beside what ``held`` (model -> bytes) holds; None when no choice of idle models that
        may go makes room. ``keep``: models that must stay (the one loading, ensembles' steps)."""
        used = sum(held.values())
        if used + needed <= self.budget:
            return []
        now = self.now()
        candidates = sorted(
            (name for name in held if name not in self.pinned and name not in keep),
            key=lambda name: self._eviction_order(name, held[name], now),
        )
        chosen = []
        for name in candidates:
            if not idle(name):
                continue
            chosen.append(name)
            used -= held[name]
            if used + needed <= self.budget:
                return chosen
        return None

    def full(
        self, name: str, needed: int, held: dict[str, int], busy: list[str]
    ) -> ModelServerError:
        """The refusal of a load that cannot fit even after every idle model has gone."""
        return ModelServerError.of(
            error_rules.MEMORY_BUDGET_BUSY,
            f"model '{name}' needs {_mb(needed)} and the memory budget {_mb(self.budget)} "
            f"cannot hold it beside what must stay resident: {describe(held, self.pinned, busy)}",
            retry_after=1.0,
        )


def _decayed(count: float, seconds: float) -> float:
    return count * 0.5 ** (seconds / RATE_HALF_LIFE_S)


def describe(
    held: dict[str, int], pinned: Collection[str] = (), busy: Collection[str] = ()
) -> str:
    """What holds the budget, largest first: model (MB, pinned or busy)."""
    if not held:
        return "nothing"
    parts = []
    for name, size in sorted(held.items(), key=lambda item: -item[1])[:6]:
        notes = [n for n, on in (("pinned", name in pinned), ("busy", name in busy)) if on]
        parts.append(f"{name} ({_mb(size)}{', ' + ', '.join(notes) if notes else ''})")
    if len(held) > 6:
        parts.append(f"and {len(held) - 6} more")
    return ", ".join(parts)


def _mb(value: int) -> str:
    return f"{value / (1 << 20):.1f} MB"
