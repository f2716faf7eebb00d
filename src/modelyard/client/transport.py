"""One instance on the wire: V2 HTTP over an aiohttp keep-alive pool, or V2 gRPC over a channel.

Requests always travel as binary tensors and ask for binary outputs; the
``binary`` flag of each returned ``OutputTensor`` is what the request asked
for, so a gateway can answer its own caller in the form it wanted.

Every failure leaves a transport as a ``ModelyardError``, in one place each
(``error_from_http``, ``error_from_grpc``, ``connection_error``):

- an instance's answer keeps its error line: ``[layer] detail; rule=...``
  becomes the same layer's class with the same fields, so ``str(error)`` is the
  line the server wrote and a gateway forwards it unchanged, with the headers
  (or trailing metadata) the instance sent along (``reply_headers``:
  retry-after, ratelimit-*, x-request-id);
- no answer becomes a ``ClientError``: UNAVAILABLE (rule ``client/connection``)
  when the instance could not be reached or dropped the connection,
  DEADLINE_EXCEEDED (rule ``client/deadline``) when the time ran out
  (``attempt_timeout_error``, UNAVAILABLE, when only one attempt's did).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import grpc
import orjson
from google.protobuf import json_format
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc

from modelyard import error_rules
from modelyard.discovery import RegistryError
from modelyard.errors import (
    LAYERS,
    TRITON_WORDING,
    Code,
    ConfigError,
    ModelServerError,
    ModelyardError,
)
from modelyard.protocol import v2_grpc, v2_http
from modelyard.protocol.status import STATUS
from modelyard.types import InferRequest, InferResponse

DEFAULT_HTTP_POOL_SIZE = 256
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# below the server's keep-alive (30 s), so the client never reuses a socket the server is closing
HTTP_KEEPALIVE_SECS = 15.0


class ClientError(ModelyardError):
    """The client could not get an answer: no instance, unreachable, out of time."""

    layer = "client"


# ---- errors -----------------------------------------------------------------

# "[layer] detail; rule=...", or Triton's wording first: "detail; rule=layer/..."
_LINE = re.compile(
    r"^(?:\[(?P<layer>[a-z-]+)\] )?(?P<detail>.*?)(?:; rule=(?P<rule>[^;]*))?"
    r"(?:; change: (?P<where>.*?))?(?:; retry after (?P<retry>[0-9.]+)s)?$",
    re.DOTALL,
)
_LAYERS: dict[str, type[ModelyardError]] = {
    **LAYERS,
    RegistryError.layer: RegistryError,
    ClientError.layer: ClientError,
}

_HTTP_CODES: dict[int, Code] = {}
_GRPC_CODES: dict[str, Code] = {}
for _code, (_http, _grpc) in STATUS.items():
    _HTTP_CODES.setdefault(_http, _code)
    _GRPC_CODES.setdefault(_grpc, _code)
_GRPC_CODES["RESOURCE_EXHAUSTED"] = Code.RESOURCE_EXHAUSTED  # PAYLOAD_TOO_LARGE shares it


def error_from_line(
    line: str, code: Code, retry_after: float | None, fallback_rule: str
) -> ModelyardError:
    """The error an instance described in its error line, as the class of its layer."""
    match = _LINE.match(line)
    if match is None or not (match["layer"] or match["rule"]):  # a proxy's, or a plain Triton's
        return ModelServerError(line or "no error message", code=code, rule=fallback_rule)
    layer = match["layer"] or match["rule"].partition("/")[0]
    cls = _LAYERS.get(layer, ModelServerError)
    retry = match["retry"]
    error = cls(
        match["detail"],
        code=code,
        rule=match["rule"],
        where=match["where"],
        retry_after=float(retry) if retry else retry_after,
    )
    if layer != cls.layer:
        error.layer = layer  # a layer this client does not know: keep the line
    error.triton = match["layer"] is None  # a line that led with Triton's words still does
    return error


def _retry_after_header(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


# how a reply was framed, not what it said: a gateway's own reply sets these itself
_NOT_RELAYED = frozenset(
    (
        "content-type",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "date",
        "server",
        "inference-header-content-length",
    )
)


def _relayed(pairs: Iterable[tuple[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The reply's headers or trailing metadata a forwarding gateway passes on, lower-cased."""
    kept = []
    for key, value in pairs:
        name = str(key).lower()
        if name in _NOT_RELAYED or name.startswith("grpc-") or name.endswith("-bin"):
            continue
        kept.append((name, str(value)))
    return tuple(kept)


