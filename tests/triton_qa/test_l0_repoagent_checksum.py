"""Triton's qa/L0_repoagent_checksum: the ``checksum`` repository agent refuses a model
whose file's digest is not the one its config names, and loads it once it is.

As its test.sh: the folder's ``identity_int32`` (the identity backend; its config names
the MD5 of ``1/libtriton_identity.so``, first ``invalid_checksum``, and of its
``data_file``). ``Dockerfile.QA`` puts the identity backend's library there; the agent
only reads its bytes, so here it is a file of other bytes. The server must not start,
its log saying ``'identity_int32': Mismatched MD5 hash for file 1/libtriton_identity.so``;
with test.sh's edit (the file's own digest) it serves, and ``identity_test.py`` passes
over HTTP and gRPC. About 8 s, in the default run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness

pytestmark = pytest.mark.slow

LIBRARY = "1/libtriton_identity.so"


def test_repoagent_checksum(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_repoagent_checksum")
    model = work / "models" / "identity_int32"
    (model / "1").mkdir(exist_ok=True)
    (model / LIBRARY).write_bytes(b"the identity backend's library stands here\n")
    args = [f"--model-repository={work / 'models'}"]
    log = harness.start_fails(host, args, tmp_path / "mismatch.log")
    assert f"'identity_int32': Mismatched MD5 hash for file {LIBRARY}" in log, log[-3000:]

    digest = hashlib.md5((model / LIBRARY).read_bytes()).hexdigest()  # test.sh's md5sum, sed
    config = model / "config.pbtxt"
    config.write_text(config.read_text().replace("invalid_checksum", digest))
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        for protocol in ("http", "grpc"):
            done = harness.run_script(
                host, work / "identity_test.py", "-i", protocol, "-v", cwd=work
            )
            assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
