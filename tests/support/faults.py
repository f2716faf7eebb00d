"""Faults under steady load through ``platform up`` with real etcd and Redis: the fault suite
(tests/e2e/test_faults.py) and its benchmark (bench/faults.py) share this.

``FaultPlatform`` runs etcd, Redis and ``modelyard platform up`` (a service of two
instances behind its gateway's processes, central rules whose cluster-wide limit
counts in Redis); ``SteadyLoad`` calls through the gateway from ``callers``
threads at ``rate`` requests/s in all, each caller on its own kept-alive
connection, and records every call; ``FAULTS`` does each fault to the running
platform and says when it ended; ``summarize`` reads the calls of one run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.etcd_server import EtcdServer, running_etcd
from tests.support.redis_server import RedisServer, running_redis
from tests.support.servers import free_ports, wait_until

SERVICE = "com.example.faults"
CLUSTER_QPS = 2000  # far above the load: a limit that counts in Redis, and refuses nothing
WINDOW_S = 2.0  # the windows whose p99 says the latency is steady again

SPEC = """
quotas:
  q: {{owner: {{org: test}}, cpu_cores: 64, memory_gb: 64}}
queues:
  dc1-cpu: {{data_center: dc1, pool: cpu}}
services:
  {service}:
    interfaces: [infer, metadata]
    quota: q
    data_centers: [dc1]
    models: [{model}]
    groups:
      main:
        models: [{model}]
        templates:
          cpu: {{spec: 1C/1G, queues: {{dc1: dc1-cpu}}, replicas: {replicas}, loads: [{model}]}}
