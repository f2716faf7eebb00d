"""Triton's rate limiter (``--rate-limit execution_count``): executions hold resources.

Named for what it limits: resources, not request rates (those are governance's,
``governance/ratelimit.py``).

An instance group's ``rate_limiter { resources [...] priority: N }`` names what each of
its instances holds while it executes a batch; ``--rate-limit-resource NAME:COUNT``
(or ``NAME:COUNT:DEVICE``) says how many of a resource there are. A resource is per
device unless the config marks it ``global``. Without any such flag a resource holds the
largest count any instance asks for, so every instance can run; once one flag is given,
a resource no flag names holds none (Triton's rules, and its words when a model then
could never execute). A name is global everywhere or per device everywhere.

An instance with a batch waits until it can take all it needs at once. While several
wait, the one with the fewest executions weighted by its group's ``priority`` (Triton's
scaled priority: executions x priority, a priority of 0 counting as 1) goes first, then
the one of the lower priority value, then the one that waited longest: an instance of
priority 2 runs half as often as one of priority 1 while both have work. Instances
without a ``rate_limiter`` never wait. A model that names resources executes on its
instance threads only: the event loop never waits for resources.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError

log = structlog.get_logger("modelyard.server")

# a resource's key: its name, and its device ("global" for a global resource)
ResourceKey = tuple[str, str]


@dataclass
class InstanceNeeds:
    """What one instance takes to execute, its group's priority, and how many executions
    it has finished (the weight of its next turn)."""

    resources: tuple[tuple[ResourceKey, int], ...]
    priority: int
    executions: int = 0

    def scaled_priority(self) -> int:
        """Triton's: executions times priority (0 counts as 1); the lowest goes first."""
        return self.executions * max(self.priority, 1)


@dataclass(eq=False)
class _Turn:
    """An instance waiting for its resources, or (``kept_until``) one that has just
    executed and has more to do, whose turn is kept until its thread asks again."""

    needs: InstanceNeeds
    seq: int  # the order turns were asked for: the first goes first among equals
    kept_until: float | None = None


# how long an instance with more work keeps its turn after an execution, for its thread
# to form its next batch and ask again
KEPT_TURN_S = 0.1


def _turn_order(turn: _Turn) -> tuple[int, int, int]:
    """The fewest executions weighted by priority first; among equals the higher priority
    (the lower value), then the turn asked for first."""
    return turn.needs.scaled_priority(), max(turn.needs.priority, 1), turn.seq


def instance_needs(placed: list[tuple[str, mc.ModelInstanceGroup]]) -> list[InstanceNeeds | None]:
    """Each instance's needs (None: it names none), from its device and group."""
    needs: list[InstanceNeeds | None] = []
    for device, group in placed:
        limiter = group.rate_limiter
        if not group.HasField("rate_limiter") or not limiter.resources:
            needs.append(None)
            continue
        resources = tuple(
            ((r.name, "global" if getattr(r, "global") else device), r.count)
            for r in limiter.resources
        )
        needs.append(InstanceNeeds(resources, limiter.priority))
    return needs


def parse_resource(text: str) -> tuple[str, int, str | None]:
    """``NAME:COUNT`` or ``NAME:COUNT:DEVICE`` (tritonserver's --rate-limit-resource)."""
    parts = text.split(":")
    if len(parts) in (2, 3) and parts[0] and parts[1].isdigit():
        device = None
        if len(parts) == 3:
            if not parts[2].isdigit():
                parts = []
            else:
                device = f"cuda:{parts[2]}"
        if parts:
            return parts[0], int(parts[1]), device
    raise ConfigError.of(
        error_rules.RATE_LIMIT_RESOURCE,
        f"--rate-limit-resource {text}: expected NAME:COUNT or NAME:COUNT:DEVICE",
    )


