"""A text model's scheduler: texts queued one by one, batched by length, answered in order."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines.base import Engine, LoadContext, Signature, TensorSpec
from modelyard.errors import Code, ModelServerError
from modelyard.server.batcher import BatchingPolicy
from modelyard.server.scheduling import Submission
from modelyard.server.text_encoding import load_text_encoding
from modelyard.server.token_batching import token_batching_for
from modelyard.server.token_scheduler import TokenScheduler

GRAPH = Signature(
    inputs=[
        TensorSpec("input_ids", "INT64", (-1, -1)),
        TensorSpec("attention_mask", "INT64", (-1, -1)),
    ],
    outputs=[TensorSpec("last_hidden_state", "FP32", (-1, -1, 2))],
)
CONFIG = """
name: "embed"
max_batch_size: 64
dynamic_batching { max_queue_delay_microseconds: 0 }
input { name: "TEXT" data_type: TYPE_STRING dims: [1] }
output { name: "EMBEDDING" data_type: TYPE_FP32 dims: [2] }
output { name: "TOKENS" data_type: TYPE_INT64 dims: [1] }
parameters { key: "normalize" value { string_value: "false" } }
parameters { key: "token_count_output" value { string_value: "TOKENS" } }
"""


class StatesOfIds(Engine):
    """Each token's state is (its id, 1): a text's mean pooling is its mean id, and 1."""

    name = "fake"
    extra = ""
    default_filenames = ()

    def __init__(self) -> None:
        self.batches: list[tuple[int, int]] = []  # rows, padded length
        self.release = threading.Event()
        self.release.set()
        self.refuse_id: int | None = None

    def load(self, ctx: LoadContext) -> Signature | None:
        return GRAPH

    def execute(self, inputs: dict[str, Any], outputs: list[str]) -> dict[str, np.ndarray]:
        self.release.wait(5)
        ids = inputs["input_ids"]
        if self.refuse_id is not None and (ids == self.refuse_id).any():
            raise ValueError("a token the model refuses")
        self.batches.append(ids.shape)
        states = np.stack([ids, np.ones_like(ids)], axis=-1).astype(np.float32)
        return {"last_hidden_state": states}

    def refuses_input(self, error: Exception) -> bool:
        return isinstance(error, ValueError)


@pytest.fixture
def engine() -> StatesOfIds:
    return StatesOfIds()


@pytest.fixture
def scheduler(engine: StatesOfIds, tmp_path: Path) -> Iterator[TokenScheduler]:
    from modelyard.examples.text import minilm_dir

    version_dir = tmp_path / "embed" / "1"
    version_dir.mkdir(parents=True)
    shutil.copyfile(minilm_dir() / "tokenizer.json", version_dir / "tokenizer.json")
    config = text_format.Parse(CONFIG, mc.ModelConfig())
    text = load_text_encoding("embed", 1, version_dir, config, GRAPH)
    tokens = token_batching_for("embed", 1, config, GRAPH, text)
    assert tokens is not None
    scheduler = TokenScheduler("embed", 1, [engine], BatchingPolicy.from_config(config), tokens)
    yield scheduler
    scheduler.close()
    scheduler.join(5)


def texts(*items: str) -> dict[str, np.ndarray]:
    column = np.empty((len(items), 1), dtype=object)
    column[:, 0] = [item.encode() for item in items]
    return {"TEXT": column}


def mean_ids(scheduler: TokenScheduler, text: str) -> float:
    assert scheduler.tokens.text is not None
    (row,) = scheduler.tokens.text.encode(texts(text))
    return float(row["input_ids"].mean())


async def embed(scheduler: TokenScheduler, *items: str, **options: Any) -> dict[str, np.ndarray]:
    request = Submission(texts(*items), ["EMBEDDING", "TOKENS"], len(items), **options)
    return await scheduler.submit(request)


def test_a_requests_texts_batch_by_length_and_come_back_in_order(
    scheduler: TokenScheduler, engine: StatesOfIds
) -> None:
    short = ["one", "two", "six"]
    long = ["a much longer text than the others, it has many more tokens in it"]
    order = [short[0], long[0], short[1], short[2]]
    answer = asyncio.run(embed(scheduler, *order))
    assert answer["EMBEDDING"][:, 0].tolist() == pytest.approx(
        [mean_ids(scheduler, t) for t in order]
    )
    assert answer["EMBEDDING"][:, 1].tolist() == [1.0] * 4  # padding never counted
    assert answer["TOKENS"].ravel().tolist()[0] == 3  # [CLS] one [SEP]
    assert scheduler.tokens.text is not None
    (long_row,) = scheduler.tokens.text.encode(texts(long[0]))
    # the long one alone, the short ones together, none padded
    assert sorted(engine.batches) == [(1, len(long_row["input_ids"])), (3, 3)]


def test_a_text_the_model_refuses_fails_its_request_once_and_no_other(
    scheduler: TokenScheduler, engine: StatesOfIds
) -> None:
    assert scheduler.tokens.text is not None
    (bad,) = scheduler.tokens.text.encode(texts("zebra"))
    engine.refuse_id = int(bad["input_ids"][1])

    async def both() -> tuple[BaseException | None, dict[str, np.ndarray]]:
        engine.release.clear()  # both requests queue before the first batch runs
        failing = asyncio.ensure_future(embed(scheduler, "one", "zebra", "two"))
        fine = asyncio.ensure_future(embed(scheduler, "six"))
        await asyncio.sleep(0.05)
        engine.release.set()
        error = None
        try:
            await failing
        except ModelServerError as refused:
            error = refused
        except Exception as other:
            error = other
        return error, await fine

    error, fine = asyncio.run(both())
    assert error is not None and getattr(error, "code", None) is Code.INVALID_ARGUMENT
    assert fine["EMBEDDING"][0, 0] == pytest.approx(mean_ids(scheduler, "six"))
    assert scheduler.stats.fail_count == 1 and scheduler.stats.success_count == 1


def test_a_timeout_past_in_the_queue_fails_the_request_once(
    scheduler: TokenScheduler, engine: StatesOfIds
) -> None:
    async def late() -> BaseException:
        engine.release.clear()
        blocker = asyncio.ensure_future(embed(scheduler, "first"))
        await asyncio.sleep(0.05)  # executing, and held
        waiting = asyncio.ensure_future(embed(scheduler, "a", "b", "c", deadline=1e-9))
        await asyncio.sleep(0.05)
        engine.release.set()
        await blocker
        try:
            await waiting
        except ModelServerError as error:
            return error
        raise AssertionError("the request past its deadline was answered")

    error = asyncio.run(late())
    assert isinstance(error, ModelServerError) and error.code is Code.DEADLINE_EXCEEDED
    assert scheduler.stats.fail_count == 1
    assert len(engine.batches) == 1  # its texts were never computed
