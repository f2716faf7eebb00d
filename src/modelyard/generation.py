"""What the request path's caches depend on, counted: one number that model loads, unloads
and swaps, and rule changes, bump.

A front door keeps what it decided for a request's shape (its lane: the version it
routes to, the governance ticket that admits its caller, the reply encoded once) and
stamps it with the count it was decided at; a lane whose stamp is not the count now is
decided afresh. One server, one ``Generation``: its model manager bumps it when what a
model's name routes to changes, its governance when its guard chain is replaced or
forgets its tickets.
"""

from __future__ import annotations


class Generation:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1
