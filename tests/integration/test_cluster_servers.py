"""Two real server processes share one cluster-qps limit: counted in a real Redis, or
divided by the live instances their registry shows while Redis is down."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from modelyard.discovery import open_registry
from modelyard.discovery.registry import Instance
from tests.support.models import slow_double
from tests.support.redis_server import running_redis
from tests.support.servers import ServerProcess, free_port, running_server, scrape, wait_until

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


def assert_the_limit_holds(servers: list[ServerProcess], limit: int, seconds: float = 4.0) -> None:
    """Under load well above ``limit``, the servers together admit it within 10 % over, once
    the buckets' burst is spent."""
    hammer(servers, 1.5, Counter())  # spend the buckets' burst
    statuses: Counter[int] = Counter()
    hammer(servers, seconds, statuses)
    admitted = statuses[200]
    assert set(statuses) <= {200, 429}, statuses
    assert statuses[429] > admitted  # the load was well above the limit
    assert admitted <= 1.1 * limit * seconds, statuses
    assert admitted >= 0.8 * limit * seconds, statuses


def log_shows_fallback(server: ServerProcess) -> bool:
    log = server.log()
    return "cluster_limit_fallback" in log and "state=entered" in log


def registry_entries(registry_url: str, service: str) -> list[Instance]:
    async def resolve() -> list[Instance]:
        registry = open_registry(registry_url)
        try:
            return (await registry.resolve(service)).instances
        finally:
            await registry.aclose()

    return asyncio.run(resolve())


def live_entries(registry_url: str, service: str) -> int:
    return len(registry_entries(registry_url, service))


def refusal_lines(server: ServerProcess, calls: int = 40) -> set[str]:
    lines = set()
    with httpx.Client() as client:
        for _ in range(calls):
            url = f"http://{server.http_url}/v2/models/slow_double/infer"
            response = client.post(url, json=BODY)
            if response.status_code == 429:
                lines.add(response.json()["error"])
    return lines


@pytest.mark.slow
def test_without_redis_each_instance_enforces_its_share_of_the_live_instances(
    tmp_path: Path,
) -> None:
    limit = 30
    service_name = "com.example.test.split"
    repository = tmp_path / "models"
    slow_double(repository)
    registry = f"embedded://{tmp_path / 'registry.db'}"
    service = tmp_path / "service.yaml"
    service.write_text(  # nothing listens on the Redis port: Redis is down throughout
        f"service: {service_name}\n"
        f"limits:\n  infer:\n    cluster_qps: {limit}\n    burst_seconds: 1\n"
        f'cluster:\n  redis_url: "redis://127.0.0.1:{free_port()}/0"\n'
    )
    flags = ("--service-config", str(service), "--service", service_name, "--group", "g")
    with ExitStack() as stack:
        servers = [
            stack.enter_context(
                running_server(repository, tmp_path, *flags, "--registry", registry)
            )
            for _ in range(2)
        ]
        wait_until(lambda: live_entries(registry, service_name) == 2, timeout=10)
        # each follows the registry: its refusals say it holds one share of two
        for server in servers:
            wait_until(
                lambda s=server: any("1 of 2 live instances" in line for line in refusal_lines(s)),
                timeout=10,
            )
        # limit / 2 on each, not the whole limit on each (which admitted ~2x)
        assert_the_limit_holds(servers, limit)
        for server in servers:
            assert "live_instances" in server.log()


@pytest.mark.slow
def test_when_one_instance_cannot_reach_redis_the_others_lease_less_and_the_limit_holds(
    tmp_path: Path,
) -> None:
    limit = 40
    service_name = "com.example.test.partial"
    repository = tmp_path / "models"
    slow_double(repository)
    registry = f"embedded://{tmp_path / 'registry.db'}"
    limits = f"limits:\n  infer:\n    cluster_qps: {limit}\n    burst_seconds: 1\n"
    flags = ("--service", service_name, "--group", "g", "--registry", registry)
    with running_redis(tmp_path) as redis, ExitStack() as stack:
        reachable = tmp_path / "reachable.yaml"
        reachable.write_text(
            f'service: {service_name}\n{limits}cluster:\n  redis_url: "{redis.url}"\n'
        )
        cut_off = tmp_path / "cut-off.yaml"  # as a host whose route to Redis is gone
        cut_off.write_text(
            f"service: {service_name}\n{limits}"
            f'cluster:\n  redis_url: "redis://127.0.0.1:{free_port()}/0"\n'
        )
        servers = [
            stack.enter_context(
                running_server(repository, tmp_path, "--service-config", str(path), *flags)
            )
            for path in (reachable, cut_off)
        ]
        wait_until(lambda: live_entries(registry, service_name) == 2, timeout=10)
        hammer(servers, 1.0, Counter())  # the cut-off one falls back and says so
        wait_until(
            lambda: (
                [e.cluster_limit_local for e in registry_entries(registry, service_name)].count(
                    True
                )
                == 1
            ),
            timeout=10,
        )
        shown = "redis unreachable from some"
        wait_until(lambda: any(shown in line for line in refusal_lines(servers[0])), timeout=10)
        # the reachable one leases half from Redis, the other enforces its half: not 1.5x
        assert_the_limit_holds(servers, limit)
        lines = refusal_lines(servers[0])
        assert lines and all("the instances on Redis lease 50% of the limit" in s for s in lines)
