"""A TorchScript sequence model, as Triton's libtorch backend runs it: the control inputs
and implicit states join ``forward``'s arguments and results at the index each name ends
with (qa/L0_request_cancellation's ``sequence_state``: DELAY_ITRS__0, SEQ_START__1,
SEQ_ID__2, SEQ_STATE_IN__3; DUMMY_OUT__0, SEQ_STATE_OUT__1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from modelyard.engines.torch import positions
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.types import InferRequest
from tests.support.dataplane import run_on_dataplane

# the state input comes last in the config, first of the extra tensors in forward
CONFIG = """
name: "state"
backend: "pytorch"
max_batch_size: 1
input { name: "VALUE__0" data_type: TYPE_INT64 dims: [ 1 ] }
output { name: "OUT__0" data_type: TYPE_INT64 dims: [ 1 ] }
sequence_batching {
  max_sequence_idle_microseconds: 6000000
  control_input [
    { name: "START__2" control { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } },
    { name: "ID__3" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } }
  ]
  state {
    input_name: "TOTAL_IN__1" output_name: "TOTAL_OUT__1" data_type: TYPE_INT64 dims: 1
    initial_state { name: "zero" data_type: TYPE_INT64 dims: 1 zero_data: true }
  }
}
instance_group { kind: KIND_CPU count: 1 }
"""


class _Running(torch.nn.Module):
    """OUT: the running total of VALUE plus the sequence's id; the state, the total."""

    def forward(
        self, value: torch.Tensor, total: torch.Tensor, start: torch.Tensor, seq_id: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        total = value + total * (1 - start.to(torch.int64))
        return total + seq_id * 1000, total


def test_names_ending_in_an_index_take_that_place() -> None:
    assert positions(["A__1", "B__0", "C__2"]) == ["B__0", "A__1", "C__2"]
    assert positions(["b", "a"], ["a", "b"]) == ["a", "b"]  # forward's argument names
    assert positions(["A__0", "B"], ["x"]) == ["A__0", "B"]  # neither: as configured


def test_controls_and_state_reach_forward_in_place(tmp_path: Path) -> None:
    model = tmp_path / "state"
    (model / "1").mkdir(parents=True)
    torch.jit.save(torch.jit.script(_Running()), str(model / "1" / "model.pt"))
    (model / "config.pbtxt").write_text(CONFIG)

    async def scenario(dp: LocalDataPlane) -> list[int]:
        answers = []
        for step, value in enumerate((5, 7, 11)):
            params = {"sequence_id": 3, "sequence_start": step == 0, "sequence_end": step == 2}
            request = InferRequest(
                "state",
                None,
                {"VALUE__0": np.array([[value]], np.int64)},
                {"VALUE__0": "INT64"},
                parameters=params,
            )
            answers.append(int((await dp.infer(request)).outputs[0].data.ravel()[0]))
        return answers

    assert run_on_dataplane(scenario, tmp_path) == [3005, 3012, 3023]
