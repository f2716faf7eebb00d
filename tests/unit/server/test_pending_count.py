"""Triton's ``nv_inference_pending_request_count``: the requests still queued, not those
executing (its QA's metrics_queue_size_test reads it so)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np

from modelyard.metrics import make_registry, metrics_text
from modelyard.server.manager import ControlMode
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
