"""Batch formation, as a pure state machine over a fake-able clock.

``RequestQueue`` holds the queued requests of one model version and decides,
given the time and how many instances are executing, what a free instance
should do next: run a batch, wait until some time, or sleep until a request
arrives. It knows Triton's ``dynamic_batching`` settings:

* ``max_batch_size`` and ``preferred_batch_size``: a batch never exceeds the
  former and is cut at the largest preferred size it can reach;
* ``max_queue_delay_microseconds``: how long a request may wait for partners.
  modelyard spends it only when partners are due: while another instance of
  the model is executing, or when the last batch answered had more rows than
  are queued now (its callers, in a closed loop, send their next requests:
  the queue waits for as many rows as it answered, up to the delay from that
  answer), and, after a batch with partners, while requests still arrive at
  the pace its partners came at. A lone request after a lone answer, or after
  a quiet spell longer than the delay, runs at once, so batching costs nothing
  at low load. A config that names preferred sizes asks for batches of those
  sizes: there batches form as Triton forms them, whatever the load; so does every
  batch under the ``tritonserver`` command, a Triton user's (``triton_batches``:
  without preferred sizes, one waits up to the delay for ``max_batch_size`` rows). Requests
  join in order while their shape is the head's and the rows fit; the longest
  run whose rows are a preferred size is sent at once (or, once the next
  request would pass the largest, the run before it); else the batch waits for
  one up to the delay from its head's arrival, and is sent as it is when the
  delay is out, when it reaches the largest preferred size, or when a request
  of another shape or past ``max_batch_size`` is next;
* ``priority_levels`` / ``default_priority_level``: level 1 is served first; a
  request's priority of 0 or past the levels takes the default level (as Triton). A
  level's queue exists while it holds requests (or has a policy of its own), so a config
  may name up to 2^64-1 levels;
* queue policies (default and per priority): ``max_queue_size`` rejects at
  once when full; ``default_timeout_microseconds`` (shortened per request
  when ``allow_timeout_override``, never lengthened) with ``timeout_action`` REJECT (dropped with
  an error, never computed) or DELAY (served after every request of its level still
  in time, before the next level's);
* requests whose tensor shapes or dtypes differ never share a batch;
* an encoder's requests (``max_batch_tokens``: see server/token_batching.py) are
  batched by padded tokens, not rows: each request says its tokens per row, and
  a batch is the head and the queued requests nearest its length, as long as
  rows times the longest stays within ``max_batch_tokens`` and within
  ``max_padding_ratio`` of the tokens the rows really have.

The queue is not thread-safe; the scheduler calls it under its lock.
"""

from __future__ import annotations

import bisect
import dataclasses
import operator
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ModelServerError

_ROWS = operator.attrgetter("rows")
_TOKENS = operator.attrgetter("tokens")
_GAP_SMOOTHING = 8  # the gap between arrivals is a moving average over about 8 of them
DEFAULT_EXECUTION_TOKENS = 8.0

REJECT = mc.ModelQueuePolicy.TimeoutAction.REJECT
DELAY = mc.ModelQueuePolicy.TimeoutAction.DELAY


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    max_queue_size: int = 0
    default_timeout_ns: int = 0
    allow_timeout_override: bool = False
    delay_on_timeout: bool = False

    @classmethod
    def from_proto(cls, policy: Any) -> QueuePolicy:
        return cls(
            max_queue_size=int(policy.max_queue_size),
            default_timeout_ns=int(policy.default_timeout_microseconds) * 1000,
            allow_timeout_override=bool(policy.allow_timeout_override),
            delay_on_timeout=policy.timeout_action == DELAY,
        )


