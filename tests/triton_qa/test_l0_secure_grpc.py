"""Triton's qa/L0_secure_grpc (bash alone): gRPC over TLS, with the server authenticated
(``--grpc-use-ssl``), both sides (``--grpc-use-ssl-mutual``), and both flags given; a
client without TLS, or with a mangled key and certificate, is refused.

As its test.sh: its certificates made with openssl (a CA, the server's and the client's,
``CN=localhost``; the client's key and certificate mangled by its sed), a server a case on
the example ``simple``, and the Python gRPC examples (``simple_grpc_infer_client.py`` and
its asyncio twin) that must pass, then those that must fail. Its C++ client is not built
here (docs/triton-qa.md). About 20 s, in the default run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl"),
]

CLIENTS = ("simple_grpc_infer_client.py", "simple_grpc_aio_infer_client.py")
CASES = {
    "server": ["--grpc-use-ssl=1"],
    "mutual": ["--grpc-use-ssl-mutual=1"],
    "both": ["--grpc-use-ssl=1", "--grpc-use-ssl-mutual=1"],
}
SUBJECT = "/C=SP/ST=Spain/L=Valdepenias/O=Test/OU={}/CN={}"


def _openssl(where: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True, timeout=120)


def certificates(where: Path) -> None:
    """test.sh's openssl commands, in order."""
    _openssl(where, "genrsa", "-passout", "pass:1234", "-des3", "-out", "ca.key", "4096")
    _openssl(where, "req", "-passin", "pass:1234", "-new", "-x509", "-days", "365",
             "-key", "ca.key", "-out", "ca.crt",
             "-subj", SUBJECT.format("Test", "Root CA"))  # fmt: skip
    for side, ou in (("server", "Server"), ("client", "Client")):
        _openssl(where, "genrsa", "-passout", "pass:1234", "-des3", "-out", f"{side}.key", "4096")
        _openssl(where, "req", "-passin", "pass:1234", "-new", "-key", f"{side}.key",
                 "-out", f"{side}.csr", "-subj", SUBJECT.format(ou, "localhost"))  # fmt: skip
        _openssl(where, "x509", "-req", "-passin", "pass:1234", "-days", "365",
                 "-in", f"{side}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", "01",
                 "-out", f"{side}.crt")  # fmt: skip
        _openssl(where, "rsa", "-passin", "pass:1234", "-in", f"{side}.key",
                 "-out", f"{side}.key")  # fmt: skip
    for name in ("client.key", "client.crt"):  # sed "s/\b\(.\)/\u\1/g": mangled
        text = (where / name).read_text()
        mangled = re.sub(r"\b(.)", lambda match: match.group(1).upper(), text)
        (where / name.replace("client", "client2")).write_text(mangled)


def test_secure_grpc(host: LoopbackHost, tmp_path: Path) -> None:
    certificates(tmp_path)
    models = tmp_path / "models"
    models.mkdir()
    simple_add_sub(models)
    base = [f"--model-repository={models}", "--grpc-use-ssl=1",
            "--grpc-server-cert", "server.crt", "--grpc-server-key", "server.key",
            "--grpc-root-cert", "ca.crt"]  # fmt: skip
    tls = ["--ssl", "--root-certificates", "ca.crt"]
    good = [*tls, "--private-key", "client.key", "--certificate-chain", "client.crt"]
    wrong = [*tls, "--private-key", "client2.key", "--certificate-chain", "client2.crt"]
    outcomes = []
    for case, flags in CASES.items():
        runs = [(good, True)] + ([] if case == "both" else [([], False), (wrong, False)])
        log = tmp_path / f"{case}.log"
        with harness.tritonserver(host, [*base, *flags], log, cwd=tmp_path):
            for args, passes in runs:
                for client in CLIENTS:
                    done = harness.run_script(
                        host, harness.CLIENT_EXAMPLES / client, "-v", *args, cwd=tmp_path
                    )
                    if (done.returncode == 0) != passes:
                        outcomes.append(f"{case} {client} {args}: {done.returncode}\n"
                                        f"{(done.stdout + done.stderr)[-1500:]}")  # fmt: skip
    assert not outcomes, "\n".join(outcomes)
