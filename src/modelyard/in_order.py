"""Answers released in the order of their tickets, whatever order they come in.

Each request that must be answered in turn takes a ticket (0, 1, 2 ...). What is sent for
a ticket (``release``: a callable that hands one answer on) passes at once while every
earlier ticket has had its final answer, and waits otherwise; a ticket's final answer lets
the next ones' waiting answers through. A ticket may have many answers (a decoupled
model's responses), the last one final, as Triton's completion queue releases them
(``DynamicBatchScheduler::FinalizeResponses``).

Used by the schedulers' ``preserve_ordering`` (dynamic batching; the sequence batcher's
oldest strategy) and by gRPC ``ModelStreamInfer``, which writes the answers of a stream's
requests to models that answer once in the order it read them. Safe from any thread: the
release callables run under its lock, so they must only hand the answer on (an event
loop's ``call_soon_threadsafe``, a queue's ``put_nowait``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class InOrder:
    def __init__(self) -> None:
        self._issued = 0  # the next ticket to give
        self._next = 0  # the ticket whose answers pass now
        self._held: dict[int, list[Callable[[], None]]] = {}
        self._finished: set[int] = set()  # later tickets whose final answer is held
        self._lock = threading.Lock()

    def ticket(self) -> int:
        """The next ticket, for a caller that does not number its requests itself."""
        with self._lock:
            ticket = self._issued
            self._issued += 1
            return ticket

    def release(self, ticket: int, answer: Callable[[], None], final: bool = True) -> None:
        """Hand ``answer`` on now if ``ticket``'s turn has come, else once it has;
        ``final``: the ticket's last answer."""
        with self._lock:
            if ticket < self._next:  # its final answer has passed: what a model's other
                return  # thread sent beside it comes too late, and is not kept
            if ticket != self._next:
                self._held.setdefault(ticket, []).append(answer)
                if final:
                    self._finished.add(ticket)
                return
            answer()
            if not final:
                return
            self._next += 1
            while self._next in self._held:  # the next tickets' answers held so far
                for held in self._held.pop(self._next):
                    held()
                if self._next not in self._finished:
                    return
                self._finished.discard(self._next)
                self._next += 1
