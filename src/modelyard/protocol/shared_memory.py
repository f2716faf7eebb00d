"""Triton's system shared-memory extension: regions a client registered, tensors in them.

A client creates a POSIX shared-memory object (``shm_open``), registers a region of
it by name, and then names the region in an input's or a requested output's
parameters (``shared_memory_region``, ``shared_memory_offset``,
``shared_memory_byte_size``) instead of sending the bytes. Off unless the server
starts with ``--allow-client-shm=true``, as in Triton.

An input's bytes are read out of the region (``pread``) when the request is decoded
and an output's written in (``pwrite``) when the response is ready. Not mapped: the
client owns the object and may shrink it at any moment, and touching a mapped page
past its end would kill the server (SIGBUS), where a read comes back short and is
refused. A request holds the regions its outputs name, so a region unregistered
while a request is in flight stays open until that request has written its outputs
(Triton's "unregistered after in-flight requests complete"). A request's tensors in
shared memory count against the same limit as a request body.

Only a key naming a shared-memory object is opened: one name, no directory, no
link followed, a regular file.
"""

from __future__ import annotations

import gc
import os
import re
import stat
import sys
from typing import Any, NamedTuple

import numpy as np

from modelyard.errors import Code, ProtocolError, shown
from modelyard.protocol.cuda_shared_memory import CudaRegion, raw_handle
from modelyard.protocol.tensors import (
    SIZE_RULE,
    UNREAD,
    decode_input,
    encode_raw_tensor,
    expected_bytes,
    size_mismatch,
)
from modelyard.types import InferRequest, InferResponse

SHM_DIRECTORY = "/dev/shm"  # where Linux's shm_open keeps its objects
MAX_REGIONS = 256
MAX_NAME_CHARS = 256
_KEY = re.compile(r"/?([A-Za-z0-9_.\-]{1,250})")
_ALLOW = "modelyard serve --allow-client-shm=true"
_DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)


# the beginnings of Triton's own texts here: a line with one leads with it
_TRITON_WORDS = (
    "Unable to open shared memory region",
    "Unable to find ",
    "Invalid shared memory region",
    "Invalid offset",
    "failed to register shared memory region",
    "shared memory region '",
    "Cannot unregister shared memory region",
    "Failed to unregister the following",
    "shared memory size specified with the request for output",
)


def _error(
    detail: str, code: Code = Code.INVALID_ARGUMENT, where: str | None = None
) -> ProtocolError:
    return ProtocolError(
        detail,
        code=code,
        rule="protocol/shared-memory",
        where=where
        or "the client's shared memory region, its registration or the tensor's "
        "shared_memory_* parameters",
        triton=detail.startswith(_TRITON_WORDS),
    )


def _count(value: Any, what: str, limit: int = 2**63) -> int:
    if type(value) is not int or not 0 <= value < limit:  # not a bool either
        raise _error(f"{what} must be a non-negative integer, not {shown(repr(value), 40)}")
    return value


class Region:
    """One registered region: ``byte_size`` bytes at ``offset`` of the object ``key``."""

    kind = "system"

    def __init__(self, name: str, key: str, offset: int, byte_size: int) -> None:
        self.name = name
        self.key = key
        self.offset = offset
        self.byte_size = byte_size
        match = _KEY.fullmatch(key)
        if match is None or match[1] in (".", ".."):
            raise _error(  # INTERNAL: Triton's code, which its QA suite checks
                f"Unable to open shared memory region: '{shown(key, 80)}': a key is one "
                "shared-memory object name (letters, digits, '_', '.', '-'), '/' only first",
                Code.INTERNAL,
            )
        path = os.path.join(SHM_DIRECTORY, match[1])
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as exc:
            raise _error(
                f"Unable to open shared memory region: '{shown(key, 80)}' ({exc.strerror})",
                Code.INTERNAL,
            ) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _error(f"Invalid shared memory region: '{shown(key, 80)}'")
            if byte_size == 0 or offset + byte_size > info.st_size:
                raise _error(
                    f"failed to register shared memory region '{shown(name)}': invalid args "
                    f"(offset {offset} + byte_size {byte_size} must be within the "
                    f"{info.st_size} bytes of '{shown(key, 80)}', and byte_size above 0)"
                )
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd  # closed when the last request holding the region lets go

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key": self.key,
            "offset": self.offset,
            "byte_size": self.byte_size,
        }

    def _span(self, offset: int, size: int) -> int:
        """Where ``size`` bytes at ``offset`` of the region start in the object, checked
        against the region and against the object as it is now."""
        if offset + size > self.byte_size:
            raise _error(
                f"Invalid offset + byte size for shared memory region: '{shown(self.name)}'"
            )
        return self.offset + offset

    def _shrunk(self, offset: int, size: int) -> ProtocolError:
        return _error(
            f"shared memory region '{shown(self.name)}' no longer holds {size} bytes at "
            f"offset {offset}: its object '{shown(self.key, 80)}' was made smaller"
        )

    def read(self, offset: int, size: int) -> bytes:
        start = self._span(offset, size)
        parts: list[bytes] = []
        done = 0
        while done < size:  # one read returns at most about 2 GiB
            part = os.pread(self._fd, size - done, start + done)
            if not part:
                raise self._shrunk(offset, size)
            parts.append(part)
            done += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def write(self, offset: int, data: bytes) -> None:
        start = self._span(offset, len(data))
        if os.fstat(self._fd).st_size < start + len(data):  # never grow the client's object
            raise self._shrunk(offset, len(data))
        view = memoryview(data)
        while view:
            view = view[os.pwrite(self._fd, view, start + len(data) - len(view)) :]

    def close(self) -> None:
        fd = getattr(self, "_fd", -1)  # -1 too for a region whose opening was refused
        if fd >= 0:
            self._fd = -1
            os.close(fd)

    def __del__(self) -> None:
        self.close()


