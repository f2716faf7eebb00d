"""Triton's response statistics (``response_stats``): each response a decoupled model
sends, by its index within its request, timed from the previous response (or the
execution's start) to when the model made it (compute_infer) and on to its send
(compute_output); a FINAL alone is an empty response, a CANCELLED error a cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from modelyard.engines.base import ResponseTiming
from modelyard.engines.python_stub import _timing
from modelyard.server.manager import ControlMode
from modelyard.server.stats import MAX_RESPONSE_INDICES, VersionStats
from modelyard.types import InferRequest
from tests.support.dataplane import running_dataplane
from tests.support.models import write_python_model

# per response: sleep 0.1 s, make it, sleep 0.05 s, send; IN[1] 1: the second fails,
# 2: the last is a FINAL alone, 3: a cancel error last
MODEL = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            count, mode = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().tolist()
            sender = request.get_response_sender()
            for index in range(count):
                time.sleep(0.1)
                out = pb_utils.Tensor("OUT", np.array([index], np.int32))
                error = None
                if mode == 1 and index == 1:
                    error = pb_utils.TritonError("failed", pb_utils.TritonError.UNKNOWN)
                response = pb_utils.InferenceResponse([out], error=error)
                time.sleep(0.05)
                sender.send(response)
            if mode == 3:
                error = pb_utils.TritonError("cancelled", pb_utils.TritonError.CANCELLED)
                sender.send(pb_utils.InferenceResponse(error=error),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                if mode == 2:
                    time.sleep(0.1)
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

CONFIG = """
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [{ name: "IN" data_type: TYPE_INT32 dims: [ 2 ] }]
output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }]
"""


def test_each_response_is_counted_and_timed_by_its_index(tmp_path: Path) -> None:
    write_python_model(tmp_path, "steps", MODEL, CONFIG)

    async def main() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            for count, mode in ((2, 0), (2, 1), (1, 2), (1, 3)):
                request = InferRequest(
                    "steps", None, {"IN": np.array([count, mode], np.int32)}, {"IN": "INT32"}
                )
                async for _ in dp.infer_stream(request):
                    pass
            stats = dp.statistics("steps", None)["model_stats"][0]["response_stats"]
            assert sorted(stats) == ["0", "1", "2"]
            first, second, third = stats["0"], stats["1"], stats["2"]
            assert first["success"]["count"] == 4  # every request's first response
            assert first["compute_infer"]["count"] == 4
            assert first["compute_output"]["count"] == 4
            # each sleep at least its time; the upper bounds leave a loaded machine 0.25 s in
            # all, short of a compute_output that took the 0.1 s before it in too
            assert 4 * 0.09e9 <= first["compute_infer"]["ns"] <= 4 * 0.1e9 + 0.25e9
            assert 4 * 0.045e9 <= first["compute_output"]["ns"] <= 4 * 0.05e9 + 0.25e9
            assert first["success"]["ns"] == (
                first["compute_infer"]["ns"] + first["compute_output"]["ns"]
            )
            # index 1: a success, a failure (with its output made), an empty, a cancel
            assert {k: v["count"] for k, v in second.items()} == {
                "compute_infer": 3, "compute_output": 2, "success": 1, "fail": 1,
                "empty_response": 1, "cancel": 1,
            }  # fmt: skip
            assert 0.09e9 <= second["empty_response"]["ns"] <= 0.35e9
            # index 2: the lone FINALs after two responses
            assert third["empty_response"]["count"] == 2
            assert third["success"]["count"] == third["fail"]["count"] == 0

    asyncio.run(main())


def test_response_indices_are_bounded_and_times_kept_in_order() -> None:
    stats = VersionStats()
    stats.record_response(MAX_RESPONSE_INDICES, "success", 0, 5, 10)
    assert stats.response_stats == {}
    # a response made before its span began (made ahead, sent later) computed nothing in it
    stats.record_response(0, "success", 100, 50, 200)
    # a failure with no response made: all of it compute_infer, no compute_output
    stats.record_response(0, "fail", 100, 0, 150)
    entry = stats.response_stats[0]
    assert entry[0:2] == [2, 0 + 50]  # compute_infer
    assert entry[2:4] == [1, 100]  # compute_output: the success's
    assert entry[4:6] == [1, 100] and entry[6:8] == [1, 50]  # success, fail


def test_a_model_process_s_timing_is_taken_only_as_three_integers() -> None:
    assert _timing((1, 2, 3)) == ResponseTiming(1, 2, 3)
    for sent in (None, (1, 2), (1, 2, 3, 4), ("1", 2, 3), (1.5, 2, 3), (True, 2, 3), [1, 2, 3]):
        assert _timing(sent) is None, sent
