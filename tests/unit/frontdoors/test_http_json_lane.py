"""The HTTP front door's JSON lanes: a JSON request whose fields other than its values repeat
is validated until its layout has been seen twice, each later one has only its values read and
checked, and whatever else differs takes the general path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from modelyard.frontdoors.http import HttpFrontend
from modelyard.protocol import infer_json
from modelyard.server.manager import ControlMode
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double
from tests.unit.frontdoors.test_http_lane import counted_front_door

PATH = "/v2/models/slow_double/infer"


def json_request(data: Any, shape: list[int], **more: Any) -> bytes:
    item = {"name": "x", "shape": shape, "datatype": "FP32", "data": data}
    return json.dumps({"id": "r", "inputs": [item], **more}).encode()


def _json_or_raw(payload: bytes) -> Any:
    """A JSON reply, read; a reply with binary outputs as it came."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return payload


async def via_asgi(app: HttpFrontend, body: bytes) -> tuple[int, dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": PATH, "headers": []}
    await app(scope, receive, send)
    return sent[0]["status"], _json_or_raw(sent[1]["body"])


async def via_direct(app: HttpFrontend, body: bytes) -> tuple[int, dict[str, Any]]:
    """As the connection's direct path hands a whole POST to the front door."""
    answered: asyncio.Future[tuple[int, dict[str, Any]]] = asyncio.Future()

    def reply(status: int, headers: list[tuple[bytes, bytes]], payload: bytes) -> None:
        answered.set_result((status, _json_or_raw(payload)))

    headers = [(b"content-length", str(len(body)).encode())]
    assert app.direct(PATH, headers, body, 1, reply)
    return await answered


Post = Callable[[HttpFrontend, bytes], Any]


@pytest.fixture(params=["small bodies: orjson", "any body: simdjson"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "any body: simdjson":
        monkeypatch.setattr(infer_json, "_SIMDJSON_MIN_BYTES", 0)


@pytest.mark.parametrize("post", [via_asgi, via_direct], ids=["asgi", "direct"])
def test_a_repeated_json_request_is_validated_twice_and_each_gets_its_values(
    tmp_path: Path, post: Post, reader: None
) -> None:
    slow_double(tmp_path)

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for i in range(5):
                rows = [[i, 2.5 * i], [-i, 0.25]]
                status, doc = await post(app, json_request(rows, [2, 2]))
                assert status == 200, doc
                assert doc["id"] == "r" and doc["model_name"] == "slow_double"
                (output,) = doc["outputs"]
                assert output["name"] == "y" and output["shape"] == [2, 2]
                assert output["data"] == (np.array(rows) * 2 + 1000).ravel().tolist()
            # the first request noted the layout, the second left the lane, the rest took it
            assert made == [1, 1] and len(app.lanes) == 1

    asyncio.run(scenario())


@pytest.mark.parametrize("post", [via_asgi, via_direct], ids=["asgi", "direct"])
def test_values_a_lane_cannot_take_are_refused_in_the_general_path_s_words(
    tmp_path: Path, post: Post, reader: None
) -> None:
    slow_double(tmp_path)
    refused = [
        ([[1.0, True]], "data is not valid FP32"),
        ([[1.0, "2"]], "data is not valid FP32"),
        ([[1.0, None]], "data is not valid FP32"),
        ([[1.0, 3.5e38]], "a value is out of the range of FP32"),
        ([[1.0, 2.0, 3.0]], "3 values given for shape [1, 2]"),
        ([[1.0]], "1 values given for shape [1, 2]"),
    ]

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for _ in range(2):  # the layout seen twice: its lane is kept
                assert (await post(app, json_request([[1.0, 2.0]], [1, 2])))[0] == 200
            assert len(app.lanes) == 1
            for data, says in refused:
                status, doc = await post(app, json_request(data, [1, 2]))
                assert status == 400 and says in doc["error"], doc
                assert "rule=protocol/v2-request" in doc["error"]
            status, doc = await post(app, json_request([[3.0, 4.0]], [1, 2]))  # still served
            assert status == 200 and doc["outputs"][0]["data"] == [1006.0, 1008.0]
            assert made == [1, 1]

    asyncio.run(scenario())


@pytest.mark.parametrize("post", [via_asgi, via_direct], ids=["asgi", "direct"])
def test_anything_but_the_values_differing_takes_the_general_path(
    tmp_path: Path, post: Post
) -> None:
    slow_double(tmp_path)
    rows = [[1.0, 2.0]]
    others = [
        json_request(rows, [1, 2], outputs=[{"name": "y"}]),
        json_request(rows, [1, 2], parameters={"binary_data_output": True}),
        json_request(rows * 2, [2, 2]),
        json_request(rows, [1, 2], parameters={"tag": "s"}),
    ]

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for _ in range(2):
                assert (await post(app, json_request(rows, [1, 2])))[0] == 200
            assert len(made) == 2 and len(app.lanes) == 1
            for count, body in enumerate(others, start=1):  # each validated, none on a lane
                status, _ = await post(app, body)
                assert status == 200 and len(made) == 2 + count
            status, _ = await post(app, others[-1])
            assert status == 200  # seen twice now: validated, and kept
            assert len(made) == len(others) + 3 and len(app.lanes) == 2
            status, _ = await post(app, others[-1])
            assert status == 200 and len(made) == len(others) + 3

    asyncio.run(scenario())


def test_a_new_version_drops_a_json_lane(tmp_path: Path) -> None:
    model_dir = slow_double(tmp_path)
    body = json_request([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [3, 2])

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.EXPLICIT) as dp:
            await dp.manager.load("slow_double")
            app = HttpFrontend(dp)
            for _ in range(2):
                assert (await via_direct(app, body))[0] == 200
            config = model_dir / "config.pbtxt"
            config.write_text(config.read_text().replace("max_batch_size: 16", "max_batch_size: 2"))
            await dp.manager.load("slow_double")
            status, doc = await via_direct(app, body)
            assert status == 400 and "batch-size must be <= 2" in doc["error"], doc

    asyncio.run(scenario())


def test_a_layout_seen_once_leaves_no_lane(tmp_path: Path) -> None:
    """A client that sends a new value in a field with every request: each is validated, and
    none leaves a lane (one per request, kept until the map is cleared, cost the garbage
    collector more than lanes save)."""
    slow_double(tmp_path)

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for i in range(20):
                body = json_request([[1.0, 2.0]], [1, 2], parameters={"sequence": i})
                status, doc = await via_direct(app, body)
                assert status == 200 and doc["outputs"][0]["data"] == [1002.0, 1004.0]
            assert len(made) == 20 and len(app.lanes) == 0

    asyncio.run(scenario())


@pytest.mark.parametrize("post", [via_asgi, via_direct], ids=["asgi", "direct"])
@pytest.mark.parametrize("classify", [False, True], ids=["encoded-once", "encoded-each"])
def test_a_new_id_with_every_request_takes_the_lane_and_each_reply_carries_its_own(
    tmp_path: Path, post: Post, classify: bool
) -> None:
    """The id is not part of a JSON lane's key: a client that numbers its requests (to find
    them in its logs) takes the lane from its second request on. A reply not encoded once
    (classification) carries the request's id too."""
    slow_double(tmp_path)
    more: dict[str, Any] = (
        {"outputs": [{"name": "y", "parameters": {"classification": 1}}]} if classify else {}
    )

    def numbered(request_id: Any, value: float) -> bytes:
        doc = orjson.loads(json_request([[value, 2.0]], [1, 2], **more))
        if request_id is None:
            del doc["id"]
        else:
            doc["id"] = request_id
        return orjson.dumps(doc)

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for i in range(8):
                status, doc = await post(app, numbered(f"call-{i}", 3.0 * i))
                assert status == 200 and doc["id"] == f"call-{i}", doc
                y = [6.0 * i + 1000, 1004.0]
                top = f"{max(y):f}:{y.index(max(y))}"  # Triton's classification entry
                assert doc["outputs"][0]["data"] == ([top] if classify else y)
            assert made == [1, 1] and len(app.lanes) == 1
            for request_id in (None, 17):  # on the lane, answered with no id as in general
                status, doc = await post(app, numbered(request_id, 3.0))
                assert status == 200 and "id" not in doc, doc
            assert made == [1, 1]

    asyncio.run(scenario())