# the references a region has while no request holds it, as _in_use counts them: the
# registry's, _in_use's parameter and getrefcount's argument (its callers hold none)
_UNHELD_REFERENCES = 3


def _in_use(region: Region | CudaRegion) -> bool:
    """Whether a request in flight holds the region (its ``InferRequest.regions`` or a
    requested output's ``TensorSlice``), read from its reference count as Triton reads a
    region's ``shared_ptr::use_count``."""
    return sys.getrefcount(region) > _UNHELD_REFERENCES


class TensorSlice(NamedTuple):
    """Where one tensor of a request lives: ``byte_size`` bytes at ``offset`` of ``region``."""

    region: Region | CudaRegion
    offset: int
    byte_size: int


class SystemSharedMemory:
    """The regions clients registered with this server, by name: system and CUDA regions
    share one namespace, as in Triton."""

    def __init__(self, allowed: bool = False, max_request_bytes: int = 64 * 1024 * 1024) -> None:
        self.allowed = allowed
        self.max_request_bytes = max_request_bytes  # a request's tensors in regions, in all
        self._regions: dict[str, Region | CudaRegion] = {}

    def _check_allowed(self) -> None:
        if not self.allowed:
            raise _error(_DISABLED, Code.UNIMPLEMENTED, _ALLOW)

    def _check_new(self, name: str) -> None:
        self._check_allowed()
        if len(name) > MAX_NAME_CHARS:
            raise _error(f"a region name is at most {MAX_NAME_CHARS} characters")
        if name in self._regions:
            raise _error(f"shared memory region '{shown(name)}' already in manager")
        if len(self._regions) >= MAX_REGIONS:
            raise _error(
                f"{MAX_REGIONS} shared memory regions are registered already; unregister one",
                Code.RESOURCE_EXHAUSTED,
            )

    def register(self, name: str, key: Any, offset: Any, byte_size: Any) -> None:
        self._check_allowed()
        if sys.platform != "linux":
            raise _error("system shared memory is served on Linux only", Code.UNIMPLEMENTED)
        if not isinstance(key, str):
            raise _error("Shared memory register request has no 'key' field (a string)")
        offset = _count(offset, "'offset'")
        byte_size = _count(byte_size, "'byte_size'")
        self._check_new(name)
        self._regions[name] = Region(name, key, offset, byte_size)

    def register_cuda(self, name: str, handle: Any, device_id: Any, byte_size: Any) -> None:
        self._check_allowed()
        raw = raw_handle(handle)
        device = _count(device_id, "'device_id'")
        if device >= 2**31:
            raise _error(f"'device_id' {device} is not a CUDA device number")
        size = _count(byte_size, "'byte_size'")
        self._check_new(name)
        self._regions[name] = CudaRegion(name, raw, device, size)

    def status(self, name: str | None = None, kind: str = "system") -> list[dict[str, Any]]:
        """The regions of one kind ("system" or "cuda"), or the one named."""
        if name is None:
            return [r.status() for r in self._regions.values() if r.kind == kind]
        region = self._regions.get(name)
        if region is None:
            raise _error(
                f"Unable to find {'cuda' if kind == 'cuda' else 'system'} shared memory "
                f"region: '{shown(name)}'",
                Code.NOT_FOUND,
            )
        if region.kind != kind:
            named = {"system": "system shared memory", "cuda": "CUDA shared memory"}
            raise _error(
                f"The region named '{shown(name)}' is registered as {named[region.kind]}, "
                f"not {named[kind]}",
                Code.NOT_FOUND,
            )
        return [region.status()]

    def unregister(self, name: str | None = None, kind: str = "system") -> None:
        """Unregister one region of a kind, or all of them; a name not registered is no
        error (as Triton). A region a request in flight uses (an input read from it, an
        output to write into it) is refused in Triton's words; unregistering them all
        unregisters the others and names those refused."""
        self._check_allowed()
        names = [name] if name is not None else list(self._regions)
        if any(n in self._regions and _in_use(self._regions[n]) for n in names):
            # a request that has finished may still reach a region through a reference
            # cycle (a refused request's error, whose traceback holds the request, kept by
            # the RPC that answered it): collected now, it is not one in flight
            gc.collect()
        if name is not None:
            if name in self._regions and self._regions[name].kind == kind:
                if _in_use(self._regions[name]):  # no reference held here: see _in_use
                    raise _error(
                        f"Cannot unregister shared memory region '{shown(name)}', it is "
                        "currently in use.",
                        Code.FAILED_PRECONDITION,
                    )
                del self._regions[name]
            return
        refused = []
        for each in sorted(n for n, r in self._regions.items() if r.kind == kind):
            if _in_use(self._regions[each]):
                refused.append(each)
            else:
                del self._regions[each]
        if refused:
            kinds = "cuda" if kind == "cuda" else "system"
            raise _error(
                f"Failed to unregister the following {kinds} shared memory regions: "
                + "".join(f"{each} ," for each in refused),
                Code.FAILED_PRECONDITION,
            )

    def close(self) -> None:
        for region in self._regions.values():
            region.close()
        self._regions.clear()

    def tensor_slice(self, tensor: str, params: dict[str, Any]) -> TensorSlice:
        """The region slice a tensor's shared_memory_* parameters name."""
        self._check_allowed()
        name = params.get("shared_memory_region")
        if not isinstance(name, str):
            raise _error(f"tensor '{shown(tensor)}': Unable to parse 'shared_memory_region'")
        if "shared_memory_byte_size" not in params:
            raise _error(
                f"tensor '{shown(tensor)}': 'shared_memory_byte_size' is required with "
                "'shared_memory_region'"
            )
        size = _count(params["shared_memory_byte_size"], "'shared_memory_byte_size'")
        # any 64-bit offset: one past the region is refused in Triton's words below (Triton
        # reads 2**64 - 32 as -32, and refuses it so)
        offset = _count(params.get("shared_memory_offset", 0), "'shared_memory_offset'", 2**64)
        region = self._regions.get(name)
        if region is None:
            raise _error(f"Unable to find shared memory region: '{shown(name)}'", Code.NOT_FOUND)
        if offset >= region.byte_size:
            raise _error(f"Invalid offset for shared memory region: '{shown(name)}'")
        if offset + size > region.byte_size:
            raise _error(f"Invalid offset + byte size for shared memory region: '{shown(name)}'")
        return TensorSlice(region, offset, size)

    def read_input(
        self,
        tensor: str,
        params: dict[str, Any],
        expected: int | None,
        spent: int,
        model: str = "",
        held: list[Any] | None = None,
    ) -> bytes:
        """An input's bytes: ``expected``: what its shape and datatype take (None: BYTES,
        any; another size is refused in Triton's words, naming ``model``); ``spent``: what
        the request's earlier inputs read from regions; ``held``: where its region goes,
        for the request to hold (``InferRequest.regions``)."""
        where = self.tensor_slice(tensor, params)
        if held is not None:
            held.append(where.region)
        if expected is not None and where.byte_size != expected:
            raise size_mismatch(tensor, model, expected, where.byte_size)
        if spent + where.byte_size > self.max_request_bytes:
            raise _error(
                f"a request's tensors in shared memory come to over {self.max_request_bytes} bytes",
                Code.PAYLOAD_TOO_LARGE,
                "modelyard serve --http-max-body-bytes (the limit of a request's data, in "
                "its body or in shared memory)",
            )
        return where.region.read(where.offset, where.byte_size)


