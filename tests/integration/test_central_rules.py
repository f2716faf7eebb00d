"""Central rules on real instances: changes reach every instance within a second.

Five ``modelyard serve`` processes of one service share a cluster_qps limit
kept centrally in an embedded registry (counted in a real Redis); ``rules set``
raises it under load and ``rules rollback`` restores it; an invalid change is
refused; a late instance starts on the current rules; ``explain`` names the
rule of a real rejection. With etcd killed and restarted in the middle of a
series of changes, every instance (three here, to keep the suite short) only
ever reports whole revisions that are in history. The CLI runs in its own
process where the test is about the command, in this one elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from modelyard.cli.main import main
from modelyard.discovery.rules_store import RulesRevision, open_rules_store
from modelyard.errors import ModelyardError
from modelyard.governance.rules_document import commit_change, load_rules, set_key
from tests.support.etcd_server import running_etcd
from tests.support.models import slow_double
from tests.support.redis_server import running_redis
from tests.support.servers import ServerProcess, running_server, wait_until

pytestmark = pytest.mark.slow

SERVICE = "com.example.test.central"
LOW, HIGH = 40, 120  # cluster_qps before and after the change
BODY = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``modelyard ARGS`` in its own process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``modelyard ARGS`` in this process: the same code without a second interpreter's start."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def start_instances(
    stack: ExitStack, count: int, repository: Path, logs: Path, *extra: str
) -> list[ServerProcess]:
    """Start ``count`` instances at once; the stack stops them."""
    managers = [running_server(repository, logs, *extra) for _ in range(count)]
    with ThreadPoolExecutor(count) as pool:
        futures = [(manager, pool.submit(manager.__enter__)) for manager in managers]
    servers: list[ServerProcess] = []
    failure: BaseException | None = None
    for manager, future in futures:
        try:
            servers.append(future.result())
            stack.push(manager.__exit__)
        except BaseException as exc:
            failure = exc
    if failure is not None:
        raise failure
    return servers


def live_rules(server: ServerProcess) -> dict[str, Any]:
    doc: dict[str, Any] = httpx.get(
        f"http://{server.http_url}/v2/modelyard/rules", timeout=5
    ).json()
    return doc


def limit_in_force(doc: dict[str, Any], key: str) -> object:
    return next((r["value"] for r in doc["rules"] if r["rule"] == f"limits.infer.{key}"), None)


def stored(registry: str) -> list[RulesRevision]:
    """The service's history, newest first."""

    async def read() -> list[RulesRevision]:
        store = open_rules_store(registry)
        try:
            return await store.history(SERVICE)
        finally:
            await store.aclose()

    return asyncio.run(read())


def wait_applied(servers: list[ServerProcess], revision: RulesRevision) -> list[float]:
    """Wait until every instance enforces ``revision``; seconds each took after it was written."""
    wait_until(lambda: all(live_rules(s)["revision"] == revision.revision for s in servers), 10)
    delays = []
    for server in servers:
        doc = live_rules(server)
        assert doc["rules_source"]["central"]["digest"] == revision.digest
        delays.append(doc["applied_at"] - revision.time)
    return delays


class Load:
    """Requests to every instance from background threads, each at most ~50/s."""

    def __init__(self, servers: list[ServerProcess], threads_per_server: int = 2) -> None:
        self.servers = servers
        self.results: list[tuple[float, int]] = []
        self.rejections: deque[tuple[float, str, str]] = deque(maxlen=50)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(s,), daemon=True)
            for s in servers
            for _ in range(threads_per_server)
        ]

    def _run(self, server: ServerProcess) -> None:
        url = f"http://{server.http_url}/v2/models/slow_double/infer"
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                try:
                    response = client.post(url, json=BODY)
                except httpx.HTTPError:
                    continue
                now = time.monotonic()
                self.results.append((now, response.status_code))
                if response.status_code == 429:
                    rejection = (now, response.headers["x-request-id"], response.json()["error"])
                    self.rejections.append(rejection)
                time.sleep(0.02)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def admitted_per_second(self, seconds: float) -> float:
        start = time.monotonic()
        time.sleep(seconds)
        end = time.monotonic()
        admitted = sum(1 for t, status in list(self.results) if start <= t < end and status == 200)
        statuses = {status for t, status in list(self.results) if start <= t < end}
        assert statuses <= {200, 429}, statuses
        return admitted / (end - start)


