"""A model's own calls to the repository API: Triton's ``pb_utils.load_model``,
``unload_model`` and ``is_model_ready``.

A python model (in its stub's process) asks; the server answers on its event loop through
the same path as the load API's: a load's ``config`` and ``file:<version>/<name>``
contents become the load request's parameters (``modelfiles/load_request.py`` checks them
and writes the files to a fresh directory, never a path the model names), so the load is
refused or served as the same request over HTTP would be. Where auth is on, the call is
for the principals of the batch the model executes, each of whom must be allowed the
call's interface on the model (``admin`` to load or unload, ``health`` to ask whether it
is ready), as a caller of the API would; a call from ``initialize`` or from a model's own
thread is for no known caller, and refused.

Everything the model gives is bounded before it costs: a model name's length, the bytes
of its config and files (they cross a socket pickled), the number of files
(``load_request.MAX_FILES``). A model may not load or unload itself (its own load or
unload would wait for the call that waits for it), nor wait on a load or unload that
waits, through models' calls, on it (A's initialize loads B, whose initialize loads A:
refused at once, where Triton waits forever); the loads it asks for run on threads of
their own, so a model loading from its ``initialize`` (which holds a load thread) cannot
starve them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from typing import Any

from modelyard import error_rules
from modelyard.engines.pb_utils import MAX_MODEL_LOAD_BYTES
from modelyard.errors import Code, ModelServerError, shown
from modelyard.modelfiles.load_request import FILE_PREFIX, load_files, load_override
from modelyard.server.manager import ASKED_BY, ModelManager

MAX_NAME_CHARS = 1024
MAX_LOAD_BYTES = MAX_MODEL_LOAD_BYTES  # a load's config and file contents together
# a load waits for the model's load (Triton's waits without end); past this the model's
# call fails, and the load goes on
CONTROL_TIMEOUT_S = 600.0
_STOL = re.compile(r"\s*([+-]?[0-9]+)")  # what std::stol reads of a version string

# (principals, interface, model) -> the check of the models a load reaches (None: auth off)
AuthorizeControl = Callable[[tuple[str, ...], str, str], Callable[..., None] | None]


def _refused(detail: str, code: Code = Code.INVALID_ARGUMENT) -> ModelServerError:
    rule = error_rules.MODEL_CONTROL
    return ModelServerError(detail, code=code, rule=rule.id, where=rule.where)


def model_version(text: str) -> str | None:
    """``is_model_ready``'s version string as python_backend reads it (``std::stol``): None
    for the latest; refused where it is no number, or a negative one."""
    if text == "":
        return None
    match = _STOL.match(text)
    # past 19 digits it is out of stol's range (and int() of thousands would refuse)
    digits = match.group(1).lstrip("+-").lstrip("0") if match else ""
    value = int(match.group(1)) if match and len(digits) <= 19 else None
    if value is None or value >= 2**63 or value < -(2**63):
        raise _refused(
            f"failed to get model version from specified version string '{shown(text)}' "
            "(details: stol), version should be an integral value > 0"
        )
    if value < 0:
        raise _refused(
            f"failed to get model version from specified version string '{shown(text)}', "
            "version should be an integral value > 0"
        )
    return str(value)


def _name(arguments: dict[str, Any]) -> str:
    name = arguments.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
        got = f"{len(name)} characters" if isinstance(name, str) else type(name).__name__
        raise _refused(f"a model name of 1 to {MAX_NAME_CHARS} characters, not {got}")
    return name


def _load_parameters(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A load's parameters as the load API takes them: ``config`` where one is given, and
    each file's contents under its ``file:`` key."""
    config, files = arguments.get("config", ""), arguments.get("files") or {}
    if not isinstance(config, str) or not isinstance(files, dict):
        raise _refused(f"failed to load '{shown(name)}': config must be a str, files a dict")
    total = len(config) + sum(len(c) for c in files.values() if isinstance(c, bytes))
    if total > MAX_LOAD_BYTES:
        raise _refused(
            f"failed to load '{shown(name)}': its config and files are {total} bytes, more than "
            f"the {MAX_LOAD_BYTES} a model's load may give",
            Code.RESOURCE_EXHAUSTED,
        )
    parameters: dict[str, Any] = {"config": config} if config else {}
    for key, content in files.items():
        if not isinstance(key, str) or not key.startswith(FILE_PREFIX):
            raise _refused(  # Triton's words
                f"failed to load '{shown(name)}', Unrecognized load parameter "
                f"'{shown(str(key))}' with type 'BYTES'"
            )
        if not isinstance(content, bytes):
            raise _refused(f"failed to load '{shown(name)}': file '{shown(key)}' is not bytes")
        parameters[key] = content
    return parameters


class ModelControl:
    """The repository API as a model's code calls it, from any thread but the loop's."""

    def __init__(self, manager: ModelManager, model_ready: Callable[[str, str | None], bool]):
        self.manager = manager
        self._model_ready = model_ready
        # where auth is on: refuses a principal the call's interface does not allow
        self.authorize: AuthorizeControl | None = None

    def __call__(
        self, kind: str, arguments: dict[str, Any], principals: tuple[str, ...], caller: str
    ) -> Any:
        """``kind``: "load", "unload" or "ready"; ``caller``: the model that asks."""
        if not isinstance(arguments, dict) or kind not in ("load", "unload", "ready"):
            raise _refused(f"no model control call '{shown(str(kind))}'")
        name = _name(arguments)
        if kind == "ready":
            version = model_version(str(arguments.get("version", "")))
            self._authorized(principals, "health", name)
            return self._model_ready(name, version)
        if name == caller:
            raise _refused(
                f"model '{shown(name)}' asked to {kind} itself: a model loads and unloads "
                "other models"
            )
        authorize = self._authorized(principals, "admin", name)
        if kind == "unload":
            dependents = arguments.get("unload_dependents") is True
            return self._on_loop(caller, name, lambda: self.manager.unload(name, dependents))
        parameters = _load_parameters(name, arguments)
        override = load_override(name, parameters)
        files = load_files(name, parameters)
        return self._on_loop(
            caller, name, lambda: self.manager.load(name, override, authorize, files)
        )

    async def _asked(
        self, caller: str, name: str, call: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        """``call`` as asked by ``caller``'s code, which waits for it on ``name``: the
        manager refuses a wait on a load that waits on ``caller`` (a cycle), and runs the
        loads on threads of their own."""
        token = ASKED_BY.set(caller)
        waits = self.manager.asked_waits.setdefault(caller, [])
        waits.append(name)
        try:
            await call()
        finally:
            waits.remove(name)
            if not waits:
                self.manager.asked_waits.pop(caller, None)
            ASKED_BY.reset(token)

    def _authorized(
        self, principals: tuple[str, ...], interface: str, name: str
    ) -> Callable[..., None] | None:
        return None if self.authorize is None else self.authorize(principals, interface, name)

    def _on_loop(
        self, caller: str, name: str, call: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        loop = self.manager.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or not loop.is_running() or running is loop:
            raise ModelServerError.of(
                error_rules.BLS_NOT_RUNNING,
                "the server is not running: a model controls other models only while it serves",
            )
        future = asyncio.run_coroutine_threadsafe(self._asked(caller, name, call), loop)
        try:
            future.result(CONTROL_TIMEOUT_S)
        except TimeoutError:
            raise _refused(
                f"the model's call waited {CONTROL_TIMEOUT_S:.0f} s for the load or unload, "
                "which goes on",
                Code.DEADLINE_EXCEEDED,
            ) from None
