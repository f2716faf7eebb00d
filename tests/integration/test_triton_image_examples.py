"""Triton's Python image client examples, step by step, against modelyard.

Each test follows one of tritonclient's ``src/python/examples`` scripts (named in its
docstring and section): the same client calls, in the same order, with the checks the
script makes on the model (``parse_model``) turned into assertions, and its printed
classes (``postprocess``) checked: the top label of each image, the scores sorted, the
shapes. The flags the scripts take are the parameters: ``-i`` (protocol), ``-a``,
``--streaming``, ``-b``, ``-c 3``, ``-s NONE|INCEPTION``, ``-m``.

The models (``tests/support/image_models.py``) are trained here, in about a second, on
scikit-learn's bundled 8x8 digits, with the tensors and configs of Triton's example
image models: ``densenet_onnx`` (NCHW 3x224x224, no batching, reshaped, the model
``grpc_client.py`` names), ``inception_onnx`` (NHWC 64x64x3 here, batching) and
``digits_onnx`` (NCHW 3x32x32, batching), each output with ``label_filename``; and
``preprocess_inception_ensemble``, which takes the encoded image files. The images are
digits of that data set upscaled to 64x64 and written as PNG (grey) and JPEG (RGB).
"""

from __future__ import annotations

import queue
import re
import struct
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.model_config_pb2 as mc
import tritonclient.http as httpclient
from PIL import Image
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import triton_to_np_dtype

from tests.support.image_models import (
    DENSENET,
    DIGITS,
    DIGITS_NHWC,
    LABELS,
    Classifier,
    classifier,
    preprocess_inception_ensemble,
    write_digit_images,
)
from tests.support.servers import Served, server_in_process

pytestmark = pytest.mark.slow  # a server process, and a model trained at setup

# file name -> digit; sorted by name, as the examples sort a folder's files
DIGIT_FILES = {"1_two.png": 2, "2_five.jpg": 5, "3_eight.png": 8}
CLASSES = 3  # -c 3


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("images") / "models"
    for model in (DIGITS, DIGITS_NHWC, DENSENET):
        classifier(repository, model)
    preprocess_inception_ensemble(repository, DIGITS)
    return repository


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The image folder, and the label each of its files should get."""
    folder = tmp_path_factory.mktemp("images") / "digits"
    return folder, write_digit_images(folder, DIGIT_FILES)


@pytest.fixture(scope="module")
def triton(repository: Path) -> Iterator[Served]:
    with server_in_process(repository) as server:
        yield server


def _filenames(folder: Path) -> list[str]:
    """The examples' image_filename argument given a folder: its files, sorted."""
    return sorted(str(path) for path in folder.iterdir() if path.is_file())


def _check_classes(rows: Any, labels: list[str], classes: int = CLASSES) -> None:
    """One row of "score:index:label" strings per image: the image's label first, each
    index naming its label, the scores in [0, 1] and sorted, highest first."""
    assert len(rows) == len(labels)
    for row, label in zip(rows, labels, strict=True):
        assert len(row) == classes
        # the examples' postprocess: each BYTES element split at ":" into score, index, label
        fields = [(v.decode() if isinstance(v, bytes) else v).split(":") for v in row]
        assert all(len(f) == 3 for f in fields), fields
        assert all(re.fullmatch(r"\d+\.\d{6}", f[0]) for f in fields)  # std::to_string
        scores = [float(f[0]) for f in fields]
        assert [LABELS[int(f[1])] for f in fields] == [f[2] for f in fields]
        assert fields[0][2] == label, (fields, label)
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores) and scores[0] > 0.5
        assert len({f[1] for f in fields}) == classes


