"""Triton's qa/L0_backend_python/examples: python_backend's own examples, as its test.sh
runs them.

test.sh clones python_backend (here: its examples, vendored unchanged in
``vendor/python_backend/examples``) and, one example after another, copies the example's
models into one repository, ``python_backend/models``, starts the server on it, runs the
example's client script and looks for ``PASS`` in what it prints. The repository only
grows: each server also serves every model copied before (the BLS examples call
``add_sub``, ``pytorch`` and ``square_int32`` from there), and from the auto-complete
example on the server runs with ``--strict-model-config=false``. Triton's x86 CI runs it
with ``TEST_JETSON=0``, so the async BLS examples run too.

Not run here (docs/triton-qa.md): ``jax`` (JAX is not installed; test.sh also leaves it
out on Jetson), ``instance_kind`` (its model and client fetch ResNet-50's code and
weights through ``torch.hub``, NVIDIA's image helpers and a picture from the internet).
A model left out is left out of every later repository too.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import BACKEND_DIR

pytestmark = pytest.mark.slow

EXAMPLES = harness.VENDOR / "python_backend" / "examples"


@dataclass(frozen=True)
class Example:
    """One of test.sh's examples: the models it copies (name -> model file, config file,
    relative to ``examples/``; no config: the model completes its own), its client and
    the arguments test.sh gives it."""

    name: str
    models: dict[str, tuple[str, str | None]]
    client: str
    client_args: tuple[str, ...] = ()
    server_args: tuple[str, ...] = ()  # added for this server and every later one
    not_here: str | None = None  # why it cannot run here (its models are left out)
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())


FULL = pytest.mark.triton_qa_full

# test.sh's examples, in its order
TEST_SH = [
    Example("add_sub", {"add_sub": ("add_sub/model.py", "add_sub/config.pbtxt")},
            "add_sub/client.py"),
    Example("pytorch", {"pytorch": ("pytorch/model.py", "pytorch/config.pbtxt")},
            "pytorch/client.py", marks=(FULL,)),
    Example("jax", {"jax": ("jax/model.py", "jax/config.pbtxt")}, "jax/client.py",
            not_here="JAX is not installed here (test.sh leaves it out on Jetson too)"),
    Example("bls_sync", {"bls_sync": ("bls/sync_model.py", "bls/sync_config.pbtxt")},
            "bls/sync_client.py", marks=(FULL,)),
    Example("repeat_int32",
            {"repeat_int32": ("decoupled/repeat_model.py", "decoupled/repeat_config.pbtxt")},
            "decoupled/repeat_client.py", marks=(FULL,)),
    Example("square_int32",
            {"square_int32": ("decoupled/square_model.py", "decoupled/square_config.pbtxt")},
            "decoupled/square_client.py", marks=(FULL,)),
    Example("bls_async", {"bls_async": ("bls/async_model.py", "bls/async_config.pbtxt")},
            "bls/async_client.py", marks=(FULL,)),
    Example("auto_complete",
            {"nobatch_auto_complete": ("auto_complete/nobatch_model.py", None),
             "batch_auto_complete": ("auto_complete/batch_model.py", None)},
            "auto_complete/client.py", server_args=("--strict-model-config=false",),
            marks=(FULL,)),
    Example("bls_decoupled_sync",
            {"bls_decoupled_sync": ("bls_decoupled/sync_model.py",
                                    "bls_decoupled/sync_config.pbtxt")},
            "bls_decoupled/sync_client.py", marks=(FULL,)),
    Example("bls_decoupled_async",
            {"bls_decoupled_async": ("bls_decoupled/async_model.py",
                                     "bls_decoupled/async_config.pbtxt")},
            "bls_decoupled/async_client.py", marks=(FULL,)),
    Example("instance_kind",
            {"resnet50": ("instance_kind/model.py", "instance_kind/config.pbtxt")},
            "instance_kind/client.py",
            ("--label_file", "examples/instance_kind/resnet50_labels.txt"),
            not_here="the internet: its model loads ResNet-50's code and ImageNet weights "
                     "through torch.hub, its client NVIDIA's image helpers (torch.hub) "
                     "and a picture from images.cocodataset.org"),
    Example("custom_metrics",
            {"custom_metrics": ("custom_metrics/model.py", "custom_metrics/config.pbtxt")},
            "custom_metrics/client.py", marks=(FULL,)),
]  # fmt: skip


def test_every_example_of_test_sh_is_listed() -> None:
    """Each client script test.sh runs is one of TEST_SH, in its order."""
    script = (harness.QA / "L0_backend_python" / "examples" / "test.sh").read_text()
    runs = [line.split()[1] for line in script.splitlines()
            if line.strip().startswith("python3 examples/")]  # fmt: skip
    assert runs == [f"examples/{example.client}" for example in TEST_SH]


def _clone(tmp_path: Path, upto: Example) -> tuple[Path, list[str]]:
    """test.sh's ``python_backend`` clone with its repository as it stands when ``upto``'s
    server starts (every earlier example's models but those that cannot run here), and
    that server's arguments."""
    clone = tmp_path / "python_backend"
    shutil.copytree(EXAMPLES, clone / "examples")
    args = [f"--model-repository={clone / 'models'}", f"--backend-directory={BACKEND_DIR}",
            "--log-verbose=1"]  # fmt: skip
    for example in TEST_SH:
        args += example.server_args
        if example.not_here is None:
            for name, (model_file, config) in example.models.items():
                (clone / "models" / name / "1").mkdir(parents=True)
                shutil.copy(EXAMPLES / model_file, clone / "models" / name / "1" / "model.py")
                if config is not None:
                    shutil.copy(EXAMPLES / config, clone / "models" / name / "config.pbtxt")
        if example is upto:
            return clone, args
    raise AssertionError(f"{upto.name} is not one of test.sh's examples")


@pytest.mark.parametrize(
    "example",
    [pytest.param(example, id=example.name, marks=example.marks) for example in TEST_SH],
)
def test_example(host: LoopbackHost, tmp_path: Path, example: Example) -> None:
    """run_server on the repository as test.sh has made it, the example's client (exit
    status 0 and ``PASS`` in what it prints), kill_server."""
    if example.not_here is not None:
        pytest.skip(example.not_here)
    clone, args = _clone(tmp_path, example)
    with harness.tritonserver(host, args, clone / "examples_server.log", cwd=clone) as server:
        done = harness.run_script(host, clone / "examples" / example.client,
                                  *example.client_args, cwd=clone)  # fmt: skip
    output = (done.stdout + done.stderr)[-3000:] + "\nserver log:\n" + server.log()[-3000:]
    assert done.returncode == 0, output
    assert "PASS" in done.stdout, output
