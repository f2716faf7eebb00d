"""Triton's qa/L0_perf_nomodel, its HTTP and gRPC half: perf_analyzer (tritonclient's
binary, unchanged) against identity models that compute nothing, so what is measured is
the server's own cost per request.

As its test.sh and run_test.sh: for each of test.sh's cases that is not the in-process C
API (minimum latency: concurrency 1, one instance; maximum throughput: concurrency 16,
two instances; each with one-element and 16 MB tensors; each over gRPC and HTTP) and each
backend here (``onnx`` and ``libtorch``: ``gen_qa_identity_models.py``'s
``*_zero_1_float32``; ``python``: ``qa/python_models/identity_fp32``), a server on the one
model as run_test.sh edits its config (``max_batch_size: 1``, the instance count, KIND_CPU
where it asks KIND_GPU, and the ``dynamic_batching { preferred_batch_size: [ 1 ] }`` its
``[ $DYNAMIC_BATCH > 1 ]`` always appends), then ``perf_analyzer -v -p10000 -s15
--percentile=95 --shared-memory none -b1 -t<concurrency> --max-trials 50 --shape
<input>:<size> -i <protocol> -f <name>.csv``, which must succeed, and Triton's
``reporter.py`` on its result, which must too. The C API half needs Triton's in-process
library; TensorRT, TensorFlow and the custom C++ backend's models are not here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.support.perf_analyzer import PERF_ANALYZER, checked, environment
from tests.triton_qa import harness, repositories

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full, pytest.mark.timeout(3000)]

FOLDER = "L0_perf_nomodel"
TENSOR_16MB = 4 * 1024 * 1024  # test.sh's TENSOR_SIZE_16MB, in elements
# test.sh's cases but the C API's: directory, protocol, concurrency, instances, size
CASES: list[tuple[str, str, int, int, int]] = [
    ("min_latency_grpc", "grpc", 1, 1, 1),
    ("min_latency_http", "http", 1, 1, 1),
    ("max_throughput_grpc", "grpc", 16, 2, 1),
    ("max_throughput_http", "http", 16, 2, 1),
    ("16mb_latency_grpc", "grpc", 1, 1, TENSOR_16MB),
    ("16mb_latency_http", "http", 1, 1, TENSOR_16MB),
    ("16mb_throughput_grpc", "grpc", 16, 2, TENSOR_16MB),
    ("16mb_throughput_http", "http", 16, 2, TENSOR_16MB),
]
BACKENDS = ("onnx", "libtorch", "python")


def _model(work: Path, generated: Path, backend: str, instances: int) -> str:
    """run_test.sh's ``models``: the backend's zero model, its config edited as it edits it."""
    name = f"{backend}_zero_1_float32"
    models = work / "models"
    shutil.rmtree(models, ignore_errors=True)
    if backend == "python":
        model = models / name
        (model / "1").mkdir(parents=True)
        source = work.parent / "python_models" / "identity_fp32"
        shutil.copy(source / "model.py", model / "1" / "model.py")
        text = (source / "config.pbtxt").read_text().replace('"identity_fp32"', f'"{name}"')
        text = text.replace("count: 1", f"count: {instances}")
    else:
        model = shutil.copytree(generated / name, models / name)
        text = (model / "config.pbtxt").read_text()
        text += f"instance_group [ {{ kind: KIND_CPU, count: {instances} }}]\n"
    lines = ["max_batch_size: 1" if line.startswith("max_batch_size:") else line
             for line in text.splitlines()]  # fmt: skip
    lines.append("dynamic_batching { preferred_batch_size: [ 1 ] }")
    (model / "config.pbtxt").write_text("\n".join(lines) + "\n")
    return name


Case = tuple[str, str, int, int, int]


def _report(work: Path, result: Path, name: str, backend: str, model: str, case: Case) -> None:
    """run_test.sh's ``.tjson`` and Triton's reporter.py over it and the csv."""
    _, protocol, concurrency, instances, size = case
    facts = {
        "s_benchmark_kind": "benchmark_perf", "s_benchmark_name": "nomodel",
        "s_server": "triton", "s_protocol": protocol, "s_framework": backend,
        "s_model": model, "l_concurrency": concurrency, "l_dynamic_batch_size": 1,
        "l_batch_size": 1, "l_size": size, "s_shared_memory": "none",
        "l_instance_count": instances, "s_architecture": "x86_64",
    }  # fmt: skip
    (result / f"{name}.tjson").write_text(json.dumps([facts]))
    reported = subprocess.run(
        [sys.executable, str(work.parent / "common" / "reporter.py"), "-v", "-o",
         str(result / f"{name}.json"), "--csv", str(result / f"{name}.csv"),
         str(result / f"{name}.tjson")],
        cwd=work, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stdout + reported.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_perf_nomodel(host: LoopbackHost, tmp_path: Path, backend: str) -> None:
    work = harness.work_directory(tmp_path, FOLDER)
    generated = work / "generated"
    if backend != "python":
        repositories.generated(work, "gen_qa_identity_models.py", f"--{backend}",
                               f"--models_dir={generated}")  # fmt: skip
    failed = []
    for case in CASES:
        directory, protocol, concurrency, instances, size = case
        result = work / "results" / directory
        result.mkdir(parents=True)
        model = _model(work, generated, backend, instances)
        input_name = "INPUT__0" if backend == "libtorch" else "INPUT0"
        name = f"{backend}_sbatch1_dbatch1_instance{instances}"
        args = [f"--model-repository={work / 'models'}"]
        with harness.tritonserver(host, args, result / f"{name}.server.log", cwd=work):
            done = subprocess.run(
                host.command([str(PERF_ANALYZER), "-v", "-p10000", "-s15", "--percentile=95",
                              "--shared-memory", "none", "-m", model, "-b1",
                              f"-t{concurrency}", "--max-trials", "50", "--shape",
                              f"{input_name}:{size}", "-i", protocol, "-f",
                              str(result / f"{name}.csv")]),
                cwd=work, env=harness.environment(environment()), capture_output=True,
                text=True, timeout=700,
            )  # fmt: skip
        try:
            checked(done)
            _report(work, result, name, backend, model, case)
        except AssertionError as error:
            failed.append(f"{directory}: {str(error)[-1500:]}")
    assert not failed, "\n".join(failed)
