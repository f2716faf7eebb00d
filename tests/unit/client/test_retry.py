"""Retry decisions per error, and the retry budget on a fake clock."""

from __future__ import annotations

import grpc
import orjson
import pytest

from modelyard.client.retry import Action, RetryBudget, RetryPolicy, counts_as_failure
from modelyard.client.transport import (
    ClientError,
    connection_error,
    deadline_error,
    error_from_grpc,
    error_from_http,
)
from modelyard.clock import FakeClock
from modelyard.errors import Code, EngineError, GovernanceError, ModelServerError, ProtocolError
from modelyard.frontdoors.http import _error_response

QUEUE_FULL = ModelServerError(
    "queue of model 'm' version 1 is full", code=Code.UNAVAILABLE, retry_after=0.05
)
RATE_LIMITED = GovernanceError(
    "request rejected: 100 qps", code=Code.RESOURCE_EXHAUSTED, rule="limit/x", retry_after=0.2
)
UNKNOWN_MODEL = ModelServerError("unknown model 'm'", code=Code.NOT_FOUND)
NO_VERSION = ModelServerError(  # Triton's wording first, as the instance words it
    "Request for unknown model: 'm' has no available versions",
    code=Code.UNAVAILABLE,
    rule="model-server/no-ready-version",
    retry_after=1.0,
)
BAD_INPUT = ModelServerError("missing input 'x' for model 'm'", code=Code.INVALID_ARGUMENT)
MODEL_FAILED = EngineError("the model refuses negative input", code=Code.INTERNAL)
TOO_LARGE = ProtocolError("request body too large", code=Code.PAYLOAD_TOO_LARGE)


@pytest.mark.parametrize(
    ("error", "action"),
    [
        (connection_error("127.0.0.1:1", "connection refused"), Action.RETRY_ELSEWHERE),
        (QUEUE_FULL, Action.RETRY_ELSEWHERE),
        (GovernanceError("breaker open", code=Code.UNAVAILABLE), Action.RETRY_ELSEWHERE),
        (UNKNOWN_MODEL, Action.RETRY_ELSEWHERE),
        (RATE_LIMITED, Action.WAIT_AND_RETRY),
        (BAD_INPUT, Action.FAIL),
        (MODEL_FAILED, Action.FAIL),
        (TOO_LARGE, Action.FAIL),
        (deadline_error("127.0.0.1:1", 1.0), Action.FAIL),
        (ClientError("no instance has model 'm'", code=Code.NOT_FOUND), Action.FAIL),
    ],
)
def test_what_each_error_leads_to(error: ClientError, action: Action) -> None:
    assert RetryPolicy().decide(error, attempts=1, remaining=5.0).action is action


def test_a_rate_limit_is_waited_out_only_when_the_wait_fits_the_deadline() -> None:
    policy = RetryPolicy()
    decision = policy.decide(RATE_LIMITED, attempts=1, remaining=0.5)
    assert (decision.action, decision.delay) == (Action.WAIT_AND_RETRY, 0.2)
    assert policy.decide(RATE_LIMITED, attempts=1, remaining=0.2).action is Action.FAIL
    no_hint = GovernanceError("request rejected", code=Code.RESOURCE_EXHAUSTED)
    assert policy.decide(no_hint, attempts=1, remaining=5.0).action is Action.FAIL


def test_no_retry_past_the_attempt_limit_or_the_deadline() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert policy.decide(QUEUE_FULL, attempts=2, remaining=1.0).action is Action.RETRY_ELSEWHERE
    assert policy.decide(QUEUE_FULL, attempts=3, remaining=1.0).action is Action.FAIL
    assert policy.decide(QUEUE_FULL, attempts=1, remaining=0.0).action is Action.FAIL


def test_only_unavailability_counts_against_an_instance() -> None:
    assert counts_as_failure(connection_error("127.0.0.1:1", "reset")) is True
    assert counts_as_failure(QUEUE_FULL) is True
    for error in (RATE_LIMITED, BAD_INPUT, MODEL_FAILED, UNKNOWN_MODEL):
        assert counts_as_failure(error) is None


def test_the_budget_allows_the_minimum_rate_with_no_traffic() -> None:
    clock = FakeClock()
    budget = RetryBudget(ratio=0.2, min_per_second=3.0, window=10.0, clock=clock)
    assert sum(budget.try_spend() for _ in range(100)) == 30


def test_the_budget_grows_by_the_ratio_of_requests() -> None:
    clock = FakeClock()
    budget = RetryBudget(ratio=0.2, min_per_second=0.0, window=10.0, clock=clock)
    for _ in range(1000):
        budget.on_request()
    assert sum(budget.try_spend() for _ in range(1000)) == 200


def test_spent_retries_come_back_as_the_window_moves_on() -> None:
    clock = FakeClock()
    budget = RetryBudget(ratio=0.2, min_per_second=1.0, window=10.0, clock=clock)
    assert sum(budget.try_spend() for _ in range(50)) == 10
    clock.advance(5.0)
    assert not budget.try_spend()
    clock.advance(5.0)  # the second the retries were spent in has left the window
    assert sum(budget.try_spend() for _ in range(50)) == 10


