"""BYTES tensors through the ONNX engine: onnxruntime takes and gives strings as str; the
server's BYTES tensors are bytes on both sides, so a string output can feed the next
ensemble step (Triton's qa/L0_infer ``mix_type`` ensembles chain string models)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from modelyard.modelfiles.config import read_model_config
from modelyard.server.model_version import load_model_version
from modelyard.server.scheduling import Submission


def _string_identity(tmp_path: Path) -> Path:
    model_dir = tmp_path / "strings"
    (model_dir / "1").mkdir(parents=True)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT"], ["OUTPUT"])],
        "strings",
        [helper.make_tensor_value_info("INPUT", TensorProto.STRING, [-1])],
        [helper.make_tensor_value_info("OUTPUT", TensorProto.STRING, [-1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(model_dir / "1" / "model.onnx"))
    (model_dir / "config.pbtxt").write_text(
        'input [{ name: "INPUT" data_type: TYPE_STRING dims: [ -1 ] }]\n'
        'output [{ name: "OUTPUT" data_type: TYPE_STRING dims: [ -1 ] }]\n'
    )
    return model_dir


def test_a_string_output_is_bytes_and_feeds_the_model_again(tmp_path: Path) -> None:
    model_dir = _string_identity(tmp_path)
    version = load_model_version(model_dir, 1, read_model_config(model_dir), "onnxruntime")

    async def twice() -> tuple[np.ndarray, np.ndarray]:
        given = np.array([b"12", "é".encode(), b""], dtype=object)
        first = await version.scheduler.submit(Submission({"INPUT": given}, ["OUTPUT"], 1))
        again = await version.scheduler.submit(
            Submission({"INPUT": first["OUTPUT"]}, ["OUTPUT"], 1)
        )
        return first["OUTPUT"], again["OUTPUT"]

    try:
        first, again = asyncio.run(twice())
    finally:
        version.scheduler.close()
        version.scheduler.join(5)
    assert first.tolist() == again.tolist() == [b"12", "é".encode(), b""]
