"""Triton's qa/L0_sequence_batcher, test.sh's "ragged models" block: sequences of different
shapes batched together by the sequence batcher.

As test.sh: ``custom_sequence_int32`` (Triton's C++ ``sequence`` backend; here its config
served by ``sequence_backend.py``, ``repositories.custom_sequence_int32``) copied into
``ragged_models`` with test.sh's edit, ``allow_ragged_batch: true`` on ``INPUT``; one server
with ``TRITONSERVER_DELAY_SCHEDULER=12`` and ``TRITONSERVER_BACKLOG_DELAY_SCHEDULER=0``;
``SequenceBatcherTest.test_ragged_batch_allowed`` with ``BACKENDS`` naming ``custom``,
``NO_BATCHING=0``, ``MODEL_INSTANCES=1``, ``BATCHER_TYPE=FIXED``: four sequences whose
requests are 2, 2, 1 and 3 elements wide, three requests each, run in three executions of
four (the model's statistics say so). ``TRITON_QA=full`` runs it again with
``TEST_SYSTEM_SHARED_MEMORY=1``, as Triton's CI runs test.sh, every tensor in system
shared memory.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories
from tests.triton_qa.test_l0_sequence_batcher import EXPLICIT, SYSTEM_SHM, Variant, _trial_env

pytestmark = pytest.mark.slow


def _ragged_models(work: Path) -> Path:
    """test.sh's ragged_models: custom_sequence_int32 with its sed edit of INPUT."""
    source = Path(
        shutil.copytree(
            harness.QA / "custom_models" / "custom_sequence_int32",
            work / "edited" / "custom_sequence_int32",
        )
    )
    config = source / "config.pbtxt"
    text = config.read_text()
    # sed -i "s/name:.*\"INPUT\"/name: \"INPUT\"\nallow_ragged_batch: true/"
    edited = re.sub(r'name:.*"INPUT"', 'name: "INPUT"\nallow_ragged_batch: true', text)
    assert edited != text
    config.write_text(edited)
    models = work / "ragged_models"
    repositories.custom_sequence_int32(models, source)
    return models


@pytest.mark.parametrize(
    "variant",
    [EXPLICIT, pytest.param(SYSTEM_SHM, marks=pytest.mark.triton_qa_full)],
    ids=lambda variant: variant.name,
)
def test_ragged_batch_allowed(host: LoopbackHost, tmp_path: Path, variant: Variant) -> None:
    work = harness.work_directory(tmp_path, "L0_sequence_batcher")
    models = _ragged_models(work)
    env = _trial_env("1", "custom", variant) | {
        "TRITONSERVER_BACKLOG_DELAY_SCHEDULER": "0",
        "TRITONSERVER_DELAY_SCHEDULER": "12",
    }
    test = "SequenceBatcherTest.test_ragged_batch_allowed"
    args = [f"--model-repository={models}"]
    if variant.system_shm:
        args.append("--allow-client-shm=true")  # see docs/triton-qa.md
    # the file's region names are fixed (/ip0 ...): a /dev/shm of the run's own
    with (
        host.own_shm(tmp_path / "shm"),
        harness.tritonserver(host, args, tmp_path / "server.log", env=env),
    ):
        run = harness.run_qa_file(host, work, "sequence_batcher_test.py", test, env=env)
    run.check(count=1)
