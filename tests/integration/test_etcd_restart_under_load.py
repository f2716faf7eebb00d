"""etcd restarted mid-load: callers keep serving from their last known list,
instances keep their entries, and watches recover (an instance that registers
after the restart gets traffic)."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np

from modelyard.client import Client
from tests.support.etcd_server import running_etcd
from tests.support.models import slow_double
from tests.support.servers import ServerProcess, running_server, wait_until

SERVICE = "com.example.test.etcdrestart"


def _serve(stack: ExitStack, repository: Path, logs: Path, url: str, name: str) -> ServerProcess:
    return stack.enter_context(
        running_server(
            repository,
            logs,
            "--service",
            SERVICE,
            "--group",
            "cpu",
            "--registry",
            url,
            "--registry-ttl",
            "3",
            "--instance-id",
            name,
        )
    )


def test_etcd_restart_mid_load_fails_no_request_and_watches_recover(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository)
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    with running_etcd(tmp_path) as etcd, ExitStack() as stack:
        for name in ("a", "b", "c"):
            _serve(stack, repository, tmp_path, etcd.url, name)
        with Client(SERVICE, etcd.url, transport="http") as client:
            wait_until(lambda: len(client.instances()) == 3, timeout=20)
            failures: list[str] = []
            served = 0
            stop = threading.Event()

            def load() -> None:
                nonlocal served
                while not stop.is_set():
                    try:
                        result = client.infer("slow_double", {"x": x}, timeout=10)
                        assert result["y"].tolist() == [[1002.0, 1004.0]]
                        served += 1
                    except Exception as exc:
                        failures.append(repr(exc))

            workers = [threading.Thread(target=load) for _ in range(3)]
            for worker in workers:
                worker.start()
            try:
                time.sleep(1.0)
                etcd.stop()
                before_outage = served
                time.sleep(2.0)  # callers run on their last known list meanwhile
                assert served > before_outage
                etcd.start()
                late = _serve(stack, repository, tmp_path, etcd.url, "d")
                wait_until(lambda: len(client.instances()) == 4, timeout=30)
                assert any(i.instance_id == "d" for i in client.instances())
                time.sleep(1.0)
            finally:
                stop.set()
                for worker in workers:
                    worker.join()
            assert failures == []
            # the instance that registered after the restart received calls
            stats = httpx.get(f"http://{late.http_url}/v2/models/slow_double/stats").json()
            assert stats["model_stats"][0]["inference_count"] > 0