def _parse_model(model_metadata: Any, model_config: Any) -> tuple[Any, ...]:
    """image_client.py's parse_model, its exceptions as assertions; the HTTP answers
    (dicts) read by key where the script wraps them in an AttrDict."""

    def get(obj: Any, key: str) -> Any:
        return obj[key] if isinstance(obj, dict) else getattr(obj, key)

    inputs, outputs = get(model_metadata, "inputs"), get(model_metadata, "outputs")
    assert len(inputs) == 1 and len(outputs) == 1
    assert len(get(model_config, "input")) == 1
    input_metadata, output_metadata = inputs[0], outputs[0]
    input_config = get(model_config, "input")[0]
    assert get(output_metadata, "datatype") == "FP32"
    max_batch_size = get(model_config, "max_batch_size")
    output_dims = list(get(output_metadata, "shape"))[1 if max_batch_size > 0 else 0 :]
    assert sum(1 for d in output_dims if d > 1) <= 1  # a vector
    input_batch_dim = max_batch_size > 0
    input_shape = list(get(input_metadata, "shape"))
    assert len(input_shape) == 3 + (1 if input_batch_dim else 0)
    layout = get(input_config, "format")
    if isinstance(layout, str):  # the JSON config names the enum
        layout = dict(mc.ModelInput.Format.items())[layout]
    assert layout in (mc.ModelInput.FORMAT_NCHW, mc.ModelInput.FORMAT_NHWC)
    dims = input_shape[1:] if input_batch_dim else input_shape
    if layout == mc.ModelInput.FORMAT_NHWC:
        h, w, c = dims
    else:
        c, h, w = dims
    return (
        max_batch_size,
        get(input_metadata, "name"),
        get(output_metadata, "name"),
        c,
        h,
        w,
        layout,
        get(input_metadata, "datatype"),
    )


def _preprocess(
    img: Any, layout: int, dtype: str, c: int, h: int, w: int, scaling: str
) -> np.ndarray:
    """image_client.py's preprocess: grey or RGB, resized bilinear to the model's H x W,
    typed, scaled (NONE or INCEPTION), and transposed to CHW for an NCHW model."""
    sample = img.convert("L") if c == 1 else img.convert("RGB")
    resized = np.array(sample.resize((w, h), Image.Resampling.BILINEAR))
    if resized.ndim == 2:
        resized = resized[:, :, np.newaxis]
    typed = resized.astype(triton_to_np_dtype(dtype))
    scaled = (typed / 127.5) - 1 if scaling == "INCEPTION" else typed
    if layout == mc.ModelInput.FORMAT_NCHW:
        return np.transpose(scaled, (2, 0, 1))
    return scaled


def _batches(count: int, batch_size: int) -> list[list[int]]:
    """The examples' batching: batch_size images a request, starting over with the first
    images to fill the last batch; the last request is the one that wraps to image 0."""
    batches, index, last = [], 0, False
    while not last:
        batch = []
        for _ in range(batch_size):
            batch.append(index)
            index = (index + 1) % count
            last = last or index == 0
        batches.append(batch)
    return batches


MODELS = [
    pytest.param(DIGITS, 2, id="digits_onnx-NCHW-b2"),
    pytest.param(DIGITS_NHWC, 3, id="inception_onnx-NHWC-b3"),
    pytest.param(DENSENET, 1, id="densenet_onnx-nobatch-b1"),
]
SCALINGS = ["NONE", "INCEPTION"]


# ---- image_client.py --------------------------------------------------------------------


