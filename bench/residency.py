"""Many models, bounded memory: one instance (and a group of three) serving more models than fit.

    python bench/residency.py                      # lru and cost: one instance, then a group
    python bench/residency.py --part instance --policy cost --seconds 20

The repository holds 50 small models, half ONNX (embedding tables) and half scikit-learn
(MLP classifiers trained on scikit-learn's digits), of sizes spread from 0.5 to 12 MB
(log-uniform, a fixed seed), and the budget is a fifth of what they hold together in
memory (each model's footprint as the server measures it, read once from an instance
that loads them all).
Requests name the models by a Zipf(1.1) law over a random ranking (fixed seed) at a
steady rate from several callers, each request with a 10 s deadline.

* ``instance``: one ``modelyard serve --model-residency POLICY`` (lru, then cost) for
  ``--seconds``: failed requests (by status and rule, with an example of each), the share
  served without waiting for a load (the server's own count of the requests that waited),
  the most loads of one model in a minute, how far what the
  models hold ever went past the budget (polled every 0.1 s) against the largest model,
  and the p99 of the requests that waited for a load against that model's load time;
  beside it, the most any policy can serve without a load under this law and budget
  (requests drawn independently: a model resident with probability x_i holds x_i of its
  footprint on average, so the share is at most the fractional knapsack of the models'
  probabilities against their footprints within the budget).
* ``group``: ``modelyard platform up`` with one group of three such instances behind its
  gateway; the Zipf ranking turns over at half time. Failed calls through the gateway;
  where the hot and the cold models are resident before the turn, 15-20 s after it and
  at the end (the five hottest by the law, and the models hot by the control plane's rule,
  control/placement.py), as the plane reports it every second; when after the turn the
  group first held every model hot by the rule on all three and every other on one; and
  the copies the plane made and unloaded (its log).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.control.placement import hot_models  # noqa: E402
from modelyard.processes import free_port  # noqa: E402

HOME = Path(os.environ.get("RESIDENCY_BENCH_HOME", Path(tempfile.gettempdir()) / "residency-bench"))
MB = 1 << 20
ZIPF_S = 1.1


# -- the models -------------------------------------------------------------------------------


def _table(directory: Path, name: str, size: int, seed: int) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rows = max(16, size // (4 * 64))
    table = np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0)],
        name,
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, 1])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, 1, 64])],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (directory / "1").mkdir(parents=True)
    onnx.save(model, str(directory / "1" / "model.onnx"))
    (directory / "config.pbtxt").write_text(
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
    )


def _mlp(directory: Path, name: str, size: int, seed: int) -> None:
    import warnings

    import skops.io
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    features, labels = load_digits(return_X_y=True)
    hidden = max(4, size // ((64 + 10) * 8))  # float64 weights in, and out
    classifier = MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=2, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit(features.astype(np.float32) / 16, labels)
    (directory / "1").mkdir(parents=True)
    skops.io.dump(classifier, directory / "1" / "model.skops")
    (directory / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "sklearn"\nmax_batch_size: 8\n'
        'input [{ name: "input" data_type: TYPE_FP32 dims: [ 64 ] }]\n'
        'output [{ name: "label" data_type: TYPE_INT64 dims: [ 1 ] }]\n'
    )


def build_models(target: Path, count: int) -> dict[str, int]:
    """The repository (built once per count), and each model's file bytes."""
    marker = target / ".built"
    if not marker.exists() or json.loads(marker.read_text()).get("count") != count:
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        rng = np.random.default_rng(7)
        for index in range(count):
            size = int(math.exp(rng.uniform(math.log(0.5 * MB), math.log(12 * MB))))
            name = f"m{index:02d}"
            (_table if index % 2 == 0 else _mlp)(target / name, name, size, index)
        marker.write_text(json.dumps({"count": count}))
    return {
        path.name: sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        for path in sorted(target.iterdir())
        if path.is_dir()
    }


def body_for(name: str) -> dict[str, Any]:
    index = int(name[1:])
    if index % 2 == 0:
        return {"inputs": [{"name": "ids", "shape": [1, 1], "datatype": "INT64", "data": [3]}]}
    return {
        "inputs": [{"name": "input", "shape": [1, 64], "datatype": "FP32", "data": [0.25] * 64}]
    }