"""


@dataclass(slots=True)
class CallRecord:
    started: float  # seconds since the load began
    latency: float
    status: int  # 0: no HTTP answer
    error: str = ""


class SteadyLoad:
    """``callers`` threads, each sending one call every ``callers / rate`` seconds on its own
    connection (kept alive, as an HTTP client's pool does), each call with ``timeout``."""

    def __init__(
        self,
        url: str,
        model: str,
        body: dict[str, Any],
        callers: int = 8,
        rate: float = 100.0,
        timeout: float = 10.0,
    ) -> None:
        self.url = f"{url}/v2/models/{model}/infer"
        self.body = json.dumps(body).encode()
        self.callers = callers
        self.period = callers / rate
        self.timeout = timeout
        self.calls: list[CallRecord] = []
        self.notes: dict[str, Any] = {}  # what a fault observed on its way
        self.began = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.began

    def start(self) -> None:
        self.began = time.monotonic()
        for index in range(self.callers):
            offset = index * self.period / self.callers  # spread the callers over a period
            thread = threading.Thread(target=self._call, args=(offset,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout + 5)

    def _call(self, offset: float) -> None:
        headers = {"content-type": "application/json"}
        with httpx.Client(timeout=self.timeout) as client:
            due = self.began + offset
            while not self._stop.is_set():
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                started = time.monotonic()
                try:
                    reply = client.post(self.url, content=self.body, headers=headers)
                    error = "" if reply.status_code == 200 else reply.text[:300]
                    record = CallRecord(
                        started - self.began, time.monotonic() - started, reply.status_code, error
                    )
                except httpx.HTTPError as exc:
                    record = CallRecord(started - self.began, time.monotonic() - started, 0,
                                        f"{type(exc).__name__}: {exc}"[:300])  # fmt: skip
                with self._lock:
                    self.calls.append(record)
                due = max(due + self.period, time.monotonic() - self.period)


@dataclass(slots=True)
class Outcome:
    """One run: what failed, and the latency during the fault and after it."""

    fault: str
    calls: int
    failed: int  # neither answered nor refused by a configured limit
    limited: int  # 429s a configured limit asked for: not failures
    steady_p99: float
    p99_during: float  # the fault, and the 2 s after its end
    max_during: float
    back_to_steady_s: float  # from the fault's end until each 1 s window's p99 is steady again
    fault_started: float
    fault_ended: float
    failures: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def row(self) -> str:
        return (
            f"| {self.fault} | {self.calls} | {self.failed} | {self.limited} | "
            f"{self.steady_p99 * 1000:.0f} | {self.p99_during * 1000:.0f} | "
            f"{self.max_during * 1000:.0f} | {self.back_to_steady_s:.2f} |"
        )


def p99(latencies: list[float]) -> float:
    if not latencies:
        return 0.0
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summarize(
    fault: str, calls: list[CallRecord], started: float, ended: float, warm_up: float = 1.0
) -> Outcome:
    """``started``, ``ended``: the fault's, in the load's seconds. Steady: the calls from
    ``warm_up`` to the fault; during: from the fault's start to 2 s after its end; back to
    steady: from the fault's end to the first 2 s window (stepped by 0.25 s) whose p99, and
    the next 2 s window's, are within twice the steady p99 (20 ms more at least)."""
    failed = [c for c in calls if c.status not in (200, 429)]
    steady = p99([c.latency for c in calls if warm_up <= c.started < started])
    window_calls = [c.latency for c in calls if started <= c.started < ended + 2.0]
    during = p99(window_calls)
    threshold = max(2 * steady, steady + 0.02)
    last = max((c.started for c in calls), default=ended)

    def calm(begin: float) -> bool:
        inside = [c.latency for c in calls if begin <= c.started < begin + WINDOW_S]
        return not inside or p99(inside) <= threshold

    back = 0.0
    window = ended
    while window + 2 * WINDOW_S <= last and not (calm(window) and calm(window + WINDOW_S)):
        window += 0.25
        back = window - ended
    return Outcome(
        fault, len(calls), len(failed), sum(1 for c in calls if c.status == 429), steady, during,
        max(window_calls, default=0.0), back, started, ended,
        [f"t={c.started:.2f}s {c.status} {c.error}" for c in failed[:20]],
    )  # fmt: skip


class FaultPlatform:
    """etcd, Redis and ``platform up`` for a service of ``replicas`` instances serving
    ``model`` from ``repository`` (which the caller has written)."""

    def __init__(self, directory: Path, repository: Path, model: str, replicas: int = 2) -> None:
        self.directory = directory
        self.repository = repository
        self.model = model
        self.replicas = replicas
        self.state = directory / "state"
        self.spec = directory / "platform.yaml"
        self.control_port, self.gateway_port = free_ports(2)
        self.control = f"http://127.0.0.1:{self.control_port}"
        self.gateway = f"http://127.0.0.1:{self.gateway_port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.etcd: EtcdServer
        self.redis: RedisServer
        self._logs = 0

    @contextmanager
    def running(self) -> Iterator[FaultPlatform]:
        with ExitStack() as stack:
            self.etcd = stack.enter_context(running_etcd(self.directory))
            self.redis = stack.enter_context(running_redis(self.directory))
            self.spec.write_text(
                SPEC.format(service=SERVICE, model=self.model, replicas=self.replicas)
            )
            rules = self.directory / "rules.yaml"
            rules.write_text(
                f"limits:\n  infer:\n    cluster_qps: {CLUSTER_QPS}\n    burst_seconds: 1\n"
                f'cluster:\n  redis_url: "{self.redis.url}"\n'
            )
            done = self.modelyard("rules", "apply", SERVICE, "-f", str(rules), "--registry",
                                  self.etcd.url)  # fmt: skip
            assert done.returncode == 0, done.stderr
            stack.callback(self.stop)
            self.start()
            yield self

    def modelyard(self, *words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "modelyard.cli.main", *words],
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    @property
    def log(self) -> Path:
        return self.directory / f"platform-{self._logs}.log"

    def start(self, timeout: float = 120.0) -> None:
        """``platform up`` on the state (again, after a kill: on the state it left)."""
        self._logs += 1
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "modelyard.cli.main", "platform", "up",
                 "-f", str(self.spec), "--state", str(self.state),
                 "--model-repository", str(self.repository), "--registry", self.etcd.url,
                 "--port", str(self.control_port), "--gateway-port", str(self.gateway_port),
                 "--autoscale", "off"],
                stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )  # fmt: skip
        wait_until(self.ready, timeout=timeout, interval=0.2)

    def ready(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log.read_text()
        try:
            overview = self.get("/api/v1/overview")
        except (httpx.HTTPError, AssertionError):
            return False
        service = overview["services"][0]
        instances = [i for g in service["groups"] for i in g["instances"]]
        return (
            len(instances) == self.replicas
            and all(i["alive"] and i["live"]["up"] for i in instances)
            and all(
                g["state"] == ("standby" if g["slot"] < 0 else "running")
                for g in service["gateways"]
            )
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for instance in self.instances(ask=False):
            with suppress(ProcessLookupError):
                os.kill(instance["pid"], signal.SIGKILL)

    def get(self, path: str) -> Any:
        response = httpx.get(f"{self.control}{path}", timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def instances(self, ask: bool = True) -> list[dict[str, Any]]:
        if ask:
            service = self.get("/api/v1/overview")["services"][0]
            return [i for g in service["groups"] for i in g["instances"]]
        path = self.state / "state.json"
        if not path.exists():
            return []
        return [{"pid": i["pid"], "name": i["name"]}
                for i in json.loads(path.read_text())["instances"]]  # fmt: skip

    def gateways(self) -> list[dict[str, Any]]:
        """The gateway processes serving the service's port (not its standby)."""
        gateways = self.get("/api/v1/overview")["services"][0]["gateways"]
        return [g for g in gateways if g["slot"] >= 0]

    def settle(self, timeout: float = 60.0) -> None:
        """Until every instance and gateway process serves again (after a fault)."""
        wait_until(self.ready, timeout=timeout, interval=0.2)


# ---- the faults: each does its fault to a running platform, in the load's seconds -------


Fault = Callable[[FaultPlatform, SteadyLoad, float], tuple[float, float]]


def instance_sigkill(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    victim = platform.instances()[0]
    started = load.now()
    os.kill(victim["pid"], signal.SIGKILL)
    return started, started


def instance_restart(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    """SIGTERM: the instance deregisters, drains and exits; the supervisor replaces it."""
    victim = platform.instances()[0]
    started = load.now()
    os.kill(victim["pid"], signal.SIGTERM)

    def replaced() -> bool:
        now = platform.instances()
        return (
            victim["name"] not in {i["name"] for i in now}
            and all(i["alive"] and i["live"]["up"] for i in now)
            and len(now) == platform.replicas
        )

    wait_until(replaced, timeout=90, interval=0.1)
    return started, load.now()


def instance_sigstop(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    victim = platform.instances()[0]
    started = load.now()
    os.kill(victim["pid"], signal.SIGSTOP)
    try:
        time.sleep(hold)
    finally:
        os.kill(victim["pid"], signal.SIGCONT)
    return started, load.now()


def gateway_restart(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    """Each gateway process in turn: SIGTERM, and the supervisor starts it again."""
    started = load.now()
    for gateway in platform.gateways():
        os.kill(gateway["pid"], signal.SIGTERM)

        def replaced(slot: int = gateway["slot"], pid: int = gateway["pid"]) -> bool:
            now = next(g for g in platform.gateways() if g["slot"] == slot)
            return now["pid"] != pid and now["state"] == "running"

        wait_until(replaced, timeout=60, interval=0.05)
    return started, load.now()


def gateway_sigkill(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    victim = platform.gateways()[0]
    started = load.now()
    os.kill(victim["pid"], signal.SIGKILL)

    def serving() -> bool:
        now = next(g for g in platform.gateways() if g["slot"] == victim["slot"])
        return now["pid"] != victim["pid"] and now["state"] == "running"

    wait_until(serving, timeout=60, interval=0.05)
    load.notes["serving_again_s"] = round(load.now() - started, 2)
    return started, started


def etcd_down(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    started = load.now()
    platform.etcd.stop()
    try:
        time.sleep(hold)
    finally:
        platform.etcd.start()
    return started, load.now()


def redis_down(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    started = load.now()
    platform.redis.stop()
    try:
        time.sleep(hold)
    finally:
        platform.redis.start()
    return started, load.now()


def control_plane_restart(
    platform: FaultPlatform, load: SteadyLoad, hold: float
) -> tuple[float, float]:
    """SIGKILL ``platform up``; start it again on its state once ``hold`` has passed."""
    assert platform.process is not None
    started = load.now()
    platform.process.kill()
    platform.process.wait()
    time.sleep(hold)
    platform.start()
    return started, load.now()


BROKEN_CONFIG = (
    'backend: "python"\nmax_batch_size: 16\ninput [{ name: "x" data_type: TYPE_NOPE }]\n'
)


def bad_config(platform: FaultPlatform, load: SteadyLoad, hold: float) -> tuple[float, float]:
    """A broken config.pbtxt pushed while the good version serves: each instance is asked to
    load it, refuses with the file and line, and serves on."""
    config = platform.repository / platform.model / "config.pbtxt"
    good = config.read_text()
    started = load.now()
    config.write_text(BROKEN_CONFIG)
    refusals = []
    try:
        for instance in platform.instances():
            url = f"http://{instance['http']}/v2/repository/models/{platform.model}/load"
            reply = httpx.post(url, json={}, timeout=30)
            refusals.append((reply.status_code, reply.json().get("error", "")))
        time.sleep(hold)
    finally:
        config.write_text(good)
    load.notes["refusals"] = refusals
    return started, load.now()


def gateway_start_with_etcd_down(
    platform: FaultPlatform, load: SteadyLoad, hold: float
) -> tuple[float, float]:
    """etcd stopped, then every gateway process restarted in turn: each new one starts while
    the registry cannot be read, from the instances its predecessors kept on disk."""
    started = load.now()
    platform.etcd.stop()
    try:
        gateway_restart(platform, load, hold)
        time.sleep(max(0.0, hold - (load.now() - started)))
    finally:
        platform.etcd.start()
    return started, load.now()


FAULTS: dict[str, Fault] = {
    "instance SIGKILL": instance_sigkill,
    "instance SIGSTOP": instance_sigstop,
    "instance restart (SIGTERM)": instance_restart,
    "gateway restart (SIGTERM each process)": gateway_restart,
    "gateway SIGKILL": gateway_sigkill,
    "etcd down": etcd_down,
    "Redis down": redis_down,
    "control plane SIGKILL, started again on its state": control_plane_restart,
    "bad config.pbtxt pushed": bad_config,
    "gateway started while etcd is down": gateway_start_with_etcd_down,
}


def run_fault(
    platform: FaultPlatform,
    name: str,
    body: dict[str, Any],
    *,
    seconds: float,
    fault_at: float,
    hold: float,
    callers: int = 8,
    rate: float = 100.0,
) -> Outcome:
    """Steady load for ``seconds``, the fault ``name`` at ``fault_at`` (held ``hold`` s where it
    lasts), then the platform settled for the next run."""
    load = SteadyLoad(platform.gateway, platform.model, body, callers, rate)
    load.start()
    try:
        time.sleep(fault_at)
        started, ended = FAULTS[name](platform, load, hold)
        time.sleep(max(0.0, seconds - load.now()))
    finally:
        load.stop()
    outcome = summarize(name, load.calls, started, ended)
    outcome.notes = dict(load.notes)
    platform.settle()
    return outcome
