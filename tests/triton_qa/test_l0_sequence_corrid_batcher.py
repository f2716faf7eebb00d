"""Triton's qa/L0_sequence_corrid_batcher: the sequence batcher's CORRID control.

test.sh's one run: ``models4``, the ``*_dyna_sequence_int32`` models of
``gen_qa_dyna_sequence_models.py`` (each sequence's correlation id a control input,
``CONTROL_SEQUENCE_CORRID``; the model answers INPUT + START + END * CORRID while READY)
with test.sh's edits (``oldest`` removed: the direct strategy; batch 1, four instances),
and ``SequenceCorrIDBatcherTest.test_skip_batch`` with the scheduler delayed 12 s
(``TRITONSERVER_DELAY_SCHEDULER``), four sequences of lengths 2 and 4 in the four slots.

The file tries four models of one test; all four are the generator's ONNX model
(``KIND_CPU``), each with its own correlation-id data type as Triton's generator writes
its config: ``onnx_`` (TYPE_UINT64), ``graphdef_`` and ``savedmodel_`` (TensorFlow
there; TYPE_UINT64 too: the ONNX model renamed), ``plan_`` (TensorRT there; TYPE_INT32:
the ONNX model with its CORRID input an INT32, the config's CORRID ``data_type:
TYPE_INT32``, as the generator writes the TensorRT one). The run takes about 10 s (the
file sleeps a second a model while the scheduler is delayed), past the default run's
share: ``TRITON_QA=full`` runs it; the unit tests of the sequence batcher guard the
CORRID control's types in the default run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import onnx
import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full, pytest.mark.timeout(300)]

ONNX_MODEL = "onnx_dyna_sequence_int32"
# Triton's TensorFlow models of the file's trials: the same tensors and CORRID type
RENAMED = ("graphdef_dyna_sequence_int32", "savedmodel_dyna_sequence_int32")
# Triton's TensorRT model: its CORRID an INT32
PLAN_MODEL = "plan_dyna_sequence_int32"


def _int32_corrid(model: Path) -> None:
    """``model`` (a copy of the ONNX one) taking CORRID as an INT32, as the TensorRT model
    of the same name does: its graph input retyped (the graph casts it on), its config's
    CORRID control ``TYPE_INT32``."""
    path = model / "1" / "model.onnx"
    graph = onnx.load(str(path))
    for tensor in graph.graph.input:
        if tensor.name == "CORRID":
            tensor.type.tensor_type.elem_type = onnx.TensorProto.INT32
    onnx.save(graph, str(path))
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace("TYPE_UINT64", "TYPE_INT32"))


def repository(work: Path) -> Path:
    """test.sh's ``models4``: each model with ``oldest`` removed, batch 1, four instances."""
    generated = work / "generated"
    repositories.generated(
        work, "gen_qa_dyna_sequence_models.py", "--onnx", f"--models_dir={generated}"
    )
    source = generated / ONNX_MODEL
    for name in RENAMED:
        repositories.renamed(source, name)
    _int32_corrid(repositories.renamed(source, PLAN_MODEL))
    models = work / "models4"
    models.mkdir()
    for name in (*RENAMED, PLAN_MODEL, ONNX_MODEL):
        model = Path(shutil.copytree(generated / name, models / name))
        config = model / "config.pbtxt"
        text = re.sub(r"(?s)oldest.*\{.*\}.*control_input", "control_input", config.read_text())
        text = re.sub(r"(?m)^max_batch_size:.*", "max_batch_size: 1", text)
        text = text.replace("kind: KIND_GPU", "kind: KIND_CPU")
        config.write_text(text.replace("kind: KIND_CPU", "kind: KIND_CPU\ncount: 4"))
    return models


def test_skip_batch(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_sequence_corrid_batcher")
    models = repository(work)
    env = {
        "NO_BATCHING": "0",
        "MODEL_INSTANCES": "4",
        "TRITONSERVER_BACKLOG_DELAY_SCHEDULER": "0",
        "TRITONSERVER_DELAY_SCHEDULER": "12",
    }
    log = work / "test_skip_batch.models4.server.log"
    with harness.tritonserver(host, [f"--model-repository={models}"], log, env=env):
        test = "SequenceCorrIDBatcherTest.test_skip_batch"
        run = harness.run_qa_file(host, work, "sequence_corrid_batcher_test.py", test, env=env)
    run.check(count=1)
