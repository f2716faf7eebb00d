"""The counters against the latency a client measures: a real server under concurrent
calls counts the waits it imposes (queue time above zero even for a model that executes
on the event loop) and never claims more time than its callers waited."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import numpy as np
import tritonclient.http as httpclient

from tests.support.models import simple_add_sub
from tests.support.servers import server_in_process

CALLERS = 8
CALLS = 60


def _counters(url: str) -> tuple[int, int, int]:
    stats = httpx.get(f"http://{url}/v2/models/simple/stats").json()["model_stats"][0]
    inference = stats["inference_stats"]
    return (
        int(inference["success"]["count"]),
        int(inference["success"]["ns"]),
        int(inference["queue"]["ns"]),
    )


def test_the_counters_account_for_the_waits_and_never_exceed_the_clients_time(
    tmp_path: Path,
) -> None:
    simple_add_sub(tmp_path / "models")
    latencies: list[float] = []
    lock = threading.Lock()
    with server_in_process(tmp_path / "models") as server:

        def caller() -> None:
            client = httpclient.InferenceServerClient(server.http_url)
            inputs = [httpclient.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
            for item in inputs:
                item.set_data_from_numpy(np.ones((1, 16), np.int32), binary_data=True)
            try:
                for _ in range(CALLS):
                    start = time.perf_counter()
                    client.infer("simple", inputs)
                    with lock:
                        latencies.append(time.perf_counter() - start)
            finally:
                client.close()

        before = _counters(server.http_url)
        callers = [threading.Thread(target=caller) for _ in range(CALLERS)]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(60)
        after = _counters(server.http_url)
    count = after[0] - before[0]
    assert count == CALLERS * CALLS == len(latencies)
    client_ns = sum(latencies) * 1e9
    request_ns, queue_ns = after[1] - before[1], after[2] - before[2]
    assert 0 < queue_ns < request_ns <= client_ns