def zipf_weights(count: int, seed: int) -> list[float]:
    ranks = np.random.default_rng(seed).permutation(count) + 1
    weights = ranks.astype(float) ** -ZIPF_S
    return list(weights / weights.sum())


def footprints(repository: Path, names: list[str]) -> dict[str, int]:
    """Each model's footprint as the server measures it: one instance whose budget holds
    them all loads each once (kept beside the models for the next run)."""
    cached = repository / ".footprints.json"
    if cached.exists():
        found: dict[str, int] = json.loads(cached.read_text())
        if sorted(found) == names:
            return found
    process, url = start_instance(repository, 1 << 40, HOME / "footprints.log", "lru")
    try:

        async def load_all() -> dict[str, int]:
            async with aiohttp.ClientSession() as session:
                for name in names:
                    async with session.post(
                        f"{url}/v2/models/{name}/infer", json=body_for(name)
                    ) as response:
                        assert response.status == 200, await response.text()
                async with session.get(f"{url}/v2/modelyard/stats") as response:
                    rows = (await response.json())["instance"]["residency"]["models"]
            return {name: int(rows[name]["bytes"]) for name in names}

        found = asyncio.run(load_all())
    finally:
        stop(process)
    cached.write_text(json.dumps(found))
    return found


def best_share_without_load(weights: list[float], sizes: list[int], budget: int) -> float:
    """The most of the requests any residency policy serves without a load when each
    request draws its model independently by ``weights``: the fractional knapsack of the
    weights against the footprints within the budget."""
    room, share = float(budget), 0.0
    for weight, size in sorted(zip(weights, sizes, strict=True), key=lambda p: -p[0] / p[1]):
        take = min(1.0, room / size)
        share += weight * take
        room -= take * size
        if room <= 0:
            break
    return share


# -- the load ---------------------------------------------------------------------------------


async def steady_load(
    url: str,
    names: list[str],
    rate: float,
    seconds: float,
    weights_at: Any,
    callers: int = 16,
) -> list[dict[str, Any]]:
    """Requests at ``rate`` a second for ``seconds``, each to a model drawn by ``weights_at(t)``;
    every request's model, start, latency and status."""
    rng = np.random.default_rng(1)
    results: list[dict[str, Any]] = []
    began = time.monotonic()
    sent = 0
    semaphore = asyncio.Semaphore(callers * 4)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=callers), timeout=timeout
    ) as session:

        async def one(name: str, at: float) -> None:
            async with semaphore:
                start = time.monotonic()
                try:
                    async with session.post(
                        f"{url}/v2/models/{name}/infer", json=body_for(name)
                    ) as response:
                        body = await response.read()
                        status = response.status
                        detail = "" if status == 200 else body[:400].decode(errors="replace")
                except (TimeoutError, aiohttp.ClientError) as exc:
                    status, detail = f"{type(exc).__name__}", str(exc)
                results.append(
                    {
                        "model": name, "t": at, "latency": time.monotonic() - start,
                        "status": status, "detail": detail,
                    }
                )  # fmt: skip

        tasks = []
        while True:
            now = time.monotonic() - began
            if now >= seconds:
                break
            due = sent / rate
            if due > now:
                await asyncio.sleep(due - now)
                continue
            name = names[int(rng.choice(len(names), p=weights_at(now)))]
            tasks.append(asyncio.ensure_future(one(name, now)))
            sent += 1
        await asyncio.gather(*tasks)
    return results


async def poll_residency(url: str, stop: asyncio.Event, samples: list[dict[str, Any]]) -> None:
    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            try:
                async with session.get(f"{url}/v2/modelyard/stats") as response:
                    doc = await response.json()
                samples.append(doc["instance"]["residency"])
            except (aiohttp.ClientError, KeyError, ValueError):
                pass
            await asyncio.sleep(0.1)


# -- one instance -----------------------------------------------------------------------------


