"""Triton's libtorch backend's switches in the TorchScript engine: their parsing, the
weight sharing of a version's instances, and refusals."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import LoadContext, engine_class
from modelyard.errors import EngineError


class _Double(torch.nn.Module):
    def forward(self, INPUT__0: torch.Tensor) -> torch.Tensor:
        return INPUT__0 * 2


CONFIG = """
name: "double"
platform: "pytorch_libtorch"
max_batch_size: 0
input [{ name: "INPUT__0" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


def _loaded(artifact: Path, parameters: str = "", index: int = 0):  # type: ignore[no-untyped-def]
    config = text_format.Parse(CONFIG + parameters, mc.ModelConfig())
    engine = engine_class("pytorch")()
    engine.load(LoadContext(artifact, artifact.parent, config, instance_index=index))
    return engine


def _switch(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}\n'


def test_instances_share_one_module_where_the_config_asks(tmp_path: Path) -> None:
    artifact = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(_Double()), str(artifact))
    sharing = _switch("ENABLE_WEIGHT_SHARING", "true")
    first, second = _loaded(artifact, sharing), _loaded(artifact, sharing, index=1)
    assert first._module is second._module  # one load for both
    alone = _loaded(artifact)
    assert alone._module is not first._module
    x = np.array([1.5, -2.0], dtype=np.float32)
    assert second.execute({"INPUT__0": x}, ["OUTPUT__0"])["OUTPUT__0"].tolist() == [3.0, -4.0]
    torch.jit.save(torch.jit.script(_Double()), str(artifact))  # a new file: loaded anew
    os.utime(artifact, ns=(1, 1))
    assert _loaded(artifact, sharing)._module is not first._module


@pytest.mark.parametrize(
    "parameters",
    [_switch("INFERENCE_MODE", "false"), _switch("DISABLE_OPTIMIZED_EXECUTION", "true")
     + _switch("DISABLE_CUDNN", "true")],
)  # fmt: skip
def test_a_model_runs_under_each_switch(tmp_path: Path, parameters: str) -> None:
    artifact = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(_Double()), str(artifact))
    engine = _loaded(artifact, parameters)
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert engine.execute({"INPUT__0": x}, ["OUTPUT__0"])["OUTPUT__0"].tolist() == [2.0, 4.0]


def test_a_switch_that_is_not_a_boolean_is_refused_with_its_line(tmp_path: Path) -> None:
    artifact = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(_Double()), str(artifact))
    with pytest.raises(EngineError) as refused:
        _loaded(artifact, _switch("INFERENCE_MODE", "maybe"))
    line = refused.value.line()
    assert "failed to convert 'maybe' to boolean value for parameter 'INFERENCE_MODE'" in line
    assert "rule=engine/pytorch" in line
