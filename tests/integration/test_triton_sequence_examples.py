"""Triton's sequence and decoupled client examples, step by step, against modelyard.

Each test follows one of tritonclient's ``src/python/examples`` scripts (named in its
docstring) on the example models of the same names (tests/support/models.py):
``simple_sequence`` and ``simple_dyna_sequence`` as the ONNX graphs Triton ships,
``simple_string_dyna_sequence`` as a python-backend model, and ``repeat_int32`` as
python_backend's decoupled example writes it. The ``dyna`` variants are the scripts
run with ``-d``. ``sequence_counter`` is a decoupled sequence model of ours (Triton's
own tests of one are disabled in its suite).
"""

from __future__ import annotations

import asyncio
import json
import queue
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcclient_aio
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.support.models import (
    repeat_int32,
    sequence_accumulator,
    sequence_counter,
    simple_sequence,
    simple_string_dyna_sequence,
)
from tests.support.servers import Served, server_in_process

VALUES = [11, 7, 5, 3, 2, 0, 1]
STEPS = len(VALUES) + 1


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repository = tmp_path_factory.mktemp("sequences") / "models"
    simple_sequence(repository)
    simple_sequence(repository, dyna=True)
    simple_string_dyna_sequence(repository)
    repeat_int32(repository)
    sequence_accumulator(repository, "accumulator")
    sequence_counter(repository)
    with server_in_process(repository) as server:
        yield server


def _plan(dyna: bool) -> list[tuple[str, Any, list[int], list[int]]]:
    """The scripts' three sequences: model, id, values sent, outputs expected."""
    int_model = "simple_dyna_sequence" if dyna else "simple_sequence"
    string_model = "simple_string_dyna_sequence" if dyna else "simple_sequence"
    string_id = "1002" if dyna else str(uuid.uuid4())
    seq0 = [0, *VALUES]
    seq1 = [100, *(-v for v in VALUES)]
    seq2 = [20, *(-v for v in VALUES)]
    expected0 = [1, *VALUES]
    expected1 = [101, *(-v for v in VALUES)]
    if dyna:  # the correlation id is added to the last output
        expected0[-1] += 1000
        expected1[-1] += 1001
        expected2 = list(np.cumsum(seq2))
        expected2[-1] += 1002
    else:
        expected2 = [21, *(-v for v in VALUES)]
    return [
        (int_model, 1000, seq0, expected0),
        (int_model, 1001, seq1, expected1),
        (string_model, string_id, seq2, [int(v) for v in expected2]),
    ]


