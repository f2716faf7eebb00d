"""A load request's ``file:`` overrides, as tritonclient sends them over HTTP and gRPC.

As in Triton: the model is loaded from a fresh directory holding only the files the
request gave, with the request's ``config``; the repository is never written. Then
what a hostile caller sends: names that climb out, hidden names, bad base64, code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.support.models import simple_add_sub
from tests.support.servers import Served, server_in_process

CONFIG = {
    "platform": "onnxruntime_onnx",
    "max_batch_size": 8,
    "input": [
        {"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
        {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]},
    ],
    "output": [
        {"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
        {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]},
    ],
}


@pytest.fixture(scope="module")
def onnx_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    built = simple_add_sub(tmp_path_factory.mktemp("built"))
    return (built / "1" / "model.onnx").read_bytes()


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("override") / "models"
    simple_add_sub(repository)
    return repository


@pytest.fixture(scope="module")
def explicit_server(repository: Path) -> Iterator[Served]:
    with server_in_process(
        repository,
        "--model-control-mode=explicit",
        "--load-model=simple",
    ) as server:
        yield server


def _files(repository: Path) -> list[str]:
    return sorted(str(p.relative_to(repository)) for p in repository.rglob("*"))


def _infer(client: Any, module: Any, model: str) -> np.ndarray:
    inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    inputs[1].set_data_from_numpy(np.full((1, 16), 2, dtype=np.int32))
    return client.infer(model, inputs).as_numpy("OUTPUT1")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_model_loads_from_the_files_a_request_gives(
    protocol: str,
    explicit_server: Served,
    repository: Path,
    onnx_bytes: bytes,
) -> None:
    module: Any = grpcclient if protocol == "grpc" else httpclient
    url = explicit_server.grpc_url if protocol == "grpc" else explicit_server.http_url
    client = module.InferenceServerClient(url)
    before = _files(repository)
    name = f"from_files_{protocol}"
    try:
        client.load_model(name, config=json.dumps(CONFIG), files={"file:3/model.onnx": onnx_bytes})
        assert client.is_model_ready(name, "3")
        np.testing.assert_array_equal(
            _infer(client, module, name), np.arange(16).reshape(1, 16) - 2
        )
        assert _files(repository) == before  # nothing written into the repository
        client.unload_model(name)
        assert not client.is_model_ready(name)
    finally:
        client.close()


@pytest.mark.parametrize(
    "key",
    [
        "file:../escape/model.onnx",
        "file:1/../../model.onnx",
        "file:/tmp/model.onnx",
        "file:1/.hidden",
        "file:one/model.onnx",
        "file:model.onnx",
        "file:1//model.onnx",
        "file:1/a/b/c/d/e/f/model.onnx",
    ],
)
def test_a_file_name_that_could_leave_its_directory_is_refused(
    key: str, explicit_server: Served, repository: Path, onnx_bytes: bytes
) -> None:
    client = httpclient.InferenceServerClient(explicit_server.http_url)
    before = _files(repository)
    try:
        with pytest.raises(InferenceServerException) as refused:
            client.load_model("escape", config=json.dumps(CONFIG), files={key: onnx_bytes})
        assert refused.value.status() == "400"
        assert "rule=protocol/load-file-override" in str(refused.value)
        assert _files(repository) == before
        assert client.is_model_ready("simple")
    finally:
        client.close()


@pytest.mark.parametrize(
    ("parameters", "words"),
    [
        ({"file:1/model.onnx": "bm90IGJhc2U2NA=!"}, "must be base64"),
        ({"file:1/model.onnx": 7}, "must be base64"),
        ({"config": json.dumps(CONFIG), "file:1/model.onnx": "***"}, "must be base64"),
        ({"file:1/model.onnx": "AAAA"}, "need the 'config' parameter"),
    ],
)
def test_malformed_file_overrides_get_their_line(
    parameters: dict[str, Any], words: str, explicit_server: Served
) -> None:
    if "config" not in parameters and "must be base64" in words:
        parameters = {"config": json.dumps(CONFIG), **parameters}
    response = httpx.post(
        f"http://{explicit_server.http_url}/v2/repository/models/bad/load",
        json={"parameters": parameters},
    )
    assert response.status_code == 400
    assert words in response.json()["error"]


def test_too_many_files_are_refused_before_any_is_written(
    explicit_server: Served,
) -> None:
    parameters: dict[str, Any] = {"config": json.dumps(CONFIG)}
    parameters.update({f"file:1/f{index}": "AAAA" for index in range(65)})
    response = httpx.post(
        f"http://{explicit_server.http_url}/v2/repository/models/many/load",
        json={"parameters": parameters},
    )
    assert response.status_code == 400
    assert "at most 64 files" in response.json()["error"]


def test_files_that_do_not_make_a_model_fail_to_load_and_serve_nothing(
    explicit_server: Served,
) -> None:
    client = httpclient.InferenceServerClient(explicit_server.http_url)
    try:
        with pytest.raises(InferenceServerException) as failed:
            client.load_model(
                "garbage", config=json.dumps(CONFIG), files={"file:1/model.onnx": b"not onnx"}
            )
        assert str(failed.value).startswith(
            "[400] load failed for model 'garbage': version 1 is at UNAVAILABLE state: "
        )
        assert not client.is_model_ready("garbage")
        assert client.is_model_ready("simple")
    finally:
        client.close()


def test_a_name_that_is_both_a_file_and_a_directory_leaves_nothing_behind(
    explicit_server: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    # the server is in this process: its load folders go here, where no other test's do
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    response = httpx.post(
        f"http://{explicit_server.http_url}/v2/repository/models/clash/load",
        json={
            "parameters": {"config": json.dumps(CONFIG), "file:1/a": "AAAA", "file:1/a/b": "AAAA"}
        },
    )
    assert response.status_code == 400
    assert "both a file and a directory" in response.json()["error"]
    assert not list(tmp_path.glob("modelyard-load-*"))


def test_model_files_that_are_code_are_refused_from_a_request(
    explicit_server: Served,
) -> None:
    """TorchScript can read the server's files; a python model runs the caller's code."""
    client = httpclient.InferenceServerClient(explicit_server.http_url)
    config = {**CONFIG, "platform": "pytorch_libtorch"}
    try:
        with pytest.raises(InferenceServerException) as refused:
            client.load_model(
                "scripted", config=json.dumps(config), files={"file:1/model.pt": b"PK"}
            )
        assert "a pytorch model from a load request's files" in str(refused.value)
        assert refused.value.status() == "400"
    finally:
        client.close()
