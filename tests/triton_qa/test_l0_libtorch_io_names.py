"""Triton's qa/L0_libtorch_io_names: how a TorchScript model's inputs and outputs are
named in its config (``INPUT__0``, the ``forward`` arguments' names, ``OUTPUT__0``, names
in the config's order, and mixtures), each answered through the right tensor.

As its test.sh: eight copies of ``libtorch_float32_float32_float32`` (Triton's
``gen_qa_models.py --libtorch``, on the project's torch) with test.sh's renames, one
server, ``io_names_client.py`` (eight tests); in the default run (about 8 s).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

SOURCE = "libtorch_float32_float32_float32"
# test.sh's copies: each one's renames of the config's names, in its order
RENAMES = {
    "libtorch_output_index": [],
    "libtorch_io_index": [("INPUT0", "INPUT__0"), ("INPUT1", "INPUT__1")],
    "libtorch_no_output_index": [("OUTPUT__0", "OUTPUT0"), ("OUTPUT__1", "OUTPUT1")],
    "libtorch_no_arguments_output_index": [
        ("INPUT0", "INPUTA"), ("INPUT1", "INPUTB"), ("OUTPUT__0", "OUTPUTA"),
        ("OUTPUT__1", "OUTPUTB"),
    ],
    "libtorch_mix_index": [("INPUT0", "INPUTA"), ("INPUT1", "INPUT__1"), ("OUTPUT__0", "OUTPUTA")],
    "libtorch_mix_arguments": [("INPUT1", "INPUTB"), ("OUTPUT__0", "OUTPUTA")],
    "libtorch_mix_arguments_index": [("INPUT1", "INPUT__1"), ("OUTPUT__0", "OUTPUT0")],
    "libtorch_unordered_index": [
        ("INPUT0", "INPUT_TMP1"), ("INPUT1", "INPUT0"), ("INPUT_TMP1", "INPUT1"),
        ("OUTPUT__0", "OUT__1"), ("OUTPUT__1", "OUT__0"),
    ],
}  # fmt: skip


def repository(work: Path) -> Path:
    generated = work / "generated"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    models = work / "models"
    for name, renames in RENAMES.items():
        model = shutil.copytree(generated / SOURCE, models / name)
        config = model / "config.pbtxt"
        text = config.read_text().replace(SOURCE, name)
        for old, new in renames:  # sed 's/old/new/': the first on each line
            text = "\n".join(line.replace(old, new, 1) for line in text.split("\n"))
        config.write_text(text)
    shutil.rmtree(generated)
    return models


def test_libtorch_io_names(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_libtorch_io_names")
    models = repository(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        run = harness.run_qa_file(host, work, "io_names_client.py")
    run.check(count=8)
