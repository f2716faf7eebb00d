"""The caller host of the multi-host test: bounded load through the gateway and the SDK.

Run on its own host (``python -m tests.support.multi_host_load``), it calls Triton's
``simple`` model until ``CONTROL/stop`` exists: ``--steady`` workers per path with
a pause between calls, plus ``--surge`` workers per path without one while
``CONTROL/surge`` exists. Every 0.1 s it writes ``CONTROL/progress.json`` (calls
per outcome, failures so far, the SDK's view of the service); at the end
``CONTROL/calls.jsonl`` (one line per call: monotonic time, path, outcome) and
``CONTROL/views.jsonl`` (each change of the SDK's view: time, instance ids, the
ones enforcing cluster limits locally). CLOCK_MONOTONIC is the machine's, shared
by every namespace, so the test compares these times with its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from modelyard.client import AsyncClient
from modelyard.errors import Code, ModelyardError

A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.ones((1, 16), dtype=np.int32)
BODY = {
    "inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": A.ravel().tolist()},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": B.ravel().tolist()},
    ]
}
EXPECTED = (A + B).ravel().tolist()


class Calls:
    def __init__(self) -> None:
        self.records: list[tuple[float, str, str]] = []
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []

    def add(self, path: str, outcome: str, detail: str = "") -> None:
        self.records.append((time.monotonic(), path, outcome))
        key = f"{path}:{outcome}"
        self.counts[key] = self.counts.get(key, 0) + 1
        if outcome == "failed":
            self.failures.append(f"{path}: {detail}"[:500])


async def through_gateway(session: aiohttp.ClientSession, url: str, calls: Calls) -> None:
    try:
        async with session.post(url, json=BODY) as response:
            doc = await response.json(content_type=None)
            if response.status == 200 and doc["outputs"][0]["data"] == EXPECTED:
                calls.add("gateway", "ok")
            elif response.status == 429:
                calls.add("gateway", "refused")
            else:
                calls.add("gateway", "failed", f"{response.status} {doc}")
    except (aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
        calls.add("gateway", "failed", f"{type(exc).__name__}: {exc}")


async def through_sdk(client: AsyncClient, calls: Calls) -> None:
    try:
        outputs = await client.infer("simple", {"INPUT0": A, "INPUT1": B})
        if outputs["OUTPUT0"].ravel().tolist() == EXPECTED:
            calls.add("sdk", "ok")
        else:
            calls.add("sdk", "failed", f"wrong outputs {outputs}")
    except ModelyardError as exc:
        refused = exc.code is Code.RESOURCE_EXHAUSTED
        calls.add("sdk", "refused" if refused else "failed", str(exc))


async def main(args: argparse.Namespace) -> None:
    control: Path = args.control
    calls = Calls()
    views: list[dict[str, Any]] = []
    client = AsyncClient(
        args.service, args.registry, attempt_timeout=args.attempt_timeout, timeout=10.0
    )
    await client.start()
    url = f"http://{args.gateway}/v2/models/simple/infer"
    timeout = aiohttp.ClientTimeout(total=10.0)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def worker(path: str, pause: float, surge: bool) -> None:
            while not (control / "stop").exists():
                if surge and not (control / "surge").exists():
                    await asyncio.sleep(0.05)
                    continue
                if path == "gateway":
                    await through_gateway(session, url, calls)
                else:
                    await through_sdk(client, calls)
                await asyncio.sleep(pause)

        async def observe() -> None:
            last: Any = None
            while not (control / "stop").exists():
                instances = client.instances()
                view = {
                    "ids": sorted(i.instance_id for i in instances),
                    "local": sorted(i.instance_id for i in instances if i.cluster_limit_local),
                }
                if view != last:
                    views.append({"t": time.monotonic(), **view})
                    last = view
                progress = {"counts": calls.counts, "failures": calls.failures[:20], "view": view}
                (control / "progress.tmp").write_text(json.dumps(progress))
                (control / "progress.tmp").rename(control / "progress.json")
                await asyncio.sleep(0.1)

        tasks = [
            worker(path, pause, surge)
            for path in ("gateway", "sdk")
            for pause, surge, count in ((args.pause, False, args.steady), (0.0, True, args.surge))
            for _ in range(count)
        ]
        await asyncio.gather(observe(), *tasks)
    await client.aclose()
    (control / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in calls.records))
    (control / "views.jsonl").write_text("".join(json.dumps(v) + "\n" for v in views))
    (control / "done").write_text("")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True, help="host:port of the gateway's HTTP")
    parser.add_argument("--registry", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--control", type=Path, required=True)
    parser.add_argument("--steady", type=int, default=2)
    parser.add_argument("--surge", type=int, default=4)
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--attempt-timeout", type=float, default=0.5)
    asyncio.run(main(parser.parse_args()))
