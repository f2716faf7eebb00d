"""Triton's C++ ``square`` backend (triton-inference-server/square_backend,
``src/square.cc``) as a Python-based backend: the stand-in that serves
qa/L0_response_statistics' models, whose configs (made by its test.sh) say
``backend: "square"``. Triton's QA image installs the C++ library in its backends
folder; here this file is ``<backend directory>/square/model.py``.

What the C++ backend does, and so this model: a decoupled model whose IN (``[1]``,
INT32) is the count of responses; each request runs in a thread of its own (``execute``
returns at once), which for each response sleeps ``CUSTOM_INFER_DELAY_NS``, makes OUT
(the count, in IN's rank) and sleeps ``CUSTOM_OUTPUT_DELAY_NS`` before it sends it. The
last ``CUSTOM_EMPTY_COUNT`` responses are none (computed, not sent), the
``CUSTOM_FAIL_COUNT`` before them fail (``simulated failure``, UNKNOWN); once the caller
has cancelled, the next response sleeps ``CUSTOM_CANCEL_DELAY_NS`` and ends the request
(CANCELLED). The C++ backend reports each response's timings to Triton itself
(``TRITONBACKEND_ModelInstanceReportResponseStatistics``); a python model cannot, so
modelyard times what a decoupled model sends: from the previous response (or the
execution's start) to the response made (``pb_utils.InferenceResponse``), then to its
send; a FINAL alone is an empty response. So this model sends its last response with
FINAL, and an empty last response as FINAL alone, where the C++ backend sends FINAL alone
after its responses (unreported); it keeps at most one empty response, at the end.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

PARAMETERS = ("CUSTOM_INFER_DELAY_NS", "CUSTOM_OUTPUT_DELAY_NS", "CUSTOM_CANCEL_DELAY_NS",
              "CUSTOM_FAIL_COUNT", "CUSTOM_EMPTY_COUNT")  # fmt: skip
# the most a parameter's delay may be (the model file controls it), and of responses
MAX_DELAY_NS = 60 * 10**9
MAX_RESPONSES = 10_000


def parameters(config: dict) -> dict[str, int]:
    """The backend's parameters (0 when absent; a value not all digits is ignored, as the
    C++ backend ignores it)."""
    given = config.get("parameters", {})
    values = {}
    for key in PARAMETERS:
        text = str(given.get(key, {}).get("string_value", "0"))
        values[key] = min(int(text), MAX_DELAY_NS) if text.isdigit() else 0
    return values


def result(index: int, count: int, fail_count: int, empty_count: int) -> str:
    """success, fail or empty: the C++ backend's InferResult."""
    if index + fail_count + empty_count < count:
        return "success"
    if index + empty_count < count:
        return "fail"
    return "empty"


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.params = parameters(config)
        self.threads: list[threading.Thread] = []

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if values.ndim == 2 and values.shape[0] != 1:
                error = pb_utils.TritonError("unexpected shape for IN input",
                                             pb_utils.TritonError.INVALID_ARG)  # fmt: skip
                request.get_response_sender().send(
                    pb_utils.InferenceResponse(error=error),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
                continue
            count = min(int(values.flat[0]), MAX_RESPONSES)
            thread = threading.Thread(
                target=self.respond, args=(request.get_response_sender(), count, values.ndim)
            )
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
            thread.start()
        return None

    def respond(self, sender, count: int, rank: int) -> None:
        p = self.params
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        for index in range(count):
            last = final if index == count - 1 else 0
            if sender.is_cancelled():
                time.sleep(p["CUSTOM_CANCEL_DELAY_NS"] / 1e9)
                error = pb_utils.TritonError("cancelled", pb_utils.TritonError.CANCELLED)
                sender.send(pb_utils.InferenceResponse(error=error), flags=final)
                return
            time.sleep(p["CUSTOM_INFER_DELAY_NS"] / 1e9)
            kind = result(index, count, p["CUSTOM_FAIL_COUNT"], min(p["CUSTOM_EMPTY_COUNT"], 1))
            if kind == "empty":
                sender.send(flags=final)
                return
            out = pb_utils.Tensor("OUT", np.full((1,) * rank, count, dtype=np.int32))
            error = None
            if kind == "fail":
                error = pb_utils.TritonError("simulated failure", pb_utils.TritonError.UNKNOWN)
            response = pb_utils.InferenceResponse([out], error=error)
            time.sleep(p["CUSTOM_OUTPUT_DELAY_NS"] / 1e9)
            sender.send(response, flags=last)
        if count <= 0:
            sender.send(flags=final)

    def finalize(self):
        for thread in self.threads:
            thread.join()
