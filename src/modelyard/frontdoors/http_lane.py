"""The HTTP front door's fast lane: one compiled object per request shape.

Clients repeat a request's JSON header byte for byte (tritonclient, perf_analyzer,
load generators), but for its id, and with it the route and the credentials; a request
sent as JSON repeats everything but its id and its inputs' values. An ``HttpLane``,
kept under ``lane_key`` (the path, the header's bytes after an id that opens them, or a
JSON request's document less its id and values, and the credentials as they arrived),
holds everything those decide: the layout that slices the body into arrays
(``BinaryLayout``) or reads only the values (``JsonLayout``), the data plane's
``InferLane`` (the version, and what validating the shape decided), the governance
ticket that admits the caller, and the reply whose JSON header and HTTP headers are
encoded once. A request that finds its lane is sliced (or has its values read and
checked), admitted, queued and answered with nothing else decoded or validated. Every
other request takes the general path, which makes the lane for the next one of its
shape once its key has come twice.

A lane is stamped with the server's generation (modelyard/generation.py) at the moment
its request was routed, and dropped once the count has moved: a model loaded, unloaded
or swapped, the governance chain replaced (a rule change) or its tickets forgotten. The
general path then decides afresh. A request whose admission must await a guard is
routed afresh after it.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import orjson

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

# path, the kind of key (below), its bytes, X-API-Key, Authorization
LaneKey = tuple[str, int, bytes, bytes | None, bytes | None]
# the kinds: a JSON request's json_layout_key, a binary request's whole header, and the
# bytes after the id that opens a binary request's header (kept apart from whole headers:
# a caller could send such bytes as a header of their own, which no parser would take)
_JSON_LAYOUT, _HEADER, _AFTER_ID = 0, 1, 2

# A binary header that opens with its id, as tritonclient and the V2 examples write it; an
# id with escapes is not taken out (its bytes are not its value).
_LEADING_ID = re.compile(rb'\{"id": ?"([^"\\\x00-\x1f]*)"')


def lane_key(
    path: str,
    body: bytes,
    header_length: int | None,
    api_key: bytes | None,
    authorization: bytes | None,
    doc: dict[str, Any] | None,
) -> tuple[LaneKey | None, str | None]:
    """The key a lane for this request is kept under (None: it can have none), and the
    request's id when the key leaves it out.

    Clients that send a new id with every request (to find it in their logs) would
    otherwise never take a lane. A JSON request's key leaves its id out; a binary
    header's leaves out an id that opens it. ``doc``: a JSON request's body, read (None:
    it has no JSON lane).
    """
    if header_length is None:
        if doc is None:
            return None, None
        layout_key = json_layout_key(doc)
        if layout_key is None:
            return None, None
        request_id = doc.get("id")
        return (path, _JSON_LAYOUT, layout_key, api_key, authorization), (
            request_id if type(request_id) is str else None
        )
    if not 0 <= header_length <= _LANE_HEADER_MAX:
        return None, None
    header = body[:header_length]
    leading = _LEADING_ID.match(header) if header.startswith(b'{"id"') else None
    if leading is not None:
        start, end = leading.span(1)
        try:
            request_id = header[start:end].decode()
        except UnicodeDecodeError:
            pass
        else:
            # what follows the id says all the rest (what precedes it is `{"id":` and
            # maybe a space)
            return (path, _AFTER_ID, header[end:], api_key, authorization), request_id
    return (path, _HEADER, header, api_key, authorization), None


def _leading_id_is_the_id(header: bytes, request_id: str) -> bool:
    """Whether the id that opens ``header`` is the request's: no later key overrides it
    (a JSON object's last duplicate wins)."""
    leading = _LEADING_ID.match(header)
    if leading is None:
        return False
    other = "a" if request_id != "a" else "b"
    start, end = leading.span(1)
    try:
        doc = orjson.loads(header[:start] + other.encode() + header[end:])
    except orjson.JSONDecodeError:
        return False
    return type(doc) is dict and doc.get("id") == other


@dataclass(slots=True, eq=False)
class HttpLane:
    target: InferLane
    layout: BinaryLayout | JsonLayout
    header_length: int | None  # None: a JSON request's lane
    # whether the lane's key holds its requests' id (a binary header that does not open
    # with it): then each request's id is the one the lane was made with
    id_in_key: bool
    # the governance chain and the ticket it admits the caller by (None: ungoverned), and
    # where the chain files that ticket
    chain: GuardChain | None
    ticket: Ticket | None
    ticket_key: Hashable | None
    # the reply encoded once; None: the outputs mix JSON and binary data, or are shaped per
    # response (classification, variable dims, BYTES), so each reply is encoded
    reply: BinaryReply | JsonReply | None
    # the server's generation when its request was routed: stale once it has moved
    stamp: int

    @classmethod
    def make(
        cls,
        target: InferLane,
        layout: BinaryLayout | JsonLayout,
        header_length: int | None,
        id_in_key: bool,
        chain: GuardChain | None,
        ticket_key: Hashable | None,
        stamp: int,
    ) -> HttpLane:
        fixed = target.fixed_outputs
        reply: BinaryReply | JsonReply | None = None
        if fixed is not None:
            request_id = layout.options["id"]
            reply = BinaryReply.make(
                target.model_name, target.model_version, request_id, fixed
            ) or JsonReply.make(target.model_name, target.model_version, request_id, fixed)
        ticket = chain.known_ticket(ticket_key) if chain is not None else None
        return cls(
            target, layout, header_length, id_in_key, chain, ticket, ticket_key, reply, stamp
        )

    def request(self, request_id: str | None) -> InferRequest:
        """What a reply that cannot be the one encoded once reads of its request: its
        options (id, outputs asked for, binary output), not its inputs."""
        target = self.target
        options = self.layout.options
        if request_id != options["id"]:
            options = {**options, "id": request_id}
        return InferRequest(target.model_name, target.model_version, {}, **options)


class HttpLanes:
    """The lanes of one front door, by ``lane_key``."""

    def __init__(self) -> None:
        self._lanes: dict[LaneKey, HttpLane] = {}
        # keys seen once: a lane is made at the second request of its key
        self._seen: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._lanes)

    def find(
        self, key: LaneKey, body: bytes, header_length: int | None, stamp: int
    ) -> HttpLane | None:
        """The lane kept under ``key``, if it still holds for this request: made at the
        server's generation ``stamp`` is now (nothing it decided has changed since)."""
        lane = self._lanes.get(key)
        if lane is None or (
            header_length is not None and not lane.layout.fits(body, header_length)
        ):
            return None
        if lane.stamp != stamp:
            del self._lanes[key]
            return None
        return lane

    def seen_before(self, key: LaneKey) -> bool:
        """Whether a request of this key came before; it is noted if not.

        A lane is made only for a key seen twice. A client that sends a new value in some
        field with every request would otherwise make a lane per request, and the lanes'
        objects, kept until the map is cleared, cost the garbage collector more than the
        lanes save: 38 → 60 µs of the loop per big JSON request, in-process.
        """
        path, kind, key_bytes, api_key, authorization = key
        # one bytes object, which the garbage collector does not track (a tuple it would, as
        # each survivor of its young generation, and with every request's another survived);
        # the key's bytes last, the only part that may hold a newline
        seen = b"\n".join(
            (path.encode(), b"%d" % kind, api_key or b"", authorization or b"", key_bytes)
        )
        if seen in self._seen:
            return True
        if len(self._seen) >= _LANES_MAX:
            self._seen.clear()
        self._seen.add(seen)
        return False

    def keep(self, key: LaneKey, lane: HttpLane, body: bytes) -> None:
        """Keep ``lane`` under ``key``, the key of the request it was made from (``body``)."""
        if lane.chain is not None and lane.ticket is None:
            # made as the rules changed, before the new chain filed a ticket for its caller:
            # kept, it would take the caller's next calls with nothing to admit them
            return
        header_length = lane.header_length
        if header_length is not None and not lane.id_in_key:
            request_id = lane.layout.options["id"]
            if request_id is None or not _leading_id_is_the_id(body[:header_length], request_id):
                return
        if len(self._lanes) >= _LANES_MAX:
            self._lanes.clear()
        self._lanes[key] = lane
