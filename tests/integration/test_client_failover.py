"""The client SDK against real ``modelyard serve`` processes under continuous load.

The test registers the instances in an in-memory registry itself, as an
instance's self-registration would. Every scenario runs an HTTP client and a
gRPC client at once; none of their requests may fail.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
from structlog.testing import capture_logs

from modelyard.client import Client, ClientError
from modelyard.client.attempts import DEFAULT_ATTEMPT_SECS
from modelyard.discovery.registry import Instance, Lease
from modelyard.errors import Code, ModelServerError
from tests.support.memory_registry import MemoryRegistry
from tests.support.models import slow_double, times_ten
from tests.support.servers import ServerProcess, running_server, wait_until

SERVICE = "com.example.test.doubler"
MODEL = "slow_double"
X = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
EXPECTED = X * 2 + 1000  # version 1
READY = {MODEL: {"1": "READY"}}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("failover") / "models"
    slow_double(repository, delay=0.002)
    return repository


def instance(
    server: ServerProcess,
    group: str = "a",
    models: dict[str, dict[str, str]] = READY,
    instance_id: str | None = None,
) -> Instance:
    return Instance(
        service=SERVICE,
        group=group,
        instance_id=instance_id or f"i{server.http_port}",
        http=server.http_url,
        grpc=server.grpc_url,
        models=dict(models),
    )


def register(registry: MemoryRegistry, entry: Instance) -> Lease:
    return asyncio.run(registry.register(entry, ttl=300))


class Load:
    """Worker threads calling ``infer`` through each client until stopped.

    Each worker pauses a little between calls: a saturated two-core machine
    would take seconds to start each replacement server.
    """

    def __init__(self, clients: dict[str, Client], workers: int = 2, pause: float = 0.002) -> None:
        self.clients = clients
        self.workers = workers
        self.pause = pause
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.succeeded = 0
        self.failures: list[str] = []

    def _work(self, label: str, client: Client) -> None:
        done = 0
        while not self.stopped.is_set():
            try:
                outputs = client.infer(MODEL, {"x": X}, timeout=10)
                np.testing.assert_array_equal(outputs["y"], EXPECTED)
                done += 1
            except Exception as exc:
                with self.lock:
                    self.failures.append(f"{label}: {type(exc).__name__}: {exc}")
            if done % 20 == 0:
                with self.lock:
                    self.succeeded += done
                done = 0
            time.sleep(self.pause)
        with self.lock:
            self.succeeded += done

    def wait_for(self, more: int, timeout: float = 20.0) -> None:
        """Block until ``more`` requests have succeeded from now."""
        with self.lock:
            target = self.succeeded + more
        wait_until(lambda: self.succeeded >= target, timeout=timeout)

    @contextmanager
    def running(self) -> Iterator[Load]:
        threads = [
            threading.Thread(target=self._work, args=(label, client))
            for label, client in self.clients.items()
            for _ in range(self.workers)
        ]
        for thread in threads:
            thread.start()
        try:
            yield self
        finally:
            self.stopped.set()
            for thread in threads:
                thread.join(30)


@contextmanager
def clients(registry: MemoryRegistry) -> Iterator[dict[str, Client]]:
    with (
        Client(SERVICE, registry, transport="http") as http,
        Client(SERVICE, registry, transport="grpc") as grpc,
    ):
        yield {"http": http, "grpc": grpc}


def served_requests(server: ServerProcess) -> int:
    doc = httpx.get(f"http://{server.http_url}/v2/models/{MODEL}/stats", timeout=5).json()
    return sum(int(row["inference_count"]) for row in doc["model_stats"])


def test_a_killed_instance_costs_no_request(repository: Path, tmp_path: Path) -> None:
    registry = MemoryRegistry()
    with ExitStack() as stack:
        servers = [stack.enter_context(running_server(repository, tmp_path)) for _ in range(3)]
        for server in servers:
            register(registry, instance(server))
        with clients(registry) as by_transport, Load(by_transport).running() as load:
            load.wait_for(300)
            servers[0].process.kill()  # SIGKILL: in-flight requests and pooled sockets die
            load.wait_for(600)
            for client in by_transport.values():
                ejected = [h.key.partition("@")[0] for h in client.async_client.balancer.ejected()]
                assert ejected == [f"i{servers[0].http_port}"]
        assert load.failures == []
        assert all(served_requests(server) > 50 for server in servers[1:])


def test_a_rolling_restart_of_every_instance_costs_no_request(
    repository: Path, tmp_path: Path
) -> None:
    registry = MemoryRegistry()
    with ExitStack() as stack:
        servers = [stack.enter_context(running_server(repository, tmp_path)) for _ in range(3)]
        leases = [register(registry, instance(server)) for server in servers]
        with clients(registry) as by_transport, Load(by_transport).running() as load:
            load.wait_for(200)
            for index in range(len(servers)):
                servers[index].stop()  # SIGTERM: drains, while the registry still lists it
                replacement = stack.enter_context(running_server(repository, tmp_path))
                new_lease = register(registry, instance(replacement))
                asyncio.run(registry.deregister(leases[index]))
                servers[index], leases[index] = replacement, new_lease
                load.wait_for(100)
            load.wait_for(200)
        assert load.failures == []
        assert all(served_requests(server) > 0 for server in servers)


def test_a_model_moved_to_another_group_stays_reachable(repository: Path, tmp_path: Path) -> None:
    registry = MemoryRegistry()
    explicit = ("--model-control-mode", "explicit")
    with (
        running_server(repository, tmp_path, *explicit) as group_a,
        running_server(repository, tmp_path, *explicit, "--load-model", MODEL) as group_b,
    ):
        lease_a = register(registry, instance(group_a, "a", {}))
        lease_b = register(registry, instance(group_b, "b", READY))
        with clients(registry) as by_transport, Load(by_transport).running() as load:
            load.wait_for(200)
            assert served_requests(group_b) >= 200

            load_url = f"http://{group_a.http_url}/v2/repository/models/{MODEL}/load"
            assert httpx.post(load_url, timeout=30).status_code == 200
            asyncio.run(registry.update(lease_a, instance(group_a, "a", READY)))
            asyncio.run(registry.update(lease_b, instance(group_b, "b", {})))
            unload_url = f"http://{group_b.http_url}/v2/repository/models/{MODEL}/unload"
            assert httpx.post(unload_url, timeout=30).status_code == 200

            load.wait_for(200)
            for client in by_transport.values():
                routed = client.async_client.candidates(MODEL)
                assert [e.instance.group for e in routed] == ["a"]
        assert load.failures == []
        assert served_requests(group_a) >= 200


@pytest.fixture(scope="module")
def one_server(
    repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    with running_server(repository, tmp_path_factory.mktemp("logs")) as server:
        yield server


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_the_caller_gets_the_instance_error_line(one_server: ServerProcess, transport: str) -> None:
    registry = MemoryRegistry()
    register(registry, instance(one_server))
    direct = httpx.post(
        f"http://{one_server.http_url}/v2/models/{MODEL}/infer",
        json={"inputs": [{"name": "z", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]},
        timeout=5,
    )
    with Client(SERVICE, registry, transport=transport) as client:
        with pytest.raises(ModelServerError) as raised:
            client.infer(MODEL, {"z": X})
        assert raised.value.code == Code.INVALID_ARGUMENT
        assert str(raised.value) == direct.json()["error"]

        with pytest.raises(ClientError) as missing:
            client.infer("no_such_model", {"x": X})
        assert missing.value.code == Code.NOT_FOUND
        assert missing.value.rule == "client/no-instance-for-model"


def test_an_unreachable_registry_leaves_the_last_known_instances(
    one_server: ServerProcess,
) -> None:
    registry = MemoryRegistry()
    register(registry, instance(one_server))
    with Client(SERVICE, registry, transport="http") as client:
        np.testing.assert_array_equal(client.infer(MODEL, {"x": X})["y"], EXPECTED)
        registry.reachable = False
        for _ in range(20):
            np.testing.assert_array_equal(client.infer(MODEL, {"x": X})["y"], EXPECTED)
        registry.reachable = True
        register(registry, instance(one_server, instance_id="second-entry"))
        wait_until(lambda: len(client.instances()) == 2, timeout=10)


@contextmanager
def silent_listener() -> Iterator[str]:
    """A port that accepts connections and never answers, as a host whose link is cut
    looks to a caller that already had a connection open."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_an_instance_that_stops_answering_costs_no_request_with_an_attempt_timeout(
    one_server: ServerProcess,
) -> None:
    registry = MemoryRegistry()
    with silent_listener() as silent:
        register(registry, instance(one_server))
        register(
            registry,
            Instance(SERVICE, "a", "silent", http=silent, grpc=silent, models=dict(READY)),
        )
        for transport in ("http", "grpc"):
            with Client(SERVICE, registry, transport=transport, attempt_timeout=0.3) as client:
                balancer = client.async_client.balancer
                started = time.monotonic()
                # the first pick of a call is a coin toss: five misses of the silent one take
                # about ten calls, and sixty leave no real chance of never getting there
                for _ in range(60):
                    outputs = client.infer(MODEL, {"x": X}, timeout=10)
                    np.testing.assert_array_equal(outputs["y"], EXPECTED)
                    if balancer.ejected():
                        break
                # the silent one held a few attempts, each 0.3 s, before its ejection
                assert time.monotonic() - started < 10
                ejected = [h.key.partition("@")[0] for h in balancer.ejected()]
                assert ejected == ["silent"]


