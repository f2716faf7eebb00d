"""Encoders batched by tokens: batches formed by length, padded to their own longest, cut back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines.base import Signature, TensorSpec
from modelyard.errors import Code, ModelServerError, ModelyardError
from modelyard.server.batcher import BatchingPolicy, QueuedRequest, QueuePolicy, RequestQueue
from modelyard.server.token_batching import (
    ExecutionCost,
    TokenBatching,
    join_parts,
    token_batching_for,
)

KEY = (("input_ids", (), "<i8"),)


def queue(
    max_batch_size: int = 64,
    budget: int = 2048,
    ratio: float = 1.5,
    batching: bool = True,
    execution_tokens: float = 8.0,
    levels: int = 1,
) -> RequestQueue:
    policy = BatchingPolicy(
        max_batch_size=max_batch_size,
        batching=batching,
        priority_levels=levels,
        default_priority=1,
        max_batch_tokens=budget,
        max_padding_ratio=ratio,
    )
    q = RequestQueue("encoder", 1, policy)
    q.execution_tokens = execution_tokens
    return q


def part(tokens: int, tag: str, rows: int = 1, group: int = 0) -> QueuedRequest:
    return QueuedRequest(rows, KEY, 0, payload=tag, tokens=tokens, group=group)


def tags(batch: object) -> list[str]:
    assert isinstance(batch, list)
    return sorted(r.payload for r in batch)


def fill(q: RequestQueue, lengths: dict[str, int], priority: int = 0) -> None:
    for tag, tokens in lengths.items():
        q.add(part(tokens, tag), now_ns=0, priority=priority)


def test_rows_of_the_heads_length_share_its_batch_and_a_long_one_runs_apart() -> None:
    q = queue()
    fill(q, {"a": 10, "long": 120, "b": 10, "c": 10})
    assert tags(q.take(0, 0)) == ["a", "b", "c"]
    assert tags(q.take(0, 0)) == ["long"]


def test_a_short_row_joins_while_the_shared_execution_saves_more_than_its_padding() -> None:
    # an execution costs 8 tokens beyond its own: a 9-token row padded to 10 saves 7
    q = queue(execution_tokens=8.0)
    fill(q, {"a": 10, "b": 9, "far": 40})
    assert tags(q.take(0, 0)) == ["a", "b"]
    # with executions costing nothing beyond their tokens, any padding is a loss
    q = queue(execution_tokens=0.0)
    fill(q, {"a": 10, "b": 9})
    assert tags(q.take(0, 0)) == ["a"]


def test_rows_of_the_next_length_join_together_when_together_they_pay() -> None:
    # one row of 14 would pad the 10-token head by 4 to save an execution worth 1 token: a
    # loss; the five rows of 14 pad it by 4 too, and save five executions
    q = queue(execution_tokens=1.0)
    fill(q, {"head": 10, "x0": 14})
    assert tags(q.take(0, 0)) == ["head"]
    q = queue(execution_tokens=1.0)
    fill(q, {"head": 10, **{f"x{i}": 14 for i in range(5)}})
    assert tags(q.take(0, 0)) == ["head", "x0", "x1", "x2", "x3", "x4"]


def test_the_budget_rows_and_padding_ratio_bound_a_batch() -> None:
    q = queue(budget=40)
    fill(q, {f"r{i}": 10 for i in range(6)})
    assert len(tags(q.take(0, 0))) == 4  # 4 rows x 10 tokens = the 40-token budget
    q = queue(max_batch_size=3)
    fill(q, {f"r{i}": 10 for i in range(6)})
    assert len(tags(q.take(0, 0))) == 3
    q = queue(ratio=1.1, execution_tokens=100.0)  # padding pays, but is capped
    fill(q, {"a": 10, "b": 5, "c": 10})
    assert tags(q.take(0, 0)) == ["a", "c"]


def test_the_oldest_request_of_the_first_priority_heads_every_batch() -> None:
    q = queue(levels=2)
    fill(q, {"low-short": 10}, priority=2)
    fill(q, {"high-long": 100}, priority=1)
    assert tags(q.take(0, 0)) == ["high-long"]
    assert tags(q.take(0, 0)) == ["low-short"]


def test_without_dynamic_batching_only_a_requests_own_parts_share_a_batch() -> None:
    q = queue(batching=False)
    for tag in ("a1", "a2"):
        q.add(part(10, tag, group=1), now_ns=0)
    q.add(part(10, "b1", group=2), now_ns=0)
    assert tags(q.take(0, 0)) == ["a1", "a2"]
    assert tags(q.take(0, 0)) == ["b1"]


def test_a_requests_parts_queue_together_or_not_at_all() -> None:
    limited = dataclasses.replace(
        BatchingPolicy(max_batch_size=8, batching=True, max_batch_tokens=100),
        default_policy=QueuePolicy(max_queue_size=3),
    )
    q = RequestQueue("encoder", 1, limited)
    q.add_all([part(10, "a"), part(10, "b")], now_ns=0)
    with pytest.raises(ModelServerError) as refused:
        q.add_all([part(10, "c"), part(10, "d")], now_ns=0)
    assert refused.value.code is Code.UNAVAILABLE
    assert len(q) == 2


def test_an_executions_own_cost_is_fitted_from_its_times() -> None:
    cost = ExecutionCost(prior_tokens=8.0)
    assert cost.overhead_tokens() == 8.0  # before any execution
    for tokens in (16, 64, 128, 32, 256, 48) * 4:
        cost.observe(tokens, 0.002 + 0.0002 * tokens)  # 2 ms, then 0.2 ms a token
    assert cost.overhead_tokens() == pytest.approx(10.0, rel=1e-6)


def test_one_size_of_execution_teaches_nothing() -> None:
    cost = ExecutionCost(prior_tokens=8.0)
    for _ in range(40):
        cost.observe(64, 0.015)
    assert cost.overhead_tokens() == 8.0


def encoder(**fields: object) -> TokenBatching:
    defaults: dict[str, object] = dict(
        token_inputs=("input_ids", "attention_mask"),
        token_outputs=frozenset({"last_hidden_state"}),
        max_batch_tokens=2048,
        max_padding_ratio=1.5,
        max_sequence_length=16,
    )
    defaults.update(fields)
    return TokenBatching(**defaults)  # type: ignore[arg-type]


def tokens_of(rows: int, length: int, start: int) -> dict[str, np.ndarray]:
    ids = np.arange(start, start + rows * length, dtype=np.int64).reshape(rows, length)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids)}


def test_parts_pad_to_the_batchs_longest_and_their_outputs_are_cut_back() -> None:
    batching = encoder()
    short = batching.split("m", tokens_of(2, 3, 1), 2)
    long = batching.split("m", tokens_of(1, 5, 100), 1)
    parts = [*short, *long]
    stacked, longest = batching.stack(parts)
    assert longest == 5
    assert stacked["input_ids"].tolist() == [
        [1, 2, 3, 0, 0],
        [4, 5, 6, 0, 0],
        [100, 101, 102, 103, 104],
    ]
    assert stacked["attention_mask"].sum(axis=1).tolist() == [3, 3, 5]
    states = np.arange(3 * 5 * 2, dtype=np.float32).reshape(3, 5, 2)
    pooled = np.ones((3, 4), dtype=np.float32)
    answers = batching.answers(parts, {"last_hidden_state": states, "pooled": pooled})
    assert answers[0]["last_hidden_state"].shape == (2, 3, 2)
    assert answers[1]["last_hidden_state"].shape == (1, 5, 2)
    assert np.array_equal(answers[0]["last_hidden_state"], states[:2, :3])
    assert answers[0]["pooled"].shape == (2, 4)


def test_token_inputs_of_different_lengths_or_over_the_limit_are_refused() -> None:
    batching = encoder()
    uneven = {"input_ids": np.ones((1, 4), np.int64), "attention_mask": np.ones((1, 5), np.int64)}
    with pytest.raises(ModelServerError, match="differ in length") as error:
        batching.split("m", uneven, 1)
    assert error.value.code is Code.INVALID_ARGUMENT
    with pytest.raises(ModelServerError, match="over its max_sequence_length 16"):
        batching.split("m", tokens_of(1, 17, 0), 1)


def test_a_requests_parts_join_in_order_padding_token_axes_to_its_longest() -> None:
    joined = join_parts(
        [
            {"state": np.ones((1, 2, 3)), "vector": np.full((1, 4), 1.0)},
            {"state": np.ones((2, 4, 3)), "vector": np.full((2, 4), 2.0)},
        ],
        ["state", "vector"],
    )
    assert joined["state"].shape == (3, 4, 3)
    assert joined["state"][0, 2:].sum() == 0  # padded with zeros
    assert joined["vector"][:, 0].tolist() == [1.0, 2.0, 2.0]


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


ENCODER_CONFIG = """
max_batch_size: 8
dynamic_batching {}
input { name: "input_ids" data_type: TYPE_INT64 dims: [-1] }
input { name: "attention_mask" data_type: TYPE_INT64 dims: [-1] }
output { name: "last_hidden_state" data_type: TYPE_FP32 dims: [-1, 4] }
output { name: "pooled" data_type: TYPE_FP32 dims: [4] }
"""
GRAPH = Signature(
    inputs=[
        TensorSpec("input_ids", "INT64", (-1, -1)),
        TensorSpec("attention_mask", "INT64", (-1, -1)),
    ],
    outputs=[
        TensorSpec("last_hidden_state", "FP32", (-1, -1, 4)),
        TensorSpec("pooled", "FP32", (-1, 4)),
    ],
)


def test_an_encoder_with_an_attention_mask_is_batched_by_tokens_found_from_its_graph() -> None:
    batching = token_batching_for("m", 1, config(ENCODER_CONFIG), GRAPH, None)
    assert batching is not None
    assert batching.token_inputs == ("input_ids", "attention_mask")
    assert batching.token_outputs == frozenset({"last_hidden_state"})
    assert batching.max_sequence_length == 512


def test_token_batching_is_off_without_a_mask_without_dynamic_batching_or_when_asked() -> None:
    no_mask = ENCODER_CONFIG.replace('"attention_mask"', '"token_type_ids"')
    assert token_batching_for("m", 1, config(no_mask), GRAPH, None) is None
    rows_only = ENCODER_CONFIG.replace("dynamic_batching {}", "")
    assert token_batching_for("m", 1, config(rows_only), GRAPH, None) is None
    off = ENCODER_CONFIG + 'parameters { key: "max_batch_tokens" value { string_value: "0" } }'
    assert token_batching_for("m", 1, config(off), GRAPH, None) is None
    declared = no_mask + 'parameters { key: "max_batch_tokens" value { string_value: "512" } }'
    batching = token_batching_for("m", 1, config(declared), GRAPH, None)
    assert batching is not None and batching.max_batch_tokens == 512


@pytest.mark.parametrize(
    ("words", "value"),
    [("max_batch_tokens", "lots"), ("max_padding_ratio", "0.5"), ("max_sequence_length", "-3")],
)
def test_token_settings_that_are_no_numbers_are_refused_at_load(words: str, value: str) -> None:
    extra = f'parameters {{ key: "{words}" value {{ string_value: "{value}" }} }}'
    with pytest.raises(ModelyardError, match=words) as error:
        token_batching_for("m", 1, config(ENCODER_CONFIG + extra), GRAPH, None)
    assert f"change: {words} in m/config.pbtxt" in error.value.line()


def test_preserve_ordering_is_refused_for_a_model_batched_by_tokens() -> None:
    ordered = ENCODER_CONFIG.replace(
        "dynamic_batching {}", "dynamic_batching { preserve_ordering: true }"
    )
    with pytest.raises(ModelServerError, match="preserve_ordering is not served"):
        token_batching_for("m", 1, config(ordered), GRAPH, None)
