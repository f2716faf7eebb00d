"""Binary replies encoded once per request layout: the same answer as the general encoder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.frontdoors.http import HttpFrontend
from modelyard.protocol.v2_http import (
    BinaryLayout,
    BinaryReply,
    JsonReply,
    encode_infer_response,
)
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.types import InferResponse, OutputTensor
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

# y: computed in float64, so the server casts it to FP32; r: reshaped by the config.
# A negative first value makes y come back in a shape the config does not declare.
SHAPES = """
import numpy as np
import pytest


class Model:
    def execute(self, inputs):
        x = inputs["x"]
        y = x.astype(np.float64) * 2
        if x[0, 0] < 0:
            y = y.reshape(len(x), 1, 2)
        return {"y": y, "r": (x + 1).reshape(len(x), 1, 2)}
"""

CONFIG = """
backend: "python"
max_batch_size: 8
input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
output [
  { name: "y" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "r" data_type: TYPE_FP32 dims: [ 2 ] reshape { shape: [ 1, 2 ] } }
]
"""


def _request(rows: np.ndarray, binary_output: bool) -> tuple[bytes, int]:
    header = json.dumps(
        {
            "id": "call-1",
            "inputs": [
                {"name": "x", "shape": list(rows.shape), "datatype": "FP32",
                 "parameters": {"binary_data_size": rows.nbytes}},
            ],
            "parameters": {"binary_data_output": binary_output},
        }
    ).encode()  # fmt: skip
    return header + rows.astype("<f4").tobytes(), len(header)


def _call(app: HttpFrontend, body: bytes, header_length: int) -> tuple[dict[str, Any], bytes]:
    """POST an infer call to the ASGI app: the response's headers and body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v2/models/shapes/infer",
        "headers": [
            (b"inference-header-content-length", str(header_length).encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 200, sent[1]["body"]
    return dict(sent[0]["headers"]), sent[1]["body"]


def _outputs(headers: dict[bytes, bytes], body: bytes) -> dict[str, tuple[list[int], list[Any]]]:
    """Each output's shape and values, whether it travelled as binary data or as JSON."""
    assert int(headers[b"content-length"]) == len(body)
    length = headers.get(b"inference-header-content-length")
    doc = json.loads(body[: int(length)] if length else body)
    offset = int(length) if length else 0
    outputs = {}
    for out in doc["outputs"]:
        if "data" in out:
            outputs[out["name"]] = (out["shape"], out["data"])
            continue
        size = out["parameters"]["binary_data_size"]
        values = np.frombuffer(body[offset : offset + size], "<f4").tolist()
        outputs[out["name"]] = (out["shape"], values)
        offset += size
    assert offset in (0, len(body))
    assert (doc["model_name"], doc["id"]) == ("shapes", "call-1")
    return outputs


def _served(tmp_path: Path, scenario: Any) -> None:
    write_python_model(tmp_path, "shapes", SHAPES, CONFIG)

    async def run() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            await asyncio.to_thread(scenario, HttpFrontend(dp), dp)

    asyncio.run(run())


def test_binary_and_json_replies_answer_as_the_general_encoder_does(tmp_path: Path) -> None:
    rows = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    expected = {"y": ([2, 2], [2.0, 4.0, 6.0, 8.0]), "r": ([2, 2], [2.0, 3.0, 4.0, 5.0])}

    def scenario(app: HttpFrontend, dp: LocalDataPlane) -> None:
        first = _call(app, *_request(rows, binary_output=False))
        assert _outputs(*first) == expected  # the general encoder, JSON data
        # the lane's JSON reply, encoded once: the very bytes of the general encoder
        assert _call(app, *_request(rows, binary_output=False)) == first
        for _ in range(2):  # the first call encodes the reply, the second reuses it
            assert _outputs(*_call(app, *_request(rows, binary_output=True))) == expected
        # each header left a lane, with the reply its outputs travel in
        replies = [lane.reply for lane in app.lanes._lanes.values()]
        assert sum(isinstance(r, BinaryReply) for r in replies) == 1
        assert sum(isinstance(r, JsonReply) for r in replies) == 1

    _served(tmp_path, scenario)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_an_output_unlike_its_reply_gets_the_general_encoder(tmp_path: Path, binary: bool) -> None:
    odd = np.array([[-1.0, 2.0]], dtype=np.float32)  # y comes back as [1, 1, 2]
    even = np.array([[1.0, 2.0]], dtype=np.float32)

    def scenario(app: HttpFrontend, dp: LocalDataPlane) -> None:
        assert _outputs(*_call(app, *_request(even, binary_output=binary)))["y"] == (
            [1, 2],
            [2.0, 4.0],
        )
        assert _outputs(*_call(app, *_request(odd, binary_output=binary))) == {
            "y": ([1, 1, 2], [-2.0, 4.0]),
            "r": ([1, 2], [0.0, 3.0]),
        }
        assert _outputs(*_call(app, *_request(even, binary_output=binary)))["y"] == (
            [1, 2],
            [2.0, 4.0],
        )

    _served(tmp_path, scenario)


RESHAPED_INPUT = """
class Model:
    def execute(self, inputs):
        x = inputs["x"]
        return {"y": x.reshape(len(x), 2) * 2, "r": x + 1}
"""


def test_a_layout_whose_inputs_are_reshaped_takes_its_lane(tmp_path: Path) -> None:
    write_python_model(
        tmp_path,
        "shapes",
        RESHAPED_INPUT,
        CONFIG.replace("dims: [ 2 ] }]", "dims: [ 2 ] reshape { shape: [ 1, 2 ] } }]", 1),
    )
    rows = np.array([[1.0, 2.0]], dtype=np.float32)

    async def run() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp)
            for i in range(3):  # the lane reshapes each request's x as validation did
                x = rows + i
                outputs = await asyncio.to_thread(
                    lambda x=x: _outputs(*_call(app, *_request(x, binary_output=True)))
                )
                assert outputs == {
                    "y": ([1, 2], (x * 2).ravel().tolist()),
                    "r": ([1, 2], (x + 1).ravel().tolist()),
                }
            assert len(app.lanes) == 1

    asyncio.run(run())


def test_repeated_calls_of_a_layout_make_no_request_and_get_their_own_rows(
    tmp_path: Path, monkeypatch: Any
) -> None:
    made: list[int] = []
    request_of = BinaryLayout.request

    def counted(layout: BinaryLayout, *args: Any) -> Any:
        made.append(1)
        return request_of(layout, *args)

    monkeypatch.setattr(BinaryLayout, "request", counted)

    def scenario(app: HttpFrontend, dp: LocalDataPlane) -> None:
        for binary_output in (True, False):
            made.clear()
            for i in range(4):
                rows = np.array([[i, 10.0 * i]], dtype=np.float32)
                outputs = _outputs(*_call(app, *_request(rows, binary_output)))
                assert outputs["y"] == ([1, 2], [2.0 * i, 20.0 * i])
            # the first two calls made the layout's request (the second left the lane), no
            # later one did: a JSON reply reads only the request's options, which the lane holds
            assert made == [1, 1]

    _served(tmp_path, scenario)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("request_id", ["call-1", "call-22", 'a "quoted" id', "", None])
@pytest.mark.parametrize("made_with", ["call-1", None])
def test_a_reply_made_for_one_id_answers_any_id_in_the_general_encoder_s_bytes(
    binary: bool, request_id: str | None, made_with: str | None
) -> None:
    """A lane's requests may each carry their own id (it is not part of the lane's key)."""
    f32 = np.dtype(np.float32)
    fixed = (("y", "FP32", f32, (2, 2), binary, True), ("r", "FP32", f32, (2, 2), binary, True))
    results = {"y": np.arange(4, dtype=f32).reshape(2, 2), "r": np.ones((2, 2), f32) / 3}
    reply = (BinaryReply if binary else JsonReply).make("shapes", "1", made_with, fixed)
    assert reply is not None
    answer = reply.answer(results, request_id)
    assert answer is not None
    outputs = [OutputTensor(name, "FP32", results[name], binary) for name in ("y", "r")]
    general, header_length = encode_infer_response(
        InferResponse("shapes", "1", outputs, id=request_id)
    )
    body, http_headers = answer
    assert body == general
    headers = dict(http_headers)
    if binary:
        assert headers[b"inference-header-content-length"] == str(header_length).encode()
        assert headers[b"content-length"] == str(len(body)).encode()
    else:
        assert header_length is None and headers == {b"content-type": b"application/json"}
