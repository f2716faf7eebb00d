"""Triton's qa/L0_sequence_stress: eight threads each run 200 passes of random sequences
(valid ones, two interleaved, ones without an end, without a start) over gRPC streams
to the sequence backend, and check every answer (the running sum of its sequence, or
the refusal of a request without a start).

As its test.sh: three repositories of ``custom_sequence_int32`` (one instance batching 4,
two batching 2, four batching 1; each sequence idle for 1 s at most), one server each,
and ``sequence_stress.py`` against it, to exit 0 (its seed is the time's: each run
draws other sequences, and prints the seed). Triton's C++ ``sequence`` backend is the
python model that computes what it computes (repositories.custom_sequence_int32). About
75 s a trial here, each keeping both cores busy: ``TRITON_QA=full`` only (beside the
default run's other files it starved their timing).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

TRIALS = {1: 4, 2: 2, 4: 1}  # instances: max_batch_size, as test.sh's models1, 2 and 4


def repository(work: Path, instances: int) -> Path:
    """test.sh's ``models{instances}``."""
    models = work / f"models{instances}"
    model = repositories.custom_sequence_int32(models)
    config = model / "config.pbtxt"
    text = config.read_text()
    text = re.sub(
        r"max_sequence_idle_microseconds:.*",
        "max_sequence_idle_microseconds: 1000000",
        text,
    )
    text = re.sub(r"(?m)^max_batch_size:.*", f"max_batch_size: {TRIALS[instances]}", text)
    text = text.replace("kind: KIND_CPU", f"kind: KIND_CPU\ncount: {instances}")
    config.write_text(text)
    return models


@pytest.mark.triton_qa_full
@pytest.mark.parametrize("instances", [1, 2, 4])
def test_sequence_stress(host: LoopbackHost, tmp_path: Path, instances: int) -> None:
    work = harness.work_directory(tmp_path, "L0_sequence_stress")
    models = repository(work, instances)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        done = harness.run_script(host, work / "sequence_stress.py", cwd=work, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Exiting stress test" in done.stdout
