"""The stand-in for Triton's C++ ``sequence`` backend (tests/triton_qa/sequence_backend.py):
its arithmetic, its config checks, and the model served by the sequence batcher."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

from modelyard.engines import pb_utils
from modelyard.errors import ModelyardError
from modelyard.server.manager import ControlMode
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.triton_qa import repositories

sys.modules.setdefault("triton_python_backend_utils", pb_utils)
from tests.triton_qa.sequence_backend import (  # noqa: E402 (after pb_utils is importable)
    MAX_EXECUTE_DELAY_MS,
    Accumulators,
    config_error,
    execute_delay_ms,
)

CONFIG = {
    "max_batch_size": 8,
    "sequence_batching": {"control_input": [{"name": "START"}, {"name": "READY"}]},
    "input": [{"name": "INPUT", "data_type": "TYPE_INT32", "dims": [-1]}],
    "output": [{"name": "OUTPUT", "data_type": "TYPE_INT32", "dims": [-1]}],
}


def test_each_row_keeps_its_own_sum_set_at_start_and_added_to_after() -> None:
    acc = Accumulators(max_batch_size=4)
    assert len(acc.values) == 4
    out = acc.step(0, start=1, ready=1, values=np.array([[2, 3]], dtype=np.int32))
    assert out is not None and out.tolist() == [[5, 5]]  # INPUT's shape, every element the sum
    assert acc.step(1, start=1, ready=1, values=np.array([[7]], dtype=np.int32)).tolist() == [[7]]
    assert acc.step(0, start=0, ready=1, values=np.array([[1]], dtype=np.int32)).tolist() == [[6]]
    # a row not ready (padding) keeps its sum and answers nothing
    assert acc.step(0, start=0, ready=0, values=np.array([[100]], dtype=np.int32)) is None
    assert acc.step(0, start=0, ready=1, values=np.array([[0]], dtype=np.int32)).tolist() == [[6]]
    # START sets the sum again; int32 wraps as the C++ backend's
    wrapped = acc.step(1, start=1, ready=1, values=np.array([[2**31 - 1, 1]], dtype=np.int32))
    assert wrapped is not None and wrapped.tolist() == [[-(2**31)] * 2]
    assert Accumulators(max_batch_size=0).values.shape == (1,)


def test_the_config_is_checked_in_the_cpp_backends_words() -> None:
    assert config_error(CONFIG) is None
    one_control = {**CONFIG, "sequence_batching": {"control_input": [{"name": "START"}]}}
    assert config_error(one_control) == (
        "'START' and 'READY' must be configured as the control inputs"
    )
    wrong_type = {**CONFIG, "input": [{**CONFIG["input"][0], "data_type": "TYPE_FP32"}]}
    assert config_error(wrong_type) == "model input must have TYPE_INT32 data-type"
    wrong_name = {**CONFIG, "output": [{**CONFIG["output"][0], "name": "OUT"}]}
    assert config_error(wrong_name) == "model output must be named 'OUTPUT'"
    assert execute_delay_ms(CONFIG) == 0
    delayed = {**CONFIG, "parameters": {"execute_delay_ms": {"string_value": "3"}}}
    assert execute_delay_ms(delayed) == 3
    too_long = {"parameters": {"execute_delay_ms": {"string_value": str(MAX_EXECUTE_DELAY_MS + 1)}}}
    with pytest.raises(ValueError, match="outside"):
        execute_delay_ms(too_long)


def _request(value: list[int], sequence_id: int, **flags: bool) -> InferRequest:
    parameters = {"sequence_id": sequence_id, **{f"sequence_{k}": v for k, v in flags.items()}}
    array = np.array([value], dtype=np.int32)
    return InferRequest(
        "custom_sequence_int32", None, {"INPUT": array}, {"INPUT": "INT32"},
        parameters=parameters,
    )  # fmt: skip


def test_custom_sequence_int32_accumulates_each_sequence(tmp_path: Path) -> None:
    """Triton's config, served by the stand-in: a true accumulator per sequence."""
    repositories.custom_sequence_int32(tmp_path)
    asyncio.run(_sequences(tmp_path))


async def _sequences(tmp_path: Path) -> None:
    async with running_dataplane(tmp_path, ControlMode.NONE) as dp:

        async def infer(value: list[int], sequence_id: int, **flags: bool) -> list[list[int]]:
            response = await dp.infer(_request(value, sequence_id, **flags))
            return response.outputs[0].data.tolist()

        assert await infer([1, 2], 1, start=True) == [[3, 3]]
        assert await infer([5], 2, start=True) == [[5]]
        assert await infer([4], 1) == [[7]]
        assert await infer([1], 2, end=True) == [[6]]
        with pytest.raises(ModelyardError, match="START flag"):
            await infer([1], 2)
