"""Triton's qa/L0_mlflow, its local half: MLflow models deployed to the server through
Triton's mlflow-triton plugin (``deploy/mlflow-triton-plugin``, unchanged).

As its test.sh: the plugin's example ``onnx_float32_int32_int32`` in the repository as
``existing_model``, the server in explicit mode loading every model
(``--strict-model-config=false --model-control-mode=explicit --load-model=*``); then
the plugin's ``publish_model_to_mlflow.py`` (its ``triton`` flavor) and ``mlflow
deployments`` ``create``, ``list`` (the deployed model READY, ``existing_model``, not
MLflow's, not listed), ``get``, ``predict`` (the answer equal to the example's expected
output) and ``delete``; then ``plugin_test.py`` (two tests: ONNX models logged to MLflow,
one with Triton's config beside it, each created, listed, read, asked and deleted).
The plugin writes each model into the repository and loads, lists, asks and unloads it
through the server's HTTP API. Its S3 half needs AWS.

The plugin is written for mlflow 2.x, whose client (mlflow-skinny, SQLAlchemy for the
tracking database, boto3) is not the server's: it runs from an environment of its own,
made from the package registry when the test starts (about a minute), as test.sh pip
installs it. The tracking database is the test's own file where test.sh names
``/tmp/mlflow-db.sqlite``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full, pytest.mark.timeout(900)]

PLUGIN = harness.VENDOR / "server" / "deploy" / "mlflow-triton-plugin"
# the plugin's client side, as its setup.py asks (mlflow<3, tritonclient, boto3), with the
# tracking database's packages (mlflow 2.x predates SQLAlchemy 2.1) and what test.sh
# installs for plugin_test.py (onnx, onnxruntime)
CLIENT_PACKAGES = (
    "mlflow-skinny>=2.2.1,<3", "sqlalchemy<2.1", "alembic", "boto3", "onnx", "onnxruntime",
    "pandas", "numpy==1.26.4", "tritonclient[http]==2.51.0",
)  # fmt: skip
MODEL = "onnx_float32_int32_int32"


@pytest.fixture(scope="module")
def mlflow_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An environment of the plugin's own: its bin folder."""
    made = tmp_path_factory.mktemp("mlflow-env")
    subprocess.run([sys.executable, "-m", "venv", str(made)], check=True, timeout=120)
    pip = [str(made / "bin" / "python"), "-m", "pip", "install", "-q"]
    installed = subprocess.run([*pip, *CLIENT_PACKAGES], capture_output=True, text=True,
                               timeout=600)  # fmt: skip
    if installed.returncode != 0:
        pytest.fail(f"the plugin's client packages did not install:\n{installed.stderr[-3000:]}")
    yield made / "bin"


def test_mlflow_plugin(host: LoopbackHost, tmp_path: Path, mlflow_env: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_mlflow")
    shutil.copytree(PLUGIN, work / "mlflow-triton-plugin")  # as Triton's Dockerfile.QA puts it
    installed = subprocess.run(
        [str(mlflow_env / "python"), "-m", "pip", "install", "-q", "--no-deps",
         "./mlflow-triton-plugin/"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    (work / "mlflow" / "artifacts").mkdir(parents=True)
    shutil.copytree(work / "mlflow-triton-plugin" / "examples" / MODEL,
                    work / "models" / "existing_model")  # fmt: skip
    env = harness.environment({
        "MLFLOW_MODEL_REPO": "./mlflow/artifacts",
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow-db.sqlite'}",
        "TRITON_URL": "localhost:8000",
        "TRITON_MODEL_REPO": "models",
        "PATH": f"{mlflow_env}{os.pathsep}{os.environ.get('PATH', '')}",  # its mlflow first
    })  # fmt: skip

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(host.command(list(argv)), cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    args = ["--model-repository=./models", "--strict-model-config=false",
            "--model-control-mode=explicit", "--load-model=*"]  # fmt: skip
    failed: list[str] = []
    with harness.tritonserver(host, args, tmp_path / "server.log", cwd=work):
        deploy = ["mlflow", "deployments"]
        steps = [
            ["python", "./mlflow-triton-plugin/scripts/publish_model_to_mlflow.py",
             "--model_name", MODEL, "--model_directory",
             f"./mlflow-triton-plugin/examples/{MODEL}/", "--flavor", "triton"],
            [*deploy, "create", "-t", "triton", "--flavor", "triton", "--name", MODEL,
             "-m", f"models:/{MODEL}/1"],
            [*deploy, "list", "-t", "triton"],
            [*deploy, "get", "-t", "triton", "--name", MODEL],
            [*deploy, "predict", "-t", "triton", "--name", MODEL, "--input-path",
             "./mlflow-triton-plugin/examples/input.json", "--output-path", "output.json"],
            [*deploy, "delete", "-t", "triton", "--name", MODEL],
        ]  # fmt: skip
        log = ""
        for step in steps:
            done = run(*step)
            log += done.stdout + done.stderr
            if done.returncode != 0:
                failed.append(f"{' '.join(step[:3])} ended {done.returncode}:\n{log[-3000:]}")
                break
        else:
            lines = log.splitlines()
            listed = [line for line in lines if MODEL in line and "READY" in line]
            failed += [] if len(listed) == 1 else [f"list: {MODEL} READY on {len(listed)} lines"]
            if any("existing_model" in line and "READY" in line for line in lines):
                failed.append("list: existing_model, not MLflow's, is listed")
            if sum(line.startswith(f"name: {MODEL}") for line in lines) != 1:
                failed.append(f"get: no 'name: {MODEL}' line:\n{log[-2000:]}")
            expected = work / "mlflow-triton-plugin" / "examples" / "expected_output.json"
            answer = json.loads((work / "output.json").read_text())
            if answer != json.loads(expected.read_text()):
                failed.append(f"predict: {answer}")
        run_ = harness.run_qa_file(host, work, "plugin_test.py", env=env,
                                   python=str(mlflow_env / "python"))  # fmt: skip
    assert not failed, "\n".join(failed)
    run_.check(count=2)
