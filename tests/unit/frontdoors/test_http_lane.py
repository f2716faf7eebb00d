"""The HTTP front door's lanes: a repeated binary header runs validated once, and no longer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from modelyard.clock import FakeClock
from modelyard.discovery.rules_store import RulesRevision
from modelyard.frontdoors import http_lane
from modelyard.frontdoors.http import HttpFrontend
from modelyard.governance.auth import hash_secret
from modelyard.governance.runtime import Governance, RulesSource
from modelyard.governance.service_config import parse_service_config
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double

SERVICE = "com.example.lanes"
KEYS = ("ranker-key", "search-key")
SERVICE_FILE = f"""\
service: {SERVICE}
auth:
  enabled: true
  principals:
    ranker: {{api_keys: ["{hash_secret("ranker-key")}"], allow: {{infer: [slow_double]}}}}
    search: {{api_keys: ["{hash_secret("search-key")}"], allow: {{infer: [slow_double]}}}}
"""


def binary_request(
    rows: np.ndarray, request_id: str | None = "r", **parameters: Any
) -> tuple[bytes, int]:
    """A request as tritonclient writes it (``json.dumps``, the id first)."""
    doc: dict[str, Any] = {} if request_id is None else {"id": request_id}
    doc["inputs"] = [
        {"name": "x", "shape": list(rows.shape), "datatype": "FP32",
         "parameters": {"binary_data_size": rows.nbytes}},
    ]  # fmt: skip
    doc["parameters"] = {"binary_data_output": True, **parameters}
    header = json.dumps(doc).encode()
    return header + rows.astype("<f4").tobytes(), len(header)


async def post(
    app: HttpFrontend,
    body: bytes,
    header_length: int,
    api_key: str | None = None,
    headers_too: tuple[tuple[bytes, bytes], ...] = (),
    scope_too: dict[str, Any] | None = None,
) -> tuple[int, bytes]:
    """One infer call to slow_double through the ASGI app; ``headers_too`` and ``scope_too``:
    more headers, and keys a server's protocol would add to the scope."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"inference-header-content-length", str(header_length).encode())]
    if api_key is not None:
        headers.append((b"x-api-key", api_key.encode()))
    headers += headers_too
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v2/models/slow_double/infer",
        "headers": headers,
        **(scope_too or {}),
    }
    await app(scope, receive, send)
    return sent[0]["status"], sent[1]["body"]


