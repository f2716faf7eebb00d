"""Triton's qa/L0_implicit_state: ``implicit_state.py``'s tests of backends that keep
implicit state.

As its test.sh, with ``BACKENDS="onnx libtorch"`` (test.sh's own default adds ``plan``,
TensorRT): ``gen_qa_implicit_models.py``'s ``{onnx,libtorch}_nobatch_sequence_int32`` and
test.sh's ``_output`` copies, whose configs add the state's output to their outputs. A
request may ask for a state's output only where the config names it (``unexpected
inference output 'OUTPUT_STATE' for model``), and then gets it.

Its five other tests run on the folder's models of Triton's C++ ``implicit_state`` test
backend, which calls the server's state API (``TRITONBACKEND_StateNew``, ``StateBuffer``,
``StateUpdate``) as each request's ``TEST_CASE`` says; no backend of modelyard's (nor
Triton's python backend) has that API, so those models are not served here and their
tests fail with an unknown model (``growable_memory`` needs CUDA virtual memory besides).
test.sh's last step, L0_sequence_batcher with ``IMPLICIT_STATE=1``, is
``test_l0_sequence_batcher.py``'s implicit runs. About 15 s, in the default run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

BACKENDS = ("onnx", "libtorch")
# what the state's output is named in each backend's model (test.sh's echo)
STATE_OUTPUT = {"onnx": "OUTPUT_STATE", "libtorch": "OUTPUT_STATE__1"}
C_BACKEND = (
    "runs on Triton's C++ implicit_state test backend (the server's state API, which no "
    "backend here has): its model is not served"
)
OUT_OF_REACH = {
    f"ImplicitStateTest::{test}": C_BACKEND
    for test in ("test_no_implicit_state", "test_wrong_implicit_state_name",
                 "test_implicit_state_single_buffer", "test_implicit_state_growable_memory",
                 "test_no_update")
}  # fmt: skip


def models(work: Path) -> Path:
    generated = work / "generated"
    repositories.generated(
        work, "gen_qa_implicit_models.py", "--onnx", "--libtorch", f"--models_dir={generated}"
    )
    target = work / "implicit_models"
    for backend in BACKENDS:
        name = f"{backend}_nobatch_sequence_int32"
        source = generated / name
        config = (source / "config.pbtxt").read_text().replace("KIND_GPU", "KIND_CPU")
        shutil.copytree(source, target / name)
        (target / name / "config.pbtxt").write_text(config)
        allowed = shutil.copytree(source, target / f"{name}_output")  # test.sh's cp and sed
        output = (
            f'output [{{ name: "{STATE_OUTPUT[backend]}" \n data_type: TYPE_INT32 \n '
            "dims: [ 1 ] }]\n"
        )
        config = config.replace(f'name: "{name}"', f'name: "{name}_output"')
        (allowed / "config.pbtxt").write_text(config + output)
    shutil.rmtree(generated)
    return target


def test_implicit_state(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_implicit_state")
    args = [f"--model-repository={models(work)}"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(
            host, work, "implicit_state.py", env={"BACKENDS": " ".join(BACKENDS)}
        )
    run.check(count=7, out_of_reach=OUT_OF_REACH)