def test_the_attempt_timeout_says_which_instance_did_not_answer() -> None:
    registry = MemoryRegistry()
    with silent_listener() as silent:
        register(registry, Instance(SERVICE, "a", "silent", http=silent, models=dict(READY)))
        with (
            Client(SERVICE, registry, attempt_timeout=0.2) as client,
            pytest.raises(ClientError) as error,
        ):
            client.infer(MODEL, {"x": X}, timeout=10)
        assert error.value.code is Code.UNAVAILABLE
        assert error.value.rule == "client/attempt-timeout"
        assert f"no answer from instance {silent} within the attempt timeout" in str(error.value)


def test_by_default_a_silent_instance_costs_an_attempt_not_the_call(
    one_server: ServerProcess,
) -> None:
    """No attempt_timeout given: each attempt is bounded by a deadline derived from the
    model's latency (DEFAULT_ATTEMPT_SECS until it is known), tried elsewhere once past it,
    and the silent instance is ejected as a failing one."""
    registry = MemoryRegistry()
    with silent_listener() as silent:
        register(registry, instance(one_server))
        register(registry, Instance(SERVICE, "a", "silent", http=silent, models=dict(READY)))
        with Client(SERVICE, registry) as client:
            balancer = client.async_client.balancer
            slowest = 0.0
            for _ in range(60):
                started = time.monotonic()
                outputs = client.infer(MODEL, {"x": X}, timeout=10)
                slowest = max(slowest, time.monotonic() - started)
                np.testing.assert_array_equal(outputs["y"], EXPECTED)
                if balancer.ejected():
                    break
            assert [h.key.partition("@")[0] for h in balancer.ejected()] == ["silent"]
            assert slowest < DEFAULT_ATTEMPT_SECS + 2.0, slowest


