"""Triton's CUDA shared-memory extension: device memory a client shares by an IPC handle.

The client allocates device memory, takes its ``cudaIpcMemHandle_t`` and registers
it (``raw_handle`` base64, ``device_id``, ``byte_size``); the server opens the
handle (``cudaIpcOpenMemHandle``) and copies an input out of it, or an output into
it, with ``cudaMemcpy`` at the offset the tensor names, after checking the span
against the region. The engines here take host arrays, so each tensor crosses the
bus once, as it would from system memory.

Uses the CUDA runtime through cuda-python (``pip install cuda-python``), imported
only when a region is registered; a host without it or without a GPU answers
"GPUs not supported", as a Triton built without GPUs does.
"""

from __future__ import annotations

import binascii
import contextlib
from typing import Any

import numpy as np

from modelyard.errors import Code, ProtocolError, shown

RAW_HANDLE_BYTES = 64  # sizeof(cudaIpcMemHandle_t)


def _error(
    detail: str,
    code: Code = Code.INVALID_ARGUMENT,
    where: str | None = None,
    triton: bool = False,
) -> ProtocolError:
    return ProtocolError(
        detail,
        code=code,
        rule="protocol/cuda-shared-memory",
        where=where
        or "the CUDA shared memory registration or the tensor's shared_memory_* parameters",
        triton=triton,
    )


def unavailable(name: str, why: str) -> ProtocolError:
    return _error(
        f"failed to register CUDA shared memory region: '{shown(name)}', GPUs not supported "
        f"({why})",
        where="this server has no usable GPU: register system shared memory "
        "(/v2/systemsharedmemory) or send the tensor in the request",
    )


def _runtime(name: str) -> Any:
    """The CUDA runtime bindings, or the refusal that says why there are none."""
    try:
        from cuda.bindings import runtime as cudart  # cuda-python 12.6 and later
    except ImportError:
        try:
            from cuda import cudart  # older cuda-python
        except ImportError:
            raise unavailable(name, "cuda-python is not installed") from None
    error, count = cudart.cudaGetDeviceCount()
    if error != cudart.cudaError_t.cudaSuccess or count == 0:
        raise unavailable(name, "the CUDA runtime sees no device")
    return cudart


def _check(cudart: Any, result: Any, what: str) -> Any:
    error, *values = result if isinstance(result, tuple) else (result,)
    if error != cudart.cudaError_t.cudaSuccess:
        _, message = cudart.cudaGetErrorString(error)
        raise _error(
            f"{what} failed: {message.decode() if isinstance(message, bytes) else message}"
        )
    return values[0] if len(values) == 1 else values


class CudaRegion:
    """One registered CUDA region: ``byte_size`` bytes of device ``device_id``."""

    kind = "cuda"

    def __init__(self, name: str, raw_handle: bytes, device_id: int, byte_size: int) -> None:
        if len(raw_handle) != RAW_HANDLE_BYTES:
            raise _error(  # Triton's words for a handle CUDA cannot open
                f"failed to register shared memory region '{shown(name)}': invalid args "
                f"(raw_handle is {len(raw_handle)} bytes, a cudaIpcMemHandle_t is "
                f"{RAW_HANDLE_BYTES})",
                triton=True,
            )
        if byte_size <= 0:
            raise _error(f"failed to register CUDA shared memory region '{shown(name)}': "
                         "byte_size must be above 0")  # fmt: skip
        cudart = _runtime(name)
        self._cudart = cudart
        self.name = name
        self.device_id = device_id
        self.offset = 0
        self.byte_size = byte_size
        _check(cudart, cudart.cudaSetDevice(device_id), f"cudaSetDevice({device_id})")
        handle = cudart.cudaIpcMemHandle_t()
        handle.reserved = raw_handle
        self._pointer = int(
            _check(
                cudart,
                cudart.cudaIpcOpenMemHandle(handle, cudart.cudaIpcMemLazyEnablePeerAccess),
                f"opening the IPC handle of region '{shown(name)}'",
            )
        )

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "device_id": self.device_id, "byte_size": self.byte_size}

    def _span(self, offset: int, size: int) -> int:
        if offset + size > self.byte_size:
            raise _error(
                f"Invalid offset + byte size for shared memory region: '{shown(self.name)}'"
            )
        return self._pointer + offset

    def read(self, offset: int, size: int) -> bytes:
        cudart = self._cudart
        host = np.empty(size, dtype=np.uint8)
        kind = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        _check(cudart, cudart.cudaSetDevice(self.device_id), "cudaSetDevice")
        _check(cudart, cudart.cudaMemcpy(host.ctypes.data, self._span(offset, size), size, kind),
               "cudaMemcpy to the host")  # fmt: skip
        return host.tobytes()

    def write(self, offset: int, data: bytes) -> None:
        cudart = self._cudart
        host = np.frombuffer(data, dtype=np.uint8)
        kind = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        _check(cudart, cudart.cudaSetDevice(self.device_id), "cudaSetDevice")
        _check(cudart, cudart.cudaMemcpy(self._span(offset, len(data)), host.ctypes.data,
                                          len(data), kind), "cudaMemcpy to the device")  # fmt: skip

    def close(self) -> None:
        if self._pointer:
            self._cudart.cudaIpcCloseMemHandle(self._pointer)
            self._pointer = 0

    def __del__(self) -> None:  # the last request holding an unregistered region let go
        with contextlib.suppress(Exception):  # an interpreter shutting down
            self.close()


def raw_handle(value: Any) -> bytes:
    """A register request's raw_handle: {"b64": ...} over HTTP, bytes over gRPC."""
    if isinstance(value, dict):
        value = value.get("b64")
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            return binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError):
            pass
    raise _error('the CUDA register request needs raw_handle {"b64": <base64 of the handle>}')
