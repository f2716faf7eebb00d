"""The dataplane: protocol-neutral operations that HTTP and gRPC both call.

``infer`` validates a decoded request against the model's completed config,
queues it on the version's scheduler and builds the response, including the
classification extension. Everything from routing to queueing is synchronous,
so a model swap cannot fall between them.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelyard import __version__
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.config import ModelSpec, config_to_json
from modelyard.errors import Code, ModelServerError, shown
from modelyard.server.manager import ModelManager
from modelyard.server.model_version import ModelVersion
from modelyard.server.scheduler import shape_key_of
from modelyard.types import InferRequest, InferResponse, OutputTensor, RequestedOutput

EXTENSIONS = [
    "classification",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "binary_tensor_data",
    "parameters",
    "statistics",
]


def _invalid(model: str, detail: str, where: str) -> ModelServerError:
    return ModelServerError(
        f"{detail} for model '{model}'",
        code=Code.INVALID_ARGUMENT,
        rule="model-server/input-validation",
        where=where,
    )


def _check_inputs(mv: ModelVersion, request: InferRequest) -> tuple[dict[str, np.ndarray], int]:
    spec: ModelSpec = mv.spec
    name = mv.name
    where = f"GET /v2/models/{name}/config shows the expected inputs"
    inputs = request.inputs
    for input_name in inputs:
        if input_name not in spec.inputs:
            raise _invalid(
                name,
                f"unexpected input '{shown(input_name)}' (expects {', '.join(spec.inputs)})",
                where,
            )
    rows = 1
    batch: int | None = None
    prepared: dict[str, np.ndarray] = {}
    for tensor in spec.inputs.values():
        array = inputs.get(tensor.name)
        if array is None:
            if tensor.optional:
                continue
            raise _invalid(name, f"missing input '{tensor.name}'", where)
        datatype = request.input_datatypes.get(tensor.name, tensor.datatype)
        if datatype != tensor.datatype:
            raise _invalid(
                name,
                f"input '{tensor.name}' has datatype {datatype}, expected {tensor.datatype}",
                where,
            )
        shape = array.shape
        if spec.batched:
            if len(shape) < 1 or shape[0] < 1:
                raise _invalid(name, f"input '{tensor.name}' has no batch dimension", where)
            if shape[0] > spec.max_batch_size:
                raise ModelServerError(
                    f"batch size {shape[0]} of input '{tensor.name}' is over max_batch_size "
                    f"{spec.max_batch_size} for model '{name}'",
                    code=Code.INVALID_ARGUMENT,
                    rule="model-server/max-batch-size",
                    where=f"max_batch_size in {name}/config.pbtxt, or split the request",
                )
            if batch is None:
                batch = shape[0]
            elif shape[0] != batch:
                raise _invalid(
                    name, f"inputs disagree on batch size ({batch} vs {shape[0]})", where
                )
            item_shape = shape[1:]
        else:
            item_shape = shape
        if not tensor.accepts_shape(item_shape):
            expected = [-1, *tensor.dims] if spec.batched else list(tensor.dims)
            raise _invalid(
                name,
                f"input '{tensor.name}' has shape {list(shape)}, expected {expected}",
                where,
            )
        if tensor.reshape is not None:
            lead = (shape[0],) if spec.batched else ()
            array = array.reshape(lead + tensor.reshape)
        prepared[tensor.name] = array
    if spec.batched and batch is not None:
        rows = batch
    return prepared, rows


def _requested(mv: ModelVersion, request: InferRequest) -> list[RequestedOutput]:
    spec = mv.spec
    if request.outputs is None:
        return [RequestedOutput(name) for name in spec.outputs]
    if len(request.outputs) > len(spec.outputs):  # the decoders refuse a name given twice
        raise _invalid(
            mv.name,
            f"{len(request.outputs)} outputs requested, and the model has {len(spec.outputs)}",
            f"GET /v2/models/{mv.name}/config shows the outputs",
        )
    for out in request.outputs:
        if out.name not in spec.outputs:
            raise _invalid(
                mv.name,
                f"unknown output '{shown(out.name)}' (has {', '.join(spec.outputs)})",
                f"GET /v2/models/{mv.name}/config shows the outputs",
            )
        if out.classification and spec.outputs[out.name].datatype in ("BYTES", "BOOL"):
            raise _invalid(
                mv.name,
                f"output '{out.name}' is {spec.outputs[out.name].datatype}; classification "
                "needs a numeric output",
                "drop the classification parameter for this output",
            )
    return request.outputs


def classify(array: np.ndarray, top_k: int, labels: list[str] | None, batched: bool) -> np.ndarray:
    """Triton's classification extension: BYTES "value:index[:label]", top k per row."""
    rows = array.reshape(array.shape[0], -1) if batched else array.reshape(1, -1)
    k = min(top_k, rows.shape[1])
    order = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    out = np.empty((rows.shape[0], k), dtype=object)
    for r in range(rows.shape[0]):
        for j, index in enumerate(order[r]):
            value = rows[r, index]
            text = f"{float(value):f}:{int(index)}"
            if labels and index < len(labels):
                text += f":{labels[index]}"
            out[r, j] = text.encode("utf-8")
    return out if batched else out.reshape(k)


