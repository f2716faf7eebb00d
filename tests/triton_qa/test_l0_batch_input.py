"""Triton's qa/L0_batch_input: the tensors a batching model is given about its batch
(``batch_input`` of each kind: element counts, accumulated counts with and without a
leading zero, the largest count as a shape, each item's shape, flat or not) and a ragged
output scattered back to its requests (``BATCH_SCATTER_WITH_INPUT_SHAPE``).

As its test.sh, for each backend: ``gen_qa_ragged_models.py``'s ``<backend>_batch_input``
copied as ``ragged_element_count_acc_zero``, ``ragged_acc_shape`` and
``batch_item_flatten`` with test.sh's edits, its ``<backend>_batch_item`` as
``batch_item``, and the identity generator's ``<backend>_nobatch_zero_1_float32`` as
``ragged_io`` (batching up to 4, a ragged ``INPUT0``, a 1 s batching delay); one server,
``batch_input_test.py`` (eight tests). test.sh's backends here are ``onnx`` and
``libtorch`` (its ``savedmodel`` and ``plan`` need TensorFlow and TensorRT), both in the
default run (about 6 s each).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

BACKENDS = ["onnx", "libtorch"]


def _copied(source: Path, models: Path, name: str, edits: list[tuple[str, str, int]]) -> None:
    """``cp -r source models/name`` and test.sh's seds on its config: (pattern,
    replacement, count; 0: every match)."""
    target = models / name
    shutil.copytree(source, target)
    config = target / "config.pbtxt"
    text = config.read_text()
    for pattern, replacement, count in [(source.name, name, 0), *edits]:
        text = re.sub(pattern, replacement, text, count=count)
    config.write_text(text)


def repository(work: Path, backend: str) -> Path:
    """test.sh's ``models`` for ``backend``."""
    generated = work / f"generated_{backend}"
    repositories.generated(
        work, "gen_qa_ragged_models.py", f"--{backend}", f"--models_dir={generated}"
    )
    repositories.generated(
        work, "gen_qa_identity_models.py", f"--{backend}", f"--models_dir={generated}"
    )
    models = work / f"models_{backend}"
    models.mkdir()
    batch_input = generated / f"{backend}_batch_input"
    _copied(batch_input, models, "ragged_element_count_acc_zero", [])
    # test.sh's seds run in order: the second renames what the first wrote
    _copied(batch_input, models, "ragged_acc_shape", [
        ("BATCH_ELEMENT_COUNT", "BATCH_ACCUMULATED_ELEMENT_COUNT", 0),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE", 0),
    ])  # fmt: skip
    _copied(batch_input, models, "batch_item_flatten", [
        ("-1", "-1, -1", 1),
        ("BATCH_ELEMENT_COUNT", "BATCH_ACCUMULATED_ELEMENT_COUNT", 0),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", "BATCH_ITEM_SHAPE_FLATTEN", 0),
    ])  # fmt: skip
    _copied(generated / f"{backend}_batch_item", models, "batch_item", [])
    _copied(generated / f"{backend}_nobatch_zero_1_float32", models, "ragged_io", [
        ("__0", "0", 0),
        (r"(?m)^max_batch_size:.*", "max_batch_size: 4", 0),
        ('name: "INPUT0"', 'name: "INPUT0"\nallow_ragged_batch: true', 0),
    ])  # fmt: skip
    with (models / "ragged_io" / "config.pbtxt").open("a") as config:
        config.write(
            'batch_output [{target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE '
            'source_input: "INPUT0" }] '
            "dynamic_batching { max_queue_delay_microseconds: 1000000 }\n"
        )
    return models


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_input(host: LoopbackHost, tmp_path: Path, backend: str) -> None:
    work = harness.work_directory(tmp_path, "L0_batch_input")
    models = repository(work, backend)
    args = [f"--model-repository={models}", "--exit-timeout-secs=120"]
    with harness.tritonserver(host, args, tmp_path / f"{backend}.server.log"):
        run = harness.run_qa_file(host, work, "batch_input_test.py")
    run.check(count=8)
