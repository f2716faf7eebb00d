"""``--model-namespacing``: the same model name in several repositories, as Triton's
namespacing tests check it.

Two repositories each hold an ensemble and a model named ``composing_model``: in
``addsub_repo`` it adds then subtracts, in ``subadd_repo`` the other way round. Each
ensemble must reach its own repository's ``composing_model``; a request for the
shared name is refused as ambiguous; a name in one repository only serves as usual;
and when a repository stops holding the shared name, the other's model serves it.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.support.models import write_python_model
from tests.support.servers import server_in_process, wait_until

COMPOSING = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            first, second = (a + b, a - b) if ADD_FIRST else (a - b, a + b)
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", first), pb_utils.Tensor("OUTPUT1", second)]
            ))
        return responses
"""

TENSORS = """
max_batch_size: 0
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
"""

ENSEMBLE = (
    'platform: "ensemble"\n'
    + TENSORS
    + """
ensemble_scheduling {
  step [{
    model_name: "STEP"
    model_version: -1
    input_map { key: "INPUT0" value: "INPUT0" }
    input_map { key: "INPUT1" value: "INPUT1" }
    output_map { key: "OUTPUT0" value: "OUTPUT0" }
    output_map { key: "OUTPUT1" value: "OUTPUT1" }
  }]
}
"""
)

DATA = np.arange(16, dtype=np.int32)
ADD_SUB = (DATA + DATA, DATA - DATA)
SUB_ADD = (DATA - DATA, DATA + DATA)


def _repositories(root: Path, ensemble: str, step: str) -> tuple[Path, Path]:
    """addsub_repo and subadd_repo, each with an ensemble whose one step is ``step``."""
    repositories = []
    for kind, add_first in (("addsub", True), ("subadd", False)):
        repository = root / f"{kind}_repo"
        source = COMPOSING.replace("ADD_FIRST", str(add_first))
        step_name = step.replace("KIND", kind)
        write_python_model(repository, step_name, source, 'backend: "python"\n' + TENSORS)
        ensemble_name = ensemble.replace("KIND", kind)
        (repository / ensemble_name / "1").mkdir(parents=True)
        (repository / ensemble_name / "config.pbtxt").write_text(
            ENSEMBLE.replace("STEP", step_name)
        )
        repositories.append(repository)
    return repositories[0], repositories[1]


def _infer(client: httpclient.InferenceServerClient, model: str) -> tuple[np.ndarray, ...]:
    inputs = [httpclient.InferInput(name, [16], "INT32") for name in ("INPUT0", "INPUT1")]
    for item in inputs:
        item.set_data_from_numpy(DATA)
    result = client.infer(model, inputs)
    return result.as_numpy("OUTPUT0"), result.as_numpy("OUTPUT1")


def _check(client: httpclient.InferenceServerClient, model: str, expected: tuple[np.ndarray, ...]
           ) -> None:  # fmt: skip
    got = _infer(client, model)
    np.testing.assert_array_equal(got[0], expected[0], err_msg=model)
    np.testing.assert_array_equal(got[1], expected[1], err_msg=model)


def _ambiguous(client: httpclient.InferenceServerClient, model: str) -> None:
    with pytest.raises(InferenceServerException) as refused:
        _infer(client, model)
    message = refused.value.message()
    assert "There are 2 identifiers of model" in message and "ambiguity" in message
    assert "rule=model-server/ambiguous-model" in message
    assert refused.value.status() == "400"


def _namespaced_again(client: httpclient.InferenceServerClient) -> bool:
    """Both keys serve, and the bare name no longer does (a scan loads them one by one)."""
    return (
        client.is_model_ready("composing_model::1")
        and client.is_model_ready("composing_model::2")
        and not client.is_model_ready("composing_model")
    )


@pytest.mark.parametrize("mode", ["poll", "explicit"])
def test_ensembles_reach_their_own_repository_s_model_of_a_shared_name(
    tmp_path: Path, mode: str
) -> None:
    addsub, subadd = _repositories(tmp_path, "simple_KIND", "composing_model")
    flags = ["--model-store", str(subadd), "--model-namespacing=true"]
    if mode == "poll":
        flags += ["--model-control-mode=poll", "--repository-poll-secs=0.5"]
    else:
        flags += ["--model-control-mode=explicit"]
    with server_in_process(addsub, *flags) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            if mode == "explicit":  # loading an ensemble loads its own composing model
                for model in ("simple_addsub", "simple_subadd"):
                    client.load_model(model)
                # a load request's own config or files cannot say which of two it is
                override = json.dumps({"backend": "python", "max_batch_size": 0})
                for files in (None, {"file:1/model.py": b"print(1)"}):
                    with pytest.raises(InferenceServerException) as refused:
                        client.load_model("composing_model", config=override, files=files)
                    assert "ambiguity" in refused.value.message()
            _check(client, "simple_addsub", ADD_SUB)
            _check(client, "simple_subadd", SUB_ADD)
            _ambiguous(client, "composing_model")
            _check(client, "composing_model::2", SUB_ADD)  # named with its repository
            names = {row["name"] for row in client.get_model_repository_index()}
            assert {"composing_model::1", "composing_model::2"} <= names
            # the shared name leaves addsub_repo: both ensembles now reach subadd_repo's
            shutil.move(addsub / "composing_model", tmp_path / "composing_model")
            if mode == "explicit":
                client.load_model("composing_model")
            wait_until(lambda: client.is_model_ready("composing_model"), timeout=30)
            for model in ("simple_subadd", "simple_addsub", "composing_model"):
                _check(client, model, SUB_ADD)
            # and comes back: shared, and ambiguous, again
            shutil.move(tmp_path / "composing_model", addsub / "composing_model")
            if mode == "explicit":
                client.load_model("simple_addsub")
            else:
                time.sleep(1.5)  # a poll or more
            wait_until(lambda: _namespaced_again(client), timeout=30)
            _check(client, "simple_addsub", ADD_SUB)
            _check(client, "simple_subadd", SUB_ADD)
            _ambiguous(client, "composing_model")
        finally:
            client.close()


def test_an_ensemble_s_step_serves_on_while_its_model_changes_key(tmp_path: Path) -> None:
    """Between a scan that sees a name stop being shared and the load of its new key, the
    step's model serves on under its old key: the ensemble has no gap."""
    addsub, subadd = _repositories(tmp_path, "simple_KIND", "composing_model")
    flags = ["--model-store", str(subadd), "--model-namespacing=true"]
    with server_in_process(addsub, *flags) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            _check(client, "simple_subadd", SUB_ADD)  # through composing_model::2
            shutil.move(addsub / "composing_model", tmp_path / "composing_model")
            server.manager.repository.model_names()  # the scan, before any load
            assert server.manager.repository.keys_of("composing_model") == ["composing_model"]
            assert not client.is_model_ready("composing_model")
            _check(client, "simple_subadd", SUB_ADD)  # still composing_model::2's directory
        finally:
            client.close()


def test_a_shared_ensemble_name_is_ambiguous_and_its_steps_are_not(tmp_path: Path) -> None:
    addsub, subadd = _repositories(tmp_path, "simple_ensemble", "composing_KIND")
    with server_in_process(
        addsub, "--model-repository", str(subadd), "--model-namespacing=true"
    ) as server:
        client = httpclient.InferenceServerClient(server.http_url)
        try:
            _check(client, "composing_addsub", ADD_SUB)
            _check(client, "composing_subadd", SUB_ADD)
            _ambiguous(client, "simple_ensemble")
            _check(client, "simple_ensemble::1", ADD_SUB)
        finally:
            client.close()