def test_the_derived_deadline_leaves_the_last_instance_the_whole_call() -> None:
    """With one instance there is nowhere else to try: a derived deadline does not cut its
    attempt short (a model slower than the default still answers), the call's timeout does."""
    registry = MemoryRegistry()
    with silent_listener() as silent:
        register(registry, Instance(SERVICE, "a", "silent", http=silent, models=dict(READY)))
        with Client(SERVICE, registry) as client, pytest.raises(ClientError) as error:
            client.infer(MODEL, {"x": X}, timeout=DEFAULT_ATTEMPT_SECS + 0.5)
        assert error.value.rule == "client/deadline"


def test_a_hedged_call_answers_from_another_instance_after_the_p95(
    one_server: ServerProcess,
) -> None:
    registry = MemoryRegistry()
    with silent_listener() as silent:
        register(registry, instance(one_server))
        with Client(SERVICE, registry, attempt_timeout="off", hedge=True) as client:
            for _ in range(40):  # the model's p95 is known after 20 answers
                client.infer(MODEL, {"x": X}, timeout=10)
            p95 = client.async_client.attempts.latency(MODEL).p95
            assert p95 is not None
            register(registry, Instance(SERVICE, "a", "silent", http=silent, models=dict(READY)))
            wait_until(lambda: len(client.instances()) == 2)
            slowest = 0.0
            for _ in range(30):  # about half pick the silent one first: hedged after the p95
                started = time.monotonic()
                outputs = client.infer(MODEL, {"x": X}, timeout=10)
                slowest = max(slowest, time.monotonic() - started)
                np.testing.assert_array_equal(outputs["y"], EXPECTED)
            assert slowest < 1.0, (slowest, p95)
            assert client.async_client.balancer.ejected() == []  # a lost hedge is no failure


