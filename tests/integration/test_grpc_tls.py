"""gRPC over TLS as tritonserver serves it: --grpc-use-ssl with a certificate and key,
--grpc-use-ssl-mutual with the root certificate clients' certificates are signed by."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.support.models import slow_double
from tests.support.servers import server_in_process


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key, made by openssl now."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert),
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def _double(client: grpcclient.InferenceServerClient) -> list[list[float]]:
    item = grpcclient.InferInput("x", [1, 2], "FP32")
    item.set_data_from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
    return client.infer("slow_double", [item]).as_numpy("y").tolist()  # type: ignore[no-any-return]


def test_grpc_over_tls_serves_only_clients_that_speak_it(tmp_path: Path) -> None:
    slow_double(tmp_path / "models")
    cert, key = _self_signed(tmp_path, "server")
    with server_in_process(
        tmp_path / "models", "--grpc-use-ssl=true",
        f"--grpc-server-cert={cert}", f"--grpc-server-key={key}",
    ) as server:  # fmt: skip
        secure = grpcclient.InferenceServerClient(
            server.grpc_url, ssl=True, root_certificates=str(cert)
        )
        plain = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            assert _double(secure) == [[1002.0, 1004.0]]
            with pytest.raises(InferenceServerException):
                plain.is_server_live()
        finally:
            secure.close()
            plain.close()


def test_mutual_tls_refuses_a_client_without_a_certificate(tmp_path: Path) -> None:
    slow_double(tmp_path / "models")
    cert, key = _self_signed(tmp_path, "server")
    client_cert, client_key = _self_signed(tmp_path, "client")
    with server_in_process(
        tmp_path / "models", "--grpc-use-ssl-mutual=true",
        f"--grpc-server-cert={cert}", f"--grpc-server-key={key}",
        f"--grpc-root-cert={client_cert}",
    ) as server:  # fmt: skip
        known = grpcclient.InferenceServerClient(
            server.grpc_url, ssl=True, root_certificates=str(cert),
            private_key=str(client_key), certificate_chain=str(client_cert),
        )  # fmt: skip
        anonymous = grpcclient.InferenceServerClient(
            server.grpc_url, ssl=True, root_certificates=str(cert)
        )
        try:
            assert _double(known) == [[1002.0, 1004.0]]
            with pytest.raises(InferenceServerException):
                anonymous.is_server_live()
        finally:
            known.close()
            anonymous.close()


def test_tls_without_its_files_is_refused_at_start(tmp_path: Path) -> None:
    from modelyard.processes import serve_command

    slow_double(tmp_path)
    command = serve_command(tmp_path, http_port=0, metrics_port=-1)
    result = subprocess.run(
        [*command, "--grpc-use-ssl=true", f"--grpc-server-cert={tmp_path / 'none.crt'}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--grpc-server-cert" in result.stderr and "cannot read it" in result.stderr
    assert "rule=serve/triton-flag" in result.stderr and "Traceback" not in result.stderr
    cert, _ = _self_signed(tmp_path, "server")
    result = subprocess.run(
        [*command, "--grpc-use-ssl=true", f"--grpc-server-cert={cert}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "--grpc-server-key is needed with --grpc-use-ssl" in result.stderr
