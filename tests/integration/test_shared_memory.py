"""System shared memory, used as Triton's own client examples use it, over HTTP and gRPC.

The steps are those of tritonclient's ``simple_http_shm_client.py`` and
``simple_grpc_shm_client.py``: the client creates POSIX shared-memory objects with
``tritonclient.utils.shared_memory``, registers them, names them in the inputs and
outputs of an infer call to the add/sub model ``simple``, and reads the results out
of the output region. Then what a careless or hostile caller does with regions.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

from tests.support.models import simple_add_sub
from tests.support.servers import Served, server_in_process

INPUT_BYTES = 16 * 4  # one row of 16 INT32
PROTOCOLS = ("http", "grpc")


@pytest.fixture(scope="module")
def shm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repository = tmp_path_factory.mktemp("shm") / "models"
    simple_add_sub(repository)
    with server_in_process(repository, "--allow-client-shm=true") as server:
        yield server


def _client(protocol: str, server: Served) -> Any:
    if protocol == "grpc":
        return grpcclient.InferenceServerClient(server.grpc_url)
    return httpclient.InferenceServerClient(server.http_url)


class Regions:
    """Shared-memory objects a test made, destroyed after it."""

    def __init__(self) -> None:
        self.handles: list[Any] = []

    def create(self, name: str, size: int) -> tuple[Any, str]:
        key = f"/modelyard_test_{os.getpid()}_{name}"
        handle = shm.create_shared_memory_region(name, key, size)
        self.handles.append(handle)
        return handle, key

    def destroy(self) -> None:
        for handle in self.handles:
            shm.destroy_shared_memory_region(handle)


@pytest.fixture
def regions() -> Iterator[Regions]:
    made = Regions()
    yield made
    made.destroy()


def _add_sub_in_shared_memory(
    protocol: str, client: Any, regions: Regions, tag: str
) -> tuple[np.ndarray, np.ndarray, Any]:
    """The example's steps: two regions, both inputs in one and both outputs in the other."""
    module = grpcclient if protocol == "grpc" else httpclient
    client.unregister_system_shared_memory()
    input0 = np.arange(16, dtype=np.int32)
    input1 = np.ones(16, dtype=np.int32)
    out_handle, out_key = regions.create(f"out_{tag}", INPUT_BYTES * 2)
    in_handle, in_key = regions.create(f"in_{tag}", INPUT_BYTES * 2)
    shm.set_shared_memory_region(in_handle, [input0])
    shm.set_shared_memory_region(in_handle, [input1], offset=INPUT_BYTES)
    client.register_system_shared_memory("output_data", out_key, INPUT_BYTES * 2)
    client.register_system_shared_memory("input_data", in_key, INPUT_BYTES * 2)

    inputs = [
        module.InferInput("INPUT0", [1, 16], "INT32"),
        module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_shared_memory("input_data", INPUT_BYTES)
    inputs[1].set_shared_memory("input_data", INPUT_BYTES, offset=INPUT_BYTES)
    if protocol == "grpc":
        outputs = [
            grpcclient.InferRequestedOutput("OUTPUT0"),
            grpcclient.InferRequestedOutput("OUTPUT1"),
        ]
    else:
        outputs = [
            httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
            httpclient.InferRequestedOutput("OUTPUT1", binary_data=True),
        ]
    outputs[0].set_shared_memory("output_data", INPUT_BYTES)
    outputs[1].set_shared_memory("output_data", INPUT_BYTES, offset=INPUT_BYTES)
    result = client.infer("simple", inputs, outputs=outputs)

    sums = []
    for index, name in enumerate(("OUTPUT0", "OUTPUT1")):
        output = result.get_output(name)
        if protocol == "grpc":
            datatype, shape = output.datatype, list(output.shape)
        else:
            datatype, shape = output["datatype"], output["shape"]
            assert "data" not in output  # the bytes are in the region, not the response
        sums.append(
            shm.get_contents_as_numpy(
                out_handle, triton_to_np_dtype(datatype), shape, offset=index * INPUT_BYTES
            )
        )
    return sums[0], sums[1], in_handle


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_shared_memory_example_adds_and_subtracts_through_regions(
    protocol: str, shm_server: Served, regions: Regions
) -> None:
    client = _client(protocol, shm_server)
    try:
        total, difference, _ = _add_sub_in_shared_memory(protocol, client, regions, protocol)
        np.testing.assert_array_equal(total, np.arange(16).reshape(1, 16) + 1)
        np.testing.assert_array_equal(difference, np.arange(16).reshape(1, 16) - 1)

        status = client.get_system_shared_memory_status()
        if protocol == "grpc":
            listed = {name: (r.key, r.offset, r.byte_size) for name, r in status.regions.items()}
        else:
            listed = {r["name"]: (r["key"], r["offset"], r["byte_size"]) for r in status}
        assert set(listed) == {"input_data", "output_data"}
        assert listed["input_data"][1:] == (0, INPUT_BYTES * 2)
        assert listed["input_data"][0].endswith(f"in_{protocol}")

        client.unregister_system_shared_memory("input_data")
        remaining = client.get_system_shared_memory_status()
        names = set(remaining.regions) if protocol == "grpc" else {r["name"] for r in remaining}
        assert names == {"output_data"}
        client.unregister_system_shared_memory()
        with pytest.raises(InferenceServerException) as raised:
            client.get_system_shared_memory_status("output_data")
        assert "Unable to find system shared memory region: 'output_data'" in str(raised.value)
    finally:
        client.unregister_system_shared_memory()
        client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_infer_call_naming_an_unregistered_region_is_refused(
    protocol: str, shm_server: Served, regions: Regions
) -> None:
    module = grpcclient if protocol == "grpc" else httpclient
    client = _client(protocol, shm_server)
    try:
        client.unregister_system_shared_memory()
        inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        for item in inputs:
            item.set_shared_memory("gone", INPUT_BYTES)
        with pytest.raises(InferenceServerException) as raised:
            client.infer("simple", inputs)
        assert "Unable to find shared memory region: 'gone'" in str(raised.value)
        assert "rule=protocol/shared-memory" in str(raised.value)
        assert raised.value.status() in ("404", "StatusCode.NOT_FOUND")
    finally:
        client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_refused_request_leaves_its_region_free_to_unregister(
    protocol: str, shm_server: Served, regions: Regions
) -> None:
    """Triton's sequence tests unregister their regions after a request refused (here
    one whose input shape the model does not take): nothing must still hold them."""
    module = grpcclient if protocol == "grpc" else httpclient
    client = _client(protocol, shm_server)
    try:
        client.unregister_system_shared_memory()
        handle, key = regions.create(f"refused_{protocol}", INPUT_BYTES * 2)
        shm.set_shared_memory_region(handle, [np.zeros(32, np.int32)])
        client.register_system_shared_memory("refused_input", key, INPUT_BYTES * 2)
        inputs = [module.InferInput(n, [2, 8], "INT32") for n in ("INPUT0", "INPUT1")]
        for item in inputs:
            item.set_shared_memory("refused_input", INPUT_BYTES)
        with pytest.raises(InferenceServerException):
            client.infer("simple", inputs)
        client.unregister_system_shared_memory("refused_input")
        status = client.get_system_shared_memory_status()
        assert (list(status.regions) if protocol == "grpc" else status) == []
    finally:
        client.close()


def test_a_region_past_its_object_or_an_offset_past_the_region_is_refused(
    shm_server: Served, regions: Regions
) -> None:
    client = httpclient.InferenceServerClient(shm_server.http_url)
    try:
        client.unregister_system_shared_memory()
        _, key = regions.create("small", 64)
        with pytest.raises(InferenceServerException) as raised:
            client.register_system_shared_memory("big", key, 128)
        assert "failed to register shared memory region 'big': invalid args" in str(raised.value)
        with pytest.raises(InferenceServerException):
            client.register_system_shared_memory("shifted", key, 64, offset=8)

        client.register_system_shared_memory("small", key, 64)
        with pytest.raises(InferenceServerException) as raised:
            client.register_system_shared_memory("small", key, 64)
        assert "shared memory region 'small' already in manager" in str(raised.value)

        inputs = [httpclient.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        inputs[0].set_shared_memory("small", INPUT_BYTES)
        inputs[1].set_shared_memory("small", INPUT_BYTES, offset=8)  # 8 + 64 > 64
        with pytest.raises(InferenceServerException) as raised:
            client.infer("simple", inputs)
        assert "Invalid offset + byte size for shared memory region: 'small'" in str(raised.value)
        assert raised.value.status() == "400"

        # an output region too small for the result: Triton's words, and a 400
        inputs = [httpclient.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        for item in inputs:
            item.set_shared_memory("small", INPUT_BYTES)
        output = httpclient.InferRequestedOutput("OUTPUT0")
        output.set_shared_memory("small", 16)
        with pytest.raises(InferenceServerException) as raised:
            client.infer("simple", inputs, outputs=[output])
        assert "(16 bytes) should be at least 64 bytes to hold the results" in str(raised.value)
        assert raised.value.status() == "400"
    finally:
        client.unregister_system_shared_memory()
        client.close()


@pytest.mark.parametrize(
    "key",
    ["/../etc/passwd", "etc/passwd", "/", "/a/b", "..", "/" + "k" * 300, "/no_such_object_x"],
)
def test_a_key_that_is_not_one_existing_shared_memory_object_is_refused(
    key: str, shm_server: Served
) -> None:
    response = httpx.post(
        f"http://{shm_server.http_url}/v2/systemsharedmemory/region/r/register",
        json={"key": key, "offset": 0, "byte_size": 8},
    )
    # 500, Triton's INTERNAL: its QA suite (L0_grpc's aio test) checks the code
    assert response.status_code == 500
    assert response.json()["error"].startswith("Unable to open shared memory region")
    assert "rule=protocol/shared-memory" in response.json()["error"]


def test_a_link_in_the_shared_memory_directory_is_not_followed(
    shm_server: Served, tmp_path: Path
) -> None:
    target = tmp_path / "secret"
    target.write_bytes(b"s" * 64)
    link = Path("/dev/shm") / f"modelyard_test_{os.getpid()}_link"
    link.symlink_to(target)
    try:
        response = httpx.post(
            f"http://{shm_server.http_url}/v2/systemsharedmemory/region/link/register",
            json={"key": "/" + link.name, "offset": 0, "byte_size": 64},
        )
        assert response.status_code == 500  # Triton's INTERNAL, as above
        assert "Unable to open shared memory region" in response.json()["error"]
    finally:
        link.unlink()


@pytest.mark.parametrize(
    "body",
    [
        b"[1, 2]",
        b"{not json",
        b'{"key": 7, "byte_size": 8}',
        b'{"key": "/x", "byte_size": -1}',
        b'{"key": "/x", "byte_size": true}',
        b'{"key": "/x", "offset": "0", "byte_size": 8}',
    ],
)
def test_a_malformed_register_body_gets_its_line_and_the_server_serves_on(
    body: bytes, shm_server: Served
) -> None:
    base = f"http://{shm_server.http_url}"
    response = httpx.post(f"{base}/v2/systemsharedmemory/region/r/register", content=body)
    assert response.status_code == 400
    assert response.json()["error"].startswith("[protocol]")
    assert httpx.get(f"{base}/v2/health/ready").status_code == 200


def test_unregistering_a_region_twice_is_no_error(shm_server: Served, regions: Regions) -> None:
    client = httpclient.InferenceServerClient(shm_server.http_url)
    try:
        total, _, _ = _add_sub_in_shared_memory("http", client, regions, "inflight")
        np.testing.assert_array_equal(total, np.arange(16).reshape(1, 16) + 1)
        client.unregister_system_shared_memory("output_data")
        client.unregister_system_shared_memory("output_data")  # not registered: no error
        assert {r["name"] for r in client.get_system_shared_memory_status()} == {"input_data"}
    finally:
        client.unregister_system_shared_memory()
        client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shared_memory_is_off_unless_the_server_allows_it(
    protocol: str, server: Served, regions: Regions
) -> None:
    """Off by default, as in Triton since --allow-client-shm: the line says how to turn it on."""
    client = _client(protocol, server)
    _, key = regions.create(f"off_{protocol}", 64)
    try:
        with pytest.raises(InferenceServerException) as raised:
            client.register_system_shared_memory("r", key, 64)
        assert "Client shared memory is disabled" in str(raised.value)
        assert "--allow-client-shm=true" in str(raised.value)
        status = client.get_system_shared_memory_status()
        assert (list(status.regions) if protocol == "grpc" else status) == []
    finally:
        client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cuda_shared_memory_says_there_is_no_gpu(protocol: str, shm_server: Served) -> None:
    client = _client(protocol, shm_server)
    try:
        with pytest.raises(InferenceServerException) as raised:
            # a handle as tritonclient's get_raw_handle gives it: base64 of 64 bytes
            client.register_cuda_shared_memory("c", base64.b64encode(b"\0" * 64), 0, 64)
        assert "failed to register CUDA shared memory region: 'c', GPUs not supported" in str(
            raised.value
        )
        assert "register system shared memory" in str(raised.value)
        status = client.get_cuda_shared_memory_status()
        assert (list(status.regions) if protocol == "grpc" else status) == []
        client.unregister_cuda_shared_memory()  # nothing to unregister: no error
    finally:
        client.close()


@pytest.mark.gpu
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_cuda_shared_memory_example_adds_and_subtracts_in_device_memory(
    protocol: str, shm_server: Served
) -> None:
    """tritonclient's simple_*_cudashm_client.py: both inputs in one device region, both
    outputs in another, registered by their CUDA IPC handles."""
    try:
        import tritonclient.utils.cuda_shared_memory as cudashm

        cudashm.get_raw_handle  # noqa: B018 (the module loads cuda-python)
        from cuda import cudart

        if cudart.cudaGetDeviceCount()[1] == 0:
            raise RuntimeError("no CUDA device")
    except Exception as exc:
        pytest.skip(f"needs an NVIDIA GPU and cuda-python: {exc}")
    module: Any = grpcclient if protocol == "grpc" else httpclient
    client = _client(protocol, shm_server)
    inputs_region = cudashm.create_shared_memory_region("in", INPUT_BYTES * 2, 0)
    outputs_region = cudashm.create_shared_memory_region("out", INPUT_BYTES * 2, 0)
    try:
        input0 = np.arange(16, dtype=np.int32)
        input1 = np.ones(16, dtype=np.int32)
        cudashm.set_shared_memory_region(inputs_region, [input0, input1])
        client.register_cuda_shared_memory(
            "input_data", cudashm.get_raw_handle(inputs_region), 0, INPUT_BYTES * 2
        )
        client.register_cuda_shared_memory(
            "output_data", cudashm.get_raw_handle(outputs_region), 0, INPUT_BYTES * 2
        )
        inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        inputs[0].set_shared_memory("input_data", INPUT_BYTES)
        inputs[1].set_shared_memory("input_data", INPUT_BYTES, offset=INPUT_BYTES)
        outputs = [module.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1")]
        outputs[0].set_shared_memory("output_data", INPUT_BYTES)
        outputs[1].set_shared_memory("output_data", INPUT_BYTES, offset=INPUT_BYTES)
        client.infer("simple", inputs, outputs=outputs)
        total = cudashm.get_contents_as_numpy(outputs_region, np.int32, [1, 16])
        np.testing.assert_array_equal(total, (input0 + input1).reshape(1, 16))
        status = client.get_cuda_shared_memory_status()
        names = set(status.regions) if protocol == "grpc" else {r["name"] for r in status}
        assert names == {"input_data", "output_data"}
    finally:
        client.unregister_cuda_shared_memory()
        client.close()
        cudashm.destroy_shared_memory_region(inputs_region)
        cudashm.destroy_shared_memory_region(outputs_region)
