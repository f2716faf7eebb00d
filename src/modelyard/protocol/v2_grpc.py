"""KServe V2 inference requests and responses over gRPC (Triton's grpc_service.proto).

Inputs come either all in ``raw_input_contents`` (one bytes entry per input, in
order, byte layout of ``modelyard.protocol.tensors``) or each in its typed
``contents``. Outputs go in ``raw_output_contents`` as Triton sends them, unless
every requested output asks for ``binary_data: false`` and has a typed field.
Messages are read and built field by field: no validation framework on the hot
path, the dataplane checks tensors against the model config.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from tritonclient.grpc import service_pb2 as pb

from modelyard.errors import ProtocolError, shown
from modelyard.protocol import tensors
from modelyard.protocol.shared_memory import SystemSharedMemory, disabled, read_region_input
from modelyard.protocol.tensors import bad_request
from modelyard.types import V2_TO_NUMPY, InferRequest, InferResponse, OutputTensor, RequestedOutput

# V2 datatype -> (InferTensorContents field, numpy dtype the field holds); FP16 and
# BF16 have no typed field and travel raw only
_CONTENTS: dict[str, tuple[str, np.dtype[Any] | None]] = {
    "BOOL": ("bool_contents", np.dtype(np.bool_)),
    "INT8": ("int_contents", np.dtype(np.int32)),
    "INT16": ("int_contents", np.dtype(np.int32)),
    "INT32": ("int_contents", np.dtype(np.int32)),
    "INT64": ("int64_contents", np.dtype(np.int64)),
    "UINT8": ("uint_contents", np.dtype(np.uint32)),
    "UINT16": ("uint_contents", np.dtype(np.uint32)),
    "UINT32": ("uint_contents", np.dtype(np.uint32)),
    "UINT64": ("uint64_contents", np.dtype(np.uint64)),
    "FP32": ("fp32_contents", np.dtype(np.float32)),
    "FP64": ("fp64_contents", np.dtype(np.float64)),
    "BYTES": ("bytes_contents", None),
}
_CONTENT_FIELDS = sorted({field for field, _ in _CONTENTS.values()})
# V2 datatype -> the InferTensorContents field that holds its values
TYPED_CONTENTS = {datatype: field for datatype, (field, _) in _CONTENTS.items()}


def parameter_value(parameter: Any) -> Any:
    """The Python value of an InferParameter or ModelRepositoryParameter."""
    choice = parameter.WhichOneof("parameter_choice")
    return None if choice is None else getattr(parameter, choice)


def _parameters(tensor: Any) -> dict[str, Any]:
    return {key: parameter_value(value) for key, value in tensor.parameters.items()}


def _in_shared_memory(tensor: Any) -> bool:
    return bool(tensor.parameters) and "shared_memory_region" in tensor.parameters


def _decode_typed(name: str, datatype: str, shape: tuple[int, ...], tensor: Any) -> np.ndarray:
    contents = tensor.contents
    entry = _CONTENTS.get(datatype)
    if entry is None:
        raise bad_request(
            f"input '{shown(name)}': {datatype} data must be sent in raw_input_contents"
        )
    field, wide = entry
    for other in _CONTENT_FIELDS:
        if other != field and len(getattr(contents, other)):
            raise bad_request(f"input '{shown(name)}': data is not valid {datatype}")
    values = getattr(contents, field)
    count = math.prod(shape)
    if len(values) != count:
        raise tensors.wrong_value_count(name, len(values), shape)
    if wide is None:
        array = np.empty(count, dtype=object)
        array[:] = list(values)
        return array.reshape(shape)
    array = np.array(values, dtype=wide)
    dtype = V2_TO_NUMPY[datatype]
    assert dtype is not None
    if dtype != wide:
        narrow = array.astype(dtype)
        if not np.array_equal(narrow, array):
            raise bad_request(f"input '{shown(name)}': data is not valid {datatype}")
        array = narrow
    return array.reshape(shape)


# the only 'triton_' parameter a caller may set (over gRPC, as in Triton)
STREAM_PARAMETERS = frozenset(("triton_enable_empty_final_response",))


def decode_infer_request(
    message: pb.ModelInferRequest, shared_memory: SystemSharedMemory | None = None
) -> InferRequest:
    """The request; ``shared_memory``: the regions its tensors may name (None: refused)."""
    raw = message.raw_input_contents
    _check_raw_input_count(message, raw)
    inputs: dict[str, np.ndarray] = {}
    datatypes: dict[str, str] = {}
    held: list[Any] = []  # the regions inputs are read from, which the request holds
    _decode_inputs(message, raw, shared_memory, inputs, datatypes, held)
    params = _request_parameters(message)
    timeout = params.get("timeout", 0)
    priority = params.get("priority", 0)
    if (
        not isinstance(timeout, int)
        or isinstance(timeout, bool)
        or timeout < 0
        or not isinstance(priority, int)
        or isinstance(priority, bool)
    ):
        raise bad_request("'timeout' and 'priority' parameters must be non-negative integers")
    return InferRequest(
        model_name=message.model_name,
        model_version=message.model_version or None,
        inputs=inputs,
        input_datatypes=datatypes,
        outputs=_decode_outputs(message, shared_memory) if message.outputs else None,
        id=message.id or None,
        parameters=params,
        binary_output_default=True,
        priority=priority,
        timeout_us=timeout,
        regions=tuple(held),
    )


def _check_raw_input_count(message: pb.ModelInferRequest, raw: Any) -> None:
    """Raw contents, if sent, come one per input not in shared memory."""
    # a tensor in shared memory has no raw_input_contents entry (as tritonclient sends it)
    sent = sum(1 for tensor in message.inputs if not _in_shared_memory(tensor))
    if raw and len(raw) != sent:
        raise bad_request(
            f"{len(raw)} raw_input_contents for {sent} inputs not in shared memory; send "
            "one per such input, in order, or none"
        )


def _decode_inputs(
    message: pb.ModelInferRequest,
    raw: Any,
    shared_memory: SystemSharedMemory | None,
    inputs: dict[str, np.ndarray],
    datatypes: dict[str, str],
    held: list[Any],
) -> None:
    """Each input of ``message`` read into ``inputs`` and ``datatypes`` (``raw``: its
    raw_input_contents), the regions read in ``held``."""
    index = 0
    shared_bytes = 0  # read from shared memory so far
    model = message.model_name
    # a tensor whose bytes its shape does not take is refused once every input is read, as
    # Triton refuses it after the other checks (and for the last such input given)
    wrong_size: ProtocolError | None = None
    for tensor in message.inputs:
        name = tensor.name
        if name in inputs:
            raise bad_request(f"input '{shown(name)}' is given twice")
        datatype = tensor.datatype
        if datatype not in V2_TO_NUMPY:
            raise bad_request(
                f"input '{shown(name)}': unknown datatype {shown(repr(datatype), 40)}"
            )
        shape = tuple(tensor.shape)
        if any(d < 0 for d in shape):
            raise bad_request(
                f"input '{shown(name)}': shape must be a list of non-negative integers"
            )
        tensors.check_shape(name, shape)
        if _in_shared_memory(tensor):
            if tensor.HasField("contents"):
                raise bad_request(
                    f"input '{shown(name)}' has both contents and a shared memory region; "
                    "send one"
                )
            spent, error = read_region_input(
                shared_memory, name, datatype, shape, _parameters(tensor), shared_bytes, model,
                inputs, held,
            )  # fmt: skip
            wrong_size = error or wrong_size
            shared_bytes += spent
        elif raw:
            if tensor.HasField("contents"):
                raise bad_request(
                    f"input '{shown(name)}' has both contents and raw_input_contents; send one"
                )
            error = tensors.decode_input(inputs, name, datatype, shape, raw[index], model)
            wrong_size = error or wrong_size
            index += 1
        else:
            inputs[name] = _decode_typed(name, datatype, shape, tensor)
        datatypes[name] = datatype
    if wrong_size is not None:
        raise wrong_size


def _request_parameters(message: pb.ModelInferRequest) -> dict[str, Any]:
    """The request's parameters, none of them Triton's own but the stream's."""
    params: dict[str, Any] = {}
    if message.parameters:
        params = {key: parameter_value(value) for key, value in message.parameters.items()}
        for key in params:
            if key.startswith("triton_") and key not in STREAM_PARAMETERS:
                raise bad_request(
                    "parameter keys starting with 'triton_' are reserved for Triton usage. "
                    "Only the following keys starting with 'triton_' are allowed: "
                    + " ".join(sorted(STREAM_PARAMETERS))
                )
    return params


