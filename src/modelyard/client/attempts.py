"""How long one attempt may take before the call tries another instance, and when to hedge.

Every attempt has a deadline unless the caller turns it off: a host that stops
answering (a hung process, a cut link) answers nothing, not even a refusal, and
without one a call waits out its whole timeout. An ``AttemptRule`` says it per
interface (``infer``, ``metadata``, or an interface a service file declares by
its models):

- ``timeout="auto"`` (the default): ``LATENCY_MULTIPLE`` times the p99 of the
  model's last ``WINDOW`` answered attempts, never under ``MIN_ATTEMPT_SECS``;
  until ``MIN_SAMPLES`` attempts have answered, ``DEFAULT_ATTEMPT_SECS`` (which
  the client also gives an instance that has not answered yet, and the last
  instance left to try gets the call's whole time);
- ``timeout=SECS``: that, whatever the latency;
- ``timeout=None``: no bound of its own (an attempt may take the call's whole time).

``hedge=True`` sends a second attempt to another instance once the first has
taken the model's observed p95 (``MIN_HEDGE_SECS`` at least); the first answer
wins and the other is cancelled. Pure logic: durations are handed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

DEFAULT_ATTEMPT_SECS = 1.0  # until a model's latency is known
MIN_ATTEMPT_SECS = 0.25  # below this, a busy but healthy host on a shared core times out
LATENCY_MULTIPLE = 4.0  # an attempt may take this many times the model's p99
MIN_HEDGE_SECS = 0.005
MIN_SAMPLES = 20
WINDOW = 256
_REFRESH_EVERY = 16  # answers between two readings of the percentiles

Timeout = float | Literal["auto"] | None


@dataclass(frozen=True, slots=True)
class AttemptRule:
    """One interface's attempts: their deadline (``"auto"``, seconds, or None for none) and
    whether a slow one is hedged."""

    timeout: Timeout = "auto"
    hedge: bool = False

    def __post_init__(self) -> None:
        if self.timeout is None or self.timeout == "auto":
            return
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float):
            raise ValueError(f"an attempt timeout is 'auto', seconds or none, not {self.timeout!r}")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ValueError(
                f"an attempt timeout must be a positive number of seconds, not {self.timeout}"
            )


def parse_timeout(text: str) -> Timeout:
    """A command line's attempt timeout: ``auto``, ``off`` (none) or seconds."""
    word = text.strip().lower()
    if word == "auto":
        return "auto"
    if word in ("off", "none"):
        return None
    return float(word)


def rules_from_sections(sections: Mapping[str, Mapping[str, Any]]) -> dict[str, AttemptRule]:
    """Interface → rule from the ``attempts`` of a service file or a platform spec's service
    (``{timeout_s: auto | off | SECS, hedge: BOOL}``, checked by their schema; YAML reads a
    bare ``off`` as false)."""
    rules = {}
    for interface, section in sections.items():
        timeout = section.get("timeout_s", "auto")
        off = timeout is False or timeout == "off"
        rules[interface] = AttemptRule(None if off else timeout, bool(section.get("hedge", False)))
    return rules


class Latency:
    """The last ``WINDOW`` answered attempts' durations of one model; p95 and p99 read
    every ``_REFRESH_EVERY`` answers."""

    __slots__ = ("_count", "_next", "_samples", "p95", "p99")

    def __init__(self) -> None:
        self._samples: list[float] = []
        self._next = 0
        self._count = 0
        self.p95: float | None = None
        self.p99: float | None = None

    def add(self, seconds: float) -> None:
        if len(self._samples) < WINDOW:
            self._samples.append(seconds)
        else:
            self._samples[self._next] = seconds
            self._next = (self._next + 1) % WINDOW
        self._count += 1
        if self._count >= MIN_SAMPLES and self._count % _REFRESH_EVERY == 0:
            ordered = sorted(self._samples)
            self.p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
            self.p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


class AttemptPolicy:
    """The attempt rule of each call, and what the model's observed latency makes of it."""

    def __init__(
        self,
        default: AttemptRule = AttemptRule(),
        rules: Mapping[str, AttemptRule] | None = None,
        interfaces: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """``rules``: interface → rule, over ``default``; ``interfaces``: declared interface →
        the model patterns it covers (a service file's ``interfaces``), the first that names
        a model being its interface."""
        self.default = default
        self.rules = dict(rules or {})
        self.interfaces = {name: list(models) for name, models in (interfaces or {}).items()}
        self._latency: dict[str, Latency] = {}
        self._interface_of: dict[str, str] = {}

    def interface(self, model: str, protocol_interface: str = "infer") -> str:
        """The interface a call on ``model`` counts on: a declared one that covers the model,
        else the protocol's."""
        if protocol_interface != "infer" or not self.interfaces:
            return protocol_interface
        found = self._interface_of.get(model)
        if found is None:
            found = next(
                (
                    name
                    for name, patterns in self.interfaces.items()
                    if any(fnmatchcase(model, p) for p in patterns)
                ),
                "infer",
            )
            if len(self._interface_of) < 4096:
                self._interface_of[model] = found
        return found

    def rule(self, interface: str) -> AttemptRule:
        return self.rules.get(interface, self.default)

    def latency(self, model: str) -> Latency:
        found = self._latency.get(model)
        if found is None:
            found = Latency()
            if len(self._latency) < 4096:  # model names come from callers
                self._latency[model] = found
        return found

    def timeout(self, rule: AttemptRule, model: str) -> float | None:
        """The deadline of one attempt on ``model`` under ``rule``, in seconds (None: none)."""
        if rule.timeout != "auto":
            return rule.timeout
        p99 = self.latency(model).p99
        if p99 is None:
            return DEFAULT_ATTEMPT_SECS
        return max(MIN_ATTEMPT_SECS, LATENCY_MULTIPLE * p99)

    def hedge_after(self, rule: AttemptRule, model: str) -> float | None:
        """When a second attempt starts (None: no hedging, or the latency is not known yet)."""
        if not rule.hedge:
            return None
        p95 = self.latency(model).p95
        return None if p95 is None else max(MIN_HEDGE_SECS, p95)

    def answered(self, model: str, seconds: float) -> None:
        self.latency(model).add(seconds)
