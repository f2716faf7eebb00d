"""Triton's series as its QA (L0_metrics) reads them: the pending count is the requests
still queued, not those executing; a namespaced model is labelled with its repository."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np

from modelyard.metrics import make_registry, metrics_text, triton_text
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

SLOW = """
import time


class Model:
    def execute(self, inputs):
        time.sleep(0.5)
        return {"y": inputs["x"]}
"""
CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 1 ] }]
"""


def test_requests_executing_are_not_pending(tmp_path: Path) -> None:
    write_python_model(tmp_path, "slow", SLOW, CONFIG)

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            mv = dp.manager.resolve("slow", None)
            request = InferRequest("slow", None, {"x": np.ones(1, np.float32)}, {"x": "FP32"})
            calls = [asyncio.create_task(dp.infer(request)) for _ in range(3)]
            for _ in range(200):  # until one executes and two wait
                if mv.scheduler.pending == 3 and mv.scheduler.queued == 2:
                    break
                await asyncio.sleep(0.005)
            text = metrics_text(dp.manager, make_registry(dp.manager)).decode()
            await asyncio.gather(*calls)
            assert 'nv_inference_pending_request_count{model="slow",version="1"} 2.0' in text
            # the host's gauges as Triton writes them: plain numbers, no exponent
            assert re.search(r"(?m)^nv_cpu_memory_total_bytes \d+(\.0)?$", text), text[-800:]

    asyncio.run(main())


def test_a_namespaced_model_is_labelled_with_its_repository_and_its_bare_name(
    tmp_path: Path,
) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        write_python_model(root, "shared", SLOW, CONFIG)  # one name in both
    write_python_model(roots[0], "alone", SLOW, CONFIG)

    async def main() -> None:
        manager = ModelManager(ModelRepository(roots, namespacing=True), ControlMode.NONE)
        await manager.start()
        try:
            text = triton_text(manager)
        finally:
            await manager.stop()
        for model, root in (("shared", roots[0]), ("shared", roots[1]), ("alone", roots[0])):
            labels = f'model="{model}",namespace="{root}",version="1"'
            assert f"nv_inference_count{{{labels}}} 0.0" in text
        assert "::" not in text  # the key modelyard serves it under is not Triton's label
        plain = ModelManager(ModelRepository([roots[0]]), ControlMode.NONE)
        await plain.start()
        try:
            assert 'namespace="' not in triton_text(plain)
        finally:
            await plain.stop()

    asyncio.run(main())
