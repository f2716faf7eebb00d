"""The sequence batcher with an input that allows ragged batching: sequences whose requests
differ in its shape share an execution, as Triton's sequence batcher batches them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import ModelyardError
from modelyard.modelfiles.config import read_model_config
from modelyard.server.manager import ControlMode
from modelyard.server.model_version import load_model_version
from modelyard.server.ragged import RaggedBatching
from modelyard.server.scheduling import Submission
from modelyard.server.sequence_batcher import SequenceScheduler
from modelyard.server.sequence_policy import SequenceFlags, SequencePolicy
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

SEGMENTS = """
name: "segments"
max_batch_size: 4
input [{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "S" data_type: TYPE_FP32 dims: [ 1 ] }]
batch_input [{ kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "ENDS" data_type: TYPE_INT32
               source_input: "X" }]
batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" source_input: "X" }]
sequence_batching {
  control_input [{ name: "READY" control [{ kind: CONTROL_SEQUENCE_READY
                                            int32_false_true: [ 0, 1 ] }] }]
}
"""


class _SegmentSums(Engine):
    """Y = 2X over the flat ragged X; S: each row's sum of X, by the batch input's running
    element counts, 0 on a row that is not READY."""

    name = "segments"
    extra = "all"
    default_filenames = ()
    serves_ragged_batches = True

    def __init__(self) -> None:
        self.batches: list[dict[str, np.ndarray]] = []

    def load(self, ctx: LoadContext) -> Signature | None:
        return None

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        self.batches.append(inputs)
        x, ends, ready = inputs["X"], inputs["ENDS"], inputs["READY"].reshape(-1)
        starts = np.concatenate([[0], ends[:-1]])
        sums = [x[s:e].sum() * r for s, e, r in zip(starts, ends, ready, strict=True)]
        return {"Y": x * 2, "S": np.array(sums, np.float32).reshape(-1, 1)}


def test_sequences_of_different_widths_share_executions_padding_rows_in_the_first_s_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three sequences (3, 1 and 2 elements wide) run in one execution; the second time the
    middle one sends nothing, and its slot is a padding row shaped as the first request."""
    monkeypatch.setenv("TRITONSERVER_DELAY_SCHEDULER", "5")  # nothing runs before all 5
    config = text_format.Parse(SEGMENTS, mc.ModelConfig())
    policy = SequencePolicy.from_config(config, Path("."), "segments/config.pbtxt")
    ragged = RaggedBatching.from_config(config, "segments/config.pbtxt")
    engine = _SegmentSums()
    scheduler = SequenceScheduler("segments", 1, [engine], policy, ragged=ragged)
    plan = [  # (sequence, start, width, value)
        (1, True, 3, 1.0), (2, True, 1, 5.0), (3, True, 2, 7.0), (1, False, 3, 2.0),
        (3, False, 2, 3.0),
    ]  # fmt: skip

    async def infer() -> list[dict[str, np.ndarray]]:
        futures = [
            scheduler.submit(
                Submission(
                    {"X": np.full((1, width), value, np.float32)},
                    ["Y", "S"],
                    1,
                    sequence=SequenceFlags(sequence, start, False),
                )
            )
            for sequence, start, width, value in plan
        ]
        return list(await asyncio.gather(*futures))

    try:
        answers = asyncio.run(infer())
    finally:
        scheduler.close()
        scheduler.join(5)
    for (_, _, width, value), answer in zip(plan, answers, strict=True):
        np.testing.assert_array_equal(answer["Y"], np.full((1, width), value * 2, np.float32))
        assert answer["S"].tolist() == [[value * width]]
    assert len(engine.batches) == 2
    first, second = engine.batches
    assert first["ENDS"].tolist() == [3, 4, 6]  # one execution of 3, 1 and 2 elements
    # slot 1 waits (its sequence sent one request): a padding row, 3 elements as slot 0's
    assert second["ENDS"].tolist() == [3, 6, 8]
    assert second["READY"].reshape(-1).tolist() == [1, 0, 1]
    assert second["X"][3:6].tolist() == [0.0, 0.0, 0.0]
    stats = scheduler.stats
    assert stats.execution_count == 2 and stats.inference_count == 5


# Triton's C++ sequence backend, as a python model: an accumulator a slot, set to the sum of
# INPUT at START and added to after; OUTPUT in INPUT's shape, every element the accumulator
ACCUMULATOR = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.values = np.zeros(4, np.int32)

    def execute(self, requests):
        responses = []
        for row, request in enumerate(requests):
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy().flat[0]
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy().flat[0]
            if ready:
                total = np.int32(x.sum())
                self.values[row] = total if start else self.values[row] + total
            out = np.full(x.shape, self.values[row] if ready else 0, np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
"""

ACCUMULATOR_CONFIG = """
backend: "python"
max_batch_size: 4
sequence_batching {
  control_input [
    { name: "START" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }] },
    { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] }] }
  ]
}
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ -1 ] }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""