def error_from_http(
    status: int,
    body: bytes,
    retry_after: str | None,
    headers: Mapping[str, str] | None = None,
) -> ModelyardError:
    code = _HTTP_CODES.get(status)
    if code is None:
        code = Code.UNAVAILABLE if status in (502, 504) else Code.INTERNAL
        if 400 <= status < 500:
            code = Code.INVALID_ARGUMENT
    try:
        doc = orjson.loads(body) if body else {}
        line = str(doc.get("error", "")) if isinstance(doc, dict) else ""
    except orjson.JSONDecodeError:
        line = body[:500].decode("utf-8", "replace")
    if not line:
        line = f"HTTP {status} without an error message"
    error = error_from_line(line, code, _retry_after_header(retry_after), f"http/{status}")
    if headers is not None:
        error.reply_headers = _relayed(headers.items())
    return error


def error_from_grpc(error: grpc.aio.AioRpcError, address: str, timeout: float) -> ModelyardError:
    status = error.code()
    details = error.details() or ""
    if not details.startswith(("[", *TRITON_WORDING)) and "; rule=" not in details:
        # no error line: gRPC itself ended the call (connection lost, server shutting down)
        if status in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
            return connection_error(address, f"{status.name}: {details}")
        if status is grpc.StatusCode.DEADLINE_EXCEEDED:
            return deadline_error(address, timeout)
    code = _GRPC_CODES.get(status.name, Code.INTERNAL)
    retry_after: str | None = None
    trailing = tuple(error.trailing_metadata() or ())
    for key, value in trailing:
        if key == "retry-after":
            retry_after = str(value)
    if code is Code.RESOURCE_EXHAUSTED and details.startswith("[protocol]"):
        code = Code.PAYLOAD_TOO_LARGE
    parsed = error_from_line(details, code, _retry_after_header(retry_after), f"grpc/{status.name}")
    parsed.reply_headers = _relayed(trailing)
    return parsed


def connection_error(address: str, why: str) -> ClientError:
    return ClientError.of(error_rules.CONNECTION, f"instance {address} unreachable: {why}")


def deadline_error(address: str, timeout: float) -> ClientError:
    return ClientError.of(
        error_rules.DEADLINE, f"no answer from instance {address} within {max(timeout, 0.0):.3f}s"
    )


def attempt_timeout_error(address: str, limit: float) -> ClientError:
    """One attempt ran out of its own time, the request's is left: another instance tries."""
    return ClientError.of(
        error_rules.ATTEMPT_TIMEOUT,
        f"no answer from instance {address} within the attempt timeout ({limit:.3f}s)",
    )


def malformed_response(address: str, why: str) -> ClientError:
    return ClientError.of(
        error_rules.MALFORMED_RESPONSE, f"instance {address} sent a malformed response: {why}"
    )


# ---- transports -------------------------------------------------------------


