"""Triton's qa/L0_http: its Python test files, with the servers its test.sh starts.

- ``http_test.py``: raw binary requests (Inference-Header-Content-Length: 0), a chunked
  body, the queue-full status (a lone request held for its preferred batch), against
  the identity models test.sh copies and edits;
- ``python_http_aio_test.py`` and ``http_client_plugin_test.py``: the asyncio client and
  client plugins, against Triton's example models (``counted_example_models``: the seven
  its repository holds);
- ``http_restricted_api_test.py``: ``--http-restricted-api``, after the two command lines
  test.sh expects to stop the server;
- ``generate_endpoint_test.py``: Triton's generate extension (``/generate``,
  ``/generate_stream`` over Server-Sent Events), its 17 tests against one server of the
  folder's ``generate_models`` (Triton's decoupled python model ``mock_llm``).

The client examples test.sh runs are tests/triton_qa/test_client_examples.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness, repositories

pytestmark = pytest.mark.slow

QUEUE = """dynamic_batching {
    max_queue_delay_microseconds: 1000000
    preferred_batch_size: [ 8 ]
    default_queue_policy {
        max_queue_size: 1
    }
}
"""


def _unit_test_models(work: Path) -> Path:
    """The repository test.sh makes for http_test.py: four identity models, one with a
    single BYTES element, one with a queue of one request."""
    generated = repositories.identity_models(work, work.parent / "identity", ensembles=False)
    models = work / "python_unit_test_models"
    for name in ("onnx_zero_1_float32", "onnx_zero_1_object", "onnx_zero_1_float16",
                 "onnx_zero_3_float32"):  # fmt: skip
        shutil.copytree(generated / name, models / name)
    single = repositories.renamed(models / "onnx_zero_1_object", "onnx_zero_1_object_1_element")
    config = single / "config.pbtxt"
    config.write_text(config.read_text().replace("-1", "1", 1))  # sed "0,/-1/{s/-1/1/}"
    queue = repositories.renamed(models / "onnx_zero_1_float32", "onnx_zero_1_float32_queue")
    config = queue / "config.pbtxt"
    config.write_text(config.read_text() + QUEUE)
    return models


def test_http_test(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_http")
    models = _unit_test_models(work)
    with harness.tritonserver(host, [f"--model-repository={models}"], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "http_test.py")
    run.check(count=9)


def test_aio_client_and_plugins(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_http")
    models = repositories.counted_example_models(work / "models")
    args = [f"--model-repository={models}", "--allow-client-shm=true"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        aio = harness.run_qa_file(host, work, "python_http_aio_test.py")
        plugins = harness.run_qa_file(host, work, "http_client_plugin_test.py")
    aio.check(count=18)
    plugins.check(count=4)


def test_restricted_api(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_http")
    models = repositories.counted_example_models(work / "models")
    repository = f"--model-repository={models}"
    for groups, expected in (
        (["model-repository,health:k1=v1", "metadata,health:k2=v2"],
         "api 'health' can not be specified in multiple config groups"),
        (["model-reposit,health:k1=v1", "metadata,health:k2=v2"],
         "unknown restricted api 'model-reposit'"),
    ):  # fmt: skip
        flags = [f"--http-restricted-api={group}" for group in groups]
        log = harness.start_fails(host, [repository, *flags], tmp_path / "refused.log")
        assert log.count(expected) == 1, log
        (tmp_path / "refused.log").unlink()
    flags = [
        "--http-restricted-api=model-repository:admin-key=admin-value",
        "--http-restricted-api=inference,metadata:infer-key=infer-value",
    ]
    with harness.tritonserver(host, [repository, *flags], tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "http_restricted_api_test.py", "RestrictedAPITest")
    run.check(count=4)


def test_generate_endpoint(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_http")
    args = [f"--model-repository={work / 'generate_models'}"]
    with harness.tritonserver(host, args, tmp_path / "server.log"):
        run = harness.run_qa_file(host, work, "generate_endpoint_test.py")
    run.check(count=17)
