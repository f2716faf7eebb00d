"""TensorRT engine (``model.plan``), Triton's ``tensorrt_plan`` platform.

Written against the TensorRT 10 Python API: named IO tensors
(``num_io_tensors``, ``set_input_shape``, ``set_tensor_address``) and
``execute_async_v3``. Device memory is held in torch CUDA tensors and work runs
on one torch CUDA stream per engine object (one per model instance).

The plan describes its tensors: the signature comes from its IO tensors, and
the model counts as batching when every IO tensor has a dynamic first
dimension. Plans are built for one GPU model and one TensorRT version; a plan
from another fails to deserialize. Shape-tensor inputs and outputs whose shape
depends on the data are refused. BF16 travels as float32 in the server and is
cast on the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorrt as trt
import torch

from modelyard import error_rules
from modelyard.engines.base import Engine, LoadContext, Signature, TensorSpec
from modelyard.errors import EngineError

# TensorRT type -> (V2 datatype, torch dtype on the device)
_TYPES: dict[Any, tuple[str, torch.dtype]] = {
    trt.DataType.FLOAT: ("FP32", torch.float32),
    trt.DataType.HALF: ("FP16", torch.float16),
    trt.DataType.BF16: ("BF16", torch.bfloat16),
    trt.DataType.INT8: ("INT8", torch.int8),
    trt.DataType.INT32: ("INT32", torch.int32),
    trt.DataType.INT64: ("INT64", torch.int64),
    trt.DataType.UINT8: ("UINT8", torch.uint8),
    trt.DataType.BOOL: ("BOOL", torch.bool),
}


class TensorRTEngine(Engine):
    name = "tensorrt"
    extra = "tensorrt"
    default_filenames = ("model.plan",)
    describes_signature = True

    def __init__(self) -> None:
        self._runtime: Any = None
        self._engine: Any = None
        self._context: Any = None
        self._stream: torch.cuda.Stream | None = None
        self._device = torch.device("cuda", 0)
        self._inputs: dict[str, torch.dtype] = {}
        self._outputs: dict[str, torch.dtype] = {}

    def load(self, ctx: LoadContext) -> Signature:
        where = f"the file {ctx.artifact.name} of model '{ctx.config.name}'"
        if not torch.cuda.is_available():
            raise EngineError.of(
                error_rules.TENSORRT_NEEDS_GPU,
                "TensorRT plans need a CUDA device and torch sees none",
            )
        self._device = torch.device(ctx.device if ctx.device.startswith("cuda") else "cuda:0")
        with torch.cuda.device(self._device):
            self._runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
            engine = self._runtime.deserialize_cuda_engine(ctx.artifact.read_bytes())
            if engine is None:
                raise EngineError.of(
                    error_rules.TENSORRT_PLAN,
                    f"TensorRT {trt.__version__} could not deserialize {ctx.artifact.name}; "
                    "plans only load with the TensorRT version and GPU model that built them",
                    where=where,
                )
            self._context = engine.create_execution_context()
            self._stream = torch.cuda.Stream(device=self._device)
        self._engine = engine
        inputs: list[TensorSpec] = []
        outputs: list[TensorSpec] = []
        for i in range(engine.num_io_tensors):
            name = engine.get_tensor_name(i)
            trt_type = engine.get_tensor_dtype(name)
            if trt_type not in _TYPES or engine.is_shape_inference_io(name):
                raise EngineError.of(
                    error_rules.TENSORRT_PLAN,
                    f"IO tensor '{name}' ({trt_type}) is not supported: only execution "
                    f"tensors of types {', '.join(v for v, _ in _TYPES.values())}",
                    where=where,
                )
            datatype, dtype = _TYPES[trt_type]
            spec = TensorSpec(name, datatype, tuple(engine.get_tensor_shape(name)))
            if engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT:
                inputs.append(spec)
                self._inputs[name] = dtype
            else:
                outputs.append(spec)
                self._outputs[name] = dtype
        batched = all(s.dims and s.dims[0] == -1 for s in inputs + outputs)
        return Signature(inputs=inputs, outputs=outputs, batched=batched)

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert self._context is not None and self._stream is not None
        context = self._context
        # every IO tensor needs an address, and all must live until the stream is done
        held: dict[str, torch.Tensor] = {}
        with torch.cuda.device(self._device), torch.cuda.stream(self._stream):
            for name, dtype in self._inputs.items():
                host = torch.from_numpy(np.require(inputs[name], requirements=["C", "W"]))
                held[name] = host.to(self._device, dtype).contiguous()
                if not context.set_input_shape(name, tuple(held[name].shape)):
                    raise EngineError.of(
                        error_rules.TENSORRT_INPUT_SHAPE,
                        f"input '{name}' has shape {tuple(held[name].shape)}, outside the "
                        "plan's optimization profile",
                    )
                context.set_tensor_address(name, held[name].data_ptr())
            for name, dtype in self._outputs.items():
                shape = tuple(context.get_tensor_shape(name))
                if any(d < 0 for d in shape):
                    raise EngineError.of(
                        error_rules.TENSORRT_OUTPUT_SHAPE,
                        f"output '{name}' has shape {shape} after the input shapes were set",
                    )
                held[name] = torch.empty(shape, dtype=dtype, device=self._device)
                context.set_tensor_address(name, held[name].data_ptr())
            if not context.execute_async_v3(self._stream.cuda_stream):
                raise EngineError.of(
                    error_rules.TENSORRT_EXECUTE,
                    "TensorRT execute_async_v3 failed (see the TensorRT log)",
                )
            result = {}
            for name in outputs:
                tensor = held[name]
                if tensor.dtype == torch.bfloat16:
                    tensor = tensor.float()
                result[name] = tensor.cpu()
        self._stream.synchronize()
        return {name: tensor.numpy() for name, tensor in result.items()}

    def unload(self) -> None:
        self._context = None
        self._engine = None
        self._runtime = None
        self._stream = None

    def describe(self) -> dict[str, Any]:
        return {"tensorrt": trt.__version__, "device": str(self._device)}
