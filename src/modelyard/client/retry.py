"""When a failed attempt is tried again, and when the client stops.

``RetryPolicy.decide`` reads one failed attempt's error:

- a connection error or UNAVAILABLE (queue full, version unloading, instance
  going away, a breaker open on that instance): try another instance;
- NOT_FOUND from an instance the registry lists for the model: the registry is
  behind a model move, try another instance;
- a governance rejection with RESOURCE_EXHAUSTED (a rate limit): never try
  elsewhere; wait ``retry_after`` and try again only when that fits before the
  deadline, unless ``wait_on_rate_limit`` is off (a gateway: the caller gets the
  rejection at once, with its retry-after, and decides; a proxy that retried it
  would multiply the load the limit refused and count one caller's call as several
  rejections);
- anything else (bad input, a model's own error, the deadline): give up.

Every retry is paid from a ``RetryBudget``: at most ``ratio`` of the requests of
the last ``window`` seconds plus ``min_per_second``, so retries cannot multiply
the load of a struggling service.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum

from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.errors import Code, GovernanceError, ModelyardError


class RetryBudget:
    def __init__(
        self,
        ratio: float = 0.2,
        min_per_second: float = 3.0,
        window: float = 10.0,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.ratio = ratio
        self.min_per_second = min_per_second
        self.window = window
        self.clock = clock
        self._buckets: deque[list[int]] = deque()  # [second, requests, retries]
        self._requests = 0
        self._retries = 0

    def _bucket(self) -> list[int]:
        second = int(self.clock.monotonic())
        buckets = self._buckets
        oldest = second - self.window
        while buckets and buckets[0][0] <= oldest:
            _, requests, retries = buckets.popleft()
            self._requests -= requests
            self._retries -= retries
        if not buckets or buckets[-1][0] != second:
            buckets.append([second, 0, 0])
        return buckets[-1]

    def on_request(self) -> None:
        self._bucket()[1] += 1
        self._requests += 1

    def available(self) -> float:
        """Retries that may be spent now."""
        self._bucket()
        allowed = self.ratio * self._requests + self.min_per_second * self.window
        return allowed - self._retries

    def try_spend(self) -> bool:
        """Take one retry from the budget, or say there is none."""
        if self.available() < 1:
            return False
        self._bucket()[2] += 1
        self._retries += 1
        return True


class Action(Enum):
    FAIL = "fail"
    RETRY_ELSEWHERE = "retry_elsewhere"
    WAIT_AND_RETRY = "wait_and_retry"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    delay: float = 0.0
    why: str = ""


_GIVE_UP = Decision(Action.FAIL)


def counts_as_failure(error: ModelyardError) -> bool | None:
    """Whether the error says the instance is unhealthy (True), or says nothing of it (None)."""
    if error.code is Code.UNAVAILABLE:
        return True
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 3
    wait_on_rate_limit: bool = True

    def decide(self, error: ModelyardError, attempts: int, remaining: float) -> Decision:
        """What to do after ``attempts`` failed tries, ``remaining`` seconds before the deadline."""
        if attempts >= self.max_attempts or remaining <= 0:
            return _GIVE_UP
        code = error.code
        if isinstance(error, GovernanceError) and code is Code.RESOURCE_EXHAUSTED:
            wait = error.retry_after
            if not self.wait_on_rate_limit or wait is None or wait >= remaining:
                return _GIVE_UP
            return Decision(Action.WAIT_AND_RETRY, wait, "rate limited")
        if code is Code.UNAVAILABLE:
            return Decision(Action.RETRY_ELSEWHERE, 0.0, "unavailable")
        if code is Code.NOT_FOUND and error.layer == "model-server":
            return Decision(Action.RETRY_ELSEWHERE, 0.0, "model not on that instance")
        return _GIVE_UP
