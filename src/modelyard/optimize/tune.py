"""``modelyard tune``: sweep serving settings, keep the fastest within the SLO.

For each candidate (instance count, max batch size and queue delay, and
optionally the model's quantised variants) the model is served alone by a real
``modelyard serve`` process and loaded with ``modelyard bench``'s closed loop
at a few concurrencies. The recommendation is the candidate with the highest
throughput whose p99 stays under the latency SLO; its config.pbtxt is written
next to a plot of the sweep. Triton keeps this in a separate tool (Model
Analyzer); here it is one command.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.bench.loadgen import Step, Target, WorkerPool
from modelyard.bench.report import summarize
from modelyard.errors import ConfigError
from modelyard.modelfiles.config import read_model_config
from modelyard.modelfiles.repository import ModelRepository
from modelyard.processes import free_port, serve_command, wait_for_200


@dataclass(frozen=True, slots=True)
class Candidate:
    instances: int
    max_batch_size: int
    queue_delay_us: int
    version: int

    def label(self) -> str:
        return (
            f"v{self.version} x{self.instances} batch {self.max_batch_size} "
            f"delay {self.queue_delay_us}us"
        )


@dataclass(slots=True)
class Measurement:
    candidate: Candidate
    steps: list[dict[str, Any]] = field(default_factory=list)

    def best_within(self, slo_ms: float) -> dict[str, Any] | None:
        fitting = [s for s in self.steps if s["p99_ms"] is not None and s["p99_ms"] <= slo_ms]
        return max(fitting, key=lambda s: s["throughput_rps"]) if fitting else None


def candidate_config(base: mc.ModelConfig, candidate: Candidate) -> mc.ModelConfig:
    config = mc.ModelConfig()
    config.CopyFrom(base)
    config.max_batch_size = candidate.max_batch_size
    del config.instance_group[:]
    group = config.instance_group.add()
    group.count = candidate.instances
    group.kind = mc.ModelInstanceGroup.Kind.KIND_CPU
    config.dynamic_batching.max_queue_delay_microseconds = candidate.queue_delay_us
    config.version_policy.specific.versions[:] = [candidate.version]
    return config


def _serve(repository: Path, model: str, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = (workdir / f"serve-{port}.log").open("wb")
    process = subprocess.Popen(
        serve_command(
            repository, http_port=port, model_control_mode="explicit", load_model=[model]
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    url = f"http://127.0.0.1:{port}/v2/health/ready"
    outcome = wait_for_200(url, lambda: process.poll() is None, 120)
    if outcome == "ready":
        return process, port
    process.kill()
    raise ConfigError.of(
        error_rules.TUNE_SERVE,
        f"the server {'exited' if outcome == 'exited' else 'was not ready in 120 s'} "
        f"while loading {model}",
        where=f"the candidate's config.pbtxt; the server log is in {workdir}",
    )


def measure(
    model_dir: Path,
    base: mc.ModelConfig,
    candidate: Candidate,
    concurrencies: list[int],
    seconds: float,
    rows: int,
) -> Measurement:
    result = Measurement(candidate)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        repository = workdir / "models"
        target_dir = repository / model_dir.name
        shutil.copytree(model_dir / str(candidate.version), target_dir / str(candidate.version))
        for extra in model_dir.iterdir():
            if extra.is_file() and extra.name != "config.pbtxt":
                shutil.copy(extra, target_dir / extra.name)
        config = candidate_config(base, candidate)
        (target_dir / "config.pbtxt").write_text(text_format.MessageToString(config))
        process, port = _serve(repository, model_dir.name, workdir)
        try:
            target = Target(f"127.0.0.1:{port}", "http", model_dir.name, "", rows)
            pool = WorkerPool(target, 1)
            try:
                for concurrency in concurrencies:
                    pool.start([Step("closed", concurrency, min(1.0, seconds / 2))])
                    pool.collect()  # warm-up
                    pool.start([Step("closed", concurrency, seconds)])
                    result.steps.append(summarize("closed", concurrency, pool.collect()))
            finally:
                pool.close()
        finally:
            process.terminate()
            process.wait(20)
    return result


def sweep(
    model_dir: Path,
    *,
    instances: list[int],
    batch_sizes: list[int],
    delays_us: list[int],
    versions: list[int] | None,
    concurrencies: list[int],
    seconds: float,
    rows: int = 1,
) -> list[Measurement]:
    base = read_model_config(model_dir)
    available = ModelRepository.versions(model_dir)
    chosen_versions = versions or available[-1:]
    for version in chosen_versions:
        if version not in available:
            raise ConfigError.of(
                error_rules.TUNE_VERSIONS, f"version {version} is not in {model_dir}"
            )
    measurements = []
    for count, batch, delay, version in itertools.product(
        instances, batch_sizes, delays_us, chosen_versions
    ):
        candidate = Candidate(count, batch, delay, version)
        measurements.append(measure(model_dir, base, candidate, concurrencies, seconds, rows))
    return measurements


def recommend(
    measurements: list[Measurement], slo_ms: float
) -> tuple[Measurement, dict[str, Any]] | None:
    best: tuple[Measurement, dict[str, Any]] | None = None
    for measurement in measurements:
        step = measurement.best_within(slo_ms)
        if step is not None and (
            best is None or step["throughput_rps"] > best[1]["throughput_rps"]
        ):
            best = (measurement, step)
    return best


def write_plot(path: Path, measurements: list[Measurement], slo_ms: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for measurement in measurements:
        steps = [s for s in measurement.steps if s["p99_ms"] is not None]
        ax.plot(
            [s["throughput_rps"] for s in steps],
            [s["p99_ms"] for s in steps],
            "o-",
            label=measurement.candidate.label(),
        )
    ax.axhline(slo_ms, color="red", linestyle="--", label=f"SLO p99 {slo_ms:g} ms")
    ax.set_xlabel("throughput (requests/s)")
    ax.set_ylabel("p99 latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
