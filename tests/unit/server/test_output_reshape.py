"""An output's config ``reshape`` with variable sizes: answered in its dims, each -1 taking
in turn the model's size where the reshape has a -1 (Triton's
``InferenceResponse::Output::Reshape``; its qa/L0_infer_reshape)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.modelfiles.config import compile_spec
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.types import InferRequest
from tests.support.dataplane import run_on_dataplane

# as gen_qa_reshape_models.py writes its variable-size INT32 models
CONFIG = """
name: "{name}"
backend: "identity"
max_batch_size: {max_batch_size}
input [{{ name: "INPUT0" data_type: TYPE_INT32 dims: [ {dims} ]
          reshape: {{ shape: [ {reshape} ] }} }}]
output [{{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ {dims} ]
           reshape: {{ shape: [ {reshape} ] }} }}]
"""


def _output(max_batch_size: int, dims: str, reshape: str) -> object:
    text = CONFIG.format(name="m", max_batch_size=max_batch_size, dims=dims, reshape=reshape)
    return compile_spec(text_format.Parse(text, mc.ModelConfig()), "m").outputs["OUTPUT0"]


@pytest.mark.parametrize(
    ("max_batch_size", "dims", "reshape", "model_shape", "answered"),
    [
        (8, "2,4,-1,6", "8,-1,1,6", (3, 8, 5, 1, 6), (3, 2, 4, 5, 6)),
        (0, "1,-1,1", "-1", (4,), (1, 4, 1)),
        (8, "-1", "1,-1,1", (2, 1, 7, 1), (2, 7)),
        (8, "16", "4,4", (1, 4, 4), (1, 16)),
    ],
)
def test_an_output_is_answered_in_its_dims_with_the_models_variable_sizes(
    max_batch_size: int, dims: str, reshape: str, model_shape: tuple[int, ...], answered: tuple
) -> None:
    output = _output(max_batch_size, dims, reshape)
    assert output.answered_shape(model_shape, max_batch_size > 0) == answered


def test_a_model_with_variable_reshapes_answers_in_the_requests_shape(tmp_path: Path) -> None:
    model = tmp_path / "reshaped"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        CONFIG.format(name="reshaped", max_batch_size=8, dims="2,4,-1,6", reshape="8,-1,1,6")
    )
    x = np.arange(2 * 4 * 5 * 6, dtype=np.int32).reshape(1, 2, 4, 5, 6)

    async def scenario(dp: LocalDataPlane) -> np.ndarray:
        request = InferRequest("reshaped", None, {"INPUT0": x}, input_datatypes={"INPUT0": "INT32"})
        return (await dp.infer(request)).outputs[0].data

    answer = run_on_dataplane(scenario, tmp_path)
    assert answer.shape == x.shape
    np.testing.assert_array_equal(answer, x)