def _request(sequence_id: int, values: list[int], start: bool, end: bool) -> InferRequest:
    parameters: dict[str, Any] = {"sequence_id": sequence_id}
    if start:
        parameters["sequence_start"] = True
    if end:
        parameters["sequence_end"] = True
    array = np.array([values], dtype=np.int32)
    return InferRequest("acc", None, {"INPUT": array}, {"INPUT": "INT32"}, parameters=parameters)


def test_a_python_model_sees_each_request_of_a_ragged_sequence_batch_in_its_own_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As test_ragged_batch_allowed: sequences 2, 1 and 3 elements wide, two requests each,
    run in two executions of three; each answer in its request's shape."""
    monkeypatch.setenv("TRITONSERVER_DELAY_SCHEDULER", "6")
    write_python_model(tmp_path, "acc", ACCUMULATOR, ACCUMULATOR_CONFIG)
    widths = {1: 2, 2: 1, 3: 3}

    async def run() -> tuple[list[Any], dict[str, Any]]:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            requests = [
                _request(sid, [sid * 10 + step] * width, step == 0, step == 1)
                for step in (0, 1)
                for sid, width in widths.items()
            ]
            answers = await asyncio.gather(*(dp.infer(request) for request in requests))
            return list(answers), dp.statistics("acc", None)["model_stats"][0]

    answers, stats = asyncio.run(run())
    outputs = [answer.outputs[0].data for answer in answers]
    assert [o.shape for o in outputs] == [(1, 2), (1, 1), (1, 3)] * 2
    firsts = [sid * 10 * w for sid, w in widths.items()]
    seconds = [
        first + (sid * 10 + 1) * w for first, (sid, w) in zip(firsts, widths.items(), strict=True)
    ]
    assert [int(o.flat[0]) for o in outputs] == firsts + seconds
    assert (stats["execution_count"], stats["inference_count"]) == (2, 6)
    sizes = {entry["batch_size"]: entry["compute_infer"]["count"] for entry in stats["batch_stats"]}
    assert sizes == {3: 2}


def _load_refused(tmp_path: Path, source: str, config: str) -> str:
    model_dir = write_python_model(tmp_path, "m", source, config)
    with pytest.raises(ModelyardError) as refused:
        load_model_version(model_dir, 1, read_model_config(model_dir), "python")
    return refused.value.line()


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("model_transaction_policy { decoupled: true }",
         "ragged batching is served by the dynamic and sequence batchers, not a decoupled "
         "model's scheduler"),
        ('batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT32 '
         'source_input: "INPUT" }]',
         "the python backend takes allow_ragged_batch (each request in its own shape) but not "
         "batch_input or batch_output"),
    ],
)  # fmt: skip
def test_a_ragged_sequence_model_the_server_cannot_serve_is_refused_at_load(
    tmp_path: Path, edit: str, words: str
) -> None:
    line = _load_refused(tmp_path, ACCUMULATOR, ACCUMULATOR_CONFIG + edit)
    assert words in line and "rule=model-server/ragged-batch" in line, line


def test_a_ragged_python_sequence_model_with_implicit_state_is_refused_at_load(
    tmp_path: Path,
) -> None:
    state = (
        'state [{ input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_INT32 dims: [ 1 ] }]'
    )
    config = ACCUMULATOR_CONFIG.replace("sequence_batching {", f"sequence_batching {{\n{state}")
    line = _load_refused(tmp_path, ACCUMULATOR, config)
    assert "allow_ragged_batch on a sequence model without implicit state" in line, line
    assert "rule=model-server/ragged-batch" in line, line


# a python model of the dynamic batcher: each request's INPUT doubled, in its own shape
DOUBLER = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", x * 2)]))
        return responses
"""

DOUBLER_CONFIG = """
backend: "python"
max_batch_size: 4
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ -1 ] }]
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }
instance_group [{ kind: KIND_CPU count: 1 }]
"""


def test_a_python_model_of_the_dynamic_batcher_takes_a_ragged_batch(tmp_path: Path) -> None:
    """Requests 2, 3 and 1 elements wide (4 rows) in one execution, each answered in its
    own shape: the model sees each request as it came, as Triton's python backend does."""
    write_python_model(tmp_path, "doubler", DOUBLER, DOUBLER_CONFIG)
    inputs = [np.arange(width * rows, dtype=np.int32).reshape(rows, width)
              for rows, width in ((1, 2), (2, 3), (1, 1))]  # fmt: skip

    async def run() -> tuple[list[Any], dict[str, Any]]:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            requests = [
                InferRequest("doubler", None, {"INPUT": x}, {"INPUT": "INT32"}) for x in inputs
            ]
            answers = await asyncio.gather(*(dp.infer(request) for request in requests))
            return list(answers), dp.statistics("doubler", None)["model_stats"][0]

    answers, stats = asyncio.run(run())
    for x, answer in zip(inputs, answers, strict=True):
        np.testing.assert_array_equal(answer.outputs[0].data, x * 2)
    assert (stats["execution_count"], stats["inference_count"]) == (1, 4)
