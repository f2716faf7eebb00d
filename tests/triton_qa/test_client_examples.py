"""Triton's 35 Python client examples, run unchanged against ``tritonserver``.

Each script (tests/triton_qa/vendor/client/src/python/examples) runs as L0_http's and
L0_grpc's test.sh run it: ``-v`` where it takes it, the image clients on a picture with
``-m`` naming the model, and exits 0 (the model-control ones print ``PASS`` too, and the
server logs the bad config override they send). The models are Triton's example
repository (``repositories.example_models``). The two CUDA shared memory examples need
an NVIDIA GPU and cuda-python; they run where those are.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.image_models import write_digit_images
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

EXAMPLES = harness.CLIENT_EXAMPLES
PICTURE = "1_two.png"

# script -> its arguments (a script may run twice: image_client.py with and without -a)
RUNS: dict[str, list[str]] = {
    name: ["-v"] for name in sorted(p.name for p in EXAMPLES.glob("*.py"))
}
RUNS.update(
    {
        "image_client.py": ["-m", "inception_graphdef", "-s", "INCEPTION", "-c", "1", "-b", "1"],
        "image_client.py -a": [
            "-m", "inception_graphdef", "-s", "INCEPTION", "-a", "-c", "1", "-b", "1",
        ],
        "grpc_image_client.py": [
            "-m", "inception_graphdef", "-s", "INCEPTION", "-c", "1", "-b", "1",
        ],
        "ensemble_image_client.py": ["-c", "1"],
        "memory_growth_test.py": ["-r", "20"],
        "memory_growth_test.py -i grpc": ["-i", "grpc", "-r", "20"],
        "grpc_client.py": [],
    }
)  # fmt: skip
MODEL_CONTROL = ("simple_http_model_control.py", "simple_grpc_model_control.py")
CUDA = ("simple_http_cudashm_client.py", "simple_grpc_cudashm_client.py")
SERVED = sorted(set(RUNS) - set(MODEL_CONTROL) - set(CUDA))


def test_every_example_is_run() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert len(scripts) == 34  # release 24.10 ships 34 Python examples
    assert {run.split()[0] for run in RUNS} == scripts


@pytest.fixture(scope="module")
def examples_server(host: LoopbackHost, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One tritonserver for every example but model control; the directory they run in."""
    tmp = tmp_path_factory.mktemp("examples")
    models = repositories.example_models(tmp / "models")
    write_digit_images(tmp / "images", {PICTURE: 2})
    args = [f"--model-repository={models}", "--allow-client-shm=true"]
    with harness.tritonserver(host, args, tmp / "server.log"):
        yield tmp


def _arguments(run: str, cwd: Path) -> list[str]:
    args = list(RUNS[run])
    if run.startswith(("image_client", "grpc_image_client")):
        args.append(str(cwd / "images" / PICTURE))
    elif run.startswith("ensemble_image_client"):
        args.append(str(cwd / "images"))
    return args


@pytest.mark.parametrize("run", SERVED)
def test_example(host: LoopbackHost, examples_server: Path, run: str) -> None:
    script = EXAMPLES / run.split()[0]
    done = harness.run_script(host, script, *_arguments(run, examples_server), cwd=examples_server)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


@pytest.mark.parametrize("script", MODEL_CONTROL)
def test_model_control_example(host: LoopbackHost, tmp_path: Path, script: str) -> None:
    """As test.sh: a server of its own in explicit model control (in a namespace of its
    own: the others' server holds port 8000); the HTTP script counts seven models in the
    repository, the gRPC one eight (densenet_onnx besides)."""
    models = repositories.counted_example_models(tmp_path / "models", grpc="grpc" in script)
    args = [f"--model-repository={models}", "--model-control-mode=explicit"]
    with (
        LoopbackHost("qa-control") as own,
        harness.tritonserver(own, args, tmp_path / "server.log") as server,
    ):
        done = harness.run_script(own, EXAMPLES / script, "-v", cwd=tmp_path)
        log = server.log()
    assert done.returncode == 0 and "PASS" in done.stdout, (done.stdout + done.stderr)[-3000:]
    assert "Invalid config override" in log


def _cuda_unavailable() -> str | None:
    if importlib.util.find_spec("cuda") is None:
        return "needs cuda-python (pip install cuda-python) and an NVIDIA GPU"
    from cuda import cudart

    if cudart.cudaGetDeviceCount()[1] == 0:
        return "needs an NVIDIA GPU"
    return None


@pytest.mark.gpu
@pytest.mark.parametrize("script", CUDA)
def test_cuda_shared_memory_example(host: LoopbackHost, examples_server: Path, script: str) -> None:
    reason = _cuda_unavailable()
    if reason is not None:
        pytest.skip(reason)
    done = harness.run_script(host, EXAMPLES / script, "-v", cwd=examples_server)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