@dataclass(frozen=True, slots=True)
class BatchingPolicy:
    max_batch_size: int = 0  # 0: the model does not batch
    batching: bool = False
    preferred: tuple[int, ...] = ()
    max_queue_delay_ns: int = 0
    preserve_ordering: bool = False
    priority_levels: int = 1
    default_priority: int = 1
    default_policy: QueuePolicy = QueuePolicy()
    # the levels whose priority_queue_policy is their own (any other has default_policy)
    level_policies: tuple[tuple[int, QueuePolicy], ...] = ()
    # an encoder's batches: at most this many padded tokens (rows times the longest row); 0: rows
    max_batch_tokens: int = 0
    # ... and padded tokens at most this many times the tokens the rows have
    max_padding_ratio: float = 1.0
    # every batch formed as Triton's dynamic batcher forms it (the tritonserver command):
    # without preferred sizes, one waits up to the delay for max_batch_size rows at any load
    triton_batches: bool = False
    # the sizes a batch is sent at once at: the preferred ones, else max_batch_size
    # (Triton's aim without preferred sizes)
    aimed_sizes: tuple[int, ...] = field(init=False)
    # the rows a batch aims at: the largest of them
    target: int = field(init=False)
    # batches form as Triton's (the config names preferred sizes, or triton_batches; an
    # encoder's batch by tokens, never)
    toward_preferred: bool = field(init=False)

    def __post_init__(self) -> None:
        aimed = self.preferred or (self.max_batch_size,)
        object.__setattr__(self, "aimed_sizes", aimed)
        object.__setattr__(self, "target", aimed[-1])
        triton = bool(self.preferred) or self.triton_batches
        toward = self.batching and triton and not self.max_batch_tokens
        object.__setattr__(self, "toward_preferred", toward)

    def policy_of(self, level: int) -> QueuePolicy:
        for key, policy in self.level_policies:
            if key == level:
                return policy
        return self.default_policy

    def level_of(self, priority: int) -> int:
        """A request's level: its priority, or the default where it is 0 or past the
        levels (Triton's ``InferenceRequest::SetPriority``)."""
        return priority if 0 < priority <= self.priority_levels else self.default_priority

    @classmethod
    def from_config(
        cls, config: mc.ModelConfig, default_max_queue_size: int = 0, triton_batches: bool = False
    ) -> BatchingPolicy:
        batching = config.HasField("dynamic_batching") and config.max_batch_size > 0
        db = config.dynamic_batching
        levels = max(1, int(db.priority_levels))
        default_level = int(db.default_priority_level) or (levels + 1) // 2
        default_level = min(max(default_level, 1), levels)

        def capped(policy: QueuePolicy) -> QueuePolicy:
            if policy.max_queue_size == 0 and default_max_queue_size:
                return dataclasses.replace(policy, max_queue_size=default_max_queue_size)
            return policy

        own = tuple(
            sorted(
                (int(level), capped(QueuePolicy.from_proto(policy)))
                for level, policy in db.priority_queue_policy.items()
                if 0 < level <= levels
            )
        )
        preferred = tuple(
            sorted(p for p in db.preferred_batch_size if 0 < p <= config.max_batch_size)
        )
        return cls(
            max_batch_size=int(config.max_batch_size),
            batching=batching,
            preferred=preferred,
            max_queue_delay_ns=int(db.max_queue_delay_microseconds) * 1000,
            preserve_ordering=bool(db.preserve_ordering),
            priority_levels=levels,
            default_priority=default_level,
            default_policy=capped(QueuePolicy.from_proto(db.default_queue_policy)),
            level_policies=own,
            triton_batches=triton_batches,
        )


def priority_problem(config: mc.ModelConfig) -> str | None:
    """Why Triton refuses the config's priority levels at load (its words), or None."""
    db = config.dynamic_batching
    levels = int(db.priority_levels)
    if not config.HasField("dynamic_batching") or levels == 0:
        return None
    if not 1 <= db.default_priority_level <= levels:
        return f"default priority level must be in range [1, {levels}] for {config.name}"
    if any(not 1 <= level <= levels for level in db.priority_queue_policy):
        return (
            f"priority queue policy must have priority level in range [1, {levels}] for "
            f"{config.name}"
        )
    return None


@dataclass(eq=False, slots=True)
class QueuedRequest:
    rows: int
    shape_key: tuple[Any, ...]
    enqueued_ns: int
    deadline_ns: int | None = None  # queue timeout (policy or request override)
    client_deadline_ns: int | None = None  # the caller stops waiting then: always dropped
    level: int = 1
    seq: int = 0
    payload: Any = None  # the scheduler's own data (inputs, future ...)
    delayed: bool = field(default=False)
    tokens: int = 0  # an encoder's request: tokens per row (its sequence length)
    # the request a part of an encoder's request belongs to: without dynamic batching only
    # the parts of one request share a batch
    group: int = 0