def _input(module: Any, value: int) -> list[Any]:
    tensor = module.InferInput("INPUT", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return [tensor]


@pytest.mark.parametrize("dyna", [False, True])
@pytest.mark.parametrize("module", [grpcclient, httpclient], ids=["grpc", "http"])
def test_simple_sequence_sync_infer_client(triton: Served, module: Any, dyna: bool) -> None:
    """simple_grpc_sequence_sync_infer_client.py and simple_http_sequence_sync_infer_client.py:
    three sequences interleaved step by step, each call blocking."""
    url = triton.grpc_url if module is grpcclient else triton.http_url
    client = module.InferenceServerClient(url)
    plan = _plan(dyna)
    try:
        for step in range(STEPS):
            for model, sequence_id, values, expected in plan:
                result = client.infer(
                    model,
                    _input(module, values[step]),
                    sequence_id=sequence_id,
                    sequence_start=step == 0,
                    sequence_end=step == STEPS - 1,
                )
                assert int(result.as_numpy("OUTPUT")[0][0]) == expected[step], (model, step)
    finally:
        client.close()


@pytest.mark.parametrize("dyna", [False, True])
def test_simple_grpc_sequence_stream_infer_client(triton: Served, dyna: bool) -> None:
    """simple_grpc_sequence_stream_infer_client.py: every request of the three sequences sent
    on one stream without waiting; answers matched by request id."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    answers: queue.Queue[Any] = queue.Queue()
    plan = _plan(dyna)
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for step in range(STEPS):
            for model, sequence_id, values, _ in plan:
                client.async_stream_infer(
                    model,
                    _input(grpcclient, values[step]),
                    request_id=f"{sequence_id}_{step}",
                    sequence_id=sequence_id,
                    sequence_start=step == 0,
                    sequence_end=step == STEPS - 1,
                )
        got = {}
        for _ in range(STEPS * len(plan)):
            result, error = answers.get(timeout=30)
            assert error is None, error
            response = result.get_response()
            got[response.id] = int(result.as_numpy("OUTPUT")[0][0])
            assert response.parameters["triton_final_response"].bool_param
    finally:
        client.stop_stream()
        client.close()
    for _, sequence_id, _, expected in plan:
        assert [got[f"{sequence_id}_{step}"] for step in range(STEPS)] == expected


def test_simple_grpc_aio_sequence_stream_infer_client(triton: Served) -> None:
    """simple_grpc_aio_sequence_stream_infer_client.py: the aio client's stream_infer over an
    async iterator of requests."""
    plan = _plan(dyna=False)

    async def main() -> dict[str, int]:
        client = grpcclient_aio.InferenceServerClient(triton.grpc_url)

        async def requests() -> AsyncIterator[dict[str, Any]]:
            for step in range(STEPS):
                for model, sequence_id, values, _ in plan:
                    yield {
                        "model_name": model,
                        "inputs": _input(grpcclient_aio, values[step]),
                        "request_id": f"{sequence_id}_{step}",
                        "sequence_id": sequence_id,
                        "sequence_start": step == 0,
                        "sequence_end": step == STEPS - 1,
                    }

        got = {}
        try:
            async for result, error in client.stream_infer(requests()):
                assert error is None, error
                got[result.get_response().id] = int(result.as_numpy("OUTPUT")[0][0])
                if len(got) == STEPS * len(plan):
                    break
        finally:
            await client.close()
        return got

    got = asyncio.run(main())
    for _, sequence_id, _, expected in plan:
        assert [got[f"{sequence_id}_{step}"] for step in range(STEPS)] == expected


def test_a_sequence_request_without_start_or_id_gets_triton_s_error(triton: Served) -> None:
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    http = httpclient.InferenceServerClient(triton.http_url)
    try:
        with pytest.raises(InferenceServerException) as caught:
            client.infer("simple_sequence", _input(grpcclient, 1), sequence_id=4242)
        assert "must specify the START flag on the first request of the sequence" in str(
            caught.value
        )
        assert caught.value.status() == "StatusCode.INVALID_ARGUMENT"
        with pytest.raises(InferenceServerException) as caught:
            http.infer("simple_sequence", _input(httpclient, 1))
        assert "must specify a non-zero or non-empty correlation ID" in str(caught.value)
        assert caught.value.status() == "400"
        with pytest.raises(InferenceServerException, match="expects 'TYPE_UINT64'"):
            client.infer("simple_dyna_sequence", _input(grpcclient, 1), sequence_id="abc",
                         sequence_start=True)  # fmt: skip
        # the server goes on serving sequences
        result = client.infer(
            "simple_sequence", _input(grpcclient, 5), sequence_id=7, sequence_start=True
        )
        assert int(result.as_numpy("OUTPUT")[0][0]) == 6
    finally:
        client.close()
        http.close()


def test_implicit_state_carries_many_interleaved_sequences_over_http_and_grpc(
    triton: Served,
) -> None:
    """The ONNX accumulator keeps its sum in implicit state: 12 sequences, half over HTTP
    and half over gRPC, their steps sent concurrently."""
    rng = np.random.default_rng(3)
    plans = {sid: rng.integers(-20, 20, size=6).tolist() for sid in range(500, 512)}

    def run(sid: int, values: list[int]) -> list[int]:
        module = httpclient if sid % 2 else grpcclient
        url = triton.http_url if module is httpclient else triton.grpc_url
        client = module.InferenceServerClient(url)  # in its thread: the HTTP one is gevent's
        sums = []
        try:
            for step, value in enumerate(values):
                result = client.infer(
                    "accumulator",
                    _input(module, value),
                    sequence_id=sid,
                    sequence_start=step == 0,
                    sequence_end=step == len(values) - 1,
                )
                sums.append(int(result.as_numpy("OUTPUT")[0][0]))
        finally:
            client.close()
        return sums

    with ThreadPoolExecutor(len(plans)) as pool:
        results = list(pool.map(run, plans, plans.values()))
    for values, sums in zip(plans.values(), results, strict=True):
        assert sums == np.cumsum(values).tolist()


# ---- decoupled: simple_grpc_custom_repeat.py ------------------------------------------------


def _repeat_inputs(values: np.ndarray, delay_ms: int = 1) -> list[Any]:
    inputs = [
        grpcclient.InferInput("IN", [len(values)], "INT32"),
        grpcclient.InferInput("DELAY", [len(values)], "UINT32"),
        grpcclient.InferInput("WAIT", [1], "UINT32"),
    ]
    inputs[0].set_data_from_numpy(values.astype(np.int32))
    inputs[1].set_data_from_numpy(np.full(len(values), delay_ms, dtype=np.uint32))
    inputs[2].set_data_from_numpy(np.array([delay_ms], dtype=np.uint32))
    return inputs


def test_simple_grpc_custom_repeat(triton: Served) -> None:
    """simple_grpc_custom_repeat.py: one streamed request to the decoupled repeat_int32, ten
    responses back in order, each OUT one element; the FINAL flag alone sends nothing."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    answers: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        client.async_stream_infer(
            "repeat_int32",
            _repeat_inputs(np.arange(100, 110)),
            outputs=[grpcclient.InferRequestedOutput("OUT")],
        )
        outs = []
        for _ in range(10):
            result, error = answers.get(timeout=30)
            assert error is None, error
            out = result.as_numpy("OUT")
            assert out.shape == (1,)
            assert result.as_numpy("IDX") is None  # not asked for
            outs.append(int(out[0]))
        assert outs == list(range(100, 110))
        with pytest.raises(queue.Empty):
            answers.get(timeout=0.3)
    finally:
        client.stop_stream()
        client.close()