async def post_direct(app: HttpFrontend, body: bytes, header_length: int) -> tuple[int, bytes]:
    """As ``post``, through the direct path a connection hands a whole POST to."""
    answered: asyncio.Future[tuple[int, bytes]] = asyncio.Future()
    headers = [
        (b"inference-header-content-length", str(header_length).encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    assert app.direct(
        "/v2/models/slow_double/infer",
        headers,
        body,
        1,
        lambda status, _, payload: answered.set_result((status, payload)),
    )
    return await answered


def y_of(body: bytes, header_length: int) -> list[list[float]]:
    doc = orjson.loads(body[:header_length])
    rows = doc["outputs"][0]["shape"][0]
    return np.frombuffer(body[header_length:], "<f4").reshape(rows, 2).tolist()


def reply_y(status_body: tuple[int, bytes]) -> list[list[float]]:
    status, body = status_body
    assert status == 200, body
    header = body[: body.index(b"}]}") + 3]  # one output: its entry ends the header
    return y_of(body, len(header))


def counting_lanes(dp: LocalDataPlane) -> list[int]:
    """Count the validations: each general-path request asks the data plane for its lane."""
    made: list[int] = []
    make = dp.lane

    def lane(request: Any) -> Any:
        made.append(1)
        return make(request)

    dp.lane = lane  # type: ignore[method-assign]
    return made


@asynccontextmanager
async def counted_front_door(
    tmp_path: Path, governance: Governance | None = None
) -> AsyncIterator[tuple[HttpFrontend, list[int]]]:
    """A front door over a running data plane, and its count of validations."""
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
        yield HttpFrontend(dp, governance=governance), counting_lanes(dp)


def test_a_repeated_header_is_validated_until_seen_twice_and_each_request_gets_its_rows(
    tmp_path: Path,
) -> None:
    slow_double(tmp_path)

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for i in range(5):
                rows = np.array([[i, 2.0 * i]], dtype=np.float32)
                assert reply_y(await post(app, *binary_request(rows))) == (rows * 2 + 1000).tolist()
            # the first request noted the header, the second left the lane, the rest took it
            assert made == [1, 1] and len(app.lanes) == 1

    asyncio.run(scenario())


def test_a_new_version_drops_the_lane_and_its_checks_apply(tmp_path: Path) -> None:
    model_dir = slow_double(tmp_path)
    rows = np.arange(6, dtype=np.float32).reshape(3, 2)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.EXPLICIT) as dp:
            await dp.manager.load("slow_double")
            app = HttpFrontend(dp)
            for _ in range(2):
                assert reply_y(await post(app, *binary_request(rows))) == (rows * 2 + 1000).tolist()
            assert len(app.lanes) == 1
            config = model_dir / "config.pbtxt"
            config.write_text(config.read_text().replace("max_batch_size: 16", "max_batch_size: 2"))
            await dp.manager.load("slow_double")
            status, body = await post(app, *binary_request(rows))
            assert status == 400
            assert "rule=model-server/max-batch-size" in orjson.loads(body)["error"]
            assert len(app.lanes) == 0

            await dp.manager.unload("slow_double")
            status, body = await post(app, *binary_request(rows[:2]))
            line = orjson.loads(body)["error"]
            assert status == 404
            assert line.startswith(
                "Request for unknown model: 'slow_double' has no available versions (unloaded); "
            )

    asyncio.run(scenario())


def test_lanes_stay_bounded_when_every_header_differs(tmp_path: Path, monkeypatch: Any) -> None:
    """A header sent once leaves no lane (a client that varies a field with every request
    would make one per request); one sent twice does, and the lanes and the headers noted
    stay within their bound."""
    slow_double(tmp_path)
    monkeypatch.setattr(http_lane, "_LANES_MAX", 8)
    rows = np.ones((1, 2), dtype=np.float32)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp)
            for i in range(30):
                reply = await post(app, *binary_request(rows, sequence=i))
                assert reply_y(reply) == [[1002, 1002]]
            assert len(app.lanes) == 0 and len(app.lanes._seen) <= 8
            for i in range(30):
                for _ in range(2):
                    reply = await post(app, *binary_request(rows, sequence=100 + i))
                    assert reply_y(reply) == [[1002, 1002]]
                assert 1 <= len(app.lanes) <= 8 and len(app.lanes._seen) <= 8

    asyncio.run(scenario())


def test_each_caller_has_its_lane_and_a_rule_change_drops_them(tmp_path: Path) -> None:
    slow_double(tmp_path)
    rows = np.ones((1, 2), dtype=np.float32)

    async def scenario() -> None:
        governance = Governance(
            parse_service_config(SERVICE_FILE), rules_source=RulesSource.AUTO, clock=FakeClock()
        )
        async with counted_front_door(tmp_path, governance) as (app, made):
            for _ in range(3):
                for key in KEYS:
                    assert reply_y(await post(app, *binary_request(rows), key)) == [[1002, 1002]]
            assert len(made) == 4 and len(app.lanes) == 2  # one lane per caller, at its second

            status, body = await post(app, *binary_request(rows), "stolen-key")
            assert status == 401 and "rule=auth/" in orjson.loads(body)["error"]

            # central rules that let one call a second through: the lanes go, the limit holds
            limit = "limits: {infer: {instance_qps: 1}}\n"
            assert await governance.apply_central(
                RulesRevision(SERVICE, 1, limit, "alice@host", 1001.0, "test", "")
            )
            statuses = [(await post(app, *binary_request(rows), "ranker-key"))[0] for _ in range(4)]
            assert statuses.count(429) >= 2, statuses
            assert len(made) == 5  # validated again under the new chain
            # the other caller's lane goes at its next call, refused or not
            await post(app, *binary_request(rows), "search-key")
            lanes = list(app.lanes._lanes.values())
            assert len(lanes) == 1 and lanes[0].chain is governance.chain

    asyncio.run(scenario())


