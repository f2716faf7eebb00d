"""The HTTP front door's fast lane: one compiled object per request shape.

Clients repeat a request's JSON header byte for byte (tritonclient, perf_analyzer,
load generators), and with it the route and the credentials; a request sent as JSON
repeats everything but its inputs' values. An ``HttpLane``, kept under the path, the
header's bytes (a JSON request's: its document less the values, ``json_layout_key``)
and the credentials as they arrived, holds everything those decide: the layout that
slices the body into arrays (``BinaryLayout``) or reads only the values
(``JsonLayout``), the data plane's ``InferLane`` (the version, and what validating the
shape decided), the governance ticket that admits the caller, and the reply whose JSON
header and HTTP headers are encoded once. A request that finds its lane is sliced (or
has its values read and checked), admitted, queued and answered with nothing else
decoded or validated. Every other request takes the general path, which makes the lane
for the next one of its shape.

A lane is dropped when its version is no longer what its name resolves to (a new
version, an unload), when the governance chain that admitted its caller has been
replaced (a rule change) or has forgotten the ticket: the general path then decides
afresh. A request whose admission must await a guard is routed afresh after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelyard.dataplane import InferLane
from modelyard.governance.chain import GuardChain, Ticket
from modelyard.protocol.v2_http import (
    BinaryLayout,
    BinaryReply,
    JsonLayout,
    JsonReply,
    json_layout_key,
)
from modelyard.types import InferRequest

_LANES_MAX = 1024  # bounded: header bytes and credentials come from callers
_LANE_HEADER_MAX = 4096  # longer headers are decoded each time, never kept

# path, whether binary, the header's bytes (a JSON request's: json_layout_key), X-API-Key,
# Authorization
LaneKey = tuple[str, bool, bytes, bytes | None, bytes | None]


@dataclass(slots=True, eq=False)
class HttpLane:
    target: InferLane
    layout: BinaryLayout | JsonLayout
    header_length: int | None  # None: a JSON request's lane
    # the governance chain and the ticket it admits the caller by (None: ungoverned), and
    # where the chain files that ticket
    chain: GuardChain | None
    ticket: Ticket | None
    ticket_key: Hashable | None
    # the reply encoded once; None: the outputs mix JSON and binary data, or are shaped per
    # response (classification, variable dims, BYTES), so each reply is encoded
    reply: BinaryReply | JsonReply | None

    @classmethod
    def make(
        cls,
        target: InferLane,
        layout: BinaryLayout | JsonLayout,
        header_length: int | None,
        chain: GuardChain | None,
        ticket_key: Hashable | None,
    ) -> HttpLane:
        fixed = target.fixed_outputs
        reply: BinaryReply | JsonReply | None = None
        if fixed is not None:
            request_id = layout.options["id"]
            reply = BinaryReply.make(
                target.model_name, target.model_version, request_id, fixed
            ) or JsonReply.make(target.model_name, target.model_version, request_id, fixed)
        ticket = chain.known_ticket(ticket_key) if chain is not None else None
        return cls(target, layout, header_length, chain, ticket, ticket_key, reply)

    def submit(
        self, body: bytes, arrived_ns: int = 0, doc: dict[str, Any] | None = None
    ) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queue a request of this lane: ``body`` as it came, and a JSON request's body as
        read (``infer_json.read``)."""
        layout = self.layout
        inputs = layout.arrays(body, self.header_length, doc)
        return self.target.submit(
            inputs, layout.priority, layout.timeout_us, None, None, arrived_ns
        )

    def request(self) -> InferRequest:
        """What a reply that cannot be the one encoded once reads of its request: its
        options (id, outputs asked for, binary output), not its inputs."""
        target = self.target
        return InferRequest(target.model_name, target.model_version, {}, **self.layout.options)


class HttpLanes:
    """The lanes of one front door, by path, header bytes and credentials."""

    def __init__(self) -> None:
        self._lanes: dict[LaneKey, HttpLane] = {}
        # JSON layouts seen once: a lane is made at the second request of a layout
        self._json_seen: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._lanes)

    def find(
        self,
        path: str,
        body: bytes,
        header_length: int | None,
        api_key: bytes | None,
        authorization: bytes | None,
        chain: GuardChain | None,
        doc: dict[str, Any] | None = None,
    ) -> HttpLane | None:
        """The lane of this request, if one is kept and still holds; ``doc``: a JSON
        request's body, read (None: it has no JSON lane)."""
        if header_length is None:
            if doc is None:
                return None
            layout_key = json_layout_key(doc)
            if layout_key is None:
                return None
            key: LaneKey = (path, False, layout_key, api_key, authorization)
            lane = self._lanes.get(key)
            if lane is None:
                return None
        else:
            if not 0 <= header_length <= _LANE_HEADER_MAX:
                return None
            key = (path, True, body[:header_length], api_key, authorization)
            lane = self._lanes.get(key)
            if lane is None or not lane.layout.fits(body, header_length):
                return None
        if (
            lane.chain is not chain
            # the chain forgets its tickets when it holds too many; the lane follows
            or (chain is not None and chain.known_ticket(lane.ticket_key) is not lane.ticket)
            or not lane.target.is_current()
        ):
            del self._lanes[key]
            return None
        return lane

    def json_seen_before(
        self,
        path: str,
        layout: JsonLayout,
        api_key: bytes | None,
        authorization: bytes | None,
    ) -> bool:
        """Whether a JSON request of this layout came before; it is noted if not.

        A JSON lane is made only for a layout seen twice. A client that sends a new id (or
        any other field) with every request would otherwise make a lane per request, and
        the lanes' objects, kept until the map is cleared, cost the garbage collector more
        than the lanes save: 38 → 60 µs of the loop per big request, in-process.
        """
        # one bytes object, which the garbage collector does not track (a tuple it would, as
        # each survivor of its young generation, and with every request's another survived)
        seen = b"\n".join((path.encode(), layout.key, api_key or b"", authorization or b""))
        if seen in self._json_seen:
            return True
        if len(self._json_seen) >= _LANES_MAX:
            self._json_seen.clear()
        self._json_seen.add(seen)
        return False

    def keep(
        self,
        path: str,
        body: bytes,
        api_key: bytes | None,
        authorization: bytes | None,
        lane: HttpLane,
    ) -> None:
        if lane.chain is not None and lane.ticket is None:
            # made as the rules changed, before the new chain filed a ticket for its caller:
            # kept, it would take the caller's next calls with nothing to admit them
            return
        header_length = lane.header_length
        key: LaneKey
        if header_length is None:
            layout = lane.layout
            assert isinstance(layout, JsonLayout)
            key = (path, False, layout.key, api_key, authorization)
        elif header_length > _LANE_HEADER_MAX:
            return
        else:
            key = (path, True, body[:header_length], api_key, authorization)
        if len(self._lanes) >= _LANES_MAX:
            self._lanes.clear()
        self._lanes[key] = lane
