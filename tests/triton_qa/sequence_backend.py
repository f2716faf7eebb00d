"""Triton's C++ ``sequence`` backend (``src/test/sequence/src/sequence.cc``) as a Triton
python-backend model: the stand-in for ``qa/custom_models/custom_sequence_int32``, which
the QA runners serve with its config unchanged but ``backend: "python"`` (and no
``default_model_filename``, the C++ library's name), this file as its ``model.py``.

What the C++ backend computes, and so this model: each instance keeps one int32
accumulator a batch row (``max(1, max_batch_size)`` of them; a sequence keeps its row, the
sequence batcher's slot). A request whose READY is not 0 sets its row's accumulator to the
sum of its INPUT's elements when START is not 0, or adds that sum to it otherwise, and
answers OUTPUT in INPUT's shape with every element the accumulator (int32, wrapping as
C++'s does). A row that is not ready (a padding row of the batch) leaves its accumulator
as it is; its answer, which the server drops, is zeros here (none in Triton). A batching
model refuses a request of more than one timestep (INPUT's first dimension not 1), and a
batch of more rows than accumulators. ``execute_delay_ms`` (a config parameter) sleeps
that long once an execution, before the rows are read. The config is checked at load as
the C++ backend checks it, in its words.
"""

from __future__ import annotations

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# the longest execute_delay_ms taken from a config (the model file controls it)
MAX_EXECUTE_DELAY_MS = 600_000


class Accumulators:
    """One instance's accumulators: the arithmetic, apart from Triton's request API."""

    def __init__(self, max_batch_size: int) -> None:
        self.values = np.zeros(max(1, max_batch_size), dtype=np.int32)

    def step(self, row: int, start: int, ready: int, values: np.ndarray) -> np.ndarray | None:
        """One request in ``row``: the OUTPUT it answers (None when not ready)."""
        if not ready:
            return None
        total = np.sum(values.astype(np.int32), dtype=np.int32)
        self.values[row] = total if start else self.values[row] + total
        return np.full(values.shape, self.values[row], dtype=np.int32)


def config_error(config: dict) -> str | None:
    """What the C++ backend's ValidateModelConfig refuses, in its words (None: valid)."""
    controls = [c.get("name") for c in config.get("sequence_batching", {}).get("control_input", [])]
    if sorted(controls) != ["READY", "START"]:
        return "'START' and 'READY' must be configured as the control inputs"
    inputs, outputs = config.get("input", []), config.get("output", [])
    if len(inputs) != 1:
        return "model must have input 'INPUT' with vector shape, any length"
    if len(inputs[0].get("dims", [])) != 1:
        return "model must have one input 'INPUT' with vector shape, any length"
    if inputs[0].get("data_type") != "TYPE_INT32":
        return "model input must have TYPE_INT32 data-type"
    if inputs[0].get("name") != "INPUT":
        return "model input must be named 'INPUT'"
    if len(outputs) != 1:
        return "model must have one output 'OUTPUT' with vector shape, any length"
    out_dims = [int(d) for d in outputs[0].get("dims", [])]
    if len(out_dims) != 1 or out_dims[0] != int(inputs[0]["dims"][0]):
        return "model must have output 'OUTPUT' with shape matching 'INPUT'"
    if outputs[0].get("data_type") != "TYPE_INT32":
        return "model output must have TYPE_INT32 data-type"
    if outputs[0].get("name") != "OUTPUT":
        return "model output must be named 'OUTPUT'"
    return None


def execute_delay_ms(config: dict) -> int:
    """The ``execute_delay_ms`` parameter (0 when absent), bounded."""
    value = config.get("parameters", {}).get("execute_delay_ms", {}).get("string_value", "0")
    delay = int(value)
    if not 0 <= delay <= MAX_EXECUTE_DELAY_MS:
        raise ValueError(f"execute_delay_ms {delay} is outside 0..{MAX_EXECUTE_DELAY_MS}")
    return delay


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        error = config_error(config)
        if error is not None:
            raise ValueError(error)
        if config.get("instance_group", [{}])[0].get("kind", "KIND_CPU") != "KIND_CPU":
            raise ValueError("'sequence' backend only supports CPU instances")
        self.delay_s = execute_delay_ms(config) / 1000
        self.batching = int(config.get("max_batch_size", 0)) > 0
        self.accumulators = Accumulators(int(config.get("max_batch_size", 0)))

    def execute(self, requests):
        if len(requests) > len(self.accumulators.values):
            raise pb_utils.TritonModelException(
                "unable to execute batch larger than max-batch-size"
            )
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        responses = []
        for row, request in enumerate(requests):
            values = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            if self.batching and values.ndim > 0 and values.shape[0] != 1:
                error = pb_utils.TritonError(
                    "unable to execute more than one timestep at a time",
                    pb_utils.TritonError.UNSUPPORTED,
                )
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()
            output = self.accumulators.step(row, int(start.flat[0]), int(ready.flat[0]), values)
            if output is None:
                output = np.zeros(values.shape, dtype=np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", output)]))
        return responses
