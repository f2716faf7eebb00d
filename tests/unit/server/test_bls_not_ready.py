"""A model's call to a model that is not ready (Triton's BLS) is refused in Triton's words."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import Code, ModelyardError
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest
from tests.support.models import times_ten

TRITON_TEXT = "Failed for execute the inference request. Model '{}' is not ready."


def _request(model: str, version: str | None = None) -> InferRequest:
    return InferRequest(model, version, {"x": np.ones((1, 2), np.float32)}, {"x": "FP32"})


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_to_a_model_that_is_not_ready_leads_with_triton_s_words(
    tmp_path: Path, stream: bool
) -> None:
    repo = tmp_path / "models"
    times_ten(repo, "other")

    def call(request: InferRequest) -> object:
        if stream:
            return list(dp.infer_from_thread(request, stream=True))
        return dp.infer_from_thread(request)

    async def scenario() -> None:
        await dp.manager.start()
        try:
            await dp.manager.load("other")
            served = await asyncio.to_thread(call, _request("other"))  # a ready model answers
            assert served
            for name, version, why in (
                ("undefined_model", None, "Request for unknown model: 'undefined_model' is"),
                ("other", "7", "Request for unknown model: 'other' version 7 is not found"),
            ):
                with pytest.raises(ModelyardError) as refused:
                    await asyncio.to_thread(call, _request(name, version))
                line = refused.value.line()
                assert line.startswith(f"{TRITON_TEXT.format(name)} {why}"), line
                assert refused.value.code is Code.NOT_FOUND and "rule=model-server/unknown" in line
        finally:
            await dp.manager.stop()

    dp = LocalDataPlane(ModelManager(ModelRepository(repo), ControlMode.EXPLICIT))
    asyncio.run(scenario())