@pytest.mark.parametrize("scaling", SCALINGS)
@pytest.mark.parametrize(("model", "batch_size"), MODELS)
@pytest.mark.parametrize(
    ("protocol", "mode"),
    [
        ("http", "sync"),
        ("http", "async"),
        ("grpc", "sync"),
        ("grpc", "async"),
        ("grpc", "streaming"),
    ],
)
def test_image_client(
    triton: Served,
    images: tuple[Path, dict[str, str]],
    protocol: str,
    mode: str,
    model: Classifier,
    batch_size: int,
    scaling: str,
) -> None:
    """image_client.py -i PROTOCOL [-a | --streaming] -m MODEL -b N -c 3 -s SCALING FOLDER"""
    folder, expected = images
    module: Any = grpcclient if protocol == "grpc" else httpclient
    if protocol == "grpc":
        client: Any = grpcclient.InferenceServerClient(url=triton.grpc_url)
    else:
        client = httpclient.InferenceServerClient(
            url=triton.http_url, concurrency=20 if mode == "async" else 1
        )
    try:
        model_metadata = client.get_model_metadata(model_name=model.name, model_version="")
        model_config = client.get_model_config(model_name=model.name, model_version="")
        if protocol == "grpc":
            model_config = model_config.config
        max_batch_size, input_name, output_name, c, h, w, layout, dtype = _parse_model(
            model_metadata, model_config
        )
        assert (max_batch_size, input_name, output_name) == (
            model.max_batch_size,
            model.input_name,
            model.output_name,
        )
        assert (c, h, w, dtype) == (3, model.size, model.size, "FP32")
        supports_batching = max_batch_size > 0
        assert supports_batching or batch_size == 1

        filenames = _filenames(folder)
        image_data = []
        for filename in filenames:
            with Image.open(filename) as img:
                image_data.append(_preprocess(img, layout, dtype, c, h, w, scaling))

        completed: queue.Queue[tuple[Any, Any]] = queue.Queue()

        def completion_callback(
            results: queue.Queue[tuple[Any, Any]], result: Any, error: Any
        ) -> None:
            results.put((result, error))

        responses: list[Any] = []
        async_requests: list[Any] = []
        sent: dict[str, list[str]] = {}  # request id -> the files of its batch
        if mode == "streaming":
            client.start_stream(partial(completion_callback, completed))
        for batch in _batches(len(filenames), batch_size):
            repeated = [image_data[i] for i in batch]
            batched = np.stack(repeated, axis=0) if supports_batching else repeated[0]
            inputs = [module.InferInput(input_name, list(batched.shape), dtype)]
            inputs[0].set_data_from_numpy(batched)
            outputs = [module.InferRequestedOutput(output_name, class_count=CLASSES)]
            request_id = str(len(sent) + 1)
            sent[request_id] = [Path(filenames[i]).name for i in batch]
            if mode == "streaming":
                client.async_stream_infer(
                    model.name, inputs, request_id=request_id, model_version="", outputs=outputs
                )
            elif mode == "async" and protocol == "grpc":
                client.async_infer(
                    model.name,
                    inputs,
                    partial(completion_callback, completed),
                    request_id=request_id,
                    model_version="",
                    outputs=outputs,
                )
            elif mode == "async":
                async_requests.append(
                    client.async_infer(
                        model.name, inputs, request_id=request_id, model_version="", outputs=outputs
                    )
                )
            else:
                responses.append(
                    client.infer(
                        model.name, inputs, request_id=request_id, model_version="", outputs=outputs
                    )
                )
        if mode == "streaming":
            client.stop_stream()
        if protocol == "grpc" and mode in ("streaming", "async"):
            for _ in range(len(sent)):
                result, error = completed.get(timeout=30)
                assert error is None, error
                responses.append(result)
        elif mode == "async":
            responses = [request.get_result() for request in async_requests]

        assert len(responses) == len(sent) == len(_batches(len(filenames), batch_size))
        seen = []
        for response in responses:
            if protocol == "grpc":
                this_id = response.get_response().id
            else:
                this_id = response.get_response()["id"]
            seen.append(this_id)
            output_array = response.as_numpy(output_name)
            assert output_array.dtype == np.object_
            if supports_batching:
                assert output_array.shape == (batch_size, CLASSES)
                rows = list(output_array)
            else:
                assert output_array.shape == (CLASSES,)
                rows = [output_array]
            _check_classes(rows, [expected[name] for name in sent[this_id]])
        assert sorted(seen) == sorted(sent)
    finally:
        client.close()


# ---- grpc_image_client.py ---------------------------------------------------------------


