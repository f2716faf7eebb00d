"""BYTES tensors of a TorchScript model, as Triton's libtorch backend passes them: a
``List[str]`` of the elements in order (its qa/L0_infer_reshape's ``libtorch_zero_1_object``:
a batch of one string each, reshaped to none)."""

from __future__ import annotations

from pathlib import Path
from typing import List  # noqa: UP035 - TorchScript reads the annotation

import numpy as np
import pytest
import torch

from modelyard.errors import ModelyardError
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.types import InferRequest
from tests.support.dataplane import run_on_dataplane

CONFIG = """
name: "strings"
platform: "pytorch_libtorch"
max_batch_size: 8
input [{ name: "INPUT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } }]
output [{ name: "OUTPUT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } }]
"""


class _Shout(torch.nn.Module):
    def forward(self, input0: List[str]) -> List[str]:  # noqa: UP006
        return [text.upper() for text in input0]


def _repository(tmp_path: Path) -> Path:
    model = tmp_path / "strings"
    (model / "1").mkdir(parents=True)
    torch.jit.save(torch.jit.script(_Shout()), str(model / "1" / "model.pt"))
    (model / "config.pbtxt").write_text(CONFIG)
    return tmp_path


def _infer(tmp_path: Path, values: list[bytes]) -> np.ndarray:
    x = np.array(values, dtype=object).reshape(len(values), 1)

    async def scenario(dp: LocalDataPlane) -> np.ndarray:
        datatypes = {"INPUT__0": "BYTES"}
        request = InferRequest("strings", None, {"INPUT__0": x}, input_datatypes=datatypes)
        return (await dp.infer(request)).outputs[0].data

    return run_on_dataplane(scenario, _repository(tmp_path))


def test_strings_go_in_and_come_back_as_a_list(tmp_path: Path) -> None:
    answer = _infer(tmp_path, [b"abc", "\u00e9t\u00e9".encode()])
    assert answer.shape == (2, 1)
    # TorchScript's upper() changes ASCII only: the UTF-8 comes back as it went
    assert answer.ravel().tolist() == [b"ABC", "\u00e9T\u00e9".encode()]


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelyardError) as refused:
        _infer(tmp_path, [b"\xff"])
    line = refused.value.line()
    assert "input 'INPUT__0' holds bytes that are not UTF-8" in line, line
    assert "rule=engine/pytorch" in line and refused.value.code.name == "INVALID_ARGUMENT"
