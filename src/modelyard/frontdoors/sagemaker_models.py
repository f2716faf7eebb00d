"""SageMaker's multi-model endpoints as Triton serves them (``/models`` on the SageMaker
port): a model loaded from the folder SageMaker put it in, then invoked and unloaded by
the name its load gave.

``POST /models`` with ``{"model_name": NAME, "url": URL}``: the url's folder is registered
as a repository whose model (the url's own where its ``config.pbtxt`` is there, else the
folder's one model, else its ensemble) is served under the call's
``X-Amzn-SageMaker-Target-Model`` (else NAME), then loaded through the V2 repository API,
so that a load asks what every load asks (authorization, explicit mode). 409: the folder
or the name is registered already; 507: the load did not fit in memory (SageMaker then
unloads another model and tries again); a failed load 400, any other refusal its own
status; each with its error line.
A url is read only where SageMaker puts models (``/opt/ml/models/<hash>/model``, Triton's
pattern): no other path of the server's filesystem is reached from a call.

``GET /models``, ``GET /models/NAME``: what is loaded, and from where.
``POST /models/NAME/invoke``: an inference, as ``/invocations``.
``DELETE /models/NAME``: unloaded with the models it calls, waited for until unloaded (as
Triton, at most 350 s), its repository unregistered.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import structlog

from modelyard.errors import MEMORY_BUDGET_RULE, Code, ModelyardError, ProtocolError, shown
from modelyard.frontdoors.http import HttpFrontend, error_reply
from modelyard.frontdoors.rewritten import (
    Receive,
    Scope,
    Send,
    as_call,
    no_route,
    refused,
    replay,
    reply,
)
from modelyard.modelfiles.config import config_path, read_model_config
from modelyard.modelfiles.repository import is_model_name
from modelyard.protocol.json_body import json_object
from modelyard.server.ensemble import ENSEMBLE

log = structlog.get_logger("modelyard.sagemaker")

RULE = "protocol/sagemaker"
TARGET_MODEL = b"x-amzn-sagemaker-target-model"
MODELS_ROOT = Path("/opt/ml/models")  # where SageMaker puts the models it loads
_MOST_FOLDERS = 64  # a url's folder with more is refused before any is read
UNLOAD_TIMEOUT_S = 350.0  # Triton's wait for an unload (SageMaker's own is 360 s)
# Triton's words for a load that ran out of memory (SageMakerMMECheckOOMError)
_OUT_OF_MEMORY = (
    "CUDA out of memory", "CUDA_OUT_OF_MEMORY", "Out of memory", "Out Of Memory",
    "out of memory", "MemoryError", "OutOfMemory", "OOM", "Dst tensor is not initialized",
    "Src tensor is not initialized", "CNMEM_STATUS_OUT_OF_MEMORY",
    "CUDNN_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_ALLOC_FAILED",
    "CUBLAS_STATUS_NOT_INITIALIZED", "Failed to allocate memory", "failed to allocate memory",
    "No space left on device", MEMORY_BUDGET_RULE,
)  # fmt: skip
_KEPT_STATUSES = (401, 403)  # a refused caller is told so, not given SageMaker's 400

Invoke = Callable[[Scope, Receive, Send, str], Awaitable[None]]


@dataclass(slots=True)
class _Reply:
    """A reply of the V2 front door, kept to be answered otherwise."""

    status: int = 0
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


@dataclass(frozen=True, slots=True)
class _Loaded:
    url: str  # the repository registered for it (Triton's modelUrl)
    model: str  # the model that serves it


class MultiModelEndpoints:
    """``/models`` of the SageMaker port, in front of ``http`` (the V2 front door)."""

    def __init__(self, http: HttpFrontend, invoke: Invoke, root: Path = MODELS_ROOT) -> None:
        self.http = http
        self.invoke = invoke
        # Triton's model_path_regex: ROOT/<hash>/model[/<subdir>]
        self.url_pattern = re.compile(
            re.escape(str(root)) + r"/[0-9A-Za-z._]+/model/?([0-9A-Za-z._]+)?"
        )
        self.loaded: dict[str, _Loaded] = {}  # by the name the load gave

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, name: str, action: str
    ) -> None:
        method = scope["method"]
        try:
            if method == "GET":
                await self._get(send, name)
            elif method == "POST" and action:
                await self.invoke(
                    scope, receive, send, self._target(scope, self._known(name).model)
                )
            elif method == "POST":
                await self._load(scope, receive, send)
            elif method == "DELETE":
                await self._unload(scope, send, name)
            else:
                raise no_route(RULE, method, scope["path"], "/models: GET, POST or DELETE")
        except ModelyardError as error:
            status, headers, body = error_reply(error)
            conflict = error.code is Code.ALREADY_EXISTS  # SageMaker's 409, not the V2 400
            await reply(send, 409 if conflict else status, headers, body)

    async def _get(self, send: Send, name: str) -> None:
        if name:
            loaded = self._known(name)
            await _json(send, {"modelName": name, "modelUrl": loaded.url})
            return
        ready = self.http.dataplane.model_ready
        models = [  # as Triton: a model not ready yet is an empty entry
            {"modelName": key, "modelUrl": loaded.url} if ready(loaded.model, None) else {}
            for key, loaded in list(self.loaded.items())
        ]
        await _json(send, {"models": models})

    async def _load(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await self.http.read_body(scope, receive)
        doc = json_object(body or b"{}", "the request body", _bad_load)
        name, url = doc.get("model_name"), doc.get("url")
        if not isinstance(name, str) or not is_model_name(name):
            raise _bad_load(f"'model_name' must name a model, got {_quoted(name)}")
        target = self._target(scope, name)
        if name in self.loaded:  # as Triton: its registration says the name is taken
            raise refused(RULE, f"model '{name}' is loaded already",
                          f"DELETE /models/{name} first", Code.ALREADY_EXISTS)  # fmt: skip
        if not isinstance(url, str):
            raise _bad_load(f"'url' must be a string, got {_quoted(url)}")
        loop = asyncio.get_running_loop()
        repository, folder = await loop.run_in_executor(None, self._model_folder, url)
        manager = self.http.dataplane.manager
        manager.register_repository(repository, {folder: target})  # refused: 409 (taken)
        log.info("sagemaker_load", model=target, url=str(repository),
                 triton=f"Loading SageMaker TargetModel: {target}")  # fmt: skip
        answer = await self._v2(scope, f"/v2/repository/models/{target}/load", b"")
        if answer.status != 200:
            manager.unregister_repository(repository)
            await reply(send, _load_status(answer), answer.headers, answer.body)
            return
        self.loaded[name] = _Loaded(str(repository), target)
        await reply(send, 200, [], b"")

    async def _unload(self, scope: Scope, send: Send, name: str) -> None:
        loaded = self._known(name)
        model = self._target(scope, loaded.model)
        log.info("sagemaker_unload", model=model,
                 triton=f"Unloading SageMaker TargetModel: {model}")  # fmt: skip
        body = b'{"parameters": {"unload_dependents": true}}'
        answer = await self._v2(scope, f"/v2/repository/models/{model}/unload", body)
        if answer.status != 200:
            status = answer.status if answer.status in _KEPT_STATUSES else 400
            await reply(send, status, answer.headers, answer.body)
            return
        await self._unloaded(model)
        if self.loaded.pop(name, None) is not None:  # not a DELETE of it at the same time
            self.http.dataplane.manager.unregister_repository(Path(loaded.url))
        await reply(send, 200, [], b"")

    async def _unloaded(self, model: str) -> None:
        """Wait until the repository index says ``model`` is unloaded (Triton's wait)."""
        started = time.monotonic()
        while time.monotonic() - started < UNLOAD_TIMEOUT_S:
            rows = self.http.dataplane.manager.index()
            states = [(row.get("state"), row.get("reason")) for row in rows
                      if row["name"] == model]  # fmt: skip
            if not states or all(state == ("UNAVAILABLE", "unloaded") for state in states):
                return
            await asyncio.sleep(0.05)
        log.error("sagemaker_unload_slow", model=model, triton=(
            f"Error: UNLOAD did not complete within expected {UNLOAD_TIMEOUT_S:.0f} seconds. "
            "This may result in SageMaker UNLOAD timeout."))  # fmt: skip

    async def _v2(self, scope: Scope, path: str, body: bytes) -> _Reply:
        """A repository call of the V2 front door, as this call's caller makes it."""
        answer = _Reply()
        call = as_call(scope, "POST", path, query_string=b"")
        await self.http(call, replay(body), answer.send)
        return answer

    def _known(self, name: str) -> _Loaded:
        loaded = self.loaded.get(name)
        if loaded is None:
            raise refused(
                RULE, f"model '{name}' is not loaded", "POST /models to load it first",
                Code.NOT_FOUND,
            )  # fmt: skip
        return loaded

    @staticmethod
    def _target(scope: Scope, otherwise: str) -> str:
        """The model a call names in ``X-Amzn-SageMaker-Target-Model``, else ``otherwise``
        (the model a load gave, the load's own name)."""
        for key, value in scope["headers"]:
            if key == TARGET_MODEL:
                target = value.decode("latin-1")
                if not is_model_name(target):
                    raise _bad_load(f"X-Amzn-SageMaker-Target-Model must name a model, got "
                                    f"{_quoted(target)}")  # fmt: skip
                return target
        return otherwise

    def _model_folder(self, url: str) -> tuple[Path, str]:
        """The repository a url names and its folder that serves the model: the url's own
        where its config is there, else the url's one model folder, else its ensemble."""
        parts = url.split("/")
        if self.url_pattern.fullmatch(url) is None or "." in parts or ".." in parts:
            raise _bad_load(f"'url' must be a model folder SageMaker made "
                            f"(<root>/<hash>/model), got {_quoted(url)}")  # fmt: skip
        here = Path(url.rstrip("/"))
        if config_path(here).is_file():
            return here.parent, here.name
        try:
            with os.scandir(here) as entries:
                folders = sorted(e.name for e in entries
                                 if e.is_dir() and not e.name.startswith("."))  # fmt: skip
        except OSError as exc:
            raise _bad_load(f"failed to read '{url}': {exc.strerror}") from None
        if len(folders) > _MOST_FOLDERS:
            raise _bad_load(f"'{url}' holds {len(folders)} folders; at most {_MOST_FOLDERS}")
        if len(folders) == 1:
            return here, folders[0]
        ensembles = [name for name in folders if _is_ensemble(here / name)]
        if len(ensembles) != 1:
            raise _bad_load(
                f"'{url}' holds {len(folders)} model folders and {len(ensembles)} ensembles: "
                "a url serves one model, or one ensemble of them"
            )
        return here, ensembles[0]


def _is_ensemble(model_dir: Path) -> bool:
    try:
        return read_model_config(model_dir, check_name=False).platform == ENSEMBLE
    except ModelyardError:
        return False


def _load_status(answer: _Reply) -> int:
    """SageMaker's status for a failed load: 507 where memory ran out, else 400."""
    if answer.status in _KEPT_STATUSES:
        return answer.status
    text = answer.body.decode("utf-8", "replace")
    return 507 if any(words in text for words in _OUT_OF_MEMORY) else 400


def _quoted(value: object) -> str:
    return shown(repr(value), 80)


def _bad_load(detail: str) -> ProtocolError:
    return refused(RULE, detail, 'POST /models {"model_name": NAME, "url": URL}')


async def _json(send: Send, doc: dict[str, Any]) -> None:
    await reply(send, 200, [(b"content-type", b"application/json")], orjson.dumps(doc))