def test_requests_leave_the_window_too() -> None:
    clock = FakeClock()
    budget = RetryBudget(ratio=0.5, min_per_second=0.0, window=10.0, clock=clock)
    for _ in range(100):
        budget.on_request()
    clock.advance(10.0)
    assert budget.available() == 0
    assert not budget.try_spend()


def test_an_instance_error_line_comes_back_as_its_layer_with_its_fields() -> None:
    body = orjson.dumps({"error": RATE_LIMITED.line()})
    parsed = error_from_http(429, body, retry_after="1")
    assert isinstance(parsed, GovernanceError)
    assert (parsed.code, parsed.rule, parsed.retry_after) == (
        Code.RESOURCE_EXHAUSTED,
        "limit/x",
        0.2,
    )
    assert parsed.line() == RATE_LIMITED.line()
    assert RetryPolicy().decide(parsed, attempts=1, remaining=1.0).action is Action.WAIT_AND_RETRY

    # Triton's wording first (clients match on it): the layer is the rule's
    unknown = ModelServerError(
        "Request for unknown model: 'm' is not found",
        code=Code.NOT_FOUND,
        rule="model-server/unknown-model",
        where="GET /v2/repository/index lists the models",
    )
    assert unknown.line().startswith("Request for unknown model: 'm' is not found; rule=")
    back = error_from_http(404, orjson.dumps({"error": unknown.line()}), retry_after=None)
    assert isinstance(back, ModelServerError) and back.line() == unknown.line()
    assert (back.code, back.rule, back.detail) == (Code.NOT_FOUND, unknown.rule, unknown.detail)

    plain = error_from_http(502, b"<html>bad gateway</html>", retry_after=None)
    assert isinstance(plain, ModelServerError)
    assert (plain.code, plain.rule) == (Code.UNAVAILABLE, "http/502")


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


@pytest.mark.parametrize(
    ("code", "details", "action"),
    [
        (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses", Action.RETRY_ELSEWHERE),
        (grpc.StatusCode.CANCELLED, "CANCELLED", Action.RETRY_ELSEWHERE),  # server shutting down
        (grpc.StatusCode.UNAVAILABLE, QUEUE_FULL.line(), Action.RETRY_ELSEWHERE),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMITED.line(), Action.WAIT_AND_RETRY),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_LARGE.line(), Action.FAIL),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", Action.FAIL),
        (grpc.StatusCode.INTERNAL, MODEL_FAILED.line(), Action.FAIL),
        (grpc.StatusCode.UNAVAILABLE, NO_VERSION.line(), Action.RETRY_ELSEWHERE),
    ],
)
def test_grpc_statuses_lead_to_the_same_decisions(
    code: grpc.StatusCode, details: str, action: Action
) -> None:
    error = error_from_grpc(rpc_error(code, details), "127.0.0.1:1", timeout=1.0)
    assert RetryPolicy().decide(error, attempts=1, remaining=1.0).action is action
    if "; rule=" in details:  # an instance's line comes back as it was, as its layer's error
        assert error.line() == details and error.rule == details.split("; rule=")[1].split(";")[0]


def test_a_forwarded_rejection_keeps_the_instance_headers_and_one_retry_after() -> None:
    rejection = GovernanceError(
        "rate limited", code=Code.RESOURCE_EXHAUSTED, rule="ratelimit/instance-qps"
    )
    rejection.retry_after = 0.003  # a few ms to the next token: the line never says 0.00
    assert rejection.line().endswith("; retry after 0.01s")
    sent = {
        "Content-Type": "application/json",
        "Content-Length": "99",
        "Retry-After": "1",
        "RateLimit-Reset": "1",
        "RateLimit-Limit": "5",
        "X-Request-Id": "abc",
    }
    parsed = error_from_http(429, orjson.dumps({"error": rejection.line()}), "1", sent)
    assert parsed.line() == rejection.line()
    assert parsed.reply_headers == (
        ("retry-after", "1"),
        ("ratelimit-reset", "1"),
        ("ratelimit-limit", "5"),
        ("x-request-id", "abc"),
    )
    response = _error_response(parsed)
    names = [key for key, _ in response.headers]
    assert names.count(b"retry-after") == 1 and names.count(b"content-type") == 1
    assert (b"x-request-id", b"abc") in response.headers
    assert (b"ratelimit-limit", b"5") in response.headers

    # the header is the line's value rounded up, never below it
    for seconds, line, header in [(0.0, "0.01", "1"), (1.004, "1.01", "2"), (2.6, "2.60", "3")]:
        own = GovernanceError("x", code=Code.RESOURCE_EXHAUSTED, retry_after=seconds)
        assert own.line().endswith(f"retry after {line}s")
        assert (b"retry-after", header.encode()) in _error_response(own).headers