def names_region(params: Any) -> bool:
    """Whether a tensor's parameters put it in shared memory."""
    return isinstance(params, dict) and "shared_memory_region" in params


def disabled(tensor: str) -> ProtocolError:
    """The answer to a tensor in shared memory where this front door keeps no regions."""
    return _error(f"tensor '{shown(tensor)}': {_DISABLED}", Code.UNIMPLEMENTED, _ALLOW)


def read_region_input(
    shared_memory: SystemSharedMemory | None,
    name: str,
    datatype: str,
    shape: tuple[int, ...],
    params: Any,
    spent: int,
    model: str,
    inputs: dict[str, np.ndarray],
    held: list[Any],
) -> tuple[int, ProtocolError | None]:
    """An input in the region its ``params`` name read into ``inputs`` (``spent``: what the
    request's earlier inputs read from regions; ``held``: where its region goes): the bytes
    read, and its size error, if it has one, to raise once every input is read."""
    if shared_memory is None:
        raise disabled(name)
    try:
        raw = shared_memory.read_input(
            name, params, expected_bytes(datatype, shape), spent, model, held
        )
    except ProtocolError as error:
        if error.rule != SIZE_RULE:
            raise
        inputs[name] = UNREAD
        return 0, error
    return len(raw), decode_input(inputs, name, datatype, shape, raw, model)


def place_outputs(request: InferRequest, response: InferResponse) -> None:
    """Write each output the request asked for in shared memory into its region."""
    if request.outputs is None:
        return
    slices = {out.name: out.shared_memory for out in request.outputs if out.shared_memory}
    if not slices:
        return
    for tensor in response.outputs:
        where = slices.get(tensor.name)
        if where is None:
            continue
        data = encode_raw_tensor(tensor)
        if len(data) > where.byte_size:
            raise _error(
                f"shared memory size specified with the request for output '{shown(tensor.name)}' "
                f"({where.byte_size} bytes) should be at least {len(data)} bytes to hold the "
                "results"
            )
        where.region.write(where.offset, data)
        tensor.in_shared_memory = True
