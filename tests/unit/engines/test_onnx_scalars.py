"""ONNX tensors of no dimensions (a scalar, or a tensor whose shape the file leaves out), as
Triton's onnxruntime backend serves them: config dims of ones only, the input fed as a
scalar, the output answered in the config's dims (Triton's qa/L0_scalar_io)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from modelyard.errors import ModelyardError
from modelyard.modelfiles.config import read_model_config
from modelyard.server.model_version import ModelVersion, load_model_version
from modelyard.server.scheduling import Submission


def _model(tmp_path: Path, shape: list[int] | None, dims: str) -> Path:
    """An identity whose INPUT and OUTPUT have ``shape`` (None: none given), served with
    config ``dims`` and nothing else (as gen_qa_ort_scalar_models.py writes them)."""
    model_dir = tmp_path / "scalar"
    (model_dir / "1").mkdir(parents=True)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT"], ["OUTPUT"])],
        "scalar",
        [helper.make_tensor_value_info("INPUT", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("OUTPUT", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(model_dir / "1" / "model.onnx"))
    (model_dir / "config.pbtxt").write_text(
        f'input [{{ name: "INPUT" data_type: TYPE_FP32 dims: [ {dims} ] }}]\n'
        f'output [{{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ {dims} ] }}]\n'
    )
    return model_dir


def _load(model_dir: Path) -> ModelVersion:
    return load_model_version(model_dir, 1, read_model_config(model_dir), "onnxruntime")


def _answer(version: ModelVersion, x: np.ndarray) -> np.ndarray:
    async def infer() -> dict[str, np.ndarray]:
        return await version.scheduler.submit(Submission({"INPUT": x}, ["OUTPUT"], 1))

    try:
        return asyncio.run(infer())["OUTPUT"]
    finally:
        version.scheduler.close()
        version.scheduler.join(5)


@pytest.mark.parametrize("shape", [[], None], ids=["scalar", "no-shape"])
@pytest.mark.parametrize("dims", ["1", "1, 1"])
def test_a_scalar_tensor_is_served_in_its_config_dims(
    tmp_path: Path, shape: list[int] | None, dims: str
) -> None:
    version = _load(_model(tmp_path, shape, dims))
    assert version.config.max_batch_size == 0
    x = np.full([int(d) for d in dims.split(",")], 7.0, dtype=np.float32)
    answer = _answer(version, x)
    assert answer.shape == x.shape and answer.tolist() == x.tolist()


def test_config_dims_other_than_ones_for_a_scalar_tensor_are_refused_at_load(
    tmp_path: Path,
) -> None:
    with pytest.raises(ModelyardError) as refused:
        _load(_model(tmp_path, None, "2"))
    line = refused.value.line()
    assert line.startswith(
        "failed to load 'scalar' version 1: unable to load model 'scalar', scalar tensor "
        "'INPUT', should only provide 1 in the model configuration when the model doesn't "
        "support batching. Model configuration provided: [2]."
    ), line
    assert "rule=model-server/load" in line


def test_a_scalar_output_is_answered_in_its_config_dims(tmp_path: Path) -> None:
    """A sum of three numbers, a scalar in the file, is answered as the config's [ 1 ]."""
    model_dir = tmp_path / "total"
    (model_dir / "1").mkdir(parents=True)
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["INPUT"], ["OUTPUT"], keepdims=0)],
        "total",
        [helper.make_tensor_value_info("INPUT", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("OUTPUT", TensorProto.FLOAT, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(model_dir / "1" / "model.onnx"))
    (model_dir / "config.pbtxt").write_text(
        'input [{ name: "INPUT" data_type: TYPE_FP32 dims: [ 3 ] }]\n'
        'output [{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] }]\n'
    )
    answer = _answer(_load(model_dir), np.array([1.0, 2.0, 4.0], dtype=np.float32))
    assert answer.shape == (1,) and answer.tolist() == [7.0]
