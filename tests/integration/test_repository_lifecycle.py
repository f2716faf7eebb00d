"""Repository API in explicit mode, and hot reload under load in poll mode."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests.support.models import slow_double
from tests.support.servers import server_in_process, wait_until

X = np.array([[1.0, 2.0]], dtype=np.float32)


def double(client: httpclient.InferenceServerClient, version: str = "") -> httpclient.InferResult:
    item = httpclient.InferInput("x", [1, 2], "FP32")
    item.set_data_from_numpy(X)
    return client.infer("slow_double", [item], model_version=version)


def test_explicit_mode_load_unload_and_config_override(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    slow_double(repository, versions=(1, 2))
    # the client is closed here: one left to the collector may be closed from another
    # thread later, where its gevent pool cannot be, and fail whichever test runs then
    with (
        server_in_process(
            repository, "--model-control-mode", "explicit", wait_ready=False
        ) as server,
        httpclient.InferenceServerClient(server.http_url) as client,
    ):
        assert client.get_model_repository_index() == [{"name": "slow_double"}]
        assert not client.is_model_ready("slow_double")

        client.load_model("slow_double")
        assert client.is_model_ready("slow_double")
        assert double(client).as_numpy("y").tolist() == [[2002.0, 2004.0]]

        override = {
            "backend": "python",
            "max_batch_size": 4,
            "version_policy": {"specific": {"versions": [1]}},
            "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
            "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}],
        }
        client.load_model("slow_double", config=json.dumps(override))
        assert double(client).get_response()["model_version"] == "1"
        assert client.get_model_config("slow_double")["max_batch_size"] == 4
        wait_until(lambda: not client.is_model_ready("slow_double", "2"), timeout=10)

        client.unload_model("slow_double")
        assert not client.is_model_ready("slow_double")
        with pytest.raises(InferenceServerException) as gone:
            double(client)
        assert gone.value.status() == "404"
        wait_until(
            lambda: (
                client.get_model_repository_index()
                == [{"name": "slow_double", "state": "UNAVAILABLE", "reason": "unloaded"}]
            ),
            timeout=10,
        )

        with pytest.raises(InferenceServerException) as unknown:
            client.load_model("not_there")
        assert unknown.value.status() == "404"
        with pytest.raises(InferenceServerException) as bad_override:
            client.load_model("slow_double", config='{"max_batch_size": "x"}')
        assert bad_override.value.status() == "400"
        assert "invalid model config" in bad_override.value.message()


def test_hot_reload_under_load_fails_no_request(tmp_path: Path) -> None:
    repository = tmp_path / "models"
    model_dir = slow_double(repository, delay=0.002)
    with server_in_process(
        repository,
        "--model-control-mode",
        "poll",
        "--repository-poll-secs",
        "0.2",
    ) as server:
        errors: list[str] = []
        versions: list[str] = []
        stop = threading.Event()

        def load() -> None:
            # closed in its own thread: the client's gevent pool cannot be closed from another
            with httpclient.InferenceServerClient(server.http_url) as client:
                while not stop.is_set():
                    try:
                        versions.append(double(client).get_response()["model_version"])
                    except InferenceServerException as exc:
                        errors.append(str(exc))

        workers = [threading.Thread(target=load) for _ in range(4)]
        for worker in workers:
            worker.start()
        try:
            wait_until(lambda: len(versions) > 50, timeout=30)
            shutil.copytree(model_dir / "1", model_dir / "2")
            wait_until(lambda: versions[-1] == "2", timeout=30)
            time.sleep(0.3)
            shutil.rmtree(model_dir / "2")
            wait_until(lambda: versions[-1] == "1", timeout=30)
            time.sleep(0.3)
        finally:
            stop.set()
            for worker in workers:
                worker.join()
        assert errors == []
        assert "1" in versions and "2" in versions
        switch = versions.index("2")
        assert len(versions) > switch + 10
