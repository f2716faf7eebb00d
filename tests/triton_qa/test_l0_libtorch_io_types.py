"""Triton's qa/L0_libtorch_io_types (bash alone): a TorchScript model whose config names a
datatype PyTorch has no tensor of (an unsigned integer wider than 8 bits) for an input,
an output or a sequence control, stops the server at start, its log saying so in the
libtorch backend's words.

As its test.sh: ``libtorch_int32_int8_int8`` (``gen_qa_models.py --libtorch``) with
``TYPE_INT32`` made ``TYPE_UINT32``, then ``TYPE_INT8`` made ``TYPE_UINT64``, and
``libtorch_sequence_int32`` (``gen_qa_sequence_models.py --libtorch --variable``) with its
READY control made a CORRID control of ``TYPE_UINT32`` (its generated ``KIND_GPU``
instances ``KIND_CPU`` here), each on a server that must not start. About 15 s, in the
default run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow


def _copy(source: Path, models: Path, name: str, edits: list[tuple[str, str]]) -> None:
    """test.sh's ``cp -r`` and its seds (the first match on each line)."""
    shutil.rmtree(models, ignore_errors=True)
    model = shutil.copytree(source, models / name)
    config = model / "config.pbtxt"
    text = config.read_text().replace(source.name, name)
    for old, new in edits:
        text = "\n".join(line.replace(old, new, 1) for line in text.split("\n"))
    # sed ':begin;$!N;s/CORRID\n\(.*\)int32_false_true: \[ 0, 1 \]/CORRID\ndata_type: TYPE_UINT32/'
    text = re.sub(r"CORRID\n.*int32_false_true: \[ 0, 1 \]", "CORRID\ndata_type: TYPE_UINT32",
                  text)  # fmt: skip
    # the sequence generator's KIND_GPU instances (Triton's CI has a GPU): KIND_CPU here
    config.write_text(text.replace("kind: KIND_GPU", "kind: KIND_CPU"))


def test_libtorch_io_types(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_libtorch_io_types")
    generated, sequences = work / "generated", work / "sequences"
    repositories.generated(work, "gen_qa_models.py", "--libtorch", f"--models_dir={generated}")
    repositories.generated(
        work, "gen_qa_sequence_models.py", "--libtorch", "--variable", f"--models_dir={sequences}"
    )
    models = work / "models"
    runs = [
        (generated / "libtorch_int32_int8_int8", "libtorch_invalid_input_type",
         [("TYPE_INT32", "TYPE_UINT32")],
         "unsupported datatype TYPE_UINT32 for input 'INPUT0' for model "
         "'libtorch_invalid_input_type'"),
        (generated / "libtorch_int32_int8_int8", "libtorch_invalid_output_type",
         [("TYPE_INT8", "TYPE_UINT64")],
         "unsupported datatype TYPE_UINT64 for output 'OUTPUT__0' for model "
         "'libtorch_invalid_output_type'"),
        (sequences / "libtorch_sequence_int32", "libtorch_invalid_sequence_int32",
         [("READY__2", "CORRID__2"), ("CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID")],
         "input 'CORRID__2' type 'TYPE_UINT32' is not supported by PyTorch."),
    ]  # fmt: skip
    for source, name, edits, words in runs:
        _copy(source, models, name, edits)
        log = harness.start_fails(host, [f"--model-repository={models}"], tmp_path / f"{name}.log")
        assert words in log, log[-3000:]