@dataclass(slots=True)
class Expired:
    request: QueuedRequest
    error: ModelServerError


class RequestQueue:
    def __init__(self, model: str, version: int, policy: BatchingPolicy) -> None:
        self.model = model
        self.version = version
        self.policy = policy
        # the queue and the delayed queue of each level that holds requests (or has a
        # policy of its own), served in the order of _order
        self._levels: dict[int, deque[QueuedRequest]] = {}
        self._delayed: dict[int, deque[QueuedRequest]] = {}
        self._order: list[int] = []
        self._kept = {policy.default_priority, *(level for level, _ in policy.level_policies)}
        self._policies = dict(policy.level_policies)
        self._serving: list[deque[QueuedRequest]] = []  # _ordered's list, kept while in use
        for level in sorted(self._kept):
            self._level(level)
        self._default_queue = self._levels[policy.default_priority]
        self._default_policy = policy.policy_of(policy.default_priority)
        self._seq = 0
        self._next_expiry_ns: int | None = None
        self.size = 0
        self.rows = 0  # queued rows, every shape
        # the rows of the last batch answered, and when: their callers are due back
        self._returning_rows = 0
        self._answered_ns = 0
        # when the last request came, and the usual gap between requests that came to a
        # queue already holding some: the pace at which a batch's partners arrive
        self._last_add_ns = 0
        self._gap_ns = 0
        # an encoder's: what one execution costs beyond its tokens, in tokens (its scheduler
        # learns it from the executions' times); batching by tokens trades it for padding
        self.execution_tokens = DEFAULT_EXECUTION_TOKENS

    def __len__(self) -> int:
        return self.size

    def _level(self, level: int) -> deque[QueuedRequest]:
        queue = self._levels.get(level)
        if queue is None:
            queue = self._levels[level] = deque()
            self._delayed[level] = deque()
            bisect.insort(self._order, level)
            self._serving = self._in_order()
        return queue

    def _prune(self) -> None:
        """Forget the levels left empty (but the default's and those with a policy)."""
        if len(self._order) == len(self._kept):
            return
        for level in [
            level
            for level in self._order
            if level not in self._kept and not self._levels[level] and not self._delayed[level]
        ]:
            del self._levels[level], self._delayed[level]
            self._order.remove(level)
            self._serving = self._in_order()

    def add(
        self,
        request: QueuedRequest,
        now_ns: int,
        priority: int = 0,
        timeout_us: int = 0,
    ) -> None:
        """Queue a request, or raise at once if its level's queue is full."""
        if priority:
            level = self.policy.level_of(priority)
            policy = self._policies.get(level, self.policy.default_policy)
            queue = self._level(level)
        else:  # the usual request
            level = self.policy.default_priority
            policy = self._default_policy
            queue = self._default_queue
        limit = policy.max_queue_size
        if limit and len(queue) >= limit:
            raise self._full(level, len(queue), limit)
        request.level = level
        request.enqueued_ns = now_ns
        request.seq = self._seq
        self._seq += 1
        queue.append(request)
        if self.size:
            gap = now_ns - self._last_add_ns
            self._gap_ns += (gap - self._gap_ns) // _GAP_SMOOTHING if self._gap_ns else gap
        self._last_add_ns = now_ns
        self.size += 1
        self.rows += request.rows
        timeout_ns = policy.default_timeout_ns
        # a request may shorten its queue's timeout, never lengthen it (Triton's); where
        # the queue has none, any timeout is shorter
        shorter = timeout_us and (not timeout_ns or timeout_us * 1000 < timeout_ns)
        if shorter and policy.allow_timeout_override:
            timeout_ns = timeout_us * 1000
        if timeout_ns or request.client_deadline_ns is not None:  # the usual request has neither
            request.deadline_ns = now_ns + timeout_ns if timeout_ns else None
            for t in (request.deadline_ns, request.client_deadline_ns):
                if t is not None and (self._next_expiry_ns is None or t < self._next_expiry_ns):
                    self._next_expiry_ns = t

    def add_all(
        self, requests: list[QueuedRequest], now_ns: int, priority: int = 0, timeout_us: int = 0
    ) -> None:
        """Queue the parts of one request together, or none of them if they do not fit."""
        level = self.policy.level_of(priority)
        limit = self.policy.policy_of(level).max_queue_size
        queued = len(self._levels.get(level, ()))
        if limit and queued + len(requests) > limit:
            raise self._full(level, queued, limit)
        gap = self._gap_ns
        for index, request in enumerate(requests):
            self.add(request, now_ns, priority, timeout_us)
            if index == 0:
                gap = self._gap_ns  # parts come at once: the pace is the requests'
        self._gap_ns = gap

    def _full(self, level: int, queued: int, limit: int) -> ModelServerError:
        setting = (
            f"dynamic_batching.priority_queue_policy[{level}].max_queue_size"
            if self.policy.priority_levels > 1
            else "dynamic_batching.default_queue_policy.max_queue_size"
        )
        return ModelServerError.of(
            error_rules.QUEUE_FULL,
            f"Exceeds maximum queue size: queue of model '{self.model}' version "
            f"{self.version} is full ({queued}/{limit} requests at priority {level})",
            where=f"{setting} in {self.model}/config.pbtxt (or modelyard serve "
            "--max-queue-size), or add instances (instance_group.count)",
            retry_after=0.05,
            triton=True,
        )

    def expire(self, now_ns: int) -> list[Expired]:
        """Drop or delay requests whose time in queue is up."""
        if self._next_expiry_ns is None or now_ns <= self._next_expiry_ns:
            return []
        dropped: list[Expired] = []
        for level in self._order:
            queue = self._levels[level]
            delayed = self._delayed[level]
            if queue:
                delay = self.policy.policy_of(level).delay_on_timeout
                keep: deque[QueuedRequest] = deque()
                for request in queue:
                    client = request.client_deadline_ns
                    if client is not None and now_ns > client:
                        dropped.append(Expired(request, self._timeout_error(request, now_ns, True)))
                    elif request.deadline_ns is not None and now_ns > request.deadline_ns:
                        if delay:
                            request.delayed = True
                            delayed.append(request)
                        else:
                            dropped.append(
                                Expired(request, self._timeout_error(request, now_ns, False))
                            )
                    else:
                        keep.append(request)
                queue.clear()  # in place: _serving holds the deques
                queue.extend(keep)
            if delayed:
                keep = deque()
                for request in delayed:
                    client = request.client_deadline_ns
                    if client is not None and now_ns > client:
                        dropped.append(Expired(request, self._timeout_error(request, now_ns, True)))
                    else:
                        keep.append(request)
                delayed.clear()
                delayed.extend(keep)
        self.size -= len(dropped)
        self.rows -= sum(expired.request.rows for expired in dropped)
        self._next_expiry_ns = self.next_deadline_ns()
        self._prune()
        return dropped

    def _timeout_error(self, request: QueuedRequest, now_ns: int, client: bool) -> ModelServerError:
        waited_ms = (now_ns - request.enqueued_ns) / 1e6
        if client:
            return ModelServerError.of(
                error_rules.CLIENT_DEADLINE,  # gRPC's words lead, as a client's own deadline
                f"Deadline Exceeded: request to model '{self.model}' version {self.version} "
                f"passed its deadline after {waited_ms:.1f} ms in queue; it was dropped before "
                "execution",
            )
        return ModelServerError.of(
            error_rules.QUEUE_TIMEOUT,
            f"Request timeout expired: request to model '{self.model}' version "
            f"{self.version} timed out after {waited_ms:.1f} ms in queue; it was dropped "
            "before execution",
            where=f"dynamic_batching.default_queue_policy.default_timeout_microseconds in "
            f"{self.model}/config.pbtxt, or the request's timeout parameter",
            triton=True,
        )

    def _ordered(self) -> list[deque[QueuedRequest]]:
        """Each level's queue, then its delayed requests, level by level (Triton's)."""
        return self._serving

    def _in_order(self) -> list[deque[QueuedRequest]]:
        ordered: list[deque[QueuedRequest]] = []
        for level in self._order:
            ordered += (self._levels[level], self._delayed[level])
        return ordered

    def next_deadline_ns(self) -> int | None:
        """The earliest time at which a queued request times out."""
        times = [
            t
            for queue in self._ordered()
            for r in queue
            for t in (r.deadline_ns, r.client_deadline_ns)
            if t is not None
        ]
        return min(times) if times else None

    def answered(self, rows: int, now_ns: int) -> None:
        """A batch of ``rows`` rows was answered at ``now_ns``.

        Closed-loop callers (the usual client: a thread or connection that sends its next
        request once answered) come back: ``take`` waits up to the delay for as many rows.
        On a core shared by the event loop and the instance, running whatever is queued the
        moment the instance is free ran each execution before the loop had read the
        requests waiting in its sockets (a 32-row load formed batches of 4.8 rows).
        """
        self._returning_rows = rows
        self._answered_ns = now_ns

    def worth_a_look(self, request: QueuedRequest) -> bool:
        """Whether a waiting instance should look at the queue now that ``request`` came.

        Otherwise it sleeps on to the time ``take`` gave it: waking it for every request
        of a batch it waits for costs a thread switch and the GIL each time.
        """
        policy = self.policy
        rows = self.rows
        return (
            self.size == 1
            or rows - request.rows < self._returning_rows <= rows  # the callers are back
            or rows >= policy.target
            or policy.toward_preferred  # a preferred size, a new shape: each may send
            or not policy.batching
            or policy.max_queue_delay_ns == 0
            or request.deadline_ns is not None
            or request.client_deadline_ns is not None
        )

    def take(
        self, now_ns: int, executing: int, hold: bool = True
    ) -> list[QueuedRequest] | int | None:
        """A batch to run now, else the time (ns) to look again, else None (queue empty).

        ``hold``: wait for the callers of the last batch answered (False: only while
        another instance executes, for a caller that runs what it takes at once). A model
        with preferred sizes forms its batches as Triton (``_toward_preferred``) either way.
        """
        head: QueuedRequest | None = None
        for queue in self._ordered():
            if queue:
                head = queue[0]
                break
        if head is None:
            return None
        policy = self.policy
        if policy.max_batch_tokens:
            chosen, full = self._by_tokens(head)
            rows = sum(map(_ROWS, chosen))
        elif not policy.batching:
            return self._remove([head])
        elif policy.toward_preferred:
            return self._toward_preferred(head, now_ns)
        else:
            limit = policy.max_batch_size
            chosen = []
            rows = 0
            for queue in self._ordered():
                for request in queue:
                    if request.shape_key != head.shape_key:
                        continue
                    if rows + request.rows > limit:
                        break
                    chosen.append(request)
                    rows += request.rows
                if rows >= limit:
                    break
            full = rows >= policy.target
        delay = policy.max_queue_delay_ns
        if not full and policy.batching and delay > 0 and now_ns - head.enqueued_ns < delay:
            if executing > 0:
                return head.enqueued_ns + delay
            if hold:
                # the callers are back when as many rows are queued, of any shape: a
                # batch of one shape must not wait for rows of its shape that may not come
                if self.rows < self._returning_rows and now_ns - self._answered_ns < delay:
                    return min(head.enqueued_ns, self._answered_ns) + delay
                # partners still arriving at their usual pace: wait for the next one
                if self._returning_rows > 1 and now_ns - self._last_add_ns < 2 * self._gap_ns:
                    return min(self._last_add_ns + 2 * self._gap_ns, head.enqueued_ns + delay)
        return self._remove(chosen)

    def _toward_preferred(self, head: QueuedRequest, now_ns: int) -> list[QueuedRequest] | int:
        """Triton's dynamic batch (where the config names preferred sizes, or as Triton's
        server): a batch to run now, else when to look again (the delay from the head's
        arrival). Without preferred sizes Triton aims at ``max_batch_size``."""
        policy = self.policy
        limit = policy.max_batch_size
        preferred = policy.aimed_sizes
        largest = policy.target
        chosen: list[QueuedRequest] = []
        rows = 0
        best = 0  # requests in the batch to send at once: a preferred size, or saturated
        send_now = False
        for queue in self._ordered():
            for request in queue:
                if chosen:
                    more = rows + request.rows
                    if more > largest and not best:
                        best = len(chosen)
                    if more > limit or request.shape_key != head.shape_key:
                        send_now = True
                        break
                chosen.append(request)
                rows += request.rows
                if rows in preferred:
                    best = len(chosen)
            if send_now:
                break
        delay = policy.max_queue_delay_ns
        waited_out = now_ns - head.enqueued_ns >= delay
        if best and not (delay and waited_out):
            return self._remove(chosen[:best])
        if send_now or rows >= largest or waited_out:
            return self._remove(chosen)
        return head.enqueued_ns + delay

    def _by_tokens(self, head: QueuedRequest) -> tuple[list[QueuedRequest], bool]:
        """The head and the queued requests nearest its length: (the batch, whether it is full).

        Candidates are sorted by tokens per row (stable: in the order of service among equal
        lengths). The batch grows from the head to a neighbour, a shorter row or the rows of
        the next longer length, while that lowers its cost per real token: its padded tokens
        (rows times the longest) plus an execution's own cost in tokens
        (``execution_tokens``), over the tokens its rows have. Rows of one length always
        join; rows of another join while the execution they share saves more than the
        padding they add. Rows, padded tokens and their ratio to the real ones stay within
        the policy, so a long text never makes short ones pay its length.
        """
        policy = self.policy
        key = head.shape_key
        group = 0 if policy.batching else head.group
        candidates = [
            r
            for queue in self._ordered()
            for r in queue
            if r.shape_key == key and (not group or r.group == group)
        ]
        candidates.sort(key=_TOKENS)
        low = high = candidates.index(head)
        limit = policy.max_batch_size or head.rows
        budget = policy.max_batch_tokens
        ratio = policy.max_padding_ratio
        overhead = self.execution_tokens
        rows = head.rows
        real = head.rows * head.tokens
        longest = head.tokens
        last = len(candidates) - 1
        while True:
            cost = (rows * longest + overhead) / max(real, 1)
            best = cost
            step = None  # (side, requests taken, rows, real tokens, longest)
            if low > 0:
                shorter = candidates[low - 1]
                more_rows = rows + shorter.rows
                more_real = real + shorter.rows * shorter.tokens
                padded = more_rows * longest
                if more_rows <= limit and padded <= budget and padded <= ratio * more_real:
                    then = (padded + overhead) / max(more_real, 1)
                    if then <= best:
                        best, step = then, (-1, 1, more_rows, more_real, longest)
            if high < last:
                length = candidates[high + 1].tokens
                more_rows, more_real, taken = rows, real, 0
                for request in candidates[high + 1 :]:  # the next length's rows, as fit
                    if request.tokens != length or (more_rows + request.rows) * length > budget:
                        break
                    if more_rows + request.rows > limit:
                        break
                    more_rows += request.rows
                    more_real += request.rows * request.tokens
                    taken += 1
                padded = more_rows * length
                if taken and padded <= ratio * more_real:
                    then = (padded + overhead) / max(more_real, 1)
                    if then <= best:
                        best, step = then, (1, taken, more_rows, more_real, length)
            if step is None:
                break
            side, taken, rows, real, longest = step
            if side < 0:
                low -= 1
            else:
                high += taken
        chosen = candidates[low : high + 1]
        full = rows >= policy.target or (rows + 1) * longest > budget
        return chosen, full

    def _remove(self, chosen: list[QueuedRequest]) -> list[QueuedRequest]:
        self.size -= len(chosen)
        self.rows -= sum(map(_ROWS, chosen))
        count = len(chosen)
        for queue in self._ordered():  # the usual case: the head of one queue
            if queue and queue[0] is chosen[0]:
                if count <= len(queue):
                    popped = [queue.popleft() for _ in range(count)]
                    if all(map(operator.is_, popped, chosen)):
                        self._prune()
                        return chosen
                    queue.extendleft(reversed(popped))  # not a prefix: put them back
                break
        ids = {id(r) for r in chosen}
        for queues in (self._levels, self._delayed):
            for queue in queues.values():
                if any(id(r) in ids for r in queue):
                    kept = [r for r in queue if id(r) not in ids]
                    queue.clear()
                    queue.extend(kept)
        self._prune()
        return chosen

    def drain(self) -> list[QueuedRequest]:
        everything = [r for queue in self._ordered() for r in queue]
        for queue in self._ordered():
            queue.clear()
        self._prune()
        self.size = 0
        self.rows = 0
        return everything