# an output whose response entry is the same for every request of a layout, but for its
# data: name, datatype, numpy dtype, shape, binary, and whether the engine's array must have
# that very shape (False: the config reshapes it, so only its size must match)
FixedOutput = tuple[str, str, np.dtype[Any], tuple[int, ...], bool, bool]


@dataclass(frozen=True, slots=True, eq=False)
class Plan:
    """What validating a request decided, reused for requests of the same layout."""

    rows: int
    requested: list[RequestedOutput]
    output_names: list[str]
    shape_key: tuple[Any, ...]
    # every output's entry, when the plan is kept for its layout and each entry is fixed
    # (no classification, no variable dims, no BYTES or BF16)
    fixed_outputs: tuple[FixedOutput, ...] | None
    # what frontends made of the fixed outputs (an encoded response header), by frontend
    encodings: dict[str, Any] = field(default_factory=dict)


_PLANS_MAX = 256  # per version; layouts come from callers


def _fixed_outputs(
    mv: ModelVersion, request: InferRequest, requested: list[RequestedOutput], rows: int
) -> tuple[FixedOutput, ...] | None:
    spec = mv.spec
    fixed: list[FixedOutput] = []
    for out in requested:
        tensor = spec.outputs[out.name]
        if out.classification or -1 in tensor.dims or tensor.datatype in ("BYTES", "BF16"):
            return None
        shape = (rows, *tensor.dims) if spec.batched else tensor.dims
        binary = request.binary_output_default if out.binary is None else out.binary
        exact = tensor.reshape is None or math.prod(tensor.dims) == 0
        fixed.append((out.name, tensor.datatype, tensor.dtype, shape, binary, exact))
    return tuple(fixed)


def _plan(mv: ModelVersion, request: InferRequest) -> tuple[dict[str, np.ndarray], Plan]:
    """Validate a request; remember the outcome when its layout can vouch for the next ones."""
    inputs, rows = _check_inputs(mv, request)
    requested = _requested(mv, request)
    # only where validation passed the request's own arrays through unchanged
    given = request.inputs
    kept = request.layout is not None and all(given.get(n) is a for n, a in inputs.items())
    plan = Plan(
        rows,
        requested,
        [o.name for o in requested],
        shape_key_of(inputs),
        _fixed_outputs(mv, request, requested, rows) if kept else None,
    )
    if kept:
        if len(mv.plans) >= _PLANS_MAX:
            mv.plans.clear()
        mv.plans[request.layout] = plan
    return inputs, plan


