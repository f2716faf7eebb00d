"""Triton's logging extension with tritonclient: read, change live, and see it in the log."""

from __future__ import annotations

import time
from pathlib import Path

import grpc as grpc_module
import httpx
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from tests.support.models import slow_double
from tests.support.servers import running_server, wait_until


def test_log_settings_are_read_and_changed_live_over_http_and_grpc(tmp_path: Path) -> None:
    slow_double(tmp_path / "models")
    with (
        running_server(tmp_path / "models", tmp_path) as server,
        httpclient.InferenceServerClient(server.http_url) as http,
        grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as grpc,
    ):
        assert "logging" in http.get_server_metadata()["extensions"]
        assert http.get_log_settings() == {
            "log_file": "",
            "log_info": True,
            "log_warning": True,
            "log_error": True,
            "log_verbose_level": 0,
            "log_format": "default",
        }

        def unknown_model_call(marker: str) -> None:  # answered 404, logged as a warning
            httpx.post(f"http://{server.http_url}/v2/models/{marker}/infer", json={"inputs": []})

        assert http.update_log_settings({"log_warning": False})["log_warning"] is False
        unknown_model_call("quiet-marker")
        assert grpc.get_log_settings().settings["log_warning"].bool_param is False
        grpc.update_log_settings({"log_warnings": True, "log_verbose_level": 1})
        assert http.get_log_settings()["log_verbose_level"] == 1
        unknown_model_call("loud-marker")
        wait_until(lambda: "loud-marker" in server.log(), timeout=10)
        time.sleep(0.2)
        assert "quiet-marker" not in server.log()

        with pytest.raises(InferenceServerException) as refused:
            http.update_log_settings({"log_file": str(tmp_path / "elsewhere.log")})
        assert "rule=protocol/log-settings" in str(refused.value)
        with grpc_module.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            request = service_pb2.LogSettingsRequest()
            request.settings["log_info"].string_param = "sometimes"  # tritonclient would not
            stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
            with pytest.raises(grpc_module.RpcError) as bad:
                stub.LogSettings(request, timeout=10)
        assert bad.value.code() == grpc_module.StatusCode.INVALID_ARGUMENT
        assert "log_info must be true or false" in bad.value.details()
        assert not (tmp_path / "elsewhere.log").exists()

        for garbage, detail in ((b"{not json", "malformed JSON"), (b"[1, 2]", "JSON object")):
            answer = httpx.post(f"http://{server.http_url}/v2/logging", content=garbage)
            assert answer.status_code == 400
            line = answer.json()["error"]
            assert line.startswith("[protocol] ") and detail in line
            assert "rule=protocol/json" in line
        assert http.get_log_settings()["log_verbose_level"] == 1  # nothing changed