def start_instance(
    repository: Path, budget: int, log: Path, policy: str
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [
        sys.executable, "-m", "modelyard.cli.main", "serve", "--model-repository",
        str(repository), "--http-port", str(port), "--grpc-port", "-1", "--metrics-port", "-1",
        "--model-residency", policy, "--memory-budget", str(budget), "--log-format", "json",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            import urllib.request

            with urllib.request.urlopen(f"{url}/v2/health/ready", timeout=1) as answer:
                if answer.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the instance did not start: {log.read_text()[-2000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def instance_part(args: argparse.Namespace, policy: str) -> dict[str, Any]:
    repository = HOME / "models"
    names = sorted(build_models(repository, args.models))
    held = footprints(repository, names)
    budget = sum(held.values()) // 5
    weights = zipf_weights(len(names), seed=3)
    bound = best_share_without_load(weights, [held[n] for n in names], budget)
    process, url = start_instance(repository, budget, HOME / f"instance-{policy}.log", policy)
    try:

        async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
            # a warm-up at the same law: the run measures the budget kept, not a cold start
            await steady_load(url, names, args.rate, min(10.0, args.seconds), lambda _: weights)
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{url}/v2/modelyard/stats") as response,
            ):
                before = (await response.json())["instance"]["residency"]
            samples: list[dict[str, Any]] = []
            halt = asyncio.Event()
            poller = asyncio.ensure_future(poll_residency(url, halt, samples))
            results = await steady_load(url, names, args.rate, args.seconds, lambda _: weights)
            halt.set()
            await poller
            return results, samples, before

        results, samples, before = asyncio.run(run())
    finally:
        stop(process)
    after = samples[-1]
    summary = summarize(results, samples, before, after, budget, args.seconds)
    summary["best_share_without_waiting_any_policy"] = bound
    return summary


def summarize(
    results: list[dict[str, Any]],
    samples: list[dict[str, Any]],
    before: dict[str, Any],
    after: dict[str, Any],
    budget: int,
    seconds: float,
) -> dict[str, Any]:
    failed = [r for r in results if r["status"] != 200]
    loads = {
        name: row["loads"] - before["models"].get(name, {}).get("loads", 0)
        for name, row in after["models"].items()
    }
    per_minute = max(loads.values(), default=0) * 60 / seconds
    largest = max((row["bytes"] for row in after["models"].values()), default=0)
    over = max((s["held_bytes"] - s["budget_bytes"] for s in samples), default=0)
    waited = sum(
        row["waited"] - before["models"].get(name, {}).get("waited", 0)
        for name, row in after["models"].items()
    )
    # each model's waits in this run (the bucket 99 % fell under) against its own load time
    bounds = [*after["wait_bounds_s"], math.inf]
    past_load = []
    for name, row in after["models"].items():
        earlier = before["models"].get(name, {}).get("waited_counts") or [0] * len(bounds)
        counts = [a - b for a, b in zip(row["waited_counts"], earlier, strict=True)]
        if sum(counts) and row["load_s"]:
            past_load.append((_bucket_p99(bounds, counts) - row["load_s"], name))
    worst = max(past_load, default=(0.0, ""))
    return {
        "requests": len(results),
        "failed": len(failed),
        "failures": failure_kinds(failed),
        "served_without_waiting": 1 - waited / max(1, len(results)),
        "loads": sum(loads.values()),
        "most_loads_per_minute": per_minute,
        "budget_bytes": budget,
        "largest_model_bytes": largest,
        "most_over_budget_bytes": over,
        "waits_p99_past_load_time_s": worst[0],
        "model_waiting_longest_past_its_load": worst[1],
        "p50_ms": _quantile([r["latency"] for r in results if r["status"] == 200], 0.5) * 1000,
        "p99_ms": _quantile([r["latency"] for r in results if r["status"] == 200], 0.99) * 1000,
    }


def _bucket_p99(bounds: list[float], counts: list[int]) -> float:
    running, total = 0, sum(counts)
    for bound, count in zip(bounds, counts, strict=True):
        running += count
        if running >= 0.99 * total:
            return bound
    return math.inf


def failure_kinds(failed: list[dict[str, Any]]) -> dict[str, Any]:
    """The failures by status and rule, each with one example."""
    kinds: dict[str, Any] = {}
    for row in failed:
        detail = str(row["detail"])
        rule = detail.partition("rule=")[2].split(";")[0].strip() or "-"
        kind = kinds.setdefault(f"{row['status']} {rule}", {"count": 0, "example": detail[:300]})
        kind["count"] += 1
    return kinds


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


# -- a group of three -------------------------------------------------------------------------

GROUP_SPEC = """\
quotas:
  bench: {{owner: {{org: example, project: bench}}, cpu_cores: 64, memory_gb: 256}}
queues:
  local: {{data_center: local, pool: cpu}}
services:
  com.example.residency:
    interfaces: [infer, metadata]
    quota: bench
    data_centers: [local]
    models: [{models}]
    groups:
      g:
        models: [{models}]
        templates:
          cpu: {{spec: 2C/4G, queues: {{local: local}}, replicas: 3,
                memory_budget: "{budget}", residency: {policy}, loads: [{models}]}}
"""


def group_part(args: argparse.Namespace, policy: str) -> dict[str, Any]:
    repository = HOME / "models"
    names = sorted(build_models(repository, args.models))
    budget = sum(footprints(repository, names).values()) // 5
    state = HOME / "platform"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    spec = state / "platform.yaml"
    spec.write_text(GROUP_SPEC.format(models=", ".join(names), budget=budget, policy=policy))
    gateway_port, control_port = free_port(), free_port()
    log = (HOME / "platform.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "modelyard.cli.main", "platform", "up", "-f", str(spec),
            "--state", str(state), "--model-repository", str(repository),
            "--gateway-port", str(gateway_port), "--port", str(control_port),
        ],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    gateway = f"http://127.0.0.1:{gateway_port}"
    control = f"http://127.0.0.1:{control_port}"
    first, second = zipf_weights(len(names), seed=3), zipf_weights(len(names), seed=4)
    try:
        _wait_for(f"{gateway}/v2/health/ready", 240)
        half = args.seconds / 2

        async def run() -> tuple[list[dict[str, Any]], list[tuple[float, dict[str, Any]]]]:
            readings: list[tuple[float, dict[str, Any]]] = []
            halt = asyncio.Event()

            async def read_plane() -> None:
                """The group as the control plane last polled it, every second."""
                began = time.monotonic()
                async with aiohttp.ClientSession() as session:
                    while not halt.is_set():
                        try:
                            async with session.get(f"{control}/api/v1/residency") as response:
                                readings.append((time.monotonic() - began, await response.json()))
                        except (aiohttp.ClientError, ValueError):
                            pass
                        await asyncio.sleep(1.0)

            reader = asyncio.ensure_future(read_plane())
            results = await steady_load(
                gateway, names, args.rate, args.seconds, lambda t: first if t < half else second
            )
            halt.set()
            await reader
            return results, readings

        turned_at = time.time() + half  # wall clock, for the plane's log lines
        results, readings = asyncio.run(run())
    finally:
        stop(process)
        log.close()
    sizes = footprints(repository, names)
    expected_hot = [
        hot_models({n: args.rate * w for n, w in zip(names, law, strict=True)}, sizes, budget)
        for law in (first, second)
    ]
    return {
        "requests": len(results),
        "failed": sum(1 for r in results if r["status"] != 200),
        "failures": failure_kinds([r for r in results if r["status"] != 200]),
        "hot_by_rule_at_the_laws_rates": {"before": expected_hot[0], "after": expected_hot[1]},
        "before_turn": _copies(readings, half - 6, half - 1, names, first),
        "15_to_20_s_after_turn": _copies(readings, half + 15, half + 20, names, second),
        "at_end": _copies(readings, args.seconds - 5, args.seconds, names, second),
        "converged": _converged(readings, half, args.seconds),
        "most_over_budget_bytes": max(
            (
                i["held_bytes"] - i["budget_bytes"]
                for _, doc in readings
                for g in doc.get("groups", [])
                for i in g["instances"]
            ),
            default=0,
        ),
        "plane_actions": _plane_actions(HOME / "platform.log", turned_at),
    }


def _group_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The group in a reading of the plane, when all three of its instances answered."""
    groups = doc.get("groups") or []
    return groups[0] if groups and len(groups[0]["instances"]) == 3 else None


def _copies(
    readings: list[tuple[float, dict[str, Any]]],
    start: float,
    end: float,
    names: list[str],
    weights: list[float],
) -> dict[str, Any]:
    """Between ``start`` and ``end`` seconds into the load, the median over the readings in
    which all three instances answered: copies of the five hottest by the law, how many of
    the 25 coldest have more than one, the models hot by the plane's rule and their copies,
    and how many models not hot have more than one copy."""
    ranked = sorted(names, key=lambda n: -weights[names.index(n)])
    groups = [g for t, doc in readings if start <= t <= end and (g := _group_of(doc))]

    def median(values: list[int]) -> int | None:
        return sorted(values)[len(values) // 2] if values else None

    def held(group: dict[str, Any], name: str) -> int:
        return len(group["models"].get(name, {}).get("copies", []))

    return {
        "readings_with_all_three": len(groups),
        "hottest_5_copies": [median([held(g, n) for g in groups]) for n in ranked[:5]],
        "coldest_25_with_more_than_one_copy": median(
            [sum(1 for n in ranked[25:] if held(g, n) > 1) for g in groups]
        ),
        "hot_by_rule": [{m: held(g, m) for m in g.get("hot", [])} for g in groups],
        "not_hot_with_more_than_one_copy": [
            sorted(
                m
                for m, row in g["models"].items()
                if len(row["copies"]) > 1 and m not in g.get("hot", [])
            )
            for g in groups
        ],
    }


def _settled(group: dict[str, Any]) -> bool:
    """Every model hot by the plane's rule on all three instances, every other on one."""
    hot = set(group.get("hot", []))
    return all(
        len(row["copies"]) == (3 if model in hot else 1) or (model not in hot and not row["copies"])
        for model, row in group["models"].items()
    ) and all(m in group["models"] for m in hot)


def _converged(
    readings: list[tuple[float, dict[str, Any]]], turn: float, end: float
) -> dict[str, Any]:
    """When, after the turn, the group first settled (``_settled``), and the share of the
    readings from 15 s after the turn to the end in which it was."""
    after = [(t, g) for t, doc in readings if t >= turn and (g := _group_of(doc))]
    first = next((t - turn for t, g in after if _settled(g)), None)
    late = [g for t, g in after if t >= turn + 15]
    return {
        "first_settled_s_after_turn": first,
        "settled_share_from_15_s_after": sum(map(_settled, late)) / len(late) if late else None,
        "readings_from_15_s_after": len(late),
    }


def _plane_actions(log_path: Path, turned_at: float) -> dict[str, int]:
    """The copies the plane made and unloaded, over the run and after the turn (its log)."""
    counts = {"copied": 0, "copied_after_turn": 0, "unloaded": 0, "unloaded_after_turn": 0}
    for line in log_path.read_text(errors="replace").splitlines():
        for event, key in (
            ("hot_model_copied", "copied"),
            ("cold_model_copy_unloaded", "unloaded"),
        ):
            if event in line:
                counts[key] += 1
                stamp = line.split(" ", 1)[0].rstrip("Z")
                try:
                    at = datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
                except ValueError:
                    continue
                if at >= turned_at:
                    counts[f"{key}_after_turn"] += 1
    return counts


def _wait_for(url: str, seconds: float) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer 200 in {seconds} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["instance", "group", "both"], default="both")
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=40.0, help="requests a second")
    parser.add_argument("--policy", choices=["lru", "cost", "both"], default="both")
    args = parser.parse_args()
    HOME.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores")
    if args.part in ("instance", "both"):
        for policy in ("lru", "cost") if args.policy == "both" else (args.policy,):
            summary = instance_part(args, policy)
            print(f"one instance, {policy}:", json.dumps(summary, indent=1), flush=True)
    if args.part in ("group", "both"):
        for policy in ("lru", "cost") if args.policy == "both" else (args.policy,):
            summary = group_part(args, policy)
            print(f"a group of three, {policy}:", json.dumps(summary, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
