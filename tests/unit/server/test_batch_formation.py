"""Batch formation on explicit times: delay, preferred sizes, priorities, timeouts."""

from __future__ import annotations

import dataclasses

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import Code, ModelServerError
from modelyard.server.batcher import (
    BatchingPolicy,
    QueuedRequest,
    RequestQueue,
    priority_problem,
)
from modelyard.server.scheduler import failure_reason

MS = 1_000_000  # ns
SHAPE = (("x", (4,), "<f4"),)


def policy(text: str, max_batch_size: int = 8, default_max_queue_size: int = 0) -> BatchingPolicy:
    config = text_format.Parse(text, mc.ModelConfig())
    config.max_batch_size = max_batch_size
    return BatchingPolicy.from_config(config, default_max_queue_size)


def req(rows: int = 1, shape: tuple[object, ...] = SHAPE, tag: str = "") -> QueuedRequest:
    return QueuedRequest(rows=rows, shape_key=shape, enqueued_ns=0, payload=tag)


def tags(batch: object) -> list[str]:
    assert isinstance(batch, list)
    return [r.payload for r in batch]


def test_an_idle_model_runs_a_lone_request_at_once_despite_the_delay() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching { max_queue_delay_microseconds: 5000 }"))
    queue.add(req(tag="a"), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a"]


def test_as_tritonserver_a_batch_waits_the_delay_for_max_batch_size_at_any_load() -> None:
    config = text_format.Parse(
        "dynamic_batching { max_queue_delay_microseconds: 5000 }", mc.ModelConfig(max_batch_size=4)
    )
    queue = RequestQueue("m", 1, BatchingPolicy.from_config(config, triton_batches=True))
    queue.add(req(tag="a"), now_ns=0)
    queue.add(req(tag="b"), now_ns=1 * MS)
    assert queue.take(now_ns=1 * MS, executing=0) == 5 * MS  # an idle model waits too
    queue.add(req(tag="c"), now_ns=2 * MS)
    queue.add(req(tag="d"), now_ns=3 * MS)
    queue.add(req(tag="e"), now_ns=3 * MS)
    assert tags(queue.take(now_ns=3 * MS, executing=0)) == ["a", "b", "c", "d"]  # full
    assert queue.take(now_ns=4 * MS, executing=0) == 8 * MS
    assert tags(queue.take(now_ns=8 * MS, executing=0)) == ["e"]  # the delay is out


def test_the_delay_is_honoured_while_another_instance_executes() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching { max_queue_delay_microseconds: 5000 }"))
    queue.add(req(tag="a"), now_ns=0)
    assert queue.take(now_ns=1 * MS, executing=1) == 5 * MS  # wait until the delay ends
    queue.add(req(tag="b"), now_ns=2 * MS)
    assert queue.take(now_ns=3 * MS, executing=1) == 5 * MS
    assert tags(queue.take(now_ns=5 * MS, executing=1)) == ["a", "b"]


def test_a_full_batch_does_not_wait_for_the_delay() -> None:
    queue = RequestQueue(
        "m", 1, policy("dynamic_batching { max_queue_delay_microseconds: 5000 }", 4)
    )
    for tag in "abcde":
        queue.add(req(tag=tag), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=1)) == ["a", "b", "c", "d"]
    assert len(queue) == 1


