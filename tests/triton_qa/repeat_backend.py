"""Triton's C++ ``repeat`` backend (triton-inference-server/repeat_backend,
``src/repeat.cc``) as a Python-based backend: the stand-in that serves qa/L0_decoupled's
``repeat_int32`` (Triton's ``src/test/models/repeat_int32``), whose config says
``backend: "repeat"``. Triton's QA image copies the C++ library into the model's version
folder; here this file is ``<backend directory>/repeat/model.py``.

What the C++ backend does, and so this model: the config is checked at load, in its
words (three inputs IN, DELAY, WAIT and two outputs OUT, IDX, in that order, with their
types and shapes; ``max_batch_size`` 0). For each request, IN and DELAY must have the
same shape (else one error response, final, ``expected IN and DELAY shape to match, got
[1] and [2]``); a thread of its own then, for each element ``e`` of IN, sleeps DELAY[e]
ms and sends a response of OUT = IN[e] and IDX = e (flags 0), and after the last sends
FINAL alone. ``execute`` sleeps WAIT ms before it returns (the instance is busy so long;
the C++ backend releases the requests then). Where the config is not decoupled, Triton's
core answers the C++ backend's first response and drops the others (L0_grpc_state_cleanup's
``test_non_decoupled_streaming_multi_response``); a python model may send only one, so
here the first is sent FINAL and the others are not sent.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# what a request controls: the most responses and the longest sleep (ms) taken from it
MAX_RESPONSES = 100_000
MAX_DELAY_MS = 600_000

EXPECTED = (
    ("input", 0, "IN", "first input", "TYPE_INT32", "INT32"),
    ("input", 1, "DELAY", "second input", "TYPE_UINT32", "UINT32"),
    ("input", 2, "WAIT", "third input", "TYPE_UINT32", "UINT32"),
    ("output", 0, "OUT", "first output", "TYPE_INT32", "INT32"),
    ("output", 1, "IDX", "second output", "TYPE_UINT32", "UINT32"),
)


def shape_text(dims) -> str:
    """backend::ShapeToString: ``[1,2]``."""
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def config_error(config: dict) -> str | None:
    """What the C++ backend's ValidateModelConfig refuses, in its words (None: valid)."""
    if int(config.get("max_batch_size", 0)) != 0:
        return "repeat backend only supports models with max_batch_size == 0"
    inputs, outputs = config.get("input", []), config.get("output", [])
    if len(inputs) != 3:
        return f"expected 3 inputs, got {len(inputs)}"
    if len(outputs) != 2:
        return f"expected 2 outputs, got {len(outputs)}"
    tensors = {"input": inputs, "output": outputs}
    for kind, index, name, role, _, _ in EXPECTED:
        given = tensors[kind][index].get("name", "")
        if given != name:
            return f"expected {role} tensor name to be {name}, got {given}"
    dims = {name: [int(d) for d in tensors[k][i].get("dims", [])] for k, i, name, *_ in EXPECTED}
    if len(dims["IN"]) != 1:
        return f"expected IN shape to have one dimension, got {shape_text(dims['IN'])}"
    if dims["IN"] != dims["DELAY"]:
        return (
            f"expected IN and DELAY shape to match, got {shape_text(dims['IN'])} and "
            f"{shape_text(dims['DELAY'])}"
        )
    for name in ("WAIT", "OUT", "IDX"):
        if dims[name] != [1]:
            return f"expected {name} shape to be [1], got {shape_text(dims[name])}"
    for kind, index, name, _, data_type, short in EXPECTED:
        given = tensors[kind][index].get("data_type", "")
        if given != data_type:
            return f"expected {name} datatype to be {short}, got {given}"
    return None


def invalid(message: str):
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG)
    )


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        error = config_error(config)
        if error is not None:
            raise pb_utils.TritonModelException(error)
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.threads: list[threading.Thread] = []

    def execute(self, requests):
        wait_ms = 0
        for request in requests:
            wait_ms = self.process(request)
        time.sleep(wait_ms / 1000)
        return None

    def process(self, request) -> int:
        """Start the request's responses; its WAIT (0 where the request is refused)."""
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        sender = request.get_response_sender()
        wait = pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy()
        if wait.nbytes != 4:
            sender.send(invalid("unexpected size for WAIT input"), flags=final)
            return 0
        values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
        delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()
        if values.shape != delays.shape:
            message = (
                f"expected IN and DELAY shape to match, got {shape_text(values.shape)} and "
                f"{shape_text(delays.shape)}"
            )
            sender.send(invalid(message), flags=final)
            return min(int(wait.reshape(-1)[0]), MAX_DELAY_MS)  # read before the check
        values = values.reshape(-1)[:MAX_RESPONSES].astype(np.int32)
        delays = delays.reshape(-1)[:MAX_RESPONSES].astype(np.uint32)
        thread = threading.Thread(target=self.respond, args=(sender, values, delays))
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        thread.start()
        return min(int(wait.reshape(-1)[0]), MAX_DELAY_MS)

    def respond(self, sender, values: np.ndarray, delays: np.ndarray) -> None:
        for index, (value, delay) in enumerate(zip(values, delays, strict=True)):
            time.sleep(min(int(delay), MAX_DELAY_MS) / 1000)
            out = pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))
            idx = pb_utils.Tensor("IDX", np.array([index], dtype=np.uint32))
            if not self.decoupled:  # the core's answer: the first response
                final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                sender.send(pb_utils.InferenceResponse([out, idx]), flags=final)
                return
            sender.send(pb_utils.InferenceResponse([out, idx]), flags=0)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for thread in self.threads:
            thread.join()
