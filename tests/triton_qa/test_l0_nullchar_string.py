"""Triton's qa/L0_nullchar_string: a string with a null character in its middle, sent
through identity models and back unchanged, over HTTP and gRPC.

As its test.sh: one server on ``graphdef_nobatch_zero_1_object`` and
``savedmodel_nobatch_zero_1_object`` (TensorFlow identity models of Triton's identity
repository; test.sh leaves the ONNX one out: onnxruntime refuses a null character inside
a string), and ``nullchar_string_client.py -m MODEL`` (HTTP) and ``-i grpc -u
localhost:8001`` for each, every run to exit 0. Here each is the python model
``qa/python_models/string_identity`` with the config Triton's generator makes for
``onnx_nobatch_zero_1_object``, renamed (docs/triton-qa.md). The default run takes a
selection of it on one server with the other small folders (test_l0_small_folders.py);
this runs it whole under ``TRITON_QA=full``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

MODELS = ["graphdef_nobatch_zero_1_object", "savedmodel_nobatch_zero_1_object"]
PROTOCOLS = [[], ["-i", "grpc", "-u", "localhost:8001"]]


def _string_identity(work: Path, generated: Path, models: Path, name: str) -> None:
    """The generated ``onnx_nobatch_zero_1_object`` config under ``name``, served by the
    python model ``string_identity``."""
    model = models / name
    shutil.copytree(generated / "onnx_nobatch_zero_1_object", model)
    (model / "1" / "model.onnx").unlink()
    source = work.parent / "python_models" / "string_identity" / "model.py"
    shutil.copy(source, model / "1" / "model.py")
    text = (model / "config.pbtxt").read_text()
    (model / "config.pbtxt").write_text(
        text.replace("onnx_nobatch_zero_1_object", name).replace(
            'platform: "onnxruntime_onnx"', 'backend: "python"'
        )
    )


def repository(work: Path) -> Path:
    """test.sh's ``models``: the two identity models of strings."""
    generated = repositories.identity_models(work, work / "identity", ensembles=False)
    models = work / "models"
    for name in MODELS:
        _string_identity(work, generated, models, name)
    return models


def client_runs(host: LoopbackHost, work: Path, runs: list[tuple[str, list[str]]]) -> list[str]:
    """test.sh's runs of ``nullchar_string_client.py``; what failed."""
    failures = []
    for model, protocol in runs:
        client = work / "nullchar_string_client.py"
        done = harness.run_script(host, client, "-m", model, *protocol, "-v", cwd=work)
        if done.returncode != 0 or "?=?" not in done.stdout:
            failures.append(f"{model} {protocol}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return failures


@pytest.mark.triton_qa_full
def test_nullchar_string(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_nullchar_string")
    repository(work)
    with harness.tritonserver(
        host, ["--model-repository=models"], tmp_path / "server.log", cwd=work
    ):
        failures = client_runs(host, work, [(m, p) for m in MODELS for p in PROTOCOLS])
    assert not failures, "\n".join(failures)