class ResourceLimiter:
    """The resources of one server, shared by every model that names them."""

    def __init__(self, sized: list[tuple[str, int, str | None]] | None = None) -> None:
        self._sized = list(sized or [])
        self._capacity: dict[ResourceKey, int] = {}  # how many there are
        self._free: dict[ResourceKey, int] = {}  # how many no execution holds now
        self._cond = threading.Condition()
        self._waiting: list[_Turn] = []
        self._instances: list[InstanceNeeds] = []  # registered: their needs size resources
        self._seq = itertools.count()

    def _given(self, key: ResourceKey) -> int | None:
        """What the flags give of a resource (the most any flag that names it gives), 0
        when flags are given and none names it, None without flags."""
        if not self._sized:
            return None
        name, device = key
        return max(
            (count for sized_name, count, sized_device in self._sized
             if sized_name == name and (device == "global" or sized_device in (None, device))),
            default=0,
        )  # fmt: skip

    def _refuse_mixed(self, needs: list[InstanceNeeds | None], model: str) -> None:
        """Triton's rule: a resource's name is global in every config or in none."""
        keys = set(self._capacity) | {key for need in needs if need for key, _ in need.resources}
        global_names = {name for name, device in keys if device == "global"}
        for name in sorted(global_names & {name for name, device in keys if device != "global"}):
            raise ConfigError.of(
                error_rules.RATE_LIMITER,
                f'Resource "{name}" is present as both global and device-specific resource '
                "in the model configuration.",
                where=f"instance_group rate_limiter in {model}/config.pbtxt (and the other "
                f"models that name {name}): global in all or in none",
            )

    def add(self, needs: list[InstanceNeeds | None], model: str = "") -> None:
        """Make room for a model's instances: a resource no flag sized holds the largest
        count any instance added asks for; one the flags give too few of for an instance
        is refused (it could never execute), and then none of ``needs`` is added."""
        self.check(needs, model)
        with self._cond:
            self._instances += [need for need in needs if need]
            self._resize({key for need in needs if need for key, _ in need.resources})

    def check(self, needs: list[InstanceNeeds | None], model: str = "") -> None:
        """Raise as ``add`` would refuse ``needs``; adds nothing."""
        with self._cond:
            self._refuse_mixed(needs, model)
            for need in needs:
                for key, count in need.resources if need else ():
                    given = self._given(key)
                    if given is not None and given < count:
                        raise ConfigError.of(
                            error_rules.RATE_LIMITER,
                            f'Resource count for "{key[0]}" is limited to {given} which will '
                            "prevent scheduling of one or more model instances, the minimum "
                            f"required count is {count} (model '{model}')",
                            where=f"instance_group rate_limiter in {model}/config.pbtxt, or "
                            "modelyard serve --rate-limit-resource",
                        )

    def remove(self, needs: list[InstanceNeeds | None]) -> None:
        """Instances gone (unloaded, or removed by an instance update): a resource no flag
        sized holds the largest count the instances left ask for, as Triton's does."""
        gone = {id(need) for need in needs if need}
        with self._cond:
            self._instances = [need for need in self._instances if id(need) not in gone]
            self._resize({key for need in needs if need for key, _ in need.resources})

    def _resize(self, keys: set[ResourceKey]) -> None:
        """Each of ``keys`` sized again from the flags or the instances registered; what
        executions hold stays held (its free count may go below 0 until released)."""
        for key in sorted(keys):
            given = self._given(key)
            wanted = given if given is not None else max(
                (count for need in self._instances for k, count in need.resources if k == key),
                default=0,
            )  # fmt: skip
            capacity = self._capacity.get(key, 0)
            self._free[key] = self._free.get(key, 0) + wanted - capacity
            if wanted or any(k == key for need in self._instances for k, _ in need.resources):
                self._capacity[key] = wanted
            else:
                self._capacity.pop(key, None)
        if keys:
            self._log_capacity()
        self._cond.notify_all()

    def _log_capacity(self) -> None:
        """Triton's verbose account of the resources (its "Max Resource Map"; the log
        writes its line breaks and tabs escaped, as Triton's does)."""
        lines = ["\nMax Resource Map===>\n"]
        for device in sorted({device for _, device in self._capacity}):
            lines.append(f"\tDevice: {'GLOBAL' if device == 'global' else device}\n")
            for (name, where), count in sorted(self._capacity.items()):
                if where == device:
                    lines.append(f"\t\tResource: {name}\t Count: {count}\n")
        log.debug("rate_limiter_resources", resources={f"{n}@{d}": c for (n, d), c in
                  sorted(self._capacity.items())}, triton="".join(lines))  # fmt: skip

    def available(self) -> dict[ResourceKey, int]:
        with self._cond:
            return dict(self._free)

    def _fits(self, needs: InstanceNeeds) -> bool:
        return all(self._free.get(key, 0) >= count for key, count in needs.resources)

    @contextmanager
    def held(
        self, needs: InstanceNeeds | None, more: Callable[[], bool] | None = None
    ) -> Iterator[None]:
        """Hold ``needs`` for the block; waits until they can all be taken at once.
        ``more``: whether the instance has another batch waiting once this one is done;
        then it keeps its turn for a moment (Triton stages an instance again as it
        releases, so a waiter cannot take a turn its priority has not earned)."""
        if needs is None:
            yield
            return
        with self._cond:
            turn = next((t for t in self._waiting if t.needs is needs), None)  # one it kept
            if turn is None:
                turn = _Turn(needs, next(self._seq))
                self._waiting.append(turn)
            turn.kept_until = None
            try:
                while not (self._fits(needs) and self._first_that_fits() is turn):
                    self._cond.wait(self._until_a_kept_turn_lapses())
            finally:
                self._waiting.remove(turn)
            for key, count in needs.resources:
                self._free[key] -= count
            self._cond.notify_all()  # another waiter may fit in what is left
        try:
            yield
        finally:
            again = more is not None and more()
            with self._cond:
                for key, count in needs.resources:
                    self._free[key] += count
                needs.executions += 1
                if again:
                    kept = time.monotonic() + KEPT_TURN_S
                    self._waiting.append(_Turn(needs, next(self._seq), kept))
                self._cond.notify_all()

    def _first_that_fits(self) -> _Turn | None:
        now = time.monotonic()
        self._waiting = [t for t in self._waiting if t.kept_until is None or t.kept_until > now]
        fitting = [turn for turn in self._waiting if self._fits(turn.needs)]
        return min(fitting, key=_turn_order) if fitting else None

    def _until_a_kept_turn_lapses(self) -> float | None:
        kept = [t.kept_until for t in self._waiting if t.kept_until is not None]
        return max(0.0, min(kept) - time.monotonic()) + 1e-4 if kept else None
