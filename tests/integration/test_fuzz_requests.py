"""Seeded malformed requests against a real ``modelyard serve``: no 5xx, ever.

The repository holds iris_sklearn (a skops classifier), tiny_onnx (auto-completed
from its graph) and the MiniLM models (text_embedding, from text, and minilm_onnx,
the bare encoder, both batched by tokens). Requests are made from each model's metadata and then
broken one way each, in the categories of issue 22 (malformed JSON, wrong types at
every field, shapes, dims, duplicate and unknown names, parameters, binary headers,
datatypes, values, token ids and UTF-8, oversized names, routes). Valid requests are
interleaved and must get the answers they got before the fuzzing began; every 4xx
body must be an error line. The per-category counts are printed as a table.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc

from modelyard.examples.build import build_iris_sklearn, build_tiny_onnx
from modelyard.examples.text import build_minilm_models
from modelyard.refusal_log import PER_SECOND
from tests.support.servers import ServerProcess, running_server

pytestmark = pytest.mark.slow

SEED = 22
HTTP_REQUESTS = 10_000
GRPC_REQUESTS = 1_500
VALID_EVERY = 20  # one valid request in this many
HTTP_WORKERS = 8
# "[layer] detail; rule=...", or Triton's own words first where clients and Triton's QA
# suite match on them (errors made with triton=True; the rule still names the layer)
ERROR_LINE = re.compile(r"^(\[[a-z-]+\] )?[^\[].*; rule=[a-z0-9/_.-]+(; |$)", re.DOTALL)
VOCABULARY = 30522  # all-MiniLM-L6-v2's

# the values a field of the wrong type gets
WRONG = [None, True, False, 0, -1, 1.5, 2**64 - 1, "", "x", [], [1], [[]], {}, {"a": 1}]


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    target = tmp_path_factory.mktemp("fuzz") / "models"
    target.mkdir()
    build_iris_sklearn(target, 0)
    build_tiny_onnx(target, 0)
    pytest_cache = getattr(pytestconfig, "cache", None)  # absent with -p no:cacheprovider
    cache = (
        pytest_cache.mkdir("modelyard-minilm-onnx")
        if pytest_cache is not None
        else tmp_path_factory.mktemp("onnx-cache")
    )
    build_minilm_models(target, cache)
    return target


@pytest.fixture(scope="module")
def server(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(repository, tmp_path_factory.mktemp("logs")) as process:
        yield process


# ---- requests made from metadata -------------------------------------------------------------

Tensor = dict[str, Any]  # name, datatype, shape (from metadata)
HttpRequest = tuple[str, str, dict[str, str], bytes]  # method, path, headers, body


def _dims(shape: list[int], rows: int, length: int) -> list[int]:
    return [rows] + [length if d == -1 else d for d in shape[1:]]


def _values(rng: random.Random, tensor: Tensor, shape: list[int]) -> np.ndarray:
    count = int(np.prod(shape))
    if tensor["datatype"] == "BYTES":
        return np.array([b"hello world"] * count, dtype=object).reshape(shape)
    if tensor["datatype"] == "INT64":  # token ids or a mask: small, valid for MiniLM
        high = 2 if "mask" in tensor["name"] else 1000
        return np.array([rng.randrange(1, high) for _ in range(count)], np.int64).reshape(shape)
    return np.array([rng.uniform(0, 5) for _ in range(count)], np.float32).reshape(shape)


def _raw(array: np.ndarray) -> bytes:
    if array.dtype == object:
        return b"".join(struct.pack("<I", len(v)) + v for v in array.ravel())
    return array.astype(array.dtype.newbyteorder("<")).tobytes()


class Models:
    def __init__(self, metadata: dict[str, dict[str, Any]]) -> None:
        self.metadata = metadata
        self.names = sorted(metadata)

    def inputs(self, rng: random.Random, model: str, rows: int = 1) -> dict[str, np.ndarray]:
        length = rng.choice((3, 5, 8))
        return {
            t["name"]: _values(rng, t, _dims(t["shape"], rows, length))
            for t in self.metadata[model]["inputs"]
        }

    def doc(self, model: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """A JSON request for ``arrays`` (strings for BYTES)."""
        tensors = {t["name"]: t for t in self.metadata[model]["inputs"]}
        inputs = []
        for name, array in arrays.items():
            data = array.ravel().tolist()
            if tensors[name]["datatype"] == "BYTES":
                data = [v.decode(errors="replace") for v in data]  # binary_doc sends the bytes
            inputs.append(
                {
                    "name": name,
                    "datatype": tensors[name]["datatype"],
                    "shape": list(array.shape),
                    "data": data,
                }
            )
        return {"inputs": inputs}

    def outputs(self, model: str) -> list[str]:
        return [t["name"] for t in self.metadata[model]["outputs"]]


def _post(model: str, doc: Any, headers: dict[str, str] | None = None) -> HttpRequest:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return "POST", f"/v2/models/{model}/infer", headers or {}, body


def _binary(
    model: str, header: dict[str, Any], raw: bytes, length: str | None = None
) -> HttpRequest:
    head = json.dumps(header).encode()
    headers = {"Inference-Header-Content-Length": length if length is not None else str(len(head))}
    return "POST", f"/v2/models/{model}/infer", headers, head + raw


def _binary_doc(
    models: Models, model: str, arrays: dict[str, np.ndarray]
) -> tuple[dict[str, Any], bytes]:
    doc = models.doc(model, arrays)
    blobs = []
    for item in doc["inputs"]:
        raw = _raw(arrays[item["name"]])
        del item["data"]
        item["parameters"] = {"binary_data_size": len(raw)}
        blobs.append(raw)
    return doc, b"".join(blobs)


def _set_path(doc: Any, path: list[Any], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


# ---- the categories (HTTP) -------------------------------------------------------------------


def http_malformed_json(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    text = json.dumps(models.doc(model, models.inputs(rng, model))).encode()
    body = rng.choice(
        [
            text[: rng.randrange(len(text))],
            text + b"}",
            bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
            b"[" * rng.randrange(500, 3000),
            rng.choice([b"[]", b"null", b"1", b'"x"', b"{}", b'{"inputs": {}}', b""]),
            b'{"inputs": [{"name": "\xff\xfe"}]}',
            text.replace(b'"', b"'"),
        ]
    )
    return _post(model, body)


_FIELDS = [
    ["inputs"],
    ["inputs", 0],
    ["inputs", 0, "name"],
    ["inputs", 0, "datatype"],
    ["inputs", 0, "shape"],
    ["inputs", 0, "shape", 0],
    ["inputs", 0, "data"],
    ["inputs", 0, "data", 0],
    ["inputs", 0, "parameters"],
    ["inputs", 0, "parameters", "binary_data_size"],
    ["outputs"],
    ["outputs", 0],
    ["outputs", 0, "name"],
    ["outputs", 0, "parameters"],
    ["outputs", 0, "parameters", "binary_data"],
    ["outputs", 0, "parameters", "classification"],
    ["id"],
    ["parameters"],
    ["parameters", "timeout"],
    ["parameters", "priority"],
    ["parameters", "binary_data_output"],
]


def http_wrong_types(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc = models.doc(model, models.inputs(rng, model))
    doc["outputs"] = [{"name": name, "parameters": {}} for name in models.outputs(model)]
    doc["parameters"] = {}
    doc["inputs"][0]["parameters"] = {}
    _set_path(doc, rng.choice(_FIELDS), rng.choice(WRONG))
    return _post(model, doc)


_SHAPES = [
    [0, 4611686018427387904],
    [4611686018427387904, 0],
    [2**63 - 1],
    [2**64 - 1, 1],
    [2**32, 2**32, 0],
    [-1, 4],
    [1, -4],
    [1e30],
    [0],
    [0, 0],
    [10**6, 4],
    [],
    [65, 4],
]


def http_shapes(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    arrays = models.inputs(rng, model)
    shape = rng.choice(_SHAPES)
    if rng.random() < 0.5:
        doc = models.doc(model, arrays)
        doc["inputs"][0]["shape"] = shape
        return _post(model, doc)
    doc, raw = _binary_doc(models, model, arrays)
    doc["inputs"][0]["shape"] = shape
    return _binary(model, doc, raw)


def http_too_many_dims(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    arrays = models.inputs(rng, model)
    dims = [1] * rng.randrange(33, 100)
    doc, raw = _binary_doc(models, model, arrays)
    if rng.random() < 0.5:
        doc = models.doc(model, arrays)
        doc["inputs"][0]["data"] = doc["inputs"][0]["data"][:1]
        doc["inputs"][0]["shape"] = dims
        return _post(model, doc)
    first = doc["inputs"][0]
    size = first["parameters"]["binary_data_size"]
    first["shape"] = dims if first["datatype"] == "BYTES" else [*dims[:-1], size // 4]
    return _binary(model, doc, raw)


def http_duplicate_names(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc = models.doc(model, models.inputs(rng, model))
    if rng.random() < 0.3:
        doc["inputs"] = doc["inputs"] * rng.randrange(2, 5)
    else:
        name = rng.choice(models.outputs(model))
        doc["outputs"] = [{"name": name}] * rng.choice((2, 3, 100, 20_000))
    return _post(model, doc)


def http_unknown_outputs(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc = models.doc(model, models.inputs(rng, model))
    known = [{"name": name} for name in models.outputs(model)]
    doc["outputs"] = rng.choice(
        [
            [{"name": f"nope{rng.randrange(1000)}"}],
            [*known, {"name": "extra"}],
            [{"name": f"o{i}"} for i in range(rng.choice((10, 1000, 20_000)))],
            [{"name": ""}],
        ]
    )
    return _post(model, doc)


def http_bad_parameters(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc = models.doc(model, models.inputs(rng, model))
    output = rng.choice(models.outputs(model))
    wrong = [-1, True, "3", 1.5, 10**18, None, {}, [], 0, 2**63]
    choice = rng.randrange(5)
    if choice == 0:
        doc["outputs"] = [{"name": output, "parameters": {"classification": rng.choice(wrong)}}]
    elif choice == 1:
        doc["outputs"] = [{"name": output, "parameters": {"binary_data": rng.choice(wrong)}}]
    elif choice == 2:
        doc["outputs"] = [{"name": output, "parameters": rng.choice([[1], "x", 3, True])}]
    else:
        key = rng.choice(["timeout", "priority", "binary_data_output"])
        doc["parameters"] = {key: rng.choice(wrong)}
    return _post(model, doc)


def http_bad_binary(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc, raw = _binary_doc(models, model, models.inputs(rng, model))
    head = json.dumps(doc).encode()
    choice = rng.randrange(6)
    if choice == 0:
        length = rng.choice(
            ["x", "-1", "+5", "1e3", "9" * 4301, "1" * 19, str(len(head) + len(raw) + 1), "", "5 6"]
        )
        return _binary(model, doc, raw, length)
    if choice == 1:
        doc["inputs"][0]["parameters"]["binary_data_size"] = rng.choice(
            [len(raw) + 1, -1, True, 1.5, "4", 2**63, None]
        )
        return _binary(model, doc, raw)
    if choice == 2:
        return _binary(model, doc, raw + b"\x00" * rng.randrange(1, 9))
    if choice == 3:
        return _binary(model, doc, raw[: rng.randrange(len(raw))])
    if choice == 4:  # a BYTES element whose length runs past the data
        doc["inputs"][0]["datatype"] = "BYTES"
        junk = struct.pack("<I", rng.choice([0xFFFFFFFF, 1000, 3])) + b"ab"
        doc["inputs"][0]["parameters"]["binary_data_size"] = len(junk)
        doc["inputs"] = doc["inputs"][:1]
        return _binary(model, doc, junk)
    # header length 0 is Triton's raw binary request: the body is the one input's bytes, so a
    # model of several inputs refuses it (one of one input would read the JSON as its input)
    return _post("minilm_onnx", head + raw, {"Inference-Header-Content-Length": "0"})


_DATATYPES = [[], {}, 1, None, "FP33", "", "fp32", "x" * 100_000, "INT8", "BOOL", "BYTES", "BF16"]


def http_bad_datatypes(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    doc = models.doc(model, models.inputs(rng, model))
    doc["inputs"][0]["datatype"] = rng.choice(_DATATYPES)
    return _post(model, doc)


def http_bad_values(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(["iris_sklearn", "tiny_onnx"])
    arrays = models.inputs(rng, model)
    name = next(n for n, a in arrays.items() if a.dtype == np.float32)
    if rng.random() < 0.5:
        flat = arrays[name].ravel()
        flat[rng.randrange(len(flat))] = rng.choice([np.nan, np.inf, -np.inf, 3.4e38, -3.4e38])
        doc, raw = _binary_doc(models, model, arrays)
        return _binary(model, doc, raw)
    doc = models.doc(model, arrays)
    item = next(i for i in doc["inputs"] if i["name"] == name)
    item["data"][rng.randrange(len(item["data"]))] = rng.choice([1e39, -1e39, 1e308, 2**64 - 1])
    return _post(model, doc)


def http_text_values(rng: random.Random, models: Models) -> HttpRequest:
    choice = rng.randrange(6)
    if choice <= 1:  # token ids past the vocabulary, or negative
        arrays = models.inputs(rng, "minilm_onnx")
        ids = arrays["input_ids"].ravel()
        ids[rng.randrange(len(ids))] = rng.choice([VOCABULARY, VOCABULARY + 7, 2**62, -1, -(2**62)])
        doc, raw = _binary_doc(models, "minilm_onnx", arrays)
        return _binary("minilm_onnx", doc, raw)
    if choice == 2:  # a mask of another length than the ids
        model = "minilm_onnx"
        arrays = models.inputs(rng, model)
        length = arrays["attention_mask"].shape[1]
        arrays["attention_mask"] = np.ones((1, length + rng.randrange(1, 5)), np.int64)
        doc, raw = _binary_doc(models, model, arrays)
        return _binary(model, doc, raw)
    if choice == 3:  # no tokens at all, or more than the position table holds
        length = rng.choice([0, 600])
        arrays = {
            "input_ids": np.ones((1, length), np.int64),
            "attention_mask": np.ones((1, length), np.int64),
        }
        doc, raw = _binary_doc(models, "minilm_onnx", arrays)
        return _binary("minilm_onnx", doc, raw)
    # text that is not UTF-8
    model = "text_embedding"
    text = rng.choice([b"\xff\xfe", b"caf\xe9", b"\xc3", b"ok \xed\xa0\x80"])
    arrays = {"TEXT": np.array([[text]], dtype=object)}
    doc, raw = _binary_doc(models, model, arrays)
    return _binary(model, doc, raw)


def http_oversized_names(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    big = "n" * rng.choice((300, 10_000, 100_000))
    doc = models.doc(model, models.inputs(rng, model))
    choice = rng.randrange(5)
    if choice == 0:
        doc["inputs"][0]["name"] = big
    elif choice == 1:
        doc["outputs"] = [{"name": big}]
    elif choice == 2:
        doc["id"] = big
    elif choice == 3:
        return _post(big[:8000], doc)
    else:
        version = rng.choice(["9" * 4301, "²", "٣", "1" * 19, "-1", "abc"])
        return "POST", f"/v2/models/{model}/versions/{version}/infer", {}, json.dumps(doc).encode()
    return _post(model, doc)


def http_routes(rng: random.Random, models: Models) -> HttpRequest:
    model = rng.choice(models.names)
    return rng.choice(
        [
            ("GET", f"/v2/models/{model}/infer", {}, b""),
            ("PUT", f"/v2/models/{model}/infer", {}, b"{}"),
            ("POST", f"/v2/models/{model}", {}, b"{}"),
            ("POST", f"/v2/models/unknown_{rng.randrange(100)}/infer", {}, b"{}"),
            ("GET", f"/v2/nothing/{rng.randrange(100)}", {}, b""),
            ("DELETE", "/v2", {}, b""),
            ("GET", f"/v2/models/{model}/versions/{'9' * 4301}", {}, b""),
        ]
    )


HTTP_CATEGORIES: dict[str, Callable[[random.Random, Models], HttpRequest]] = {
    "malformed JSON": http_malformed_json,
    "wrong types at a field": http_wrong_types,
    "huge/negative/overflowing shapes": http_shapes,
    "more than 32 dims": http_too_many_dims,
    "duplicate input/output names": http_duplicate_names,
    "unknown or too many outputs": http_unknown_outputs,
    "bad parameters": http_bad_parameters,
    "bad binary headers/sizes": http_bad_binary,
    "bad datatypes": http_bad_datatypes,
    "NaN/inf/huge values": http_bad_values,
    "token ids, masks, UTF-8 (text)": http_text_values,
    "oversized names, bad versions": http_oversized_names,
    "routes and methods": http_routes,
}


# ---- the categories (gRPC) -------------------------------------------------------------------


def _grpc_request(
    models: Models, rng: random.Random, model: str, arrays: dict[str, np.ndarray] | None = None
) -> pb.ModelInferRequest:
    arrays = arrays if arrays is not None else models.inputs(rng, model)
    datatypes = {t["name"]: t["datatype"] for t in models.metadata[model]["inputs"]}
    request = pb.ModelInferRequest(model_name=model)
    for name, array in arrays.items():
        request.inputs.add(name=name, datatype=datatypes[name], shape=list(array.shape))
        request.raw_input_contents.append(_raw(array))
    return request


_GRPC_SHAPES = [s for s in _SHAPES if all(type(d) is int and -(2**63) <= d < 2**63 for d in s)]
GRPC_CATEGORIES = (
    "shapes",
    "dims",
    "duplicates",
    "outputs",
    "parameters",
    "raw contents",
    "datatypes",
    "values",
    "text",
    "names",
)


def grpc_case(rng: random.Random, models: Models) -> tuple[str, pb.ModelInferRequest]:
    model = rng.choice(models.names)
    request = _grpc_request(models, rng, model)
    first = request.inputs[0]
    category = rng.choice(GRPC_CATEGORIES)
    if category == "shapes":  # int64 on the wire
        del first.shape[:]
        first.shape.extend(rng.choice(_GRPC_SHAPES))
    elif category == "dims":
        del first.shape[:]
        first.shape.extend([1] * rng.randrange(33, 100))
    elif category == "duplicates":
        if rng.random() < 0.3:
            request.inputs.append(first)
            request.raw_input_contents.append(request.raw_input_contents[0])
        else:
            name = rng.choice(models.outputs(model))
            for _ in range(rng.choice((2, 100, 20_000))):
                request.outputs.add(name=name)
    elif category == "outputs":
        for i in range(rng.choice((1, 10, 5000))):
            request.outputs.add(name=f"o{i}")
    elif category == "parameters":
        output = request.outputs.add(name=rng.choice(models.outputs(model)))
        choice = rng.randrange(4)
        if choice == 0:
            output.parameters["classification"].bool_param = True
        elif choice == 1:
            output.parameters["classification"].int64_param = rng.choice([-1, 10**18])
        elif choice == 2:
            output.parameters["binary_data"].string_param = "no"
        else:
            key = rng.choice(["timeout", "priority"])
            request.parameters[key].int64_param = rng.choice([-1, 2**62, -(2**62)])
    elif category == "raw contents":
        choice = rng.randrange(3)
        if choice == 0:
            request.raw_input_contents[0] += b"\x00"
        elif choice == 1:
            request.raw_input_contents.append(b"")
        else:
            del request.raw_input_contents[:]
    elif category == "datatypes":
        first.datatype = rng.choice(["FP33", "", "x" * 100_000, "INT8", "BOOL", "BYTES", "FP16"])
    elif category == "values":
        model = rng.choice(["iris_sklearn", "tiny_onnx"])
        arrays = models.inputs(rng, model)
        arrays["input"][0, rng.randrange(4)] = rng.choice([np.nan, np.inf, -np.inf])
        request = _grpc_request(models, rng, model, arrays)
    elif category == "text":
        arrays = models.inputs(rng, "minilm_onnx")
        if rng.random() < 0.5:
            arrays["input_ids"][0, 0] = rng.choice([VOCABULARY, -1, 2**62])
        else:
            arrays["attention_mask"] = np.ones((1, arrays["input_ids"].shape[1] + 2), np.int64)
        request = _grpc_request(models, rng, "minilm_onnx", arrays)
        if rng.random() < 0.3:
            text = np.array([[b"\xff\xfe"]], dtype=object)
            request = _grpc_request(models, rng, "text_embedding", {"TEXT": text})
    else:
        choice = rng.randrange(4)
        if choice == 0:
            request.model_name = "m" * 100_000
        elif choice == 1:
            first.name = "n" * 100_000
        elif choice == 2:
            request.model_version = rng.choice(["9" * 4301, "²", "abc", "-1"])
        else:
            request.outputs.add(name="o" * 100_000)
    return category, request


# ---- running them ----------------------------------------------------------------------------


def _check_error_line(status: int, body: bytes, what: str) -> None:
    assert status < 500, f"{what}: {status} {body[:500]!r}"
    if status >= 400:
        line = json.loads(body)["error"]
        assert ERROR_LINE.match(line), f"{what}: {status} {line[:500]!r}"


def _valid_http(models: Models, rng: random.Random) -> list[HttpRequest]:
    """One valid request per model and encoding: asked before the fuzzing, and during it."""
    requests = []
    for model in models.names:
        arrays = models.inputs(rng, model, rows=2)
        requests.append(_post(model, models.doc(model, arrays)))
        doc, raw = _binary_doc(models, model, arrays)
        doc["parameters"] = {"binary_data_output": True}
        requests.append(_binary(model, doc, raw))
    return requests


_NUMPY = {"FP32": np.float32, "INT64": np.int64}


def _outputs(answer: httpx.Response) -> list[tuple[str, np.ndarray]]:
    """The outputs of a JSON or binary answer, by name."""
    length = answer.headers.get("inference-header-content-length")
    if length is None:
        return [(o["name"], np.asarray(o["data"])) for o in answer.json()["outputs"]]
    outputs, offset = [], int(length)
    for o in json.loads(answer.content[:offset])["outputs"]:
        size = o["parameters"]["binary_data_size"]
        data = answer.content[offset : offset + size]
        outputs.append((o["name"], np.frombuffer(data, _NUMPY[o["datatype"]])))
        offset += size
    return outputs


def _same_answer(first: httpx.Response, later: httpx.Response) -> bool:
    if first.content == later.content:
        return True
    # batched with other requests, a model may compute in other blocks: nearly the same numbers
    return all(
        x[0] == y[0] and np.allclose(x[1], y[1], atol=1e-4)
        for x, y in zip(_outputs(first), _outputs(later), strict=True)
    )


def test_no_malformed_request_gets_a_5xx(server: ServerProcess) -> None:
    base = f"http://{server.http_url}"
    metadata = {
        name: httpx.get(f"{base}/v2/models/{name}").json()
        for name in (
            "iris_sklearn",
            "tiny_onnx",
            "minilm_onnx",
            "text_embedding",
        )
    }
    models = Models(metadata)
    rng = random.Random(SEED)
    valid = _valid_http(models, rng)
    # one client per worker thread: a pool shared by threads can hand one of them a
    # connection another is closing (the server closes after some refusals), which reads
    # as EBADF in the client and says nothing about the server
    clients: list[httpx.Client] = []
    local = threading.local()

    def client_of_thread() -> httpx.Client:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=base, timeout=30)
            clients.append(client)
        return client

    with contextlib.ExitStack() as closing:
        closing.callback(lambda: [c.close() for c in clients])

        def send(request: HttpRequest) -> httpx.Response:
            method, path, headers, body = request
            return client_of_thread().request(method, path, headers=headers, content=body)

        answers = [send(r) for r in valid]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]

        names = list(HTTP_CATEGORIES)
        jobs: list[tuple[str, HttpRequest | int]] = []
        malformed = 0
        while malformed < HTTP_REQUESTS:
            if len(jobs) % VALID_EVERY == VALID_EVERY - 1:
                jobs.append(("valid", len(jobs) % len(valid)))
            else:
                category = names[malformed % len(names)]
                jobs.append((category, HTTP_CATEGORIES[category](rng, models)))
                malformed += 1
        counts: Counter[str] = Counter()
        statuses: Counter[str] = Counter()

        def run(job: tuple[str, HttpRequest | int]) -> tuple[str, int]:
            category, request = job
            if isinstance(request, int):
                answer = send(valid[request])
                assert answer.status_code == 200, answer.text
                assert _same_answer(answers[request], answer), valid[request][1]
                return category, 200
            answer = send(request)
            _check_error_line(answer.status_code, answer.content, f"{category} {request[1][:80]}")
            return category, answer.status_code

        started = time.monotonic()
        with ThreadPoolExecutor(HTTP_WORKERS) as pool:
            for category, status in pool.map(run, jobs):
                counts[category] += 1
                statuses[f"{status // 100}xx"] += 1
        http_seconds = time.monotonic() - started

    assert sum(n for c, n in counts.items() if c != "valid") >= HTTP_REQUESTS
    assert server.process.poll() is None
    assert httpx.get(f"{base}/v2/health/live").status_code == 200
    _check_refusal_lines_bounded(server.log())

    grpc_counts, grpc_codes, grpc_seconds = _fuzz_grpc(server, models, rng)
    _print_table(counts, statuses, http_seconds, grpc_counts, grpc_codes, grpc_seconds)
    assert server.process.poll() is None
    assert httpx.get(f"{base}/v2/health/ready").status_code == 200


_REFUSAL_LINE = re.compile(
    r"^\S+T(\d\d:\d\d:\d\d)\.\d+Z \[warning\s*\] (request_failed|rpc_failed) .*\brule=(\S+)",
    re.MULTILINE,
)


def _check_refusal_lines_bounded(log: str) -> None:
    """A flood of malformed requests writes the first lines of each rule's second and says
    how many it left out (modelyard/refusal_log.py): a rule's second spans two on the
    clock, so at most twice PER_SECOND lines of a rule in a clock second."""
    lines = Counter((m.group(1), m.group(3)) for m in _REFUSAL_LINE.finditer(log))
    assert lines, log[-2000:]
    assert max(lines.values()) <= 2 * PER_SECOND, lines.most_common(3)
    assert "refusals_left_out" in log


_GRPC_ALLOWED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
}


def _fuzz_grpc(
    server: ServerProcess, models: Models, rng: random.Random
) -> tuple[Counter[str], Counter[str], float]:
    counts: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    valid = _grpc_request(models, rng, "iris_sklearn", models.inputs(rng, "iris_sklearn", 2))
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        expected = stub.ModelInfer(valid, timeout=30)
        started = time.monotonic()
        for start in range(0, GRPC_REQUESTS, 100):  # 100 calls in flight at a time
            batch = [grpc_case(rng, models) for _ in range(min(100, GRPC_REQUESTS - start))]
            calls = [(c, stub.ModelInfer.future(r, timeout=30)) for c, r in batch]
            checks = [stub.ModelInfer.future(valid, timeout=30) for _ in range(5)]
            for category, call in calls:
                counts[category] += 1
                try:
                    call.result()
                    code = grpc.StatusCode.OK
                except grpc.RpcError as error:
                    code = error.code()
                    assert code in _GRPC_ALLOWED, f"{category}: {code} {error.details()[:300]}"
                    assert ERROR_LINE.match(error.details()), f"{category}: {error.details()[:300]}"
                codes[code.name] += 1
            for check in checks:
                assert check.result() == expected
                counts["valid"] += 1
        seconds = time.monotonic() - started
    return counts, codes, seconds


def _print_table(
    counts: Counter[str],
    statuses: Counter[str],
    http_seconds: float,
    grpc_counts: Counter[str],
    grpc_codes: Counter[str],
    grpc_seconds: float,
) -> None:
    lines = [f"fuzz, seed {SEED}: HTTP {sum(counts.values())} requests in {http_seconds:.1f} s"]
    lines += [f"  {category:<36} {n:>6}" for category, n in sorted(counts.items())]
    lines.append("  statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    lines.append(f"gRPC {sum(grpc_counts.values())} requests in {grpc_seconds:.1f} s")
    lines += [f"  {category:<36} {n:>6}" for category, n in sorted(grpc_counts.items())]
    lines.append("  codes: " + ", ".join(f"{k} {v}" for k, v in sorted(grpc_codes.items())))
    print("\n" + "\n".join(lines))