def test_five_instances_follow_set_rollback_and_explain(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    registry = f"embedded://{tmp_path / 'registry.db'}"
    # what runs a platform makes its registry (rules commands refuse a file that is not there)
    (tmp_path / "registry.db").touch()
    with running_redis(tmp_path) as redis, ExitStack() as stack:
        rules_file = tmp_path / "rules.yaml"
        rules_file.write_text(
            f"limits:\n  infer:\n    cluster_qps: {LOW}\n    burst_seconds: 1\n"
            f'cluster:\n  redis_url: "{redis.url}"\n  lease_chunk: 5\n'
        )
        first = run("rules", "apply", SERVICE, "-f", str(rules_file), "--registry", registry)
        assert first.returncode == 0, first.stderr
        flags = ("--service", SERVICE, "--group", "g", "--registry", registry)
        servers = start_instances(stack, 5, repository, tmp_path, *flags)
        # instances read the current revision at start
        assert {live_rules(s)["revision"] for s in servers} == {1}

        load = Load(servers)
        load.start()
        stack.callback(load.stop)
        time.sleep(1.2)  # the first burst is spent
        low = load.admitted_per_second(1.5)
        assert 0.6 * LOW <= low <= 1.3 * LOW, low

        raised = cli(
            "rules", "set", SERVICE, "limits.infer.cluster_qps", str(HIGH),
            "--registry", registry, "--author", "alice@test",
        )  # fmt: skip
        assert raised.returncode == 0, raised.stderr
        assert f"-    cluster_qps: {LOW}\n+    cluster_qps: {HIGH}" in raised.stdout
        second = stored(registry)[0]
        assert (second.revision, second.author) == (2, "alice@test")
        delays = wait_applied(servers, second)
        assert max(delays) < 1.0, delays
        assert {limit_in_force(live_rules(s), "cluster_qps") for s in servers} == {HIGH}
        time.sleep(0.3)
        high = load.admitted_per_second(1.5)
        assert high >= 2.0 * low, (low, high)
        assert high <= 1.3 * HIGH, high

        back = run("rules", "rollback", SERVICE, "--to", "1", "--registry", registry)
        assert back.returncode == 0, back.stderr
        third = stored(registry)[0]
        assert third.revision == 3 and third.document == stored(registry)[-1].document
        delays = wait_applied(servers, third)
        assert max(delays) < 1.0, delays
        time.sleep(0.3)
        restored = load.admitted_per_second(1.5)
        # the old limit again: at most its rate plus one burst over the 1.5 s window
        assert restored <= LOW * (1.5 + 1.0) / 1.5 and restored < 0.6 * high, (low, high, restored)
        load.stop()

        refused = run(
            "rules", "set", SERVICE, "limits.infer.cluster_qps", "-5", "--registry", registry
        )
        assert refused.returncode == 1
        assert "at limits.infer.cluster_qps: must be a positive number, got -5" in refused.stderr
        assert f"nothing changed, {SERVICE} stays at revision 3" in refused.stderr
        assert len(stored(registry)) == 3
        late = start_instances(stack, 1, repository, tmp_path, *flags)[0]
        assert {live_rules(s)["revision"] for s in [*servers, late]} == {3}
        assert limit_in_force(live_rules(late), "cluster_qps") == LOW

        _, request_id, line = load.rejections[-1]
        assert f"change: limits.infer.cluster_qps in central:{SERVICE}@r3" in line
        command = (
            f"modelyard rules set {SERVICE} limits.infer.cluster_qps <value> --registry {registry}"
        )
        by_id = cli("explain", request_id, "--service", SERVICE, "--registry", registry)
        assert by_id.returncode == 0, by_id.stderr
        assert f"request {request_id} rejected at " in by_id.stdout
        assert "rate limit > cluster-qps" in by_id.stdout
        assert f"ratelimit/cluster-qps: limits.infer.cluster_qps = {LOW} (central revision 3" in (
            by_id.stdout
        )
        assert f"over limit {LOW}/s; interface infer; model slow_double" in by_id.stdout
        assert "for every model on interface infer: slow_double" in by_id.stdout
        assert command in by_id.stdout
        by_line = run("explain", line, "--registry", registry)
        assert by_line.returncode == 0, by_line.stderr
        assert f"limits.infer.cluster_qps = {LOW}" in by_line.stdout and command in by_line.stdout

        history = run("rules", "history", SERVICE, "--registry", registry)
        assert "alice@test" in history.stdout and "rollback to r1" in history.stdout
        shown = run("rules", "--url", servers[0].http_url)
        assert "rules from central revision 3 by " in shown.stdout
        assert "--rules-source auto: the service has central rules, so they win" in shown.stdout
        assert f"[central:{SERVICE}@r3:4]" in shown.stdout


def test_an_etcd_restart_amid_changes_leaves_every_instance_on_a_whole_revision(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    with running_etcd(tmp_path) as etcd, ExitStack() as stack:
        seeded = cli(
            "rules", "set", SERVICE, "limits.infer.instance_qps", "100", "--registry", etcd.url
        )
        assert seeded.returncode == 0, seeded.stderr
        flags = ("--service", SERVICE, "--group", "g", "--registry", etcd.url)
        servers = start_instances(stack, 3, repository, tmp_path, *flags)

        samples: list[tuple[int, str, object]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                for server in servers:
                    try:
                        doc = live_rules(server)
                    except httpx.HTTPError:
                        continue
                    central = doc["rules_source"]["central"]
                    samples.append(
                        (doc["revision"], central["digest"], limit_in_force(doc, "instance_qps"))
                    )
                time.sleep(0.02)

        async def write(values: range) -> None:
            store = open_rules_store(etcd.url)
            try:
                for value in values:
                    deadline = time.monotonic() + 20
                    while True:  # an outage fails the write or hides its answer: write again
                        try:
                            await commit_change(
                                store,
                                SERVICE,
                                lambda d, v=value: set_key(d, "limits.infer.instance_qps", v),
                                author="writer@test",
                                action=f"set {value}",
                            )
                            break
                        except ModelyardError:
                            assert time.monotonic() < deadline
                            await asyncio.sleep(0.05)
                    await asyncio.sleep(0.1)
            finally:
                await store.aclose()

        sampler = threading.Thread(target=sample, daemon=True)
        writer = threading.Thread(target=lambda: asyncio.run(write(range(101, 113))), daemon=True)
        sampler.start()
        writer.start()
        time.sleep(0.4)
        etcd.kill()
        time.sleep(0.5)
        etcd.start()
        writer.join(40)
        assert not writer.is_alive()

        history = {r.revision: r for r in stored(etcd.url)}
        assert sorted(history) == list(range(1, len(history) + 1))
        current = history[max(history)]
        assert load_rules(current.document)["limits"]["infer"]["instance_qps"] == 112
        wait_applied(servers, current)
        done.set()
        sampler.join(10)

        assert len({revision for revision, _, _ in samples}) > 2  # instances followed changes
        for revision, digest, value in samples:
            assert history[revision].digest == digest
            assert (
                load_rules(history[revision].document)["limits"]["infer"]["instance_qps"] == value
            )