class Transport(ABC):
    """The V2 calls the client makes on one instance; every failure is a ModelyardError."""

    address: str

    @abstractmethod
    async def infer(self, request: InferRequest, timeout: float) -> InferResponse: ...

    @abstractmethod
    async def model_metadata(
        self, model: str, version: str | None, timeout: float
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def model_config(
        self, model: str, version: str | None, timeout: float
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def statistics(
        self, model: str | None, version: str | None, timeout: float
    ) -> dict[str, Any]:
        """``{"model_stats": [...]}`` as the V2 statistics extension returns it."""

    @abstractmethod
    async def aclose(self) -> None: ...


def _model_path(model: str, version: str | None) -> str:
    path = f"/v2/models/{quote(model, safe='')}"
    return f"{path}/versions/{quote(version, safe='')}" if version else path


class HttpTransport(Transport):
    def __init__(self, address: str, *, pool_size: int = DEFAULT_HTTP_POOL_SIZE) -> None:
        self.address = address
        self._base = f"http://{address}"
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=pool_size, keepalive_timeout=HTTP_KEEPALIVE_SECS, ttl_dns_cache=None
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            # replies are read as sent: ask for none compressed (aiohttp would ask for gzip)
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding",),
        )
        self._infer_urls: dict[tuple[str, str | None], str] = {}

    def _infer_url(self, model: str, version: str | None) -> str:
        url = self._infer_urls.get((model, version))
        if url is None:
            url = f"{self._base}{_model_path(model, version)}/infer"
            if len(self._infer_urls) < 1024:
                self._infer_urls[(model, version)] = url
        return url

    async def infer(self, request: InferRequest, timeout: float) -> InferResponse:
        body, header_length = v2_http.encode_infer_request(request)
        url = self._infer_url(request.model_name, request.model_version)
        headers = {
            "Content-Type": "application/octet-stream",
            "Inference-Header-Content-Length": str(header_length),
        }
        if request.forward_headers:
            headers.update(request.forward_headers)
        status, payload, reply_headers = await self._send("POST", url, timeout, body, headers)
        if status != 200:
            raise error_from_http(status, payload, reply_headers.get("Retry-After"), reply_headers)
        length = reply_headers.get("Inference-Header-Content-Length")
        try:
            return v2_http.decode_infer_response(payload, int(length) if length else None, request)
        except (ValueError, KeyError, TypeError, ModelyardError) as exc:
            raise malformed_response(self.address, str(exc)) from exc

    async def _send(
        self,
        method: str,
        url: str,
        timeout: float,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes, Any]:
        if timeout <= 0:
            raise deadline_error(self.address, timeout)
        try:
            async with self._session.request(
                method,
                url,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as reply:
                payload = await reply.read()
                return reply.status, payload, reply.headers
        except TimeoutError:
            raise deadline_error(self.address, timeout) from None
        except aiohttp.ClientError as exc:
            raise connection_error(self.address, str(exc) or type(exc).__name__) from exc

    async def _get_json(self, path: str, timeout: float) -> dict[str, Any]:
        status, payload, headers = await self._send("GET", self._base + path, timeout)
        if status != 200:
            raise error_from_http(status, payload, headers.get("Retry-After"), headers)
        try:
            doc = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise malformed_response(self.address, str(exc)) from exc
        if not isinstance(doc, dict):
            raise malformed_response(self.address, f"{path} answered {type(doc).__name__}")
        return doc

    async def model_metadata(
        self, model: str, version: str | None, timeout: float
    ) -> dict[str, Any]:
        return await self._get_json(_model_path(model, version), timeout)

    async def model_config(self, model: str, version: str | None, timeout: float) -> dict[str, Any]:
        return await self._get_json(f"{_model_path(model, version)}/config", timeout)

    async def statistics(
        self, model: str | None, version: str | None, timeout: float
    ) -> dict[str, Any]:
        path = f"{_model_path(model, version)}/stats" if model else "/v2/models/stats"
        return await self._get_json(path, timeout)

    async def aclose(self) -> None:
        await self._session.close()


class GrpcTransport(Transport):
    def __init__(self, address: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.address = address
        self._channel = grpc.aio.insecure_channel(
            address,
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes),
            ],
        )
        self._stub = service_pb2_grpc.GRPCInferenceServiceStub(self._channel)

    async def _unary(self, method: Any, message: Any, timeout: float, metadata: Any = None) -> Any:
        if timeout <= 0:
            raise deadline_error(self.address, timeout)
        try:
            return await method(message, timeout=timeout, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            raise error_from_grpc(exc, self.address, timeout) from None

    async def infer(self, request: InferRequest, timeout: float) -> InferResponse:
        message = v2_grpc.encode_infer_request(request)
        metadata = tuple(request.forward_headers.items()) if request.forward_headers else None
        reply = await self._unary(self._stub.ModelInfer, message, timeout, metadata)
        try:
            return v2_grpc.decode_infer_response(reply, request)
        except (ValueError, KeyError, TypeError, ModelyardError) as exc:
            raise malformed_response(self.address, str(exc)) from exc

    async def stream_infer(
        self, request: InferRequest, timeout: float | None
    ) -> AsyncIterator[tuple[InferResponse | None, ModelyardError | None, bool]]:
        """One request on a ``ModelStreamInfer`` stream: each response as the instance sends
        it (a decoupled model's many), as ``(response, error, final)``; the last is final.
        ``timeout``: for the whole stream (None: none)."""
        if timeout is not None and timeout <= 0:
            raise deadline_error(self.address, timeout)
        message = v2_grpc.encode_infer_request(request)
        # every stream ends with a response marked final, empty if the model sent FINAL alone
        message.parameters["triton_enable_empty_final_response"].bool_param = True
        metadata = tuple(request.forward_headers.items()) if request.forward_headers else None
        call = self._stub.ModelStreamInfer(iter([message]), timeout=timeout, metadata=metadata)
        try:
            async for reply in call:
                final = bool(reply.infer_response.parameters["triton_final_response"].bool_param)
                if reply.error_message:
                    # a stream's error carries its line, not a status: the line says it all
                    error = error_from_line(reply.error_message, Code.INTERNAL, None, "grpc")
                    yield None, error, True
                    return
                if not reply.infer_response.outputs:
                    if final:
                        yield None, None, True
                        return
                    continue
                try:
                    response = v2_grpc.decode_infer_response(reply.infer_response, request)
                except (ValueError, KeyError, TypeError, ModelyardError) as exc:
                    raise malformed_response(self.address, str(exc)) from exc
                yield response, None, final
                if final:
                    return
        except grpc.aio.AioRpcError as exc:
            raise error_from_grpc(exc, self.address, timeout or 0.0) from None
        finally:
            call.cancel()
        yield None, None, True  # the stream ended without a final mark: it ends here

    async def model_metadata(
        self, model: str, version: str | None, timeout: float
    ) -> dict[str, Any]:
        message = pb.ModelMetadataRequest(name=model, version=version or "")
        reply = await self._unary(self._stub.ModelMetadata, message, timeout)

        def tensors(items: Any) -> list[dict[str, Any]]:
            return [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in items]

        return {
            "name": reply.name,
            "versions": list(reply.versions),
            "platform": reply.platform,
            "inputs": tensors(reply.inputs),
            "outputs": tensors(reply.outputs),
        }

    async def model_config(self, model: str, version: str | None, timeout: float) -> dict[str, Any]:
        message = pb.ModelConfigRequest(name=model, version=version or "")
        reply = await self._unary(self._stub.ModelConfig, message, timeout)
        doc: dict[str, Any] = json_format.MessageToDict(
            reply.config, preserving_proto_field_name=True
        )
        return doc

    async def statistics(
        self, model: str | None, version: str | None, timeout: float
    ) -> dict[str, Any]:
        message = pb.ModelStatisticsRequest(name=model or "", version=version or "")
        reply = await self._unary(self._stub.ModelStatistics, message, timeout)
        doc: dict[str, Any] = json_format.MessageToDict(reply, preserving_proto_field_name=True)
        return doc

    async def aclose(self) -> None:
        await self._channel.close()


def open_transport(
    kind: str,
    address: str,
    *,
    http_pool_size: int = DEFAULT_HTTP_POOL_SIZE,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Transport:
    if kind == "http":
        return HttpTransport(address, pool_size=http_pool_size)
    if kind == "grpc":
        return GrpcTransport(address, max_message_bytes=max_message_bytes)
    raise ConfigError.of(error_rules.TRANSPORT_KIND, f"unknown transport '{kind}'")