def _decode_outputs(
    message: pb.ModelInferRequest, shared_memory: SystemSharedMemory | None
) -> list[RequestedOutput]:
    outputs = []
    names: set[str] = set()
    for output in message.outputs:
        name = output.name
        if name in names:  # or a model's one output, asked for 20,000 times, runs as many
            raise bad_request(f"output '{shown(name)}' is requested twice")
        names.add(name)
        binary: bool | None = None
        classification = 0
        if _in_shared_memory(output):
            params = _parameters(output)
            if "classification" in params or params.get("binary_data") is True:
                raise bad_request(
                    f"output '{shown(name)}': Output can't set both 'shared_memory_region' and "
                    f"'{'classification' if 'classification' in params else 'binary_data'}'"
                )
            if shared_memory is None:
                raise disabled(name)
            outputs.append(
                RequestedOutput(name, False, 0, shared_memory.tensor_slice(name, params))
            )
            continue
        if output.parameters:
            params = output.parameters
            if "binary_data" in params:
                binary = parameter_value(params["binary_data"])
                if not isinstance(binary, bool):
                    raise bad_request(f"output '{shown(name)}': binary_data must be a bool_param")
            if "classification" in params:
                classification = parameter_value(params["classification"])
                if type(classification) is not int or classification < 0:  # not a bool either
                    raise bad_request(
                        f"output '{shown(name)}': classification must be a non-negative integer"
                    )
        outputs.append(RequestedOutput(name, binary, classification))
    return outputs


