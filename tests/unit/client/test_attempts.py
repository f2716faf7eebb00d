"""Attempt deadlines per interface: derived from a model's observed latency, or set."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.cli.gateway import gateway_args
from modelyard.client import AsyncClient
from modelyard.client.attempts import (
    DEFAULT_ATTEMPT_SECS,
    LATENCY_MULTIPLE,
    MIN_ATTEMPT_SECS,
    MIN_SAMPLES,
    AttemptPolicy,
    AttemptRule,
    parse_timeout,
)
from tests.support.memory_registry import MemoryRegistry


def test_auto_is_the_default_constant_until_the_latency_is_known_then_a_multiple_of_p99() -> None:
    policy = AttemptPolicy()
    rule = policy.rule("infer")
    assert rule.timeout == "auto"
    for _ in range(MIN_SAMPLES - 1):
        policy.answered("m", 0.2)
    assert policy.timeout(rule, "m") == DEFAULT_ATTEMPT_SECS  # not enough answers yet
    for _ in range(64):
        policy.answered("m", 0.2)
    assert policy.timeout(rule, "m") == pytest.approx(LATENCY_MULTIPLE * 0.2)
    for _ in range(64):
        policy.answered("fast", 0.001)
    assert policy.timeout(rule, "fast") == MIN_ATTEMPT_SECS  # a floor for busy healthy hosts


def test_the_window_follows_the_latency_as_it_moves() -> None:
    policy = AttemptPolicy()
    for _ in range(300):
        policy.answered("m", 0.01)
    for _ in range(300):
        policy.answered("m", 0.5)
    assert policy.timeout(policy.rule("infer"), "m") == pytest.approx(LATENCY_MULTIPLE * 0.5)


def test_rules_per_interface_and_declared_interfaces_by_model() -> None:
    policy = AttemptPolicy(
        AttemptRule(0.7),
        {"rank": AttemptRule(0.2, hedge=True), "metadata": AttemptRule(None)},
        {"rank": ["ranker*"]},
    )
    assert policy.interface("ranker_v2") == "rank"
    assert policy.interface("iris") == "infer"
    assert policy.interface("ranker_v2", "metadata") == "metadata"
    assert policy.timeout(policy.rule("rank"), "ranker_v2") == 0.2
    assert policy.timeout(policy.rule("infer"), "iris") == 0.7
    assert policy.timeout(policy.rule("metadata"), "iris") is None


def test_hedging_waits_for_the_observed_p95() -> None:
    policy = AttemptPolicy(AttemptRule("auto", hedge=True))
    rule = policy.rule("infer")
    assert policy.hedge_after(rule, "m") is None  # no latency known: no hedge yet
    for i in range(100):
        policy.answered("m", 0.001 * (i + 1))
    after = policy.hedge_after(rule, "m")
    assert after is not None and 0.09 <= after <= 0.1
    assert policy.hedge_after(AttemptRule(), "m") is None


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "soon", True])
def test_a_timeout_is_auto_none_or_positive_seconds(bad: object) -> None:
    with pytest.raises(ValueError):
        AttemptRule(bad)  # type: ignore[arg-type]


def test_the_command_line_words() -> None:
    assert parse_timeout("auto") == "auto"
    assert parse_timeout("off") is None
    assert parse_timeout("0.5") == 0.5


def test_a_client_reads_attempts_and_interfaces_from_a_service_file(tmp_path: Path) -> None:
    service_file = tmp_path / "service.yaml"
    service_file.write_text(
        "service: com.example.search\n"
        'interfaces:\n  rank: {models: ["ranker*"]}\n'
        "attempts:\n  rank: {timeout_s: 0.2, hedge: true}\n  infer: {timeout_s: 0.9}\n"
    )
    client = AsyncClient(
        "com.example.search", MemoryRegistry(), service_config=service_file,
        attempts={"infer": AttemptRule(0.5)},  # given here: over the file's
    )  # fmt: skip
    policy = client.attempts
    assert policy.interface("ranker_v2") == "rank"
    assert policy.rule("rank") == AttemptRule(0.2, hedge=True)
    assert policy.rule("infer") == AttemptRule(0.5)


@pytest.mark.parametrize(
    ("flag", "parsed"),
    [
        ("rank=0.2,hedge", ("rank", AttemptRule(0.2, hedge=True))),
        ("metadata=off", ("metadata", AttemptRule(None))),
        ("infer=auto", ("infer", AttemptRule("auto"))),
    ],
)
def test_the_gateway_reads_interface_attempts(flag: str, parsed: object) -> None:
    args = gateway_args(["--service", "s", "--interface-attempts", flag])
    assert args.interface_attempts == [parsed]


@pytest.mark.parametrize("flag", ["rank", "rank=soon", "rank=0.2,fast", "=0.2", "rank=-1"])
def test_a_bad_interface_attempts_flag_is_an_argument_error(flag: str) -> None:
    with pytest.raises(SystemExit):
        gateway_args(["--service", "s", "--interface-attempts", flag])