def _deserialize_bytes_tensor(encoded: bytes) -> np.ndarray:
    """grpc_image_client.py's reading of raw BYTES contents: 4-byte little-endian lengths."""
    strings, offset = [], 0
    while offset < len(encoded):
        (length,) = struct.unpack_from("<I", encoded, offset)
        offset += 4
        strings.append(encoded[offset : offset + length])
        offset += length
    return np.array(strings, dtype=np.object_)


@pytest.mark.parametrize("scaling", SCALINGS)
@pytest.mark.parametrize(("model", "batch_size"), MODELS)
@pytest.mark.parametrize("mode", ["sync", "async", "streaming"])
def test_grpc_image_client(
    triton: Served,
    images: tuple[Path, dict[str, str]],
    mode: str,
    model: Classifier,
    batch_size: int,
    scaling: str,
) -> None:
    """grpc_image_client.py [-a | --streaming] -m MODEL -b N -c 3 -s SCALING FOLDER: the
    generated stub, the classification parameter, raw_input_contents."""
    folder, expected = images
    with grpc.insecure_channel(triton.grpc_url) as channel:
        grpc_stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        metadata_response = grpc_stub.ModelMetadata(
            service_pb2.ModelMetadataRequest(name=model.name, version="")
        )
        config_response = grpc_stub.ModelConfig(
            service_pb2.ModelConfigRequest(name=model.name, version="")
        )
        max_batch_size, input_name, output_name, c, h, w, layout, dtype = _parse_model(
            metadata_response, config_response.config
        )
        supports_batching = max_batch_size > 0
        assert supports_batching or batch_size == 1

        result_filenames: list[list[str]] = []

        def request_generator() -> Iterator[Any]:
            request = service_pb2.ModelInferRequest()
            request.model_name = model.name
            request.model_version = ""
            filenames = _filenames(folder)
            output = service_pb2.ModelInferRequest().InferRequestedOutputTensor()
            output.name = output_name
            output.parameters["classification"].int64_param = CLASSES
            request.outputs.extend([output])
            tensor = service_pb2.ModelInferRequest().InferInputTensor()
            tensor.name = input_name
            tensor.datatype = dtype
            if layout == mc.ModelInput.FORMAT_NHWC:
                tensor.shape.extend([batch_size, h, w, c] if supports_batching else [h, w, c])
            else:
                tensor.shape.extend([batch_size, c, h, w] if supports_batching else [c, h, w])
            image_data = []
            for filename in filenames:
                with Image.open(filename) as img:
                    image_data.append(_preprocess(img, layout, dtype, c, h, w, scaling))
            for batch in _batches(len(filenames), batch_size):
                request.ClearField("inputs")
                request.ClearField("raw_input_contents")
                request.inputs.extend([tensor])
                result_filenames.append([Path(filenames[i]).name for i in batch])
                request.raw_input_contents.extend(
                    [b"".join(image_data[i].tobytes() for i in batch)]
                )
                yield request

        responses: list[Any] = []
        requests: list[Any] = []
        if mode == "streaming":
            responses.extend(grpc_stub.ModelStreamInfer(request_generator()))
        else:
            for request in request_generator():
                if mode == "async":
                    requests.append(grpc_stub.ModelInfer.future(request))
                else:
                    responses.append(grpc_stub.ModelInfer(request))
        if mode == "async":
            responses.extend(request.result() for request in requests)

    assert len(responses) == len(result_filenames) == len(_batches(len(DIGIT_FILES), batch_size))
    for response, names in zip(responses, result_filenames, strict=True):
        if mode == "streaming":
            assert response.error_message == ""
            response = response.infer_response
        assert len(response.outputs) == 1 and len(response.raw_output_contents) == 1
        assert response.outputs[0].name == output_name
        assert response.outputs[0].datatype == "BYTES"
        shape = list(response.outputs[0].shape)
        assert shape == ([batch_size, CLASSES] if supports_batching else [CLASSES])
        contents = np.reshape(_deserialize_bytes_tensor(response.raw_output_contents[0]), shape)
        rows = list(contents) if supports_batching else [contents]
        _check_classes(rows, [expected[name] for name in names])


