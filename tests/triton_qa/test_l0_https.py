"""Triton's qa/L0_https: tritonclient's HTTP examples over TLS, through an nginx proxy
in front of the server, as Triton's documentation advises for HTTPS.

As its test.sh's Python half: test.sh's certificates made with its own openssl
commands (a CA, a server certificate for localhost, a client certificate, and a client
key and certificate mangled by its sed), nginx started with the folder's unchanged
``nginx.conf`` (TLS on 443, ``proxy_pass http://localhost:8000``) and the server's key
and certificate where that file names them (``/etc/nginx``, a tmpfs of a mount
namespace of nginx's own: nothing of the host's changes), then
``simple_http_infer_client.py`` and ``simple_http_aio_infer_client.py`` with
``--ssl`` and the client's key, certificate and CA (must end 0), with ``--ssl
--insecure`` (must end 0), without ``--ssl`` (must fail: nothing is on port 80) and
with the mangled key (must fail). Its C++ client half is not built here.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.models import simple_add_sub
from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx (.ci/run installs it)"),
]

# test.sh's certificates, its commands unchanged
CERTIFICATES = """
openssl genrsa -passout pass:1234 -des3 -out ca.key 4096
openssl req -passin pass:1234 -new -x509 -days 365 -key ca.key -out ca.crt -subj  "/C=SP/ST=Spain/L=Valdepenias/O=Test/OU=Test/CN=Root CA"
openssl genrsa -passout pass:1234 -des3 -out server.key 4096
openssl req -passin pass:1234 -new -key server.key -out server.csr -subj  "/C=SP/ST=Spain/L=Valdepenias/O=Test/OU=Server/CN=localhost"
openssl x509 -req -passin pass:1234 -days 365 -in server.csr -CA ca.crt -CAkey ca.key -set_serial 01 -out server.crt
openssl rsa -passin pass:1234 -in server.key -out server.key
openssl genrsa -passout pass:1234 -des3 -out client.key 4096
openssl req -passin pass:1234 -new -key client.key -out client.csr -subj  "/C=SP/ST=Spain/L=Valdepenias/O=Test/OU=Client/CN=localhost"
openssl x509 -passin pass:1234 -req -days 365 -in client.csr -CA ca.crt -CAkey ca.key -set_serial 01 -out client.crt
openssl rsa -passin pass:1234 -in client.key -out client.key
cp client.key client2.key && sed -i "s/\\b\\(.\\)/\\u\\1/g" client2.key
cp client.crt client2.crt && sed -i "s/\\b\\(.\\)/\\u\\1/g" client2.crt
"""  # noqa: E501

# nginx's own settings around the folder's server block: everything it writes in ``work``
NGINX_MAIN = """
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx.error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {work}/nginx-body;
    proxy_temp_path {work}/nginx-proxy;
    include {work}/nginx.conf;
}}
"""

SECURE = ("--key-file", "client.key", "--cert-file", "client.crt", "--ca-certs", "ca.crt")
# the client's arguments after ``-v -u localhost``, and whether it must end 0
RUNS = (
    (("--ssl", *SECURE), True),
    (("--ssl", "--insecure"), True),
    ((), False),
    (("--ssl", "--key-file", "client2.key", "--cert-file", "client.crt", "--ca-certs",
      "ca.crt"), False),
)  # fmt: skip
CLIENTS = ("simple_http_infer_client.py", "simple_http_aio_infer_client.py")


def nginx(work: Path) -> list[str]:
    """nginx in the foreground, its /etc/nginx a tmpfs holding the server's key and
    certificate as test.sh moves them there."""
    (work / "nginx-main.conf").write_text(NGINX_MAIN.format(work=work))
    steps = [
        "mount -t tmpfs tmpfs /etc/nginx",
        f"cp {work}/server.crt /etc/nginx/cert.crt",
        f"cp {work}/server.key /etc/nginx/cert.key",
        f"exec nginx -e {work}/nginx.error.log -c {work}/nginx-main.conf",
    ]
    script = " && ".join(["mkdir -p /etc/nginx", *steps])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def test_https(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_https")
    subprocess.run(["bash", "-ec", CERTIFICATES], cwd=work, check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    models = work / "models"
    models.mkdir()
    simple_add_sub(models)
    failed = []
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "s.log"):
        proxy = host.start(nginx(work), tmp_path / "nginx.log", cwd=work)
        try:
            harness.wait_for_port(host, 443)

            def run(client: str, args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
                script = harness.CLIENT_EXAMPLES / client
                return harness.run_script(host, script, "-v", "-u", "localhost", *args, cwd=work)

            runs = [(client, args, passes) for client in CLIENTS for args, passes in RUNS]
            with ThreadPoolExecutor(4) as pool:  # each run is mostly its client's start
                ended = list(pool.map(lambda each: run(each[0], each[1]), runs))
        finally:
            proxy.stop()
    for (client, args, passes), done in zip(runs, ended, strict=True):
        if (done.returncode == 0) != passes:
            log = (done.stdout + done.stderr)[-1500:]
            failed.append(f"{client} {args}: ended {done.returncode}: {log}")
    assert not failed, "\n".join(failed) + proxy.log()
