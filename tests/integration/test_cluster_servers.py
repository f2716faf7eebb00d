"""Two real server processes share one cluster-qps limit counted in a real Redis."""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx

from tests.support.models import slow_double
from tests.support.redis_server import running_redis
from tests.support.servers import ServerProcess, running_server, scrape, wait_until

LIMIT = 100
BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


def hammer(servers: list[ServerProcess], seconds: float, statuses: Counter[int]) -> None:
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def worker(server: ServerProcess) -> None:
        seen: Counter[int] = Counter()
        with httpx.Client() as client:
            while time.monotonic() < end:
                response = client.post(
                    f"http://{server.http_url}/v2/models/slow_double/infer", json=BODY
                )
                seen[response.status_code] += 1
        with lock:
            statuses.update(seen)

    threads = [threading.Thread(target=worker, args=(s,)) for s in servers for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_two_processes_share_one_cluster_limit_and_survive_a_redis_outage(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with running_redis(tmp_path) as redis, ExitStack() as stack:
        service = tmp_path / "service.yaml"
        service.write_text(
            "service: com.example.test.shared\n"
            f"limits:\n  infer:\n    cluster_qps: {LIMIT}\n    burst_seconds: 1\n"
            f'cluster:\n  redis_url: "{redis.url}"\n  lease_chunk: 10\n'
        )
        servers = [
            stack.enter_context(
                running_server(repository, tmp_path, "--service-config", str(service))
            )
            for _ in range(2)
        ]

        seconds = 4.0
        statuses: Counter[int] = Counter()
        hammer(servers, seconds, statuses)
        admitted = statuses[200]
        # only the Lua script issues tokens: never more than limit x t + burst
        assert admitted <= LIMIT * seconds + LIMIT
        assert admitted >= 0.75 * LIMIT * seconds
        assert statuses[429] > admitted  # the load was well above the limit
        assert set(statuses) <= {200, 429}

        outage: Counter[int] = Counter()
        load = threading.Thread(target=hammer, args=(servers, 4.0, outage))
        load.start()
        time.sleep(1.0)
        redis.stop()
        time.sleep(1.5)
        redis.start()
        load.join()
        assert set(outage) <= {200, 429}, outage  # no 5xx while Redis was gone
        assert outage[200] > 0
        for server in servers:
            wait_until(lambda s=server: "state=left" in s.log(), timeout=15)
            assert log_shows_fallback(server)
            samples = scrape(server)
            service = (("service", "com.example.test.shared"),)
            assert samples[("modelyard_cluster_limit_fallback", service)] == 0  # back on Redis
            assert samples[("modelyard_cluster_limit_fallback_decisions_total", service)] > 0


def log_shows_fallback(server: ServerProcess) -> bool:
    log = server.log()
    return "cluster_limit_fallback" in log and "state=entered" in log
