"""Triton's qa/L0_dyna_sequence_batcher: the sequence batcher's ``oldest`` strategy with
each sequence's correlation id as a control input (``CONTROL_SEQUENCE_CORRID``).

As its test.sh, a server per test, on ``models`` (every model of Triton's
qa_dyna_sequence_model_repository with one instance): two tests without batching
(``NO_BATCHING=1``: the ``_nobatch`` models too), then seven with
``max_candidate_sequences: 4`` and a 5 s ``max_queue_delay_microseconds`` (multiple
sequences batched, a backlog, a sequence timing out in it). The models answer INPUT +
START + END * CORRID while READY, batched by the oldest-first strategy.

``BACKENDS=onnx libtorch``: the models ``gen_qa_dyna_sequence_models.py --onnx`` and
``--libtorch`` make (TorchScript on the project's torch); ``onnx`` with
``IMPLICIT_STATE=1``, whose generator makes no TorchScript model. Not here: the TensorFlow and
TensorRT trials (``graphdef``, ``savedmodel``, ``plan``), the ``custom`` and
``custom_string`` trials (Triton's C++ ``dyna_sequence`` backend) and with them the
ragged run (``test_multi_sequence_different_shape_allow_ragged`` runs only on
``custom``). test.sh's ``IMPLICIT_STATE=1`` run (qa_dyna_sequence_implicit_model_repository)
is the same file on ``gen_qa_dyna_sequence_implicit_models.py``'s models, the model's
running sum kept as implicit state. Four servers
at a time, each in a network namespace of its own; ``TRITON_QA=full`` only.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full]

# what the generators make: the implicit-state one writes no TorchScript models
BACKENDS = {False: "onnx libtorch", True: "onnx"}
UNBATCHED = ["test_simple_sequence", "test_length1_sequence"]
BATCHED = [
    "test_multi_sequence_different_shape",
    "test_multi_sequence",
    "test_multi_parallel_sequence",
    "test_backlog",
    "test_backlog_fill",
    "test_backlog_fill_no_end",
    "test_backlog_sequence_timeout",
]


def repository(work: Path, implicit: bool) -> tuple[Path, Path]:
    """test.sh's ``models``, before and after its edits for the batched tests."""
    generated = work / "generated"
    generator = (
        "gen_qa_dyna_sequence_implicit_models.py" if implicit else "gen_qa_dyna_sequence_models.py"
    )
    for backend in BACKENDS[implicit].split():
        repositories.generated(work, generator, f"--{backend}", f"--models_dir={generated}")
    unbatched, batched = work / "models", work / "batched_models"
    for model in sorted(generated.iterdir()):
        config = model / "config.pbtxt"
        text = config.read_text().replace("kind: KIND_GPU", "kind: KIND_CPU")
        config.write_text(text.replace("kind: KIND_CPU", "kind: KIND_CPU\ncount: 1"))
        shutil.copytree(model, unbatched / model.name)
        target = Path(shutil.copytree(model, batched / model.name)) / "config.pbtxt"
        text = re.sub(r"max_candidate_sequences:.*", "max_candidate_sequences:4", text)
        text = re.sub(
            r"max_queue_delay_microseconds:.*", "max_queue_delay_microseconds:5000000", text
        )
        target.write_text(text.replace("kind: KIND_CPU", "kind: KIND_CPU\ncount: 1"))
    shutil.rmtree(generated)
    return unbatched, batched


@pytest.mark.parametrize("implicit", [False, True], ids=["explicit_state", "implicit_state"])
def test_dyna_sequence_batcher(hosts: list[LoopbackHost], tmp_path: Path, implicit: bool) -> None:
    works = [harness.work_directory(tmp_path / f"lane{n}", "L0_dyna_sequence_batcher")
             for n in range(len(hosts))]  # fmt: skip
    unbatched, batched = repository(works[0], implicit)
    runs = [(test, unbatched, "1") for test in UNBATCHED]
    runs += [(test, batched, "0") for test in BATCHED]

    def one(lane: int, run: tuple[str, Path, str]) -> harness.QaRun:
        test, models, no_batching = run
        env = {"BACKENDS": BACKENDS[implicit], "IMPLICIT_STATE": str(int(implicit)),
               "NO_BATCHING": no_batching}  # fmt: skip
        log = works[lane] / f"{test}.server.log"
        with harness.tritonserver(hosts[lane], [f"--model-repository={models}"], log):
            return harness.run_qa_file(
                hosts[lane], works[lane], "dyna_sequence_batcher_test.py",
                f"DynaSequenceBatcherTest.{test}", env=env, timeout=300,
            )  # fmt: skip

    failures = []
    for (test, _, _), outcome in harness.in_lanes(hosts, runs, one):
        try:
            outcome.check(count=1)
        except AssertionError as error:
            failures.append(f"{test}: {error}")
    assert not failures, "\n".join(failures)