def test_a_decoupled_stream_can_end_with_an_empty_final_response(triton: Served) -> None:
    """``enable_empty_final_response``: the FINAL flag comes as an empty response marked
    triton_final_response; each earlier one is marked not final. Zero responses: only it."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    answers: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for request_id, count in (("three", 3), ("none", 0)):
            client.async_stream_infer(
                "repeat_int32",
                _repeat_inputs(np.arange(count)),
                request_id=request_id,
                enable_empty_final_response=True,
            )
            finals = []
            for _ in range(count + 1):
                result, error = answers.get(timeout=30)
                assert error is None, error
                response = result.get_response()
                assert response.id == request_id
                finals.append(response.parameters["triton_final_response"].bool_param)
                if finals[-1]:
                    assert len(response.outputs) == 0
            assert finals == [False] * count + [True]
    finally:
        client.stop_stream()
        client.close()


def test_a_plain_call_to_a_decoupled_model_is_refused_at_once(triton: Served) -> None:
    grpc_client = grpcclient.InferenceServerClient(triton.grpc_url)
    http_client = httpclient.InferenceServerClient(triton.http_url)
    try:
        with pytest.raises(InferenceServerException) as caught:
            grpc_client.infer("repeat_int32", _repeat_inputs(np.arange(2)))
        assert caught.value.status() == "StatusCode.UNIMPLEMENTED"
        assert "ModelStreamInfer" in str(caught.value)
        http_inputs = [
            httpclient.InferInput("IN", [2], "INT32"),
            httpclient.InferInput("DELAY", [2], "UINT32"),
            httpclient.InferInput("WAIT", [1], "UINT32"),
        ]
        http_inputs[0].set_data_from_numpy(np.arange(2, dtype=np.int32))
        http_inputs[1].set_data_from_numpy(np.ones(2, dtype=np.uint32))
        http_inputs[2].set_data_from_numpy(np.ones(1, dtype=np.uint32))
        with pytest.raises(InferenceServerException) as caught:
            http_client.infer("repeat_int32", http_inputs)
        assert caught.value.status() == "501"
        assert "decoupled" in str(caught.value)
    finally:
        grpc_client.close()
        http_client.close()


def _counter_inputs(module: Any, count: int) -> list[Any]:
    inputs = [module.InferInput("IN", [1, 1], "INT32"), module.InferInput("DELAY", [1, 1], "INT32")]
    inputs[0].set_data_from_numpy(np.array([[count]], dtype=np.int32))
    inputs[1].set_data_from_numpy(np.zeros((1, 1), dtype=np.int32))
    return inputs


def test_a_decoupled_sequence_model_streams_each_sequence_s_responses_in_order(
    triton: Served,
) -> None:
    """Three sequences of three requests, interleaved on one gRPC stream without waiting:
    each request's responses (OUT: the sequence's running count, the request's flags, its
    CORRID) come in its sequence's order; HTTP's generate_stream streams one too, and a
    plain call is refused as for any decoupled model."""
    counts = [2, 1, 3]  # responses per request
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    answers: queue.Queue[tuple[Any, Any]] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        for index, count in enumerate(counts):
            for sid in (31, 32, 33):
                client.async_stream_infer(
                    "sequence_counter", _counter_inputs(grpcclient, count), sequence_id=sid,
                    sequence_start=index == 0, sequence_end=index == len(counts) - 1,
                    request_id=f"{sid}-{index}",
                )  # fmt: skip
        got = [answers.get(timeout=10) for _ in range(3 * sum(counts))]
    finally:
        client.stop_stream()
    assert [error for _, error in got if error is not None] == []
    flags = [1] * counts[0] + [0] * counts[1] + [2] * counts[2]
    for sid in (31, 32, 33):
        outs = [
            result.as_numpy("OUT").ravel().tolist()
            for result, _ in got
            if result.get_response().id.startswith(f"{sid}-")
        ]
        assert outs == [[n + 1, flag, sid] for n, flag in enumerate(flags)], sid
    try:
        with pytest.raises(InferenceServerException) as caught:
            client.infer(
                "sequence_counter", _counter_inputs(grpcclient, 1), sequence_id=34,
                sequence_start=True,
            )  # fmt: skip
        assert caught.value.status() == "StatusCode.UNIMPLEMENTED"
        assert "ModelStreamInfer" in str(caught.value)
    finally:
        client.close()
    http_client = httpclient.InferenceServerClient(triton.http_url)
    try:
        with pytest.raises(InferenceServerException) as caught:
            http_client.infer(
                "sequence_counter", _counter_inputs(httpclient, 1), sequence_id=34,
                sequence_start=True,
            )  # fmt: skip
        assert caught.value.status() == "501"
    finally:
        http_client.close()
    body = {"IN": 2, "DELAY": 0, "sequence_id": 35, "sequence_start": True, "sequence_end": True}
    response = httpx.post(
        f"http://{triton.http_url}/v2/models/sequence_counter/generate_stream", json=body,
        timeout=10,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    events = [json.loads(line[len("data: ") :]) for line in response.text.split("\n\n") if line]
    assert [event["OUT"] for event in events] == [[1, 3, 35], [2, 3, 35]]