def _typed(outputs: list[OutputTensor]) -> bool:
    return bool(outputs) and all(
        not t.binary and not t.in_shared_memory and t.datatype in _CONTENTS for t in outputs
    )


def encode_infer_response(response: InferResponse) -> pb.ModelInferResponse:
    message = pb.ModelInferResponse(
        model_name=response.model_name, model_version=response.model_version
    )
    if response.id is not None:
        message.id = response.id
    typed = _typed(response.outputs)
    for tensor in response.outputs:
        out = message.outputs.add()
        out.name = tensor.name
        out.datatype = tensor.datatype
        out.shape.extend(tensor.data.shape)
        if tensor.in_shared_memory:  # the client reads it from there; an entry all the same
            message.raw_output_contents.append(b"")
            continue
        if not typed:
            message.raw_output_contents.append(tensors.encode_raw_tensor(tensor))
            continue
        field = getattr(out.contents, TYPED_CONTENTS[tensor.datatype])
        if tensor.datatype == "BYTES":
            field.extend(
                v if isinstance(v, bytes) else str(v).encode("utf-8") for v in tensor.data.ravel()
            )
        else:
            field.extend(tensor.data.ravel().tolist())
    for key, value in response.parameters.items():
        set_parameter(message.parameters[key], value)
    return message


def set_parameter(parameter: Any, value: Any) -> None:
    if isinstance(value, bool):
        parameter.bool_param = value
    elif isinstance(value, int):
        parameter.int64_param = value
    elif isinstance(value, float):
        parameter.double_param = value
    else:
        parameter.string_param = str(value)


# ---- the client's direction: a request out, its response back -----------------------


def encode_infer_request(request: InferRequest) -> pb.ModelInferRequest:
    """A V2 gRPC request with every input in ``raw_input_contents``."""
    message = pb.ModelInferRequest(
        model_name=request.model_name, model_version=request.model_version or ""
    )
    if request.id is not None:
        message.id = request.id
    for name, value in request.inputs.items():
        datatype, array, raw = tensors.wire_tensor(name, value, request.input_datatypes)
        tensor = message.inputs.add()
        tensor.name = name
        tensor.datatype = datatype
        tensor.shape.extend(array.shape)
        message.raw_input_contents.append(raw)
    for out in request.outputs or ():
        requested = message.outputs.add()
        requested.name = out.name
        if out.classification:
            requested.parameters["classification"].int64_param = out.classification
    for key, value in request.forwarded_parameters().items():
        set_parameter(message.parameters[key], value)
    return message


def decode_infer_response(reply: pb.ModelInferResponse, request: InferRequest) -> InferResponse:
    """The response to ``request``; each output's ``binary`` is what the request asked."""
    raw = reply.raw_output_contents
    flags, default = request.binary_outputs()
    outputs = []
    for index, out in enumerate(reply.outputs):
        shape = tuple(out.shape)
        if raw:
            data = tensors.decode_raw_tensor(out.name, out.datatype, shape, raw[index])
        else:
            values = list(getattr(out.contents, TYPED_CONTENTS[out.datatype]))
            data = tensors.from_values(out.datatype, list(shape), values)
        outputs.append(OutputTensor(out.name, out.datatype, data, flags.get(out.name, default)))
    parameters = {key: parameter_value(value) for key, value in reply.parameters.items()}
    return InferResponse(
        model_name=reply.model_name,
        model_version=reply.model_version,
        outputs=outputs,
        id=reply.id or None,
        parameters=parameters,
    )
