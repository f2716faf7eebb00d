"""The HTTP infer route through tickets: rules without breakers, in a real server.

With no guard that learns from outcomes, every infer call goes through the
chain's tickets; what a caller sees (statuses, error lines, 429 headers, the
recorded rejection) and what the instance counts must be what the whole chain
gives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from modelyard.frontdoors.http import HttpFrontend
from modelyard.governance.auth import hash_secret
from tests.support.models import slow_double
from tests.support.servers import Served, server_in_process

READER_KEY = "reader-key-2"
OTHER_KEY = "other-key-2"
ADMIN_KEY = "admin-key-2"
TOKEN = "bearer-token-2"

SERVICE = f"""\
service: com.example.test.tickets
auth:
  enabled: true
  principals:
    reader:
      api_keys: ["{hash_secret(READER_KEY)}"]
      allow: {{infer: ["slow_*"]}}
    other:
      api_keys: ["{hash_secret(OTHER_KEY)}"]
      allow: {{infer: ["failing"]}}
    ops:
      api_keys: ["{hash_secret(ADMIN_KEY)}"]
      allow: {{admin: ["*"]}}
    service-account:
      bearer_tokens: ["{hash_secret(TOKEN)}"]
      allow: {{infer: ["slow_*"]}}
limits:
  infer:
    instance_qps: 20
    burst_seconds: 1
"""

BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
INFER = "/v2/models/slow_double/infer"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("tickets")
    repository = root / "models"
    slow_double(repository)
    service_file = root / "service.yaml"
    service_file.write_text(SERVICE)
    with server_in_process(repository, "--service-config", str(service_file)) as server:
        yield server


def governance_counts(server: Served) -> dict[str, object]:
    response = httpx.get(f"http://{server.http_url}/v2/modelyard/stats")
    assert response.status_code == 200, response.text
    return response.json()["governance"]


def test_refused_credentials_are_refused_every_time_and_counted_once_each(
    server: Served,
) -> None:
    before = governance_counts(server)["rejected"]
    cases = [({}, 401, "no credentials"), ({"x-api-key": "wrong"}, 401, "unknown API key")]
    cases.append(({"x-api-key": OTHER_KEY}, 403, "principal 'other' may not call interface"))
    with httpx.Client(base_url=f"http://{server.http_url}") as client:
        for headers, status, detail in cases:
            for _ in range(3):  # a second and third try must not find a ticket either
                response = client.post(INFER, json=BODY, headers=headers)
                assert response.status_code == status, response.text
                assert detail in response.json()["error"]
    rejected = governance_counts(server)["rejected"]
    assert isinstance(rejected, dict) and isinstance(before, dict)
    infer_before = before.get("infer", {})
    assert (
        rejected["infer"]["auth/unauthenticated"] - infer_before.get("auth/unauthenticated", 0) == 6
    )
    assert rejected["infer"]["auth/permission"] - infer_before.get("auth/permission", 0) == 3


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"Bearer {TOKEN}", 200),
        (f"bearer  {TOKEN}", 200),  # the scheme is case-insensitive, the token stripped
        (f"Basic {TOKEN}", 401),  # not a bearer token: no credentials at all
        ("Bearer wrong-token", 401),
        ("Bearer", 401),
    ],
)
def test_bearer_tokens_through_tickets(server: Served, authorization: str, status: int) -> None:
    with httpx.Client(base_url=f"http://{server.http_url}") as client:
        for _ in range(2):  # the second call of a shape goes through its ticket, if it got one
            response = client.post(INFER, json=BODY, headers={"authorization": authorization})
            assert response.status_code == status, response.text
            if status == 401:
                assert "rule=auth/unauthenticated" in response.json()["error"]


def test_a_limit_refusal_through_a_ticket_answers_and_records_as_the_chain_does(
    server: Served,
) -> None:
    time.sleep(1.0)  # a full bucket, whatever the tests before took from it
    admitted_before = governance_counts(server)["admitted"]
    assert isinstance(admitted_before, dict)
    statuses = []
    refused: list[tuple[str, httpx.Response]] = []
    with httpx.Client(base_url=f"http://{server.http_url}") as client:
        for index in range(60):
            request_id = f"tickets-{index}"
            response = client.post(
                INFER, json=BODY, headers={"x-api-key": READER_KEY, "x-request-id": request_id}
            )
            statuses.append(response.status_code)
            if response.status_code == 200:
                assert response.json()["outputs"][0]["data"] == [1002.0, 1004.0]  # 2x + 1000
            else:
                refused.append((request_id, response))
        assert set(statuses) == {200, 429}
        assert 15 <= statuses.count(200) <= 30  # 20/s burst plus what refills meanwhile
        request_id, response = refused[-1]
        line = response.json()["error"]
        assert "instance-qps" in line and "over limit 20/s for interface infer" in line
        assert "rule=ratelimit/instance-qps; change: limits.infer.instance_qps" in line
        assert int(response.headers["retry-after"]) >= 1
        assert response.headers["ratelimit-limit"] == "20"
        assert response.headers["ratelimit-remaining"] == "0"
        assert response.headers["x-request-id"] == request_id  # the caller's own id
        recorded = client.get(
            f"/v2/modelyard/rejections/{request_id}", headers={"x-api-key": ADMIN_KEY}
        )
        assert recorded.status_code == 200, recorded.text
        assert recorded.json()["rule"] == "ratelimit/instance-qps"
        assert recorded.json()["principal"] == "reader"

    counts = governance_counts(server)
    admitted = counts["admitted"]
    assert isinstance(admitted, dict)
    assert admitted["infer"] - admitted_before.get("infer", 0) == statuses.count(200)


def test_governed_infer_calls_take_the_direct_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Admitted by a ticket, refused by a limit or by the chain run around it, a call is
    answered from the connection's callbacks (``HttpFrontend.direct``), with no ASGI task."""
    answered: list[bool] = []
    direct = HttpFrontend.direct

    def spy(self: HttpFrontend, *args: Any) -> bool:
        answered.append(direct(self, *args))
        return answered[-1]

    monkeypatch.setattr(HttpFrontend, "direct", spy)
    slow_double(tmp_path / "models")
    (tmp_path / "service.yaml").write_text(SERVICE)
    flags = ("--service-config", str(tmp_path / "service.yaml"))
    with (
        server_in_process(tmp_path / "models", *flags) as served,
        httpx.Client(base_url=f"http://{served.http_url}") as client,
    ):
        reader = {"x-api-key": READER_KEY}
        answer = client.post(INFER, json=BODY, headers=reader)
        assert answer.status_code == 200 and answer.json()["outputs"][0]["name"] == "y"
        refused = client.post(INFER, json=BODY)
        assert refused.status_code == 401
        assert "rule=auth/" in refused.json()["error"]
        # over instance_qps 20 with a burst of one second
        statuses = {client.post(INFER, json=BODY, headers=reader).status_code for _ in range(40)}
        assert statuses == {200, 429}
    # a call without credentials has no ticket: the chain runs around it, from the same entry
    assert answered == [True] * 42