def test_preferred_sizes_cut_the_batch_at_the_largest_reachable_size() -> None:
    queue = RequestQueue(
        "m", 1, policy("dynamic_batching { preferred_batch_size: [2, 4] }", max_batch_size=8)
    )
    for tag in "abcdef":
        queue.add(req(tag=tag), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a", "b", "c", "d"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["e", "f"]


# as Triton's L0_batcher models, the delay in milliseconds
PREFERRED = "dynamic_batching { max_queue_delay_microseconds: 5000 preferred_batch_size: [2, 6] }"
OTHER = (("x", (5,), "<f4"),)


def preferred_queue() -> RequestQueue:
    return RequestQueue("m", 1, policy(PREFERRED, max_batch_size=8))


def test_below_a_preferred_size_a_batch_waits_the_delay_for_one() -> None:
    # the config asks for batches of 2 or 6: as in Triton, a lone request waits for a
    # partner up to the delay from its arrival, even on an idle model after a lone answer
    queue = preferred_queue()
    queue.answered(1, now_ns=0)
    queue.add(req(tag="a"), now_ns=1 * MS)
    assert queue.take(now_ns=1 * MS, executing=0) == 6 * MS
    assert queue.take(now_ns=2 * MS, executing=0, hold=False) == 6 * MS
    queue.add(req(tag="b"), now_ns=3 * MS)
    assert tags(queue.take(now_ns=3 * MS, executing=0)) == ["a", "b"]


def test_a_batch_that_reaches_no_preferred_size_runs_as_it_is_when_the_delay_is_out() -> None:
    queue = preferred_queue()
    queue.add(req(rows=3, tag="a"), now_ns=0)  # 3 rows: between the sizes, never cut
    assert queue.take(now_ns=4 * MS, executing=0) == 5 * MS
    assert tags(queue.take(now_ns=5 * MS, executing=0)) == ["a"]


def test_the_longest_run_of_requests_at_a_preferred_size_runs_at_once() -> None:
    queue = preferred_queue()
    for tag in "abc":
        queue.add(req(tag=tag), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a", "b"]
    assert queue.take(now_ns=0, executing=0) == 5 * MS  # "c" waits for a partner
    for tag, rows in zip("defg", [1, 1, 1, 2], strict=True):
        queue.add(req(rows=rows, tag=tag), now_ns=1 * MS)
    # runs of 2 and of 6 rows: the longer runs
    assert tags(queue.take(now_ns=1 * MS, executing=0)) == ["c", "d", "e", "f", "g"]


def test_a_request_that_would_pass_the_largest_preferred_size_sends_the_batch_before_it() -> None:
    queue = preferred_queue()
    queue.add(req(rows=3, tag="a"), now_ns=0)
    assert queue.take(now_ns=1 * MS, executing=0) == 5 * MS
    queue.add(req(rows=4, tag="b"), now_ns=1 * MS)
    assert tags(queue.take(now_ns=1 * MS, executing=0)) == ["a"]
    assert queue.take(now_ns=1 * MS, executing=0) == 6 * MS  # "b" waits from its arrival
    queue.add(req(rows=6, tag="c"), now_ns=2 * MS)  # past max_batch_size with "b": send
    assert tags(queue.take(now_ns=2 * MS, executing=0)) == ["b"]
    assert tags(queue.take(now_ns=2 * MS, executing=0)) == ["c"]  # the largest size


def test_a_request_of_another_shape_next_sends_the_batch_as_it_is() -> None:
    queue = preferred_queue()
    queue.add(req(tag="a"), now_ns=0)
    queue.add(req(shape=OTHER, tag="b"), now_ns=1 * MS)
    queue.add(req(tag="c"), now_ns=1 * MS)  # behind "b": Triton's batch stops at "b"
    assert tags(queue.take(now_ns=1 * MS, executing=0)) == ["a"]
    assert tags(queue.take(now_ns=1 * MS, executing=0)) == ["b"]
    assert queue.take(now_ns=1 * MS, executing=0) == 6 * MS


def test_without_a_delay_preferred_sizes_only_cut_what_is_queued() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching { preferred_batch_size: [4, 6] }"))
    queue.add(req(tag="a"), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a"]
    for tag in "bcdef":
        queue.add(req(tag=tag), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["b", "c", "d", "e"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["f"]


def test_a_model_with_preferred_sizes_looks_at_every_request() -> None:
    # each may complete a preferred size, pass the largest, or bring another shape
    queue = preferred_queue()
    queue.answered(8, now_ns=0)
    looks = []
    for _ in range(4):
        request = req()
        queue.add(request, now_ns=0)
        looks.append(queue.worth_a_look(request))
    assert looks == [True] * 4


def test_an_encoders_token_batches_never_form_toward_preferred_sizes() -> None:
    tokens = dataclasses.replace(policy(PREFERRED), max_batch_tokens=512)
    assert policy(PREFERRED).toward_preferred and not tokens.toward_preferred


def test_requests_with_different_shapes_never_share_a_batch() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching {}"))
    other = (("x", (5,), "<f4"),)
    queue.add(req(tag="a"), now_ns=0)
    queue.add(req(shape=other, tag="b"), now_ns=0)
    queue.add(req(tag="c"), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a", "c"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["b"]


def test_rows_never_exceed_max_batch_size_and_order_is_kept() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching {}", max_batch_size=8))
    for tag, rows in zip("abcd", [3, 4, 2, 1], strict=True):
        queue.add(req(rows=rows, tag=tag), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a", "b"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["c", "d"]


def test_higher_priority_is_served_first() -> None:
    queue = RequestQueue(
        "m", 1, policy("dynamic_batching { priority_levels: 3 default_priority_level: 2 }", 2)
    )
    queue.add(req(tag="low"), now_ns=0, priority=3)
    queue.add(req(tag="default"), now_ns=0)
    queue.add(req(tag="high"), now_ns=0, priority=1)
    assert tags(queue.take(now_ns=0, executing=0)) == ["high", "default"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["low"]


def test_a_priority_past_the_levels_takes_the_default_level_as_in_triton() -> None:
    queue = RequestQueue(
        "m", 1, policy("dynamic_batching { priority_levels: 3 default_priority_level: 2 }", 1)
    )
    queue.add(req(tag="low"), now_ns=0, priority=3)
    queue.add(req(tag="past"), now_ns=0, priority=4)
    queue.add(req(tag="high"), now_ns=0, priority=1)
    assert [tags(queue.take(now_ns=0, executing=0)) for _ in range(3)] == [
        ["high"], ["past"], ["low"],
    ]  # fmt: skip


def test_a_full_queue_rejects_at_once_naming_the_setting() -> None:
    queue = RequestQueue(
        "ranker", 3, policy("dynamic_batching { default_queue_policy { max_queue_size: 2 } }")
    )
    queue.add(req(), now_ns=0)
    queue.add(req(), now_ns=0)
    with pytest.raises(ModelServerError) as full:
        queue.add(req(), now_ns=0)
    assert full.value.code is Code.UNAVAILABLE
    line = full.value.line()
    assert line.startswith(
        "Exceeds maximum queue size: queue of model 'ranker' version 3 is full (2/2 requests "
        "at priority 1)"
    )  # Triton's words first
    assert "dynamic_batching.default_queue_policy.max_queue_size in ranker/config.pbtxt" in line
    assert failure_reason(full.value) == "REJECTED"  # Triton's reason for a full queue


def test_the_server_wide_queue_cap_applies_when_the_config_sets_none() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching {}", default_max_queue_size=1))
    queue.add(req(), now_ns=0)
    with pytest.raises(ModelServerError):
        queue.add(req(), now_ns=0)


def test_timeout_reject_drops_the_request_before_execution() -> None:
    queue = RequestQueue(
        "m",
        1,
        policy(
            "dynamic_batching { default_queue_policy { default_timeout_microseconds: 1000 "
            "timeout_action: REJECT } }"
        ),
    )
    queue.add(req(tag="late"), now_ns=0)
    assert queue.expire(now_ns=1 * MS) == []
    expired = queue.expire(now_ns=2 * MS)
    assert [e.request.payload for e in expired] == ["late"]
    assert expired[0].error.code is Code.UNAVAILABLE
    assert "dropped before execution" in expired[0].error.line()
    assert failure_reason(expired[0].error) == "REJECTED"
    assert queue.take(now_ns=2 * MS, executing=0) is None


def test_timeout_delay_serves_the_late_request_after_those_in_time() -> None:
    queue = RequestQueue(
        "m",
        1,
        policy(
            "dynamic_batching { default_queue_policy { default_timeout_microseconds: 1000 "
            "timeout_action: DELAY } }",
            max_batch_size=1,
        ),
    )
    queue.add(req(tag="old"), now_ns=0)
    queue.add(req(tag="fresh"), now_ns=int(1.5 * MS))
    assert queue.expire(now_ns=2 * MS) == []
    assert tags(queue.take(now_ns=2 * MS, executing=0)) == ["fresh"]
    assert tags(queue.take(now_ns=2 * MS, executing=0)) == ["old"]


def test_request_timeout_overrides_only_when_allowed() -> None:
    strict = RequestQueue("m", 1, policy("dynamic_batching {}"))
    strict.add(req(tag="a"), now_ns=0, timeout_us=1000)
    assert strict.expire(now_ns=10 * MS) == []
    allowed = RequestQueue(
        "m", 1, policy("dynamic_batching { default_queue_policy { allow_timeout_override: true } }")
    )
    allowed.add(req(tag="a"), now_ns=0, timeout_us=1000)
    assert [e.request.payload for e in allowed.expire(now_ns=2 * MS)] == ["a"]


def test_a_client_deadline_always_drops_with_deadline_exceeded() -> None:
    queue = RequestQueue("m", 1, policy("dynamic_batching {}"))
    request = req(tag="gone")
    request.client_deadline_ns = 1 * MS
    queue.add(request, now_ns=0)
    expired = queue.expire(now_ns=2 * MS)
    assert expired[0].error.code is Code.DEADLINE_EXCEEDED
    assert expired[0].error.rule == "model-server/client-deadline"
    # the words a gRPC client reads of its own deadline lead (L0_grpc_state_cleanup)
    assert expired[0].error.detail.startswith("Deadline Exceeded: request to model 'm'")


def test_without_dynamic_batching_each_request_runs_alone() -> None:
    queue = RequestQueue("m", 1, policy(""))
    queue.add(req(tag="a"), now_ns=0)
    queue.add(req(tag="b"), now_ns=0)
    assert tags(queue.take(now_ns=0, executing=0)) == ["a"]
    assert tags(queue.take(now_ns=0, executing=0)) == ["b"]


def test_any_count_of_levels_costs_only_the_levels_in_use() -> None:
    """Triton's L0_model_queue names 2^64-1 levels with a default of 2^32: a queue per
    level in use, forgotten once empty."""
    levels = policy(
        "dynamic_batching { priority_levels: 18446744073709551615 "
        "default_priority_level: 4294967296 }",
        1,
    )
    queue = RequestQueue("m", 1, levels)
    queue.add(req(tag="default"), now_ns=0)
    queue.add(req(tag="last"), now_ns=0, priority=18446744073709551615)
    queue.add(req(tag="first"), now_ns=0, priority=1)
    assert len(queue._order) == 3
    assert [tags(queue.take(now_ns=0, executing=0)) for _ in range(3)] == [
        ["first"], ["default"], ["last"],
    ]  # fmt: skip
    assert queue._order == [4294967296]  # the default level's queue stays


def test_a_delayed_request_is_served_before_the_next_levels() -> None:
    """Triton keeps a level's timed-out DELAY requests right after that level's queue."""
    queue = RequestQueue(
        "m",
        1,
        policy(
            "dynamic_batching { priority_levels: 2 default_priority_level: 2 "
            "default_queue_policy { timeout_action: DELAY allow_timeout_override: true "
            "default_timeout_microseconds: 10000 } }",
            1,
        ),
    )
    queue.add(req(tag="late"), now_ns=0, priority=1, timeout_us=1000)
    queue.add(req(tag="level2"), now_ns=0, priority=2)
    queue.add(req(tag="level1"), now_ns=1 * MS, priority=1)
    assert queue.expire(now_ns=2 * MS) == []
    assert [tags(queue.take(now_ns=2 * MS, executing=0)) for _ in range(3)] == [
        ["level1"], ["late"], ["level2"],
    ]  # fmt: skip


def test_a_request_may_shorten_its_timeout_never_lengthen_it() -> None:
    queue = RequestQueue(
        "m",
        1,
        policy(
            "dynamic_batching { default_queue_policy { allow_timeout_override: true "
            "default_timeout_microseconds: 1000 } }"
        ),
    )
    queue.add(req(tag="longer"), now_ns=0, timeout_us=10_000)
    queue.add(req(tag="shorter"), now_ns=0, timeout_us=500)
    assert [e.request.payload for e in queue.expire(now_ns=int(0.6 * MS))] == ["shorter"]
    assert [e.request.payload for e in queue.expire(now_ns=int(1.1 * MS))] == ["longer"]


@pytest.mark.parametrize(
    ("batching", "problem"),
    [
        ("priority_levels: 2", "default priority level must be in range [1, 2] for m"),
        ("priority_levels: 2 default_priority_level: 3", "default priority level must be in"),
        (
            "priority_levels: 2 default_priority_level: 1 "
            "priority_queue_policy { key: 3 value: { max_queue_size: 1 } }",
            "priority queue policy must have priority level in range [1, 2] for m",
        ),
        ("priority_levels: 2 default_priority_level: 2", None),
        ("", None),
    ],
)
def test_priority_levels_out_of_range_are_refused_at_load_in_tritons_words(
    batching: str, problem: str | None
) -> None:
    config = text_format.Parse(f'name: "m" dynamic_batching {{ {batching} }}', mc.ModelConfig())
    found = priority_problem(config)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)