def test_a_lane_made_as_the_rules_change_is_not_kept_without_its_ticket(tmp_path: Path) -> None:
    """A call admitted by the old chain and answered once the new one is in force: the new
    chain has filed no ticket for its caller yet, and a lane without one would take the
    caller's next calls unadmitted."""
    slow_double(tmp_path, delay=0.3)
    rows = np.ones((1, 2), dtype=np.float32)

    async def scenario() -> None:
        governance = Governance(
            parse_service_config(SERVICE_FILE), rules_source=RulesSource.AUTO, clock=FakeClock()
        )
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            app = HttpFrontend(dp, governance=governance)
            # the header seen once: the call in flight is the one that would leave the lane
            assert reply_y(await post(app, *binary_request(rows), "ranker-key")) == [[1002, 1002]]
            in_flight = asyncio.create_task(post(app, *binary_request(rows), "ranker-key"))
            await asyncio.sleep(0.1)  # admitted by the first chain, and executing
            limit = "limits: {infer: {instance_qps: 1}}\n"
            assert await governance.apply_central(
                RulesRevision(SERVICE, 1, limit, "alice@host", 1001.0, "test", "")
            )
            assert reply_y(await in_flight) == [[1002, 1002]]
            assert len(app.lanes) == 0
            statuses = [(await post(app, *binary_request(rows), "ranker-key"))[0] for _ in range(4)]
            assert statuses.count(429) >= 2, statuses

    asyncio.run(scenario())


def reply_header(status_body: tuple[int, bytes]) -> dict[str, Any]:
    status, body = status_body
    assert status == 200, body
    doc: dict[str, Any] = orjson.loads(body[: body.index(b"}]}") + 3])
    return doc


def test_a_new_id_with_every_request_takes_one_lane_and_each_reply_carries_its_own(
    tmp_path: Path,
) -> None:
    """The id that opens a header (tritonclient's) is not part of the lane's key; an id the
    lane cannot take out (escaped, or not the header's first field) is, as the header's
    other bytes. A header whose opening id is not the request's (a JSON object's last
    duplicate key wins) leaves no lane: it could not put each request's id in its reply."""
    slow_double(tmp_path)
    rows = np.ones((1, 2), dtype=np.float32)

    async def scenario() -> None:
        async with counted_front_door(tmp_path) as (app, made):
            for i in range(6):  # ids of different lengths: the body's offsets move
                request_id = "n" * i
                body, length = binary_request(rows * i, request_id)
                if i % 2:  # without the space: the same request
                    body = body.replace(b'{"id": "', b'{"id":"', 1)
                    length -= 1
                reply = await (post_direct if i > 3 else post)(app, body, length)
                assert reply_header(reply)["id"] == request_id
                assert reply_y(reply) == [[2 * i + 1000, 2 * i + 1000]]
            assert made == [1, 1] and len(app.lanes) == 1

            # what follows the id, sent as a header of its own: no JSON, and no lane takes it
            body, length = binary_request(rows, "abc")
            tail = body[len('{"id": "abc') : length]
            for send in (post, post_direct):
                status, answer = await send(app, tail + body[length:], len(tail))
                assert status == 400 and "rule=protocol/json" in orjson.loads(answer)["error"]
            # an opening id that is not UTF-8: keyed whole, found nowhere, refused as JSON
            not_utf8 = body.replace(b'"abc"', b'"\xff\xfe"', 1)
            for send in (post, post_direct):
                status, answer = await send(app, not_utf8, length)
                assert status == 400 and "rule=protocol/json" in orjson.loads(answer)["error"]
            assert made == [1, 1] and len(app.lanes) == 1

            escaped = binary_request(rows, 'say "hi"')  # written with escapes
            plain, plain_length = binary_request(rows, None)
            header = json.dumps({**json.loads(plain[:plain_length]), "id": "late"}).encode()
            for body, length, request_id in (
                (*escaped, 'say "hi"'),
                (header + plain[plain_length:], len(header), "late"),  # not the first field
            ):
                for _ in range(3):
                    assert reply_header(await post(app, body, length))["id"] == request_id
            assert len(made) == 6 and len(app.lanes) == 3

            for i in range(3):
                body, length = binary_request(rows, f"first-{i}")
                twice = body[: length - 1] + b', "id": "last"}'  # the header's last field
                status_body = await post(app, twice + body[length:], len(twice))
                assert reply_header(status_body)["id"] == "last"
            assert len(made) == 9 and len(app.lanes) == 3

    asyncio.run(scenario())