class DataPlane:
    def __init__(
        self, manager: ModelManager, clock: Clock = SYSTEM_CLOCK, server_id: str = "modelyard"
    ) -> None:
        self.manager = manager
        self.clock = clock
        self.started = clock.monotonic()
        self.server_id = server_id  # the name server metadata gives (tritonserver's --id)

    # ---- health and metadata -------------------------------------------

    def server_live(self) -> bool:
        return True

    def server_ready(self) -> bool:
        return self.manager.is_ready()

    def server_metadata(self) -> dict[str, Any]:
        return {"name": self.server_id, "version": __version__, "extensions": EXTENSIONS}

    def model_ready(self, name: str, version: str | None) -> bool:
        try:
            self.manager.resolve(name, version)
        except ModelServerError:
            return False
        return True

    def model_metadata(self, name: str, version: str | None) -> dict[str, Any]:
        mv = self.manager.resolve(name, version)
        spec = mv.spec
        lead = [-1] if spec.batched else []
        versions = [str(v.version) for v in self.manager.all_versions(name)]
        return {
            "name": name,
            "versions": sorted(versions, key=int),
            "platform": mv.config.platform or mv.backend,
            "inputs": [
                {"name": t.name, "datatype": t.datatype, "shape": lead + list(t.dims)}
                for t in spec.inputs.values()
            ],
            "outputs": [
                {"name": t.name, "datatype": t.datatype, "shape": lead + list(t.dims)}
                for t in spec.outputs.values()
            ],
        }

    def model_config(self, name: str, version: str | None) -> dict[str, Any]:
        return config_to_json(self.manager.resolve(name, version).config)

    # ---- inference ------------------------------------------------------

    async def infer(self, request: InferRequest) -> InferResponse:
        mv, plan, results = await self.infer_results(request)
        return self.response(mv, request, plan, results)

    async def infer_results(
        self, request: InferRequest
    ) -> tuple[ModelVersion, Plan, dict[str, np.ndarray]]:
        """Run a request: the version that ran it, its plan, and the raw output arrays."""
        mv = self.manager.resolve(request.model_name, request.model_version)
        plan = mv.plans.get(request.layout) if request.layout is not None else None
        if plan is None:
            inputs, plan = _plan(mv, request)
        else:
            inputs = request.inputs
        results = await mv.scheduler.submit(
            inputs,
            plan.output_names,
            plan.rows,
            request.deadline,
            request.priority,
            request.timeout_us,
            plan.shape_key,
        )
        return mv, plan, results

    def submit_layout(
        self,
        name: str,
        version: str | None,
        layout: object,
        inputs: dict[str, np.ndarray],
        priority: int = 0,
        timeout_us: int = 0,
    ) -> tuple[ModelVersion, Plan, asyncio.Future[dict[str, np.ndarray]]] | None:
        """Queue the inputs of a layout whose plan the version kept; None: no plan kept.

        A frontend that knows a request's layout calls this first, with no ``InferRequest``
        made: the layout already passed validation. None: the plan is not there (the
        layout's first request, or a new version), and the request takes ``infer_results``.
        Not a coroutine: the caller awaits the future itself, one level fewer per request.
        """
        mv = self.manager.resolve(name, version)
        plan = mv.plans.get(layout)
        if plan is None:
            return None
        future = mv.scheduler.submit(
            inputs, plan.output_names, plan.rows, None, priority, timeout_us, plan.shape_key
        )
        return mv, plan, future

    @property
    def in_flight(self) -> int:
        """Requests queued or executing, in the versions served and those retiring.

        An ensemble's request counts in the ensemble and in the step it is at.
        """
        return sum(mv.scheduler.pending for mv in self.manager.all_versions(retiring=True))

    @staticmethod
    def response(
        mv: ModelVersion, request: InferRequest, plan: Plan, results: dict[str, np.ndarray]
    ) -> InferResponse:
        """The response to a request that ``infer_results`` ran."""
        spec = mv.spec
        rows = plan.rows
        outputs: list[OutputTensor] = []
        for out in plan.requested:
            tensor = spec.outputs[out.name]
            array = results[out.name]
            if tensor.reshape is not None and math.prod(tensor.dims) > 0:
                lead = (rows,) if spec.batched else ()
                array = array.reshape(lead + tensor.dims)
            binary = request.binary_output_default if out.binary is None else out.binary
            if out.classification:
                labels = mv.labels.get(out.name)
                array = classify(array, out.classification, labels, spec.batched)
                outputs.append(OutputTensor(out.name, "BYTES", array, binary))
                continue
            datatype = tensor.datatype
            if datatype != "BYTES" and datatype != "BF16" and array.dtype != tensor.dtype:
                array = array.astype(tensor.dtype, copy=False)
            outputs.append(OutputTensor(out.name, datatype, array, binary))
        return InferResponse(
            model_name=mv.name,
            model_version=str(mv.version),
            outputs=outputs,
            id=request.id,
        )

    # ---- statistics -----------------------------------------------------

    def statistics(self, name: str | None, version: str | None) -> dict[str, Any]:
        if name is not None:
            versions = self.manager.all_versions(name)
            if not versions:
                self.manager.resolve(name, version)  # raises the right 404 / 503
            if version:
                versions = [mv for mv in versions if str(mv.version) == version]
                if not versions:
                    self.manager.resolve(name, version)
        else:
            versions = self.manager.all_versions()
        return {"model_stats": [self._version_stats(mv) for mv in versions]}

    @staticmethod
    def _version_stats(mv: ModelVersion) -> dict[str, Any]:
        s = mv.scheduler.stats

        def dur(count: int, ns: int) -> dict[str, int]:
            return {"count": count, "ns": ns}

        return {
            "name": mv.name,
            "version": str(mv.version),
            "last_inference": s.last_inference_ms,
            "inference_count": s.inference_count,
            "execution_count": s.execution_count,
            "memory_bytes": mv.memory_bytes,
            "device_memory_bytes": mv.device_memory_bytes,
            "devices": list(mv.devices),
            "inference_stats": {
                "success": dur(s.success_count, s.success_ns),
                "fail": dur(s.fail_count, s.fail_ns),
                "queue": dur(s.success_count, s.queue_ns),
                "compute_input": dur(s.success_count, s.compute_input_ns),
                "compute_infer": dur(s.success_count, s.compute_infer_ns),
                "compute_output": dur(s.success_count, s.compute_output_ns),
                "cache_hit": dur(0, 0),
                "cache_miss": dur(0, 0),
            },
            "batch_stats": [
                {
                    "batch_size": size,
                    "compute_input": dur(v[0], v[1]),
                    "compute_infer": dur(v[0], v[2]),
                    "compute_output": dur(v[0], v[3]),
                }
                for size, v in sorted(s.batch_stats.items())
            ],
        }
