"""Triton's rate limiter (``--rate-limit execution_count``): executions hold resources.

Named for what it limits: resources, not request rates (those are governance's,
``governance/ratelimit.py``).

An instance group's ``rate_limiter { resources [...] priority: N }`` names what each of
its instances holds while it executes a batch; ``--rate-limit-resource NAME:COUNT``
(or ``NAME:COUNT:DEVICE``) says how many of a resource there are. A resource is per
device unless the config marks it ``global``; one the flags do not size gets the
largest count any instance asks for, so every instance can run (Triton's rule).

An instance with a batch waits until it can take all it needs at once. While
several wait, the one whose group has the lowest ``priority`` value goes first,
then the one that waited longest. Instances without a ``rate_limiter`` never wait.
A model that names resources executes on its instance threads only: the event loop
never waits for resources.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError

# a resource's key: its name, and its device ("global" for a global resource)
ResourceKey = tuple[str, str]


@dataclass(frozen=True)
class InstanceNeeds:
    """What one instance takes to execute, and its group's priority (lower goes first)."""

    resources: tuple[tuple[ResourceKey, int], ...]
    priority: int


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
        self._waiting: list[tuple[int, int, InstanceNeeds]] = []  # (priority, seq, needs)
        self._seq = itertools.count()

    def _given(self, key: ResourceKey) -> int | None:
        name, device = key
        for sized_name, count, sized_device in self._sized:
            if sized_name == name and sized_device in (None, device):
                return count
        return None

    def add(self, needs: list[InstanceNeeds | None], model: str = "") -> None:
        """Make room for a model's instances: a resource no flag sized holds at least the
        largest count any of them asks for; one a flag sized too small for an instance is
        refused (it could never execute)."""
        with self._cond:
            for need in needs:
                for key, count in need.resources if need else ():
                    given = self._given(key)
                    if given is not None and given < count:
                        raise ConfigError.of(
                            error_rules.RATE_LIMITER,
                            f"model '{model}': an instance needs {count} of resource "
                            f"'{key[0]}' and --rate-limit-resource gives {given}",
                            where=f"instance_group rate_limiter in {model}/config.pbtxt, or "
                            "modelyard serve --rate-limit-resource",
                        )
                    capacity = self._capacity.get(key, 0)
                    wanted = given if given is not None else max(capacity, count)
                    if wanted != capacity:  # what is held stays held: add the difference
                        self._capacity[key] = wanted
                        self._free[key] = self._free.get(key, 0) + wanted - capacity
            self._cond.notify_all()

    def available(self) -> dict[ResourceKey, int]:
        with self._cond:
            return dict(self._free)

    def _fits(self, needs: InstanceNeeds) -> bool:
        return all(self._free.get(key, 0) >= count for key, count in needs.resources)

    @contextmanager
    def held(self, needs: InstanceNeeds | None) -> Iterator[None]:
        """Hold ``needs`` for the block; waits until they can all be taken at once."""
        if needs is None:
            yield
            return
        with self._cond:
            entry = (needs.priority, next(self._seq), needs)
            self._waiting.append(entry)
            try:
                while not (self._fits(needs) and self._first_that_fits() is entry):
                    self._cond.wait()
            finally:
                self._waiting.remove(entry)
            for key, count in needs.resources:
                self._free[key] -= count
            self._cond.notify_all()  # another waiter may fit in what is left
        try:
            yield
        finally:
            with self._cond:
                for key, count in needs.resources:
                    self._free[key] += count
                self._cond.notify_all()

    def _first_that_fits(self) -> tuple[int, int, InstanceNeeds] | None:
        fitting = [entry for entry in self._waiting if self._fits(entry[2])]
        return min(fitting, key=lambda entry: (entry[0], entry[1])) if fitting else None
