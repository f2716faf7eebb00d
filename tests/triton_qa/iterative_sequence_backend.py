"""Triton's C++ ``iterative_sequence`` test backend
(``src/test/iterative_sequence/src/iterative_sequence.cc``) as a Python-based backend:
the stand-in that serves qa/L0_iterative_sequence's model, whose config (and the configs
its test loads as overrides) say ``backend: "iterative_sequence"``. Triton's QA image
puts the C++ library in the model's version folder; here this file is
``<backend directory>/iterative_sequence/model.py``.

What the C++ backend computes, and so this model: each instance keeps, by correlation
id, the responses a sequence has left. A request's INPUT (its first int32) is that
count when the id is new; each execution counts one down and answers OUTPUT (``[1, 1]``
when the model batches, ``[1]`` otherwise) with what is left. While some is left it gives
the request back to run again (``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE``), and the
answer is not the last; at 0 (or below) the id is forgotten and the answer is the last.
It sleeps 500 ms before it answers each request, as the C++ backend sleeps before it
releases it. Only KIND_CPU instances load, in the C++ backend's words.
"""

from __future__ import annotations

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# the C++ backend's sleep before a request is released and answered
RELEASE_DELAY_S = 0.5


class Remainders:
    """One instance's count of responses left, by correlation id."""

    def __init__(self) -> None:
        self.left: dict[object, int] = {}

    def next_output(self, correlation_id: object, init_value: int) -> int:
        value = self.left.get(correlation_id, init_value) - 1
        if value <= 0:
            self.left.pop(correlation_id, None)
        else:
            self.left[correlation_id] = value
        return value


class TritonPythonModel:
    def initialize(self, args):
        if args.get("model_instance_kind", "CPU") not in ("CPU", "KIND_CPU"):
            raise pb_utils.TritonModelException(
                "'iterative_sequence' backend only supports CPU instances"
            )
        config = json.loads(args["model_config"])
        self.batching = int(config.get("max_batch_size", 0)) > 0
        self.remainders = Remainders()

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            init_value = int(values.astype(np.int32).flat[0])
            value = self.remainders.next_output(request.correlation_id(), init_value)
            shape = (1, 1) if self.batching else (1,)
            output = pb_utils.Tensor("OUTPUT", np.full(shape, value, dtype=np.int32))
            time.sleep(RELEASE_DELAY_S)
            sender = request.get_response_sender()
            if value <= 0:
                sender.send(
                    pb_utils.InferenceResponse([output]),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
            else:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(pb_utils.InferenceResponse([output]))
        return None
