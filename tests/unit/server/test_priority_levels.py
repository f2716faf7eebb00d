"""Priority levels as Triton loads and serves them (L0_model_queue's configs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import ModelyardError
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.types import InferRequest
from tests.support.dataplane import run_on_dataplane as run


def identity(root: Path, name: str, batching: str) -> None:
    model = root / name
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "identity"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]\n'
        f"dynamic_batching {{ {batching} }}\n"
    )


def test_a_default_level_outside_the_levels_fails_the_load_in_tritons_words(
    tmp_path: Path,
) -> None:
    identity(tmp_path, "outside", "priority_levels: 2 default_priority_level: 3")

    async def scenario(dp: LocalDataPlane) -> None:
        with pytest.raises(ModelyardError) as refused:
            await dp.manager.load("outside")
        line = refused.value.line()
        assert "default priority level must be in range [1, 2] for outside" in line, line
        assert not dp.model_ready("outside", None)

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT)


def test_the_widest_levels_load_and_serve_any_priority(tmp_path: Path) -> None:
    identity(
        tmp_path,
        "wide",
        "priority_levels: 18446744073709551615 default_priority_level: 4294967296",
    )

    async def scenario(dp: LocalDataPlane) -> None:
        await dp.manager.load("wide")
        for priority in (0, 1, 4294967296, 18446744073709551615):
            request = InferRequest(
                "wide", None, {"INPUT0": np.full((1, 3), 2.0, np.float32)}, {"INPUT0": "FP32"}
            )
            request.priority = priority
            response = await dp.infer(request)
            assert response.outputs[0].data.tolist() == [[2.0, 2.0, 2.0]]

    run(scenario, [tmp_path], mode=ControlMode.EXPLICIT)
