"""Which models hold memory: every model of the repository servable, within a memory budget.

With ``serve --model-residency lru`` (and ``--memory-budget``), a model is loaded when a
request first names it, and the least recently used idle models are unloaded to make
room for it, as Triton users have asked for (its issues 4188 and 7279) and Ray Serve's
multiplexing and KServe ModelMesh do elsewhere:

* one load per model at a time: the requests that name a model while it loads wait
  behind it, each with its own deadline; a request whose deadline cannot cover the load
  (the model's last load time, or an estimate from its files) is refused at once, with a
  retry-after of that time;
* room is made by unloading the least recently used models that are idle: never a model
  with requests queued or executing, never one its config pins, never a step of a loaded
  ensemble (the ensemble goes first), and one loaded in the last ``PROTECTED_S`` seconds
  only when no other will do (so a model asked for about as often as the budget turns
  over does not load at every request); a load that cannot fit even so is refused with
  what the budget holds;
* a model's config may pin it (``parameters { key: "residency" value { string_value:
  "pinned" } }``: loaded at start, never unloaded) or warm it (``"warm"``: loaded at
  start, unloaded like any other).

Memory is the footprint the budget already counts (server/manager.py): the host memory
a version took when it loaded (measured once the allocator has given back what the load
freed), estimated from its files before its first load; a model counts the most it was
ever seen to hold, since a reload often measures little (the memory an unload freed is
reused). Across a group, an instance publishes the models it loads when asked for
(LOADABLE) beside those it holds (READY): callers send a model no instance holds to one
instance only (rendezvous on its name), and the control plane keeps the group's hot
models on every instance (control/placement.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from modelyard.errors import LOAD_TIME_RULE, MEMORY_BUDGET_RULE, Code, ModelServerError
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


@dataclass(slots=True)
class ModelResidency:
    """What residency knows of one model: its use, its loads and unloads, their cost."""

    name: str
    last_used: float = 0.0  # monotonic seconds of its last request
    loads: int = 0
    loaded_at: float = 0.0  # monotonic seconds of its last load
    evictions: int = 0
    load_seconds: float = 0.0  # its last load's duration (0: never loaded here)
    footprint: int = 0  # bytes its versions held when last loaded (0: unknown)
    loading: asyncio.Future[None] | None = None  # the load requests wait for, while it runs
    load_wait: Histogram = field(default_factory=lambda: Histogram(LOAD_WAIT_BUCKETS))

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

    def __init__(self, budget: int, now: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.now = now
        self.models: dict[str, ModelResidency] = {}
        self.pinned: set[str] = set()

    def of(self, name: str) -> ModelResidency:
        found = self.models.get(name)
        if found is None:
            found = self.models[name] = ModelResidency(name)
        return found

    def touch(self, name: str) -> None:
        """A request named the model: it is the most recently used."""
        self.of(name).last_used = self.now()

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
        raise ModelServerError(
            f"model '{name}' is not resident and loads in about {expected:.2f} s, more than "
            f"the {max(left, 0.0):.2f} s left before the request's deadline (memory budget "
            f"{_mb(self.budget)}, resident: {held})",
            code=Code.UNAVAILABLE,
            rule=LOAD_TIME_RULE,
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
        """The models to unload, least recently used first, so that ``needed`` more bytes fit
        beside what ``held`` (model -> bytes) holds; None when no choice of idle models that
        may go makes room. ``keep``: models that must stay (the one loading, ensembles' steps)."""
        used = sum(held.values())
        if used + needed <= self.budget:
            return []
        now = self.now()
        candidates = sorted(
            (name for name in held if name not in self.pinned and name not in keep),
            # the least recently used first, those loaded in the last PROTECTED_S last
            key=lambda name: (
                now - self.of(name).loaded_at < PROTECTED_S,
                self.of(name).last_used,
            ),
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
        return ModelServerError(
            f"model '{name}' needs {_mb(needed)} and the memory budget {_mb(self.budget)} "
            f"cannot hold it beside what must stay resident: {describe(held, self.pinned, busy)}",
            code=Code.UNAVAILABLE,
            rule=MEMORY_BUDGET_RULE,
            where="raise --memory-budget, unpin a model (parameters residency), or send "
            "the request again once the busy models are idle",
            retry_after=1.0,
        )


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
