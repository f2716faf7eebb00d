"""TorchScript engine (``model.pt``), Triton's ``pytorch_libtorch`` platform.

Conventions, as in Triton's PyTorch backend:

* inputs are passed to ``forward`` positionally: the config's ``input``, its
  ``batch_input`` tensors (a ragged batch's: server/ragged.py computes them, and an
  ``allow_ragged_batch`` input comes flat), and a sequence model's control inputs and
  implicit states (``sequence_batching``'s ``control_input`` and ``state``
  ``input_name``), each at the index its name ends
  with where every name does (``INPUT__0``, ``SEQ_START__1`` ...), else at its
  argument of ``forward`` where ``forward`` names them all, else in that order;
* ``forward`` returns a tensor or a tuple/list of tensors, mapped to the config's
  ``output`` and the states' ``output_name`` by the index each name ends with
  (``OUTPUT__0`` ...) where every name does, else in that order; or a dict mapped by
  name;
* a BYTES tensor is a ``List[str]`` (its elements in order, UTF-8: a Python ``str``
  holds no other bytes), as Triton's libtorch backend passes strings; BF16 travels as
  float32 in the server and is cast at the model's edge.

The file holds no tensor signature, so the config must declare inputs and
outputs. Thread count: the parameter ``torch_num_threads`` calls
``torch.set_num_threads``, which is process-wide: it changes every torch model
in the server, and the last model loaded wins. Without the parameter, torch's
current setting is left alone. The parameter ``torchscript_freeze: "true"``
freezes the module and optimises it for inference at load.

Triton's libtorch backend's switches, read from the config's parameters (``"true"`` or
``"false"``; its words in the log, once a version, where the config has parameters):
``INFERENCE_MODE`` (default true: ``torch.inference_mode``; false: ``torch.no_grad``),
``DISABLE_OPTIMIZED_EXECUTION`` (``torch.jit.optimized_execution(False)``),
``DISABLE_CUDNN`` (``torch.backends.cudnn.flags(enabled=False)``),
``ENABLE_CACHE_CLEANING`` (``torch.cuda.empty_cache()`` after each execution on a GPU) and
``ENABLE_WEIGHT_SHARING`` (a version's instances on one device share one loaded module).
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
import torch
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines.base import Engine, LoadContext, Signature, triton_instance_name
from modelyard.errors import EngineError
from modelyard.types import CONFIG_TO_V2

log = structlog.get_logger("modelyard.engines")

_V2_TO_TORCH: dict[str, torch.dtype] = {
    "BOOL": torch.bool,
    "UINT8": torch.uint8,
    "INT8": torch.int8,
    "INT16": torch.int16,
    "INT32": torch.int32,
    "INT64": torch.int64,
    "FP16": torch.float16,
    "FP32": torch.float32,
    "FP64": torch.float64,
    "BF16": torch.bfloat16,
}


# Triton's libtorch naming convention: a tensor's position is the index its name ends with
_INDEXED = re.compile(r"__(\d+)$")


def positions(names: list[str], arguments: list[str] | None = None) -> list[str]:
    """``names`` in the order ``forward`` takes (or returns) them: by the index each ends
    with where every name has a distinct one, by ``arguments`` (forward's argument names)
    where they name every one, else as given."""
    matches = [_INDEXED.search(name) for name in names]
    indexes = {int(m.group(1)): name for m, name in zip(matches, names, strict=True) if m}
    if len(indexes) == len(names):
        return [indexes[index] for index in sorted(indexes)]
    if arguments is not None and set(names) <= set(arguments):
        return sorted(names, key=arguments.index)
    return list(names)


@dataclass(frozen=True)
class Switches:
    """Triton's libtorch backend's model parameters, as it defaults them."""

    inference_mode: bool = True
    optimized_execution: bool = True
    cudnn: bool = True
    cache_cleaning: bool = False
    weight_sharing: bool = False

    @classmethod
    def of(cls, ctx: LoadContext) -> Switches:
        def flag(key: str, default: bool) -> bool:
            return ctx.flag(key, default, error_rules.PYTORCH)

        return cls(
            inference_mode=flag("INFERENCE_MODE", True),
            optimized_execution=not flag("DISABLE_OPTIMIZED_EXECUTION", False),
            cudnn=not flag("DISABLE_CUDNN", False),
            cache_cleaning=flag("ENABLE_CACHE_CLEANING", False),
            weight_sharing=flag("ENABLE_WEIGHT_SHARING", False),
        )

    def log_lines(self, ctx: LoadContext) -> None:
        """The libtorch backend's lines of its model's switches (where the config has
        parameters, as it writes them), once a version: with its first instance."""
        if not ctx.config.parameters or ctx.instance_index != 0:
            return
        said = {
            "Optimized execution": self.optimized_execution,
            "Cache Cleaning": self.cache_cleaning,
            "Inference Mode": self.inference_mode,
            "cuDNN": self.cudnn,
        }
        if ctx.parameter("ENABLE_WEIGHT_SHARING", ""):
            said["Weight sharing"] = self.weight_sharing
        name = ctx.config.name
        for what, enabled in said.items():
            state = "enabled" if enabled else "disabled"
            log.info("libtorch_parameter", model=name,
                     triton=f"{what} is {state} for model instance '{name}'")  # fmt: skip


# ENABLE_WEIGHT_SHARING: the module each (file as it is, device, switches) loaded, while an
# instance holds it
_SHARED: weakref.WeakValueDictionary[tuple[Any, ...], torch.jit.ScriptModule] = (
    weakref.WeakValueDictionary()
)
_SHARING = threading.Lock()


def _check_arity(config: mc.ModelConfig, module: Any, expected: int) -> None:
    """Triton's libtorch backend's checks of a loaded module against the config, in its
    words: as many tensors as ``forward`` takes (unless it takes one dictionary), and at
    least one input and one output (a TorchScript file does not describe its tensors)."""
    where = f"input and output in config.pbtxt of model '{config.name}'"
    try:
        arguments = list(module.forward.schema.arguments[1:])
    except (AttributeError, RuntimeError):  # no scripted forward to read
        arguments = None
    takes_dict = arguments is not None and len(arguments) == 1 and (
        arguments[0].type.kind() == "DictType"
    )  # fmt: skip
    if arguments is not None and not takes_dict and len(arguments) != expected:
        raise EngineError.of(
            error_rules.PYTORCH,
            f"unable to load model '{config.name}', configuration expects {expected} inputs, "
            f"model provides {len(arguments)}",
            where=where,
            triton=True,
        )
    for kind in ("input", "output"):
        if not getattr(config, kind):
            raise EngineError.of(
                error_rules.PYTORCH,
                f"model configuration must contain at least one {kind}, none were specified.",
                where=where,
                triton=True,
            )


class TorchScriptEngine(Engine):
    name = "pytorch"
    extra = "torch"
    default_filenames = ("model.pt",)
    describes_signature = False
    serves_ragged_batches = True

    def __init__(self) -> None:
        self._module: torch.jit.ScriptModule | None = None
        self._device = torch.device("cpu")
        # (name, V2 datatype: "" for a sequence's control or state, taken as it comes),
        # in forward's order
        self._inputs: list[tuple[str, str]] = []
        self._outputs: list[tuple[str, str]] = []  # (name, V2 datatype), forward's order
        self._threads: int | None = None
        self._switches = Switches()

    def load(self, ctx: LoadContext) -> Signature | None:
        config = ctx.config
        self._inputs = [(i.name, self._datatype(i.name, i.data_type, "input", config))
                        for i in config.input]  # fmt: skip
        self._outputs = [(o.name, self._datatype(o.name, o.data_type, "output", config))
                         for o in config.output]  # fmt: skip
        _check_control_types(config)
        threads = ctx.parameter("torch_num_threads")
        if threads:
            self._threads = int(threads)
            torch.set_num_threads(self._threads)
        self._switches = switches = Switches.of(ctx)
        switches.log_lines(ctx)
        self._device = torch.device(ctx.device)
        freeze = (ctx.parameter("torchscript_freeze", "") or "").lower() in ("true", "1", "yes")
        if not switches.weight_sharing:
            self._module = self._loaded(ctx, freeze)
            return None
        stat = ctx.artifact.stat()
        key = (str(ctx.artifact.resolve()), stat.st_mtime_ns, stat.st_size, str(self._device),
               freeze, switches)  # fmt: skip
        with _SHARING:  # a version's instances load at once: one loads, the others reuse
            module = _SHARED.get(key)
            if module is None:
                module = _SHARED[key] = self._loaded(ctx, freeze)
            else:
                self._order(ctx.config, module)
                instance = triton_instance_name(ctx.config, ctx.instance_index)
                log.info("libtorch_weights_shared", model=ctx.config.name,
                         triton=f"Reusing TorchScript model for instance '{instance}'")  # fmt: skip
        self._module = module
        return None

    def _loaded(self, ctx: LoadContext, freeze: bool) -> torch.jit.ScriptModule:
        try:
            with self._mode():  # as Triton's: the load under the mode the model runs in
                module = torch.jit.load(str(ctx.artifact), map_location=self._device)
        except Exception as exc:  # torch raises RuntimeError and friends for bad files
            raise EngineError.of(
                error_rules.PYTORCH,
                f"torch could not load {ctx.artifact.name} as TorchScript: {exc}",
                where=f"the file {ctx.artifact.name} of model '{ctx.config.name}'",
            ) from exc
        module.eval()
        self._order(ctx.config, module)
        if freeze:  # folds parameters into the graph and fuses ops for inference
            module = torch.jit.optimize_for_inference(torch.jit.freeze(module))
        return module

    @contextlib.contextmanager
    def _mode(self) -> Iterator[None]:
        """What the switches ask of an execution (or a load)."""
        switches = self._switches
        with contextlib.ExitStack() as stack:
            grad = torch.inference_mode() if switches.inference_mode else torch.no_grad()
            stack.enter_context(grad)
            if not switches.optimized_execution:
                stack.enter_context(torch.jit.optimized_execution(False))
            if not switches.cudnn:
                stack.enter_context(torch.backends.cudnn.flags(enabled=False))
            yield

    def _order(self, config: mc.ModelConfig, module: torch.jit.ScriptModule) -> None:
        """The batch inputs, a sequence model's control inputs and states join the
        config's tensors, and all take forward's order (the module docstring)."""
        sequence = config.sequence_batching
        extra_in = [name for entry in config.batch_input for name in entry.target_name]
        extra_in += [c.name for c in sequence.control_input]
        extra_in += [state.input_name for state in sequence.state]
        _check_arity(config, module, len(self._inputs) + len(extra_in))
        extra_out = {
            state.output_name: self._datatype(state.output_name, state.data_type, "output", config)
            for state in sequence.state
        }
        types = dict(self._inputs) | dict.fromkeys(extra_in, "")
        try:
            schema = module.forward.schema  # type: ignore[attr-defined]  # a ScriptMethod's
            arguments = [a.name for a in schema.arguments[1:]]
        except (AttributeError, RuntimeError):  # no scripted forward to read
            arguments = None
        self._inputs = [(n, types[n]) for n in positions(list(types), arguments)]
        out_types = dict(self._outputs) | extra_out
        self._outputs = [(n, out_types[n]) for n in positions(list(out_types))]

    @staticmethod
    def _datatype(name: str, data_type: int, direction: str, config: mc.ModelConfig) -> str:
        """A tensor's V2 datatype; one PyTorch has no tensor of is refused in the words of
        Triton's libtorch backend."""
        datatype = CONFIG_TO_V2.get(mc.DataType.Name(data_type), "")
        if datatype not in _V2_TO_TORCH and datatype != "BYTES":
            raise EngineError.of(
                error_rules.PYTORCH,
                f"unsupported datatype {mc.DataType.Name(data_type)} for {direction} '{name}' "
                f"for model '{config.name}' (PyTorch has no tensor of it)",
                where=f"config.pbtxt of model '{config.name}'",
            )
        return datatype

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert self._module is not None
        args: list[Any] = []
        for name, datatype in self._inputs:
            if datatype == "BYTES" or (not datatype and inputs[name].dtype.hasobject):
                args.append([_text(name, value) for value in inputs[name].ravel()])
                continue
            # torch.from_numpy warns on read-only buffers (decoded from the wire)
            array = np.require(inputs[name], requirements=["C", "W"])
            tensor = torch.from_numpy(array)
            args.append(tensor.to(self._device, _V2_TO_TORCH.get(datatype, tensor.dtype)))
        with self._mode():
            result = self._module(*args)
        by_name = self._by_name(result)
        if self._switches.cache_cleaning and self._device.type == "cuda":
            torch.cuda.empty_cache()
        return {name: by_name[name] for name in outputs}

    def _by_name(self, result: Any) -> dict[str, np.ndarray]:
        if isinstance(result, torch.Tensor) or (
            len(self._outputs) == 1 and self._outputs[0][1] == "BYTES" and _strings(result)
        ):
            result = (result,)
        if isinstance(result, dict):
            missing = [name for name, _ in self._outputs if name not in result]
            if missing:
                raise self._output_error(f"the model returned a dict without {', '.join(missing)}")
            tensors = [result[name] for name, _ in self._outputs]
        elif isinstance(result, (tuple, list)):
            if len(result) != len(self._outputs):
                raise self._output_error(
                    f"the model returned {len(result)} tensors and the config lists "
                    f"{len(self._outputs)} outputs"
                )
            tensors = list(result)
        else:
            raise self._output_error(f"the model returned a {type(result).__name__}")
        arrays = {}
        for (name, datatype), tensor in zip(self._outputs, tensors, strict=True):
            if datatype == "BYTES":
                if not _strings(tensor):
                    raise self._output_error(
                        f"output '{name}' is a {type(tensor).__name__}, not a List[str]"
                    )
                arrays[name] = np.array([t.encode("utf-8") for t in tensor], dtype=object)
                continue
            if not isinstance(tensor, torch.Tensor):
                raise self._output_error(f"output '{name}' is a {type(tensor).__name__}")
            tensor = tensor.detach().cpu()
            if datatype == "BF16":
                tensor = tensor.float()
            elif datatype and tensor.dtype != _V2_TO_TORCH[datatype]:
                raise self._output_error(
                    f"output '{name}' is {tensor.dtype} and the config says {datatype}"
                )
            arrays[name] = tensor.numpy()
        return arrays

    def refuses_input(self, error: Exception) -> bool:
        return isinstance(error, _NotText)

    @staticmethod
    def _output_error(detail: str) -> EngineError:
        return EngineError.of(error_rules.PYTORCH_OUTPUT, detail)

    def unload(self) -> None:
        self._module = None

    def describe(self) -> dict[str, Any]:
        return {"torch_num_threads": self._threads or torch.get_num_threads()}


class _NotText(EngineError):
    """A BYTES input element that is not UTF-8: no ``str`` holds it."""


def _text(name: str, value: Any) -> str:
    if not isinstance(value, bytes):
        return str(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _NotText.of(
            error_rules.PYTORCH,
            f"input '{name}' holds bytes that are not UTF-8, which a TorchScript List[str] "
            "cannot take",
            where="the request's BYTES input",
        ) from None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_control_types(config: mc.ModelConfig) -> None:
    """A sequence control whose config names its datatype (a CORRID control) must name one
    PyTorch has a tensor of (Triton's libtorch backend's words)."""
    for entry in config.sequence_batching.control_input:
        for control in entry.control:
            if control.data_type == mc.TYPE_INVALID:
                continue
            datatype = CONFIG_TO_V2.get(mc.DataType.Name(control.data_type), "")
            if datatype not in _V2_TO_TORCH:
                raise EngineError.of(
                    error_rules.PYTORCH,
                    f"input '{entry.name}' type '{mc.DataType.Name(control.data_type)}' is "
                    "not supported by PyTorch.",
                    where=f"sequence_batching.control_input in {config.name}/config.pbtxt",
                )