# ---- ensemble_image_client.py -----------------------------------------------------------


@pytest.mark.parametrize("classes", [1, CLASSES])
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_ensemble_image_client(
    triton: Served, images: tuple[Path, dict[str, str]], protocol: str, classes: int
) -> None:
    """ensemble_image_client.py -i PROTOCOL -c N FOLDER: the encoded image files, a batch of
    them as BYTES [batch, 1], to preprocess_inception_ensemble."""
    folder, expected = images
    model_name = "preprocess_inception_ensemble"
    if protocol == "grpc":
        client: Any = grpcclient.InferenceServerClient(url=triton.grpc_url)
    else:
        client = httpclient.InferenceServerClient(url=triton.http_url)
    try:
        model_metadata = client.get_model_metadata(model_name=model_name)
        model_config = client.get_model_config(model_name=model_name)
        if protocol == "grpc":
            model_config = model_config.config
            assert len(model_metadata.inputs) == 1 and len(model_config.input) == 1
            input_name = model_metadata.inputs[0].name
            output_metadata = list(model_metadata.outputs)
            batch_size = model_config.max_batch_size
        else:
            assert len(model_metadata["inputs"]) == 1 and len(model_config["input"]) == 1
            input_name = model_metadata["inputs"][0]["name"]
            output_metadata = model_metadata["outputs"]
            batch_size = model_config["max_batch_size"]
        assert input_name == "INPUT" and batch_size == 8

        filenames = _filenames(folder)
        batch_size = min(batch_size, len(filenames))
        image_data = []
        for filename in filenames[:batch_size]:
            with open(filename, "rb") as fd:
                image_data.append(np.array([fd.read()], dtype=bytes))
        batched_image_data = np.stack(image_data, axis=0)
        assert batched_image_data.shape == (3, 1)

        inputs = [
            (grpcclient if protocol == "grpc" else httpclient).InferInput(
                input_name, list(batched_image_data.shape), "BYTES"
            )
        ]
        if protocol == "grpc":
            inputs[0].set_data_from_numpy(batched_image_data)
            output_names = [output.name for output in output_metadata]
            outputs = [
                grpcclient.InferRequestedOutput(n, class_count=classes) for n in output_names
            ]
        else:
            inputs[0].set_data_from_numpy(batched_image_data, binary_data=True)
            output_names = [output["name"] for output in output_metadata]
            outputs = [
                httpclient.InferRequestedOutput(n, binary_data=True, class_count=classes)
                for n in output_names
            ]
        assert output_names == ["OUTPUT"]
        result = client.infer(model_name, inputs, outputs=outputs)

        for output_name in output_names:
            output = result.as_numpy(output_name)
            assert output.shape == (batch_size, classes)
            _check_classes(
                list(output), [expected[Path(f).name] for f in filenames[:batch_size]], classes
            )
    finally:
        client.close()


# ---- grpc_client.py ---------------------------------------------------------------------