def test_a_client_started_while_the_registry_is_down_serves_the_instances_it_kept(
    one_server: ServerProcess, tmp_path: Path
) -> None:
    registry = MemoryRegistry()
    cache = tmp_path / "instances.json"
    register(registry, instance(one_server))
    with Client(SERVICE, registry, instances_cache=cache) as client:
        assert client.async_client.cached_age is None
    assert cache.exists()
    registry.reachable = False
    with capture_logs() as logs, Client(SERVICE, registry, instances_cache=cache) as client:
        age = client.async_client.cached_age
        assert age is not None and 0 <= age < 60
        (warning,) = [e for e in logs if e["event"] == "serving_cached_instances"]
        assert warning["age_s"] == round(age, 1) and "read from it" in warning["hint"]
        np.testing.assert_array_equal(client.infer(MODEL, {"x": X})["y"], EXPECTED)
        registry.reachable = True  # the follower lists it again, and the cache is left
        wait_until(lambda: client.async_client.cached_age is None, timeout=15)
    registry.reachable = False
    with Client(SERVICE, registry, instances_cache=None) as client, pytest.raises(ClientError):
        client.infer(MODEL, {"x": X})  # no cache: no instance known


def test_an_attempt_timeout_must_be_positive() -> None:
    with pytest.raises(ClientError) as refused:
        Client(SERVICE, MemoryRegistry(), attempt_timeout=0)
    assert refused.value.rule == "client/attempt-timeout"
    assert refused.value.code is Code.INVALID_ARGUMENT


def test_callers_keep_to_their_data_centre_and_spill_over_when_it_has_none_healthy(
    repository: Path, tmp_path: Path
) -> None:
    registry = MemoryRegistry()
    with ExitStack() as stack:
        servers = [stack.enter_context(running_server(repository, tmp_path)) for _ in range(4)]
        for server, dc in zip(servers, ("dc1", "dc1", "dc2", "dc2"), strict=True):
            entry = instance(server)
            entry.labels["data_center"] = dc
            register(registry, entry)
        with (
            Client(SERVICE, registry, transport="http", data_center="dc1") as http,
            Client(SERVICE, registry, transport="grpc", data_center="dc1") as grpc,
        ):
            load = Load({"http": http, "grpc": grpc})
            with load.running():
                load.wait_for(300)
                assert served_requests(servers[2]) + served_requests(servers[3]) == 0  # dc1 could
                assert min(served_requests(s) for s in servers[:2]) > 50  # both of dc1 did
                for server in servers[:2]:
                    server.process.kill()  # dc1 is lost
                load.wait_for(300)
        assert load.failures == []
        assert served_requests(servers[2]) + served_requests(servers[3]) > 250  # dc2 took over


def test_a_canary_at_ten_percent_gets_ten_percent_while_other_models_load_the_rest(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository, delay=0.002)
    times_ten(repository, "other")
    registry = MemoryRegistry()
    both = {MODEL: {"1": "READY"}, "other": {"1": "READY"}}
    with ExitStack() as stack:
        servers = [stack.enter_context(running_server(repository, tmp_path)) for _ in range(4)]
        for server in servers[:3]:  # stable: the released model and another one
            register(registry, instance(server, models=both))
        canary = instance(servers[3])  # the released model only, as release._set_weights
        canary.weight = 10 * 3 / 90  # weighs it at 10 %
        register(registry, canary)
        stop = threading.Event()
        # no attempt deadline: on a loaded machine an attempt past its "auto" deadline is
        # tried again elsewhere and counted twice, and this test counts every row served
        with Client(SERVICE, registry, transport="http", attempt_timeout="off") as client:

            def other_model() -> None:  # keeps the stable instances busy
                while not stop.is_set():
                    client.infer("other", {"x": X})

            failures: list[str] = []

            def released_model(calls: int) -> None:
                for _ in range(calls):
                    try:
                        client.infer(MODEL, {"x": X})
                    except Exception as exc:  # said below, not lost with the thread
                        failures.append(f"{type(exc).__name__}: {exc}")

            background = [threading.Thread(target=other_model) for _ in range(6)]
            measured = [threading.Thread(target=released_model, args=(300,)) for _ in range(4)]
            for thread in background + measured:
                thread.start()
            for thread in measured:
                thread.join(120)
            stop.set()
            for thread in background:
                thread.join(30)
        assert failures == []
        served = [served_requests(server) for server in servers]
        assert sum(served) == 1200 * len(X)  # inference_count counts rows
        share = served[3] / sum(served)
        assert abs(share - 0.10) <= 0.03, share  # idle beside busy ones, it still gets 10 %
