"""The registry of system shared-memory regions, on real POSIX shared-memory objects."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import Code, ProtocolError
from modelyard.protocol.shared_memory import Region, SystemSharedMemory, place_outputs
from modelyard.types import InferRequest, InferResponse, OutputTensor, RequestedOutput


@pytest.fixture
def shm_object() -> Iterator[tuple[str, Path]]:
    """A 64-byte shared-memory object holding 0..63: its key and its path."""
    name = f"modelyard_unit_{uuid.uuid4().hex}"
    path = Path("/dev/shm") / name
    path.write_bytes(bytes(range(64)))
    yield "/" + name, path
    path.unlink(missing_ok=True)


def test_a_tensor_is_read_from_its_offset_within_the_region(shm_object: tuple[str, Path]) -> None:
    key, _ = shm_object
    regions = SystemSharedMemory(allowed=True)
    regions.register("r", key, 16, 32)
    params = {"shared_memory_region": "r", "shared_memory_offset": 4, "shared_memory_byte_size": 8}
    assert regions.read_input("x", params, 8, 0) == bytes(range(20, 28))
    assert regions.status() == [{"name": "r", "key": key, "offset": 16, "byte_size": 32}]


def test_a_region_a_request_in_flight_uses_cannot_be_unregistered(
    shm_object: tuple[str, Path],
) -> None:
    """Triton's semantics: a region an input was read from or an output will be written to
    is refused while its request lives, in Triton's words; unregistering all unregisters
    the others and names the refused; once the request is done the region goes."""
    key, path = shm_object
    regions = SystemSharedMemory(allowed=True)
    for name in ("in", "out", "idle"):
        regions.register(name, key, 0, 64)
    held: list[object] = []
    regions.read_input("x", {"shared_memory_region": "in", "shared_memory_byte_size": 8}, 8, 0,
                       "m", held)  # fmt: skip
    where = regions.tensor_slice("y", {"shared_memory_region": "out", "shared_memory_byte_size": 8})
    request = InferRequest("m", None, {}, {}, outputs=[RequestedOutput("y", False, 0, where)])
    request.regions = tuple(held)
    del held, where
    for name in ("in", "out"):
        with pytest.raises(ProtocolError) as raised:
            regions.unregister(name)
        assert f"Cannot unregister shared memory region '{name}', it is currently in use." in (
            raised.value.detail
        )
    with pytest.raises(ProtocolError) as raised:
        regions.unregister()
    assert raised.value.detail.startswith(
        "Failed to unregister the following system shared memory regions: in ,out ,"
    )
    assert [r["name"] for r in regions.status()] == ["in", "out"]  # "idle" went
    response = InferResponse("m", "1", [OutputTensor("y", "INT32", np.array([7, 9], np.int32))])
    place_outputs(request, response)
    assert path.read_bytes()[:8] == np.array([7, 9], np.int32).tobytes()
    del request
    regions.unregister()
    assert regions.status() == []
    with pytest.raises(ProtocolError) as gone:
        regions.tensor_slice("y", {"shared_memory_region": "out", "shared_memory_byte_size": 8})
    assert gone.value.code is Code.NOT_FOUND


def test_an_object_made_smaller_after_registering_is_refused_not_read(
    shm_object: tuple[str, Path],
) -> None:
    """Reading a mapped page past the object's end would kill the server with SIGBUS."""
    key, path = shm_object
    regions = SystemSharedMemory(allowed=True)
    regions.register("r", key, 0, 64)
    os.truncate(path, 8)
    params = {"shared_memory_region": "r", "shared_memory_offset": 32, "shared_memory_byte_size": 8}
    with pytest.raises(ProtocolError) as raised:
        regions.read_input("x", params, None, 0)
    assert "was made smaller" in str(raised.value)
    assert raised.value.code is Code.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"shared_memory_region": 3, "shared_memory_byte_size": 8}, "Unable to parse"),
        ({"shared_memory_region": "r"}, "'shared_memory_byte_size' is required"),
        ({"shared_memory_region": "r", "shared_memory_byte_size": -1}, "non-negative"),
        (
            {"shared_memory_region": "r", "shared_memory_byte_size": 8, "shared_memory_offset": 64},
            "Invalid offset for shared memory region",
        ),
        ({"shared_memory_region": "r", "shared_memory_byte_size": 65}, "Invalid offset + byte"),
    ],
)
def test_a_tensors_region_parameters_are_checked(
    params: dict[str, object], words: str, shm_object: tuple[str, Path]
) -> None:
    key, _ = shm_object
    regions = SystemSharedMemory(allowed=True)
    regions.register("r", key, 0, 64)
    with pytest.raises(ProtocolError) as raised:
        regions.tensor_slice("x", params)
    assert words in str(raised.value)


def test_registering_is_refused_while_client_shared_memory_is_off(
    shm_object: tuple[str, Path],
) -> None:
    key, _ = shm_object
    regions = SystemSharedMemory()
    with pytest.raises(ProtocolError) as raised:
        regions.register("r", key, 0, 64)
    assert "--allow-client-shm=true" in str(raised.value)
    assert regions.status() == []


def test_the_number_of_regions_is_bounded(shm_object: tuple[str, Path]) -> None:
    key, _ = shm_object
    regions = SystemSharedMemory(allowed=True)
    from modelyard.protocol import shared_memory

    for index in range(shared_memory.MAX_REGIONS):
        regions.register(f"r{index}", key, 0, 8)
    with pytest.raises(ProtocolError) as raised:
        regions.register("one-more", key, 0, 8)
    assert raised.value.code is Code.RESOURCE_EXHAUSTED
    regions.close()


def test_sizes_are_checked_before_a_byte_is_read(shm_object: tuple[str, Path]) -> None:
    """A shape that takes other bytes, or a request over its limit in all, reads nothing."""
    key, _ = shm_object
    regions = SystemSharedMemory(allowed=True, max_request_bytes=48)
    regions.register("r", key, 0, 64)
    params = {"shared_memory_region": "r", "shared_memory_byte_size": 32}
    with pytest.raises(ProtocolError) as mismatch:
        regions.read_input("x", params, 16, 0)
    assert "input byte size mismatch for input 'x'. Expected 16, got 32" in str(mismatch.value)
    assert regions.read_input("x", params, 32, 0) == bytes(range(32))
    with pytest.raises(ProtocolError) as over:
        regions.read_input("y", params, 32, 32)  # a second input: 64 bytes in all
    assert over.value.code is Code.PAYLOAD_TOO_LARGE


def test_a_region_whose_opening_was_refused_closes_without_an_error() -> None:
    """What the collector does to a region whose constructor raised: nothing to close."""
    unopened = Region.__new__(Region)
    unopened.close()
    unopened.close()


@pytest.mark.parametrize(
    ("handle", "device", "words"),
    [
        ({"b64": "not base64!"}, 0, "raw_handle"),
        (7, 0, "raw_handle"),
        ({"b64": "AAAA"}, 0, "invalid args (raw_handle is 3 bytes"),
        ({"b64": "A" * 88}, -1, "'device_id' must be a non-negative integer"),
        ({"b64": "A" * 88}, 2**40, "is not a CUDA device number"),
    ],
)
def test_a_malformed_cuda_registration_gets_its_line(
    handle: object, device: int, words: str
) -> None:
    regions = SystemSharedMemory(allowed=True)
    with pytest.raises(ProtocolError) as refused:
        regions.register_cuda("c", handle, device, 64)
    assert words in refused.value.line()
    assert refused.value.code is Code.INVALID_ARGUMENT
    assert regions.status(kind="cuda") == []
