"""GET /v2/modelyard/stats on a real server: per-version counts, in-flight, governance block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from modelyard.governance.auth import hash_secret
from tests.support.models import failing, slow_double
from tests.support.servers import Served, scrape, server_in_process

POLLER_KEY = "poller-key-1"
CALLER_KEY = "caller-key-1"

SERVICE = f"""\
service: com.example.test.stats
auth:
  enabled: true
  principals:
    poller:
      api_keys: ["{hash_secret(POLLER_KEY)}"]
      allow: {{metadata: ["*"]}}
    caller:
      api_keys: ["{hash_secret(CALLER_KEY)}"]
      allow: {{infer: ["*"]}}
limits:
  infer:
    instance_qps: 10
    burst_seconds: 1
breakers:
  failing-errors:
    interface: infer
    model: failing
    kind: error_count
    threshold: 2
    min_requests: 2
    window_s: 30
    recovery_s: 60
"""

BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
FAILING_BODY = {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP32", "data": [1.0]}]}


def stats(server: Served, key: str | None = None) -> dict[str, Any]:
    headers = {"x-api-key": key} if key else {}
    response = httpx.get(f"http://{server.http_url}/v2/modelyard/stats", headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_stats_list_each_version_with_consistent_counts(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    model_dir = slow_double(repository, versions=(1, 2))
    text = (model_dir / "config.pbtxt").read_text().replace("latest { num_versions: 1 }", "all {}")
    (model_dir / "config.pbtxt").write_text(text)
    n = 7
    with server_in_process(repository) as server, httpx.Client() as client:
        for version in ("1", "2", "2"):
            for _ in range(n):
                url = f"http://{server.http_url}/v2/models/slow_double/versions/{version}/infer"
                assert client.post(url, json=BODY).status_code == 200
        bad = {"inputs": [{**BODY["inputs"][0], "shape": [1, 3], "data": [1.0, 2.0, 3.0]}]}
        for _ in range(2):  # inputs that do not fit the model: counted, not failures
            url = f"http://{server.http_url}/v2/models/slow_double/versions/1/infer"
            assert client.post(url, json=bad).status_code == 400
        doc = stats(server)
        posted = httpx.post(f"http://{server.http_url}/v2/modelyard/stats")
        headed = httpx.head(f"http://{server.http_url}/v2/modelyard/stats")
    assert (headed.status_code, headed.content) == (200, b"")  # HEAD reads as GET does
    assert posted.status_code == 405  # as every GET-only route answers another method
    assert posted.headers["allow"] == "GET, HEAD"
    assert "/v2/modelyard/stats takes GET or HEAD, not POST" in posted.json()["error"]

    assert set(doc) == {"instance", "models", "governance"}
    instance = doc["instance"]
    assert instance["in_flight"] == 0
    assert instance["uptime_s"] > 0 and instance["time"] > 1.7e9
    assert doc["governance"] is None
    assert [(m["name"], m["version"]) for m in doc["models"]] == [
        ("slow_double", "1"),
        ("slow_double", "2"),
    ]
    for model, expected in zip(doc["models"], (n, 2 * n), strict=True):
        assert model["state"] == "READY"
        assert model["platform"] == "python"
        assert model["devices"] == ["cpu"]
        assert model["pending"] == 0
        assert (model["success"], model["failure"]) == (expected, 0)
        assert model["bad_requests"] == (2 if model["version"] == "1" else 0)
        assert model["inference_count"] == expected  # one row per request
        assert 1 <= model["execution_count"] <= expected
        assert model["queue_ns"] >= 0 and model["compute_ns"] > 0
        histograms = model["histograms"]
        assert set(histograms) == {
            "request_seconds",
            "queue_seconds",
            "compute_seconds",
            "batch_size",
        }
        for hist in histograms.values():
            assert len(hist["counts"]) == len(hist["bounds"]) + 1
        assert sum(histograms["request_seconds"]["counts"]) == expected
        assert sum(histograms["queue_seconds"]["counts"]) == expected
        assert sum(histograms["batch_size"]["counts"]) == model["execution_count"]


def test_governance_block_counts_decisions_by_interface_and_rule(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    failing(repository)
    service_file = tmp_path / "service.yaml"
    service_file.write_text(SERVICE)
    statuses: dict[str, list[int]] = {"slow_double": [], "failing": []}
    with (
        server_in_process(repository, "--service-config", str(service_file)) as server,
        httpx.Client() as client,
    ):

        def infer(model: str, body: object) -> None:
            response = client.post(
                f"http://{server.http_url}/v2/models/{model}/infer",
                json=body,
                headers={"x-api-key": CALLER_KEY},
            )
            statuses[model].append(response.status_code)

        for _ in range(3):  # two failures open the breaker, the third is refused by it
            infer("failing", FAILING_BODY)
        for _ in range(40):  # far over 10/s: the limit refuses most
            infer("slow_double", BODY)
        # stats are monitoring (the health interface): readable without credentials,
        # like /metrics, so the control plane's poll needs no key
        anonymous = client.get(f"http://{server.http_url}/v2/modelyard/stats")
        doc = stats(server, POLLER_KEY)
        samples = scrape(server)

    assert statuses["failing"] == [500, 500, 503]
    ok, limited = statuses["slow_double"].count(200), statuses["slow_double"].count(429)
    assert ok + limited == 40 and ok >= 5 and limited > 0
    assert anonymous.status_code == 200

    assert doc["instance"]["in_flight"] == 0
    models = {m["name"]: m for m in doc["models"]}
    assert (models["slow_double"]["success"], models["slow_double"]["failure"]) == (ok, 0)
    assert (models["failing"]["success"], models["failing"]["failure"]) == (0, 2)

    governance = doc["governance"]
    assert governance["service"] == "com.example.test.stats"
    admitted = governance["admitted"]
    assert admitted["infer"] == 2 + ok and "metadata" not in admitted
    assert admitted["health"] >= 2  # readiness checks and the anonymous poll
    assert governance["rejected"] == {
        "infer": {"breaker/failing-errors": 1, "ratelimit/instance-qps": limited},
    }
    assert governance["fallbacks"] == {}
    assert governance["rejections_total"] == 1 + limited
    (breaker,) = governance["breakers"]
    assert breaker["rule"] == "breaker/failing-errors"
    assert breaker["interface"] == "infer" and breaker["model"] == "failing"
    assert breaker["state"] == "open"
    assert breaker["since"] <= doc["instance"]["time"]

    # the same decisions on /metrics
    service = ("service", "com.example.test.stats")
    infer = ("interface", "infer")
    assert samples[("modelyard_governance_admitted_total", (infer, service))] == 2 + ok
    for rule, count in (("breaker/failing-errors", 1), ("ratelimit/instance-qps", limited)):
        key = ("modelyard_governance_rejected_total", (infer, ("rule", rule), service))
        assert samples[key] == count
    open_breaker = (infer, ("model", "failing"), ("rule", "breaker/failing-errors"), service)
    assert samples[("modelyard_breaker_state", (*open_breaker, ("state", "open")))] == 1
    assert not [k for k in samples if k[0].startswith("modelyard_governance_fallbacks")]
    assert not [k for k in samples if k[0].startswith("modelyard_cluster_limit")]
