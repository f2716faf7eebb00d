"""The recent-rejection record of one instance: the last N rejections, by request id.

Every rejection the guard chain logs is also kept here, in memory and bounded,
so ``modelyard explain REQUEST_ID`` can ask the live instances of a service
(``GET /v2/modelyard/rejections/<request_id>``) what fired, with the numbers
and the rule in force at that moment.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from modelyard import error_rules
from modelyard.errors import GovernanceError


class RejectionLog:
    """The last ``capacity`` rejection events; a request id finds its latest one."""

    def __init__(self, capacity: int = 1000) -> None:
        if capacity < 1:
            raise ValueError(f"a rejection log keeps at least one event, got {capacity}")
        self.capacity = capacity
        self.total = 0
        self._events: deque[dict[str, Any]] = deque()
        self._by_id: dict[str, dict[str, Any]] = {}

    def add(self, event: dict[str, Any]) -> None:
        if len(self._events) == self.capacity:
            evicted = self._events.popleft()
            evicted_id = evicted.get("request_id")
            if evicted_id is not None and self._by_id.get(evicted_id) is evicted:
                del self._by_id[evicted_id]
        self._events.append(event)
        self.total += 1
        request_id = event.get("request_id")
        if request_id is not None:
            self._by_id[str(request_id)] = event

    def get(self, request_id: str) -> dict[str, Any] | None:
        return self._by_id.get(request_id)

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` events, newest first."""
        return [self._events[-i] for i in range(1, min(limit, len(self._events)) + 1)]

    def __len__(self) -> int:
        return len(self._events)


def rejection_not_found(request_id: str, capacity: int) -> GovernanceError:
    return GovernanceError.of(
        error_rules.UNKNOWN_REJECTION,
        f"no rejection with request id {request_id} on this instance",
        where=f"each instance keeps its last {capacity} rejections: ask the instance that "
        "answered, or every instance with modelyard explain ID --service NAME",
    )
