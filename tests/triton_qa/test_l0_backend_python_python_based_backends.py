"""Triton's qa/L0_backend_python/python_based_backends: a Python-based backend.

test.sh puts ``qa/python_models/python_based_backends/add_sub_backend/model.py`` in the
backend directory as ``add_sub/model.py``; the models ``add`` (two versions, loaded with a
config override that keeps both) and ``sub`` say only ``backend: "add_sub"`` in their
config and keep a ``model.json`` (which operation) in their version folders, which the
backend reads through ``pb_utils.get_model_dir()``; its ``auto_complete_config`` declares
their tensors. Beside them, the python model ``add_sub`` and the TorchScript model of
``gen_qa_pytorch_model.py``. Triton's CI copies the backend into its install's
``/opt/tritonserver/backends``; here the backend directory is the test's own, given to
``--backend-directory`` as test.sh gives ``${BACKEND_DIR}``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_backend_python import _python_model, _qa, _run

pytestmark = pytest.mark.slow


def _repository(work: Path) -> Path:
    """test.sh's backend directory and models; the backend directory."""
    qa_models = _qa(work) / "python_models"
    backends = work / "backends"
    (backends / "add_sub").mkdir(parents=True)
    shutil.copy(qa_models / "python_based_backends" / "add_sub_backend" / "model.py",
                backends / "add_sub" / "model.py")  # fmt: skip
    models = work / "models"
    for name, operation in (("add", "add"), ("sub", "sub")):
        (models / name / "1").mkdir(parents=True)
        (models / name / "1" / "model.json").write_text(f'{{ "operation": "{operation}" }}\n')
        (models / name / "config.pbtxt").write_text('backend: "add_sub"\n')
    shutil.copytree(models / "add" / "1", models / "add" / "2")
    python_model = _python_model(work, "add_sub")
    shutil.copytree(python_model / "1", python_model / "2")
    harness.generate("gen_qa_pytorch_model.py", "-m", str(models), cwd=_qa(work) / "common")
    return backends


@pytest.mark.triton_qa_full  # about 18 s: the TorchScript model made, torch imported twice
def test_python_based_backends(host: LoopbackHost, tmp_path: Path) -> None:
    """python_based_backends_test.py: the backend's models (both versions of ``add``),
    the python model and the PyTorch one, each loaded in explicit mode by the test."""
    work = harness.work_directory(tmp_path, "L0_backend_python/python_based_backends")
    backends = _repository(work)
    args = [f"--model-repository={work / 'models'}", f"--backend-directory={backends}",
            "--model-control-mode=explicit", "--log-verbose=1"]  # fmt: skip
    _run(host, tmp_path, work, "python_based_backends_test.py", args=args, count=3,
         server_log="python_based_backends_server.log")  # fmt: skip
