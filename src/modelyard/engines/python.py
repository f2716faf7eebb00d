"""Python engine (``model.py``): a user class that maps arrays to arrays.

``model.py`` defines a class named ``Model`` (or ``TritonPythonModel``, for
files written for Triton). The engine imports the file under a module name of
its own, so two models or two instances never share module state, and calls:

* ``initialize(args)``, if defined, once, with Triton's keys: ``model_config``
  (the config as a JSON string), ``model_name``, ``model_version``,
  ``model_repository``, ``model_instance_kind`` ("CPU"),
  ``model_instance_device_id`` ("0") and ``instance_index``;
* ``execute(inputs) -> outputs``, with a dict of numpy arrays already stacked
  along the batch axis, and returning a dict of numpy arrays: the server owns
  batching;
* ``finalize()``, if defined, on unload.

A ``model.py`` written for Triton's python backend (it imports
``triton_python_backend_utils``, which ``engines/pb_utils.py`` answers for) keeps
Triton's API: ``execute(requests)`` gets a list of ``pb_utils`` requests and
returns one ``InferenceResponse`` each. The server batches before the model sees
the requests, and each request of a batch comes as its own (its rows, its
``parameters()``, a sequence's ``correlation_id()`` and ``flags()``); a
response's ``TritonError`` fails the batch with its message, INVALID_ARG as the
caller's error (400: the scheduler then runs the batch's requests again one by one,
so only the one at fault fails), any other code as the model's (500); an exception
raised by ``execute`` (a ``TritonModelException`` too) is the model's, in Triton's
words (``Failed to process the request(s) for model '<instance>', message: ...``).
A decoupled model (``execute_decoupled``) answers through each request's response
sender. Each instance of such a model (or of any
``TritonPythonModel`` class: a file written for Triton) runs in a process of its own
(``python_stub.py``), as Triton's stub does: a crash fails the batch it was executing,
and the next batch starts the process again. A ``Model`` class runs in the server's
process, on its instance thread.

When the model batches (``max_batch_size > 0``), every output must have as many
rows as the inputs. An output asked for that the model does not return is left out of
the response, as Triton's python backend leaves it out (asked for by name or not).
Exceptions raised by user code become EngineError with their message; a
UnicodeDecodeError from ``execute`` (BYTES that are not the text the model decodes)
answers the request 400, the caller's error, and any other exception 500: the model's
own fault, which breakers count. A model that finds its inputs bad raises
``modelyard.errors.EngineError`` with ``code=Code.INVALID_ARGUMENT`` (any
``ModelyardError`` passes through as raised). BYTES tensors are numpy object arrays of
``bytes``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib.util
import inspect
import itertools
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import structlog
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines import pb_utils
from modelyard.engines.base import (
    BatchedRequest,
    BatchOutcomes,
    DecoupledRequest,
    Engine,
    LoadContext,
    ResponseTiming,
    Signature,
    batch_requests,
    current_batch_requests,
    triton_instance_name,
)
from modelyard.engines.python_stub import StubProcess, runs_in_a_stub
from modelyard.errors import (
    Code,
    EngineError,
    ModelyardError,
    RequestRescheduled,
    without_paths,
)
from modelyard.modelfiles.config import config_to_json
from modelyard.modelfiles.served_config import served_config

_module_ids = itertools.count()
log = structlog.get_logger("modelyard.engines")
_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def model_loop() -> asyncio.AbstractEventLoop:
    """The event loop a python model's ``async def execute`` runs on, in a thread of its
    own, made when first needed (a stub's process holds one model: one loop for it)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="python-model-loop", daemon=True).start()
            _loop = loop
        return _loop

# the codes of pb_utils.TritonError, as Triton's front doors answer them
_TRITON_CODES = {
    pb_utils.TritonError.UNKNOWN: Code.UNKNOWN,
    pb_utils.TritonError.INTERNAL: Code.INTERNAL,
    pb_utils.TritonError.NOT_FOUND: Code.NOT_FOUND,
    pb_utils.TritonError.INVALID_ARG: Code.INVALID_ARGUMENT,
    pb_utils.TritonError.UNAVAILABLE: Code.UNAVAILABLE,
    pb_utils.TritonError.UNSUPPORTED: Code.UNIMPLEMENTED,
    pb_utils.TritonError.ALREADY_EXISTS: Code.ALREADY_EXISTS,
    pb_utils.TritonError.CANCELLED: Code.CANCELLED,
}




# how long a model that is not decoupled, and took a request's response sender, may send
# its FINAL after execute returned (its instance waits for it)
SENT_LATER_S = 60.0


class _OneAnswer:
    """A request's response from a model that is not decoupled: the one it sent through the
    request's sender, or returned from ``execute``; ``final`` once its FINAL came."""

    def __init__(self) -> None:
        self.response: pb_utils.InferenceResponse | None = None
        self.rescheduled = False  # the model gave the request back to run again
        self.final = threading.Event()
        self._lock = threading.Lock()

    def deliver(self, response: pb_utils.InferenceResponse | None, final: bool) -> None:
        with self._lock:
            if response is not None and self.response is None:
                self.response = response
        if final:
            self.final.set()

    def take(self, response: pb_utils.InferenceResponse) -> bool:
        """A response ``execute`` returned; False where one was sent already."""
        with self._lock:
            if self.response is not None:
                return False
            self.response = response
        self.final.set()
        return True


def _has_rows(tensors: dict[str, Any], rows: int) -> bool:
    """Whether every tensor of a response has ``rows`` rows (it stacks with the others)."""
    return all(np.ndim(array) > 0 and len(array) == rows for array in tensors.values())


def _stackable(parts: list[dict[str, Any]], outputs: list[str]) -> bool:
    """Whether the responses' tensors of each output join by rows: the same shape past the
    first dimension (a ragged batch's answers may each have a shape of their own)."""
    for name in outputs:
        shapes = {np.shape(part[name])[1:] for part in parts if name in part}
        if len(shapes) > 1:
            return False
    return True


def _request_parts(
    inputs: dict[str, np.ndarray], batched: list[BatchedRequest]
) -> list[dict[str, np.ndarray]]:
    """Each request's tensors of a batch: its rows of each input, and of a ragged input its
    elements of the flat run, in its own shape."""
    parts: list[dict[str, np.ndarray]] = []
    row = 0
    offsets: dict[str, int] = {}
    for each in batched:
        shapes = each.ragged_shapes or {}
        part = {}
        for name, array in inputs.items():
            shape = shapes.get(name)
            if shape is None:
                part[name] = array[row : row + each.rows]
                continue
            first = offsets.get(name, 0)
            offsets[name] = last = first + math.prod(shape)
            part[name] = array.reshape(-1)[first:last].reshape(shape)
        parts.append(part)
        row += each.rows
    return parts


class PythonEngine(Engine):
    name = "python"
    extra = "all"
    default_filenames = ("model.py",)
    describes_signature = False
    # a Triton-API model sees each request of a ragged batch in its own shape
    serves_ragged_inputs = True

    def __init__(self, in_process: bool = False, alone: bool = False) -> None:
        # False: a Triton python-backend model runs in a process of its own (python_stub.py)
        self._in_process = in_process
        # the only model of its process (a stub's): imported as Triton's stub imports it
        self._alone = alone
        self._stub: StubProcess | None = None
        self._model: Any = None
        self._module_name = ""
        self._where = "model.py"
        self._batched = False
        self._triton_api = False  # execute(requests) with pb_utils, as Triton's backend
        self._infer: Any = None  # the server's infer, for BLS calls
        self._model_name = ""
        self._instance_name = ""
        self._bf16_inputs: set[str] = set()

    @property
    def takes_requests(self) -> bool:
        """Whether the model has Triton's API: execute(requests), response senders."""
        return self._triton_api

    def load(self, ctx: LoadContext) -> Signature | None:
        self._where = f"model.py of model '{ctx.config.name}'"
        self._model_name = ctx.config.name
        self._instance_name = triton_instance_name(ctx.config, ctx.instance_index)
        self._bf16_inputs = {i.name for i in ctx.config.input if i.data_type == mc.TYPE_BF16}
        self._batched = ctx.config.max_batch_size > 0
        if not self._in_process and runs_in_a_stub(ctx.artifact):
            stub = StubProcess(ctx, self._where)  # ctx.config: as the model completes it
            stub.start()
            self._stub, self._triton_api, self.runs_on_loop = stub, stub.takes_requests, False
            return None
        self._module_name = f"modelyard_user_model_{next(_module_ids)}"
        module = self._import(ctx)
        if self._alone:  # the only model of its process: pb_utils.get_model_dir() is its own
            pb_utils.serving_model_dir(str(ctx.version_dir))
        try:
            self._model = self._start_model(module, ctx)
        except Exception:
            self._forget_module()  # a model that failed to load leaves no module behind
            raise
        return None

    def _start_model(self, module: ModuleType, ctx: LoadContext) -> Any:
        """The model class of ``module``, instantiated and initialized as Triton does."""
        cls = getattr(module, "Model", None) or getattr(module, "TritonPythonModel", None)
        if not isinstance(cls, type):
            raise EngineError.of(
                error_rules.PYTHON_MODEL,
                f"{ctx.artifact.name} defines no class named Model or TritonPythonModel",
                where=self._where,
            )
        # Triton's API: the file uses pb_utils, or its TritonPythonModel is decoupled (its
        # requests are answered through senders: a file that needs no pb_utils for that)
        decoupled = ctx.config.model_transaction_policy.decoupled
        self._triton_api = any(value is pb_utils for value in vars(module).values()) or (
            decoupled and cls.__name__ == "TritonPythonModel"
        )
        if self._triton_api:  # its BLS calls wait on the event loop: it never runs there
            self.runs_on_loop = False
            self._infer = ctx.infer
        # Triton's hook, whatever else the file imports (a model.py may complete its config
        # without pb_utils)
        completes = ctx.auto_complete and ctx.instance_index == 0
        if completes and hasattr(cls, "auto_complete_config"):
            self._auto_complete(cls, ctx)
        if ctx.config_complete is not None:  # the other instances load beside initialize
            ctx.config_complete()
        args = {
            # as Triton passes it: the config as the server serves it (its version policy,
            # pinned memory filled in), proto field names (max_batch_size, data_type), every
            # field at its default too (empty input and output lists), 64-bit integers as
            # numbers
            "model_config": json.dumps(config_to_json(served_config(ctx.config))),
            "model_name": ctx.config.name,
            "model_version": ctx.version_dir.name,
            "model_repository": str(ctx.version_dir.parent),
            "model_instance_name": self._instance_name,
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
            "instance_index": str(ctx.instance_index),
        }
        try:
            model = cls()
            if hasattr(model, "initialize"):
                model.initialize(args)
        except Exception as exc:
            raise self._user_error("initialize", exc) from exc
        if not callable(getattr(model, "execute", None)):
            raise EngineError.of(
                error_rules.PYTHON_MODEL,
                f"class {cls.__name__} has no execute(inputs) method",
                where=self._where,
            )
        return model

    def _auto_complete(self, cls: type, ctx: LoadContext) -> None:
        """Triton's ``auto_complete_config``: the model adds what its config leaves out."""
        config = config_to_json(ctx.config)  # as Triton's ModelConfig.as_dict() gives it
        try:
            # the ignore: the hook is optional on a user's class, which the caller checked
            completed = cls.auto_complete_config(pb_utils.ModelConfig(config))  # type: ignore[attr-defined]
            if not isinstance(completed, pb_utils.ModelConfig):
                raise ValueError(
                    f"auto_complete_config function in model '{ctx.config.name}' must return "
                    "a valid pb.ModelConfig object."
                )
            filled = completed.as_dict()
            ctx.config.Clear()
            json_format.ParseDict(filled, ctx.config)
        except Exception as exc:
            raise self._user_error("auto_complete_config", exc) from exc

    def _import(self, ctx: LoadContext) -> ModuleType:
        if self._alone:
            return self._import_as_triton(ctx.artifact, ctx.backend_dir is not None)
        spec = importlib.util.spec_from_file_location(self._module_name, ctx.artifact)
        if spec is None or spec.loader is None:
            raise EngineError.of(
                error_rules.PYTHON_MODEL, f"cannot import {ctx.artifact}", where=self._where
            )
        module = importlib.util.module_from_spec(spec)
        # registered so that dataclasses, pickle and typing can find the module
        sys.modules[self._module_name] = module
        # Triton's python-backend models import this by its Triton name
        sys.modules.setdefault("triton_python_backend_utils", pb_utils)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            self._forget_module()
            raise self._user_error("import", exc) from exc
        return module

    def _import_as_triton(self, artifact: Path, backend: bool = False) -> ModuleType:
        """As Triton's stub: the version folder and the model's on ``sys.path``, the file
        imported as ``<version>.<file>`` (``1.model``), so the model imports the files
        beside it (``import file1``, ``from . import file2``) and itself (``model``); a
        Python-based backend's ``model.py`` with its folder on ``sys.path``, as ``model``:
        that file itself, whatever else on the path is named ``model``."""
        folders = (artifact.parent,) if backend else (artifact.parent, artifact.parent.parent)
        for folder in folders:
            if str(folder) not in sys.path:
                sys.path.append(str(folder))
        sys.modules.setdefault("triton_python_backend_utils", pb_utils)
        self._module_name = (
            artifact.stem if backend else f"{artifact.parent.name}.{artifact.stem}"
        )
        try:
            if backend:
                return self._import_file_as(self._module_name, artifact)
            return importlib.import_module(self._module_name)
        except Exception as exc:
            self._forget_module()
            raise self._user_error("import", exc) from exc

    @staticmethod
    def _import_file_as(name: str, artifact: Path) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, artifact)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {artifact}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if self._stub is not None:
            return self._stub.execute(inputs, outputs, current_batch_requests())
        if self._triton_api:  # each response as the model made it, as Triton's backend sends it
            returned = self._execute_requests(inputs, outputs)
            return {name: np.asarray(returned[name]) for name in outputs if name in returned}
        try:
            returned = self._model.execute(inputs)
        except ModelyardError:
            raise  # the model said what went wrong, and whose fault it is
        except Exception as exc:
            raise self._user_error("execute", exc) from exc
        if not isinstance(returned, dict):
            raise self._contract_error(
                f"execute() returned a {type(returned).__name__}, not a dict of arrays"
            )
        return self._check_outputs(inputs, outputs, returned)

    def _execute_requests(
        self, inputs: dict[str, np.ndarray], outputs: list[str]
    ) -> dict[str, Any]:
        """Triton's API: the batch as pb_utils requests; their responses' tensors, stacked.

        Each request the scheduler stacked comes as its own (``current_batch_requests``:
        its rows, parameters, and a sequence's correlation id and flags); a batch it did
        not describe, as one request.
        """
        batched = current_batch_requests()
        ragged = batched is not None and any(each.ragged_shapes for each in batched)
        if batched is not None and self._batched and (len(batched) > 1 or ragged):
            requests = [
                self._request(part, outputs, each)
                for part, each in zip(_request_parts(inputs, batched), batched, strict=True)
            ]
        else:
            requests = [self._request(inputs, outputs, batched[0] if batched else None)]
        answers = [_OneAnswer() for _ in requests]
        for request, answer in zip(requests, answers, strict=True):
            sender = pb_utils.InferenceResponseSender(answer.deliver, request.is_cancelled,
                                                      decoupled=False)  # fmt: skip
            request.attach_sender(sender)
        failure: EngineError | None = None
        try:
            returned = self._run_execute(requests)
        except EngineError as error:  # what the model sent before it raised still goes
            returned, failure = None, error
        if failure is None:
            failure = self._take_returned(returned, requests, answers)
        if failure is None:  # responses the model sends after execute returned
            for request, answer in zip(requests, answers, strict=True):
                if not answer.final.wait(SENT_LATER_S):
                    failure = self._contract_error(
                        f"request {request.request_id() or '(no id)'} took its response "
                        f"sender and sent no FINAL within {SENT_LATER_S:.0f} s"
                    )
        outcomes: list[dict[str, Any] | ModelyardError] = []
        for answer in answers:
            if answer.rescheduled and failure is None:
                outcomes.append(self._rescheduled())
                continue
            if answer.response is None:
                assert failure is not None
                outcomes.append(failure)
                continue
            try:
                outcomes.append(self._response_tensors(answer.response))
            except EngineError as error:  # its own request's error: the others are answered
                outcomes.append(error)
        if len(outcomes) == 1:
            if isinstance(outcomes[0], ModelyardError):
                raise outcomes[0]
            return outcomes[0]
        # stacked where each response has its request's rows; else each answers on its own
        tensors = [outcome for outcome in outcomes if not isinstance(outcome, ModelyardError)]
        if (
            len(tensors) < len(outcomes)
            or not all(
                _has_rows(part, each.rows)
                for part, each in zip(tensors, batched or (), strict=True)
            )
            or not _stackable(tensors, outputs)
        ):
            raise BatchOutcomes(outcomes)
        return {
            name: np.concatenate([np.asarray(part[name]) for part in tensors])
            for name in outputs
            if all(name in part for part in tensors)
        }

    def _take_returned(
        self,
        returned: Any,
        requests: list[pb_utils.InferenceRequest],
        answers: list[_OneAnswer],
    ) -> EngineError | None:
        """``execute``'s return: a response (or None: sent through its sender) per request,
        or None for all; the error that fails the requests not answered yet, if any."""
        if returned is None and all(request.sender_taken for request in requests):
            return None
        if not isinstance(returned, list) or len(returned) != len(requests):
            got = len(returned) if isinstance(returned, list) else type(returned).__name__
            raise self._contract_error(
                f"execute(requests) returned {got} responses for {len(requests)} requests: one "
                "pb_utils.InferenceResponse per request"
            )
        for request, answer, response in zip(requests, answers, returned, strict=True):
            if request.rescheduled:  # given back to run again: it answers then
                if response is not None:
                    raise EngineError.of(
                        error_rules.PYTHON_MODEL_FAILED,
                        "Expected a None object in the execute function return list for "
                        f"reschduled request, found type '{type(response)}'.",
                        where=self._where,
                        triton=True,
                    )
                answer.rescheduled = True
                answer.final.set()
                continue
            if response is None and request.sender_taken:
                continue
            if not isinstance(response, pb_utils.InferenceResponse):
                raise self._contract_error(
                    f"execute(requests) returned a {type(response).__name__}, not a "
                    "pb_utils.InferenceResponse"
                )
            if not answer.take(response):  # its sender sent one: Triton refuses the return
                return self._triton_error(pb_utils.TritonError(
                    "Unable to send response. Non-decoupled model cannot send more than one "
                    "response."
                ))  # fmt: skip
        return None

    def _tensor(self, name: str, array: np.ndarray) -> pb_utils.Tensor:
        if name in self._bf16_inputs:  # numpy has no bfloat16: the model reads it by DLPack
            return pb_utils.Tensor.bf16(name, array)
        return pb_utils.Tensor(name, array)

    def _request(
        self, inputs: dict[str, np.ndarray], outputs: list[str], each: BatchedRequest | None
    ) -> pb_utils.InferenceRequest:
        request = pb_utils.InferenceRequest.received(
            self._model_name,
            [self._tensor(name, array) for name, array in inputs.items()],
            list(outputs),
            correlation_id=each.correlation_id if each else 0,
            parameters=each.parameters if each else None,
            flags=each.flags if each else 0,
            trace_context=each.trace_context if each else None,
        )
        if each is not None and each.is_cancelled is not None:
            request.watch_cancellation(each.is_cancelled)
        return request

    def _run_execute(
        self,
        requests: list[pb_utils.InferenceRequest],
        failed_later: Callable[[EngineError], None] | None = None,
    ) -> Any:
        """The model's ``execute``; an ``async def`` one runs on the model's event loop (one
        loop for the model's life: the tasks it starts outlive the call), waited for, or,
        given ``failed_later`` (a decoupled model), left to run there, as Triton's stub runs
        it, its failure handed to ``failed_later``."""
        pb_utils.calling_through(self._infer)
        try:
            responses = self._model.execute(requests)
            if inspect.iscoroutine(responses):
                future = asyncio.run_coroutine_threadsafe(responses, model_loop())
                if failed_later is not None:
                    future.add_done_callback(functools.partial(self._ended_later, failed_later))
                    return None
                responses = future.result()
        except ModelyardError:
            raise
        except Exception as exc:  # a TritonModelException too: Triton's stub words it so
            raise self._user_error("execute", exc) from exc
        finally:
            pb_utils.calling_through(None)
        return responses

    def _ended_later(
        self, failed_later: Callable[[EngineError], None], done: concurrent.futures.Future[Any]
    ) -> None:
        """A decoupled model's async execute that ran in the background has ended."""
        exc = done.exception() if not done.cancelled() else None
        if isinstance(exc, pb_utils.TritonModelException):
            error = self._triton_error(pb_utils.TritonError(str(exc)))
        elif isinstance(exc, Exception):
            error = self._user_error("execute", exc)
        elif exc is None and done.result() is not None:
            error = self._decoupled_returned()
        else:
            return
        log.error("python_model_execute_failed", model=self._model_name, **error.fields())
        failed_later(error)

    def _response_tensors(self, response: Any) -> dict[str, Any]:
        if not isinstance(response, pb_utils.InferenceResponse):
            raise self._contract_error(
                f"execute(requests) returned a {type(response).__name__}, not a "
                "pb_utils.InferenceResponse"
            )
        error = response.error()
        if error is not None:
            raise self._triton_error(error)
        return {tensor.name(): tensor.data() for tensor in response.output_tensors()}

    def execute_decoupled(self, requests: list[DecoupledRequest]) -> None:
        """A decoupled model's requests, in one ``execute`` (several where the config's
        dynamic batching gathered them): each request's responses go to its ``deliver``
        as the model sends them, during ``execute`` or after it, from any thread; each
        response's arrays are copied when sent (a model may reuse its buffers).

        An exception from ``execute``, or a return value other than None, ends each request
        with its error, unless the model sent its FINAL already.
        """
        if self._stub is not None:
            self._stub.execute_decoupled(requests)
            return
        batch = [
            BatchedRequest(1, each.parameters, each.correlation_id, each.flags,
                           trace_context=each.trace_context)
            for each in requests
        ]  # fmt: skip
        pb_requests, senders = [], []
        started_ns = time.monotonic_ns()
        for each, described in zip(requests, batch, strict=True):
            request = self._request(each.inputs, each.outputs, described)
            timed = started_ns if each.timed else None
            send = functools.partial(self._send_response, each.deliver, timed)
            sender = pb_utils.InferenceResponseSender(send, each.is_cancelled)
            request.attach_sender(sender, each.is_cancelled)
            pb_requests.append(request)
            senders.append((sender, each.deliver))
        def close_all(error: EngineError) -> None:  # unless the model sent its FINAL
            for sender, deliver in senders:
                sender.close_with(functools.partial(deliver, None, error, True))

        try:
            with batch_requests(batch):  # whom its own calls (BLS) are for
                returned = self._run_execute(pb_requests, close_all)
            if returned is not None:
                raise self._decoupled_returned()
        except EngineError as error:
            close_all(error)
            return
        for request, (sender, deliver) in zip(pb_requests, senders, strict=True):
            if request.rescheduled:  # its "FINAL" gives it back to the scheduler
                sender.close_with(functools.partial(deliver, None, self._rescheduled(), True))

    @staticmethod
    def _rescheduled() -> RequestRescheduled:
        """A request the model gave back to run again: the scheduler of an iterative
        sequence queues it again; any other answers it with this line."""
        return RequestRescheduled.of(
            error_rules.RESCHEDULE,
            "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the "
            "model is not configured to handle such a flag.",
            triton=True,
        )

    def _decoupled_returned(self) -> EngineError:
        return EngineError.of(
            error_rules.PYTHON_MODEL_FAILED,
            f"Python model '{self._instance_name}' is using the decoupled mode and the "
            "execute function must return None.",
            where=self._where,
            triton=True,
        )

    def _send_response(
        self,
        deliver: Callable[..., None],
        started_ns: int | None,
        response: pb_utils.InferenceResponse | None,
        final: bool,
    ) -> None:
        """``started_ns``: when the request's execute began, where ``deliver`` takes the
        response's timing (None: it does not)."""
        if started_ns is not None:
            made_ns = response._made_ns if isinstance(response, pb_utils.InferenceResponse) else 0
            timing = ResponseTiming(started_ns, made_ns, time.monotonic_ns())
            deliver = functools.partial(deliver, timing=tuple(timing))
        if response is None:
            deliver(None, None, final)
            return
        try:
            tensors = self._response_tensors(response)
        except EngineError as error:
            deliver(None, error, final)
            return
        deliver({name: np.array(array, copy=True) for name, array in tensors.items()}, None,
                final)  # fmt: skip

    def _triton_error(self, error: pb_utils.TritonError) -> EngineError:
        """A response's error: the model's message leads the line, with its code."""
        code = _TRITON_CODES.get(error.code(), Code.INTERNAL)
        return EngineError(
            error.message(),
            code=code,
            rule="engine/python",
            where="the request's inputs" if code is Code.INVALID_ARGUMENT else self._where,
            triton=True,
        )

    def _check_outputs(
        self, inputs: dict[str, np.ndarray], outputs: list[str], returned: dict[str, Any]
    ) -> dict[str, np.ndarray]:
        rows = len(next(iter(inputs.values()))) if self._batched and inputs else None
        result = {}
        for name in outputs:
            if name not in returned:  # left out of the response, as Triton's backend does
                continue
            array = np.asarray(returned[name])
            if rows is not None and (array.ndim == 0 or array.shape[0] != rows):
                got = array.shape[0] if array.ndim else "a scalar"
                raise self._contract_error(
                    f"execute() returned {got} rows for output '{name}' and got {rows} rows in"
                )
            result[name] = array
        return result

    def refuses_input(self, error: Exception) -> bool:
        # only what is surely the caller's: any other exception may be the model's own bug
        return isinstance(error, UnicodeDecodeError)

    def unload(self) -> None:
        if self._stub is not None:
            self._stub.stop()
            return
        model, self._model = self._model, None
        try:
            if model is not None and hasattr(model, "finalize"):
                model.finalize()
        except Exception as exc:
            raise self._user_error("finalize", exc) from exc
        finally:
            self._forget_module()

    def _forget_module(self) -> None:
        sys.modules.pop(self._module_name, None)

    def _user_error(self, step: str, exc: Exception) -> EngineError:
        if step == "execute" and self.refuses_input(exc):  # the caller's error, not the model's
            return EngineError.of(
                error_rules.PYTHON_MODEL,
                f"execute refused the request's values: {type(exc).__name__}: "
                f"{without_paths(str(exc))}",
                where=self._where,
            )
        if step == "execute" and self._triton_api:  # as Triton's stub words it
            return EngineError.of(
                error_rules.PYTHON_MODEL_FAILED,
                f"Failed to process the request(s) for model '{self._instance_name}', "
                f"message: {type(exc).__name__}: {without_paths(str(exc))}",
                where=self._where,
                triton=True,
            )
        return EngineError.of(
            error_rules.PYTHON_MODEL_FAILED,
            f"{step} failed: {type(exc).__name__}: {exc}",
            where=self._where,
        )

    def _contract_error(self, detail: str) -> EngineError:
        return EngineError.of(error_rules.PYTHON_MODEL_FAILED, detail, where=self._where)
