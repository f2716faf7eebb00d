"""SageMaker's front door: its routes onto the V2 front door, and a binary reply's header
size said in its content type."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.sagemaker import (
    BINARY_MIME,
    SageMakerFrontend,
    _binary_reply_said_in_content_type,
)
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from tests.support.models import simple_add_sub

Call = tuple[str, str, bytes] | tuple[str, str, bytes, dict[str, str]]


def _calls(
    tmp_path: Path, environ: dict[str, str], *calls: Call, **manager_args: Any
) -> list[Any]:
    """Each call answered by a SageMaker front door whose multi-model root is
    ``tmp_path/models`` (SageMaker's /opt/ml/models)."""

    async def run() -> list[Any]:
        mode = manager_args.pop("mode", ControlMode.EXPLICIT)
        manager = ModelManager(ModelRepository([tmp_path / "start"]), mode, **manager_args)
        await manager.start()
        http = HttpFrontend(LocalDataPlane(manager), max_body_bytes=1024)
        front = SageMakerFrontend(http, environ, models_root=tmp_path / "models")
        transport = httpx.ASGITransport(app=front)
        answers = []
        async with httpx.AsyncClient(transport=transport, base_url="http://sm") as client:
            for method, path, body, *headers in calls:
                sent = headers[0] if headers else None
                answers.append(await client.request(method, path, content=body, headers=sent))
        await manager.stop()
        return answers

    (tmp_path / "start").mkdir(exist_ok=True)
    return asyncio.run(run())


def test_routes_answer_as_tritons_sagemaker_server(tmp_path: Path) -> None:
    ping, unnamed, listing, other = _calls(
        tmp_path, {}, ("GET", "/ping", b""), ("POST", "/invocations", b"dummy"),
        ("GET", "/models", b""), ("GET", "/v2/health/ready", b""),
    )  # fmt: skip
    assert ping.status_code == 200  # ready: no model asked for
    assert unnamed.status_code == 404  # Triton's placeholder name: an unknown model
    assert "'unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME' is not found" in unnamed.text
    assert listing.status_code == 200 and listing.json() == {"models": []}
    assert other.status_code == 400  # no V2 route here: Triton's 400, with the line
    assert "no route for GET /v2/health/ready; rule=protocol/sagemaker" in other.text
    (named,) = _calls(tmp_path, {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "m"},
                      ("POST", "/invocations", b"{}"))  # fmt: skip
    assert "Request for unknown model: 'm' is not found" in named.text
    (oversized,) = _calls(tmp_path, {}, ("POST", "/invocations", b"x" * 2048))
    assert oversized.status_code == 413 and "rule=protocol/max-body-size" in oversized.text


def test_a_binary_reply_says_its_header_size_in_its_content_type() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    rewritten = _binary_reply_said_in_content_type(send)
    binary = [(b"content-type", b"application/octet-stream"),
              (b"inference-header-content-length", b"42"), (b"content-length", b"90")]  # fmt: skip
    asyncio.run(rewritten({"type": "http.response.start", "status": 200, "headers": binary}))
    assert sent[0]["headers"] == [(b"content-length", b"90"),
                                  (b"content-type", (BINARY_MIME + "42").encode())]  # fmt: skip
    json_only = [(b"content-type", b"application/json")]
    asyncio.run(rewritten({"type": "http.response.start", "status": 200, "headers": json_only}))
    assert sent[1]["headers"] == json_only


def _load(tmp_path: Path, name: str, folder: str) -> tuple[str, str, bytes]:
    url = f"{tmp_path / 'models'}/{folder}"
    return ("POST", "/models", json.dumps({"model_name": name, "url": url}).encode())


INPUTS = {"inputs": [{"name": f"INPUT{i}", "datatype": "INT32", "shape": [1, 16],
                      "data": list(range(16))} for i in (0, 1)]}  # fmt: skip


def test_a_model_is_loaded_invoked_listed_and_unloaded_by_the_name_its_load_gave(
    tmp_path: Path,
) -> None:
    simple_add_sub(tmp_path / "models" / "abc", name="model")  # its config names it 'model'
    body = json.dumps(INPUTS).encode()
    simple_add_sub(tmp_path / "models" / "other", name="model")
    loaded, again, taken, listing, got, invoked, unloaded, after, gone = _calls(
        tmp_path, {}, _load(tmp_path, "ranker", "abc/model"),
        _load(tmp_path, "scorer", "abc/model"), _load(tmp_path, "ranker", "other/model"),
        ("GET", "/models", b""), ("GET", "/models/ranker", b""),
        ("POST", "/models/ranker/invoke", body), ("DELETE", "/models/ranker", b""),
        ("GET", "/models", b""), ("POST", "/models/ranker/invoke", body),
    )  # fmt: skip
    assert loaded.status_code == 200, loaded.text
    assert again.status_code == 409  # the folder is registered already, in Triton's words
    assert "has already been registered" in again.text
    assert "rule=model-server/repository-registration" in again.text
    assert taken.status_code == 409 and "model 'ranker' is loaded already" in taken.text
    url = str(tmp_path / "models" / "abc")
    assert listing.json() == {"models": [{"modelName": "ranker", "modelUrl": url}]}
    assert got.json() == {"modelName": "ranker", "modelUrl": url}
    assert invoked.status_code == 200, invoked.text
    assert invoked.json()["model_name"] == "ranker"
    assert invoked.json()["outputs"][0]["data"] == [2 * i for i in range(16)]
    assert unloaded.status_code == 200 and after.json() == {"models": []}
    assert gone.status_code == 404 and "rule=protocol/sagemaker" in gone.text


def test_an_ensemble_folder_loads_its_ensemble_and_a_target_header_names_the_model(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "models" / "ens" / "model"
    simple_add_sub(folder, name="step")
    (folder / "fan" / "1").mkdir(parents=True)
    (folder / "fan" / "config.pbtxt").write_text(ENSEMBLE)
    target = {"X-Amzn-SageMaker-Target-Model": "served"}
    body = json.dumps(INPUTS).encode()
    loaded, invoked, unloaded = _calls(
        tmp_path, {}, (*_load(tmp_path, "ens", "ens/model"), target),
        ("POST", "/models/ens/invoke", body), ("DELETE", "/models/ens", b""),
    )  # fmt: skip
    assert loaded.status_code == 200, loaded.text
    assert invoked.status_code == 200 and invoked.json()["model_name"] == "served"
    assert unloaded.status_code == 200


ENSEMBLE = """
name: "fan"
platform: "ensemble"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
       { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }]
ensemble_scheduling { step [{ model_name: "step" model_version: -1
  input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
  output_map { key: "OUTPUT0" value: "OUTPUT0" } }] }
"""


def test_bad_multi_model_calls_get_their_error_line_and_the_next_is_served(
    tmp_path: Path,
) -> None:
    simple_add_sub(tmp_path / "models" / "abc", name="model")
    models = tmp_path / "models"
    def load(**doc: object) -> tuple[str, str, bytes]:
        return ("POST", "/models", json.dumps(doc).encode())

    bad = [
        ("POST", "/models", b"{not json"),
        ("POST", "/models", b"[]"),
        load(url=f"{models}/abc/model"),
        load(model_name="a/b", url=f"{models}/abc/model"),
        load(model_name="m", url=7),
        load(model_name="m", url="/etc/passwd"),
        load(model_name="m", url=f"{models}/../abc/model"),
        load(model_name="m", url=f"{models}/../model"),
        load(model_name="m", url=f"{models}/none/model"),
        ("POST", "/models", b"{}", {"X-Amzn-SageMaker-Target-Model": "../x"}),
        ("PUT", "/models", b""),
        ("GET", "/models/unknown", b""),
        ("DELETE", "/models/unknown", b""),
        ("POST", "/models/unknown/invoke", b"{}"),
        ("POST", "/models", b"x" * 2048),
    ]  # fmt: skip
    answers = _calls(tmp_path, {}, *bad, _load(tmp_path, "m", "abc/model"))
    statuses = [answer.status_code for answer in answers]
    assert statuses == [400] * 11 + [404] * 3 + [413, 200], [a.text for a in answers]
    for answer in answers[:-1]:
        assert "rule=protocol/" in answer.text, answer.text
    assert "must be a model folder SageMaker made" in answers[5].text
    assert "must be a model folder SageMaker made" in answers[6].text


def test_a_url_of_several_models_and_no_ensemble_names_no_model(tmp_path: Path) -> None:
    for name in ("first", "second"):
        simple_add_sub(tmp_path / "models" / "many" / "model", name=name)
    refused, listing = _calls(
        tmp_path, {}, _load(tmp_path, "m", "many/model"), ("GET", "/models", b"")
    )  # fmt: skip
    assert refused.status_code == 400 and "rule=protocol/sagemaker" in refused.text
    assert "holds 2 model folders and 0 ensembles" in refused.text
    assert listing.json() == {"models": []}


def test_a_registration_outside_explicit_mode_is_refused_in_tritons_words(
    tmp_path: Path,
) -> None:
    simple_add_sub(tmp_path / "models" / "abc", name="model")
    (refused,) = _calls(tmp_path, {}, _load(tmp_path, "m", "abc/model"), mode=ControlMode.NONE)
    assert refused.status_code != 200
    assert "repository registration is not allowed if model control mode is not EXPLICIT" in (
        refused.text
    )
    assert "rule=model-server/control-mode" in refused.text


def test_a_load_that_does_not_fit_in_memory_is_sagemakers_507(tmp_path: Path) -> None:
    simple_add_sub(tmp_path / "models" / "abc", name="model")
    refused, listing, fits = _calls(
        tmp_path, {}, _load(tmp_path, "m", "abc/model"), ("GET", "/models", b""),
        memory_budget=1,
    ) + _calls(tmp_path, {}, _load(tmp_path, "m", "abc/model"))  # fmt: skip
    assert refused.status_code == 507, refused.text
    assert "rule=model-server/memory-budget" in refused.text
    assert listing.json() == {"models": []}
    assert fits.status_code == 200  # the refused load left no registration behind