def test_grpc_client(triton: Served) -> None:
    """grpc_client.py: health, metadata, config and one infer on densenet_onnx through the
    generated stub, the input 602112 bytes of 'a' as raw_input_contents."""
    model_name, model_version = "densenet_onnx", ""
    with grpc.insecure_channel(triton.grpc_url) as channel:
        grpc_stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)

        assert grpc_stub.ServerLive(service_pb2.ServerLiveRequest()).live
        assert grpc_stub.ServerReady(service_pb2.ServerReadyRequest()).ready
        response = grpc_stub.ModelReady(
            service_pb2.ModelReadyRequest(name=model_name, version=model_version)
        )
        assert response.ready

        response = grpc_stub.ServerMetadata(service_pb2.ServerMetadataRequest())
        assert response.name and response.version and "classification" in response.extensions

        response = grpc_stub.ModelMetadata(
            service_pb2.ModelMetadataRequest(name=model_name, version=model_version)
        )
        assert response.name == model_name and list(response.versions) == ["1"]
        assert response.platform == "onnxruntime_onnx"
        assert [(t.name, t.datatype, list(t.shape)) for t in response.inputs] == [
            ("data_0", "FP32", [3, 224, 224])
        ]
        assert [(t.name, t.datatype, list(t.shape)) for t in response.outputs] == [
            ("fc6_1", "FP32", [len(LABELS)])
        ]

        response = grpc_stub.ModelConfig(
            service_pb2.ModelConfigRequest(name=model_name, version=model_version)
        )
        config = response.config
        assert config.name == model_name and config.platform == "onnxruntime_onnx"
        assert config.max_batch_size == 0
        assert config.input[0].format == mc.ModelInput.FORMAT_NCHW
        assert list(config.input[0].dims) == [3, 224, 224]
        assert list(config.input[0].reshape.shape) == [1, 3, 224, 224]
        assert list(config.output[0].reshape.shape) == [1, len(LABELS), 1, 1]
        assert config.output[0].label_filename == "densenet_labels.txt"

        request = service_pb2.ModelInferRequest()
        request.model_name = model_name
        request.model_version = model_version
        request.id = "my request id"
        tensor = service_pb2.ModelInferRequest().InferInputTensor()
        tensor.name = "data_0"
        tensor.datatype = "FP32"
        tensor.shape.extend([3, 224, 224])
        request.inputs.extend([tensor])
        output = service_pb2.ModelInferRequest().InferRequestedOutputTensor()
        output.name = "fc6_1"
        request.outputs.extend([output])
        request.raw_input_contents.extend([bytes(602112 * "a", "utf-8")])
        response = grpc_stub.ModelInfer(request)

    assert response.model_name == model_name and response.model_version == "1"
    assert response.id == "my request id"
    assert [(t.name, t.datatype, list(t.shape)) for t in response.outputs] == [
        ("fc6_1", "FP32", [len(LABELS)])
    ]
    probabilities = np.frombuffer(response.raw_output_contents[0], dtype=np.float32)
    assert probabilities.shape == (len(LABELS),)
    assert np.all(probabilities >= 0) and abs(float(probabilities.sum()) - 1.0) < 1e-4


# ---- the config JSON the HTTP examples read -----------------------------------------------


def test_http_model_config_json_has_numbers_where_triton_writes_numbers(
    triton: Served,
) -> None:
    """image_client.py and ensemble_image_client.py read GET /v2/models/M/config as JSON.
    Triton writes it from the protobuf, then turns the int64 fields protobuf's JSON
    writes as strings back into numbers (core src/model_config_utils.cc,
    ModelConfigToJson: input/output dims and reshape shape, ensemble step
    model_version, ...): ``"dims": [3, 224, 224]``, ``"model_version": -1``."""
    client = httpclient.InferenceServerClient(url=triton.http_url)
    try:
        densenet = client.get_model_config("densenet_onnx")
        ensemble = client.get_model_config("preprocess_inception_ensemble")
    finally:
        client.close()
    assert densenet["input"][0]["format"] == "FORMAT_NCHW"  # what image_client.py reads
    assert densenet["output"][0]["label_filename"] == "densenet_labels.txt"
    assert densenet["input"][0]["dims"] == [3, 224, 224]
    assert densenet["input"][0]["reshape"]["shape"] == [1, 3, 224, 224]
    assert densenet["output"][0]["dims"] == [len(LABELS)]
    assert densenet["output"][0]["reshape"]["shape"] == [1, len(LABELS), 1, 1]
    assert ensemble["input"][0]["dims"] == [1]
    assert [step["model_version"] for step in ensemble["ensemble_scheduling"]["step"]] == [-1, -1]
