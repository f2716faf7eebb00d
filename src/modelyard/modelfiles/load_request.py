"""The repository load request's parameters, the same for HTTP and gRPC.

``config`` overrides the model's configuration. ``file:<version>/<name>`` gives a
model file (base64 over HTTP, bytes over gRPC); as in Triton, the model is then
loaded from a fresh directory holding only those files, with ``config`` as its
configuration. Every name is checked before anything is written: relative, a
version directory first, no component that could climb out or hide; the
directory is made outside the repository and written without following links.
"""

from __future__ import annotations

import binascii
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pyjson5
import structlog
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import Code, ModelyardError, ProtocolError, shown
from modelyard.modelfiles.config import parse_json_config

log = structlog.get_logger("modelyard.load_request")

FILE_PREFIX = "file:"
MAX_FILES = 64
MAX_DEPTH = 6  # the version directory and at most five below it
_VERSION = re.compile(r"[0-9]{1,18}")
_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")  # no leading dot: no '..'
OVERRIDE_PREFIX = "modelyard-load-"
# Triton parses a config override with protobuf's JSON parser, whose legacy syntax also
# takes unquoted keys, single-quoted strings and trailing commas (its QA files send
# such configs); what strict JSON refuses is read so, up to this size (model configs
# are kilobytes)
MAX_LEGACY_CONFIG_CHARS = 1 << 20


def _bad(detail: str, rule: str, where: str) -> ProtocolError:
    return ProtocolError(detail, code=Code.INVALID_ARGUMENT, rule=rule, where=where)


def load_override(model: str, params: dict[str, Any]) -> mc.ModelConfig | None:
    """The config override of a load request, or None."""
    if "config" not in params:
        if any(key.startswith(FILE_PREFIX) for key in params):
            raise _bad(
                f"failed to load '{shown(model)}', failed to poll from model repository: file "
                "overrides need the 'config' parameter as the configuration of the directory "
                "they make",
                "protocol/load-file-override",
                "the load request's parameters.config",
            )
        return None
    text = params["config"]
    if not isinstance(text, str):
        raise _bad(
            "load parameter 'config' must be a JSON string",
            "protocol/load-config",
            "the load request's parameters.config",
        )
    try:
        document = _config_document(text)
        if not isinstance(document, dict):
            raise ValueError(f"the config is a JSON {type(document).__name__}, not an object")
        return parse_json_config(document, f"load request for '{model}'")
    except (ValueError, ModelyardError) as exc:  # orjson's JSONDecodeError is a ValueError
        detail = exc.detail if isinstance(exc, ModelyardError) else str(exc)
        error = _bad(
            f"failed to load '{shown(model)}', Invalid config override: {detail}",
            "protocol/load-config",
            "the load request's parameters.config (a model config as JSON)",
        )
        log.warning("model_load_failed", model=shown(model), **error.fields())
        raise error from None


def _config_document(text: str) -> Any:
    """The override's JSON; in protobuf's legacy syntax where strict JSON refuses it."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as strict:
        if len(text) > MAX_LEGACY_CONFIG_CHARS:
            raise
        try:  # JSON5 is a superset of that syntax; its nesting is bounded (32)
            return pyjson5.loads(text)
        except pyjson5.Json5Exception:
            raise strict from None


def load_files(model: str, params: dict[str, Any]) -> dict[tuple[str, ...], bytes]:
    """The files a load request gives, by their checked relative path; empty: none."""
    files: dict[tuple[str, ...], bytes] = {}
    for key, value in params.items():
        if not key.startswith(FILE_PREFIX):
            continue
        if len(files) >= MAX_FILES:
            raise _bad(
                f"a load request may give at most {MAX_FILES} files",
                "protocol/load-file-override",
                "the load request's file: parameters",
            )
        files[_relative_path(model, key)] = _content(key, value)
    return files


def _relative_path(model: str, key: str) -> tuple[str, ...]:
    name = key[len(FILE_PREFIX) :]
    parts = tuple(name.split("/"))
    if (
        not 2 <= len(parts) <= MAX_DEPTH
        or not _VERSION.fullmatch(parts[0])
        or not all(_COMPONENT.fullmatch(part) for part in parts[1:])
    ):
        raise _bad(
            f"failed to load '{shown(model)}': file override '{shown(name, 120)}' is not "
            "<version>/<file>: a version "
            f"directory, then up to {MAX_DEPTH - 1} names of letters, digits, '_', '.', '-' "
            "(none starting with '.')",
            "protocol/load-file-override",
            "the load request's file: parameters",
        )
    return parts


def _content(key: str, value: Any) -> bytes:
    if isinstance(value, bytes):  # gRPC's bytes_param
        return value
    if isinstance(value, str):  # HTTP: base64
        try:
            return binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError):
            pass
    raise _bad(
        f"file override '{shown(key, 120)}' must be base64 (HTTP) or bytes (gRPC)",
        "protocol/load-file-override",
        "the load request's file: parameters",
    )


def write_override(model: str, files: dict[tuple[str, ...], bytes]) -> Path:
    """A fresh directory outside the repository holding ``model/<files>``; its model dir.

    The model's name becomes the directory's name, so it must be one plain name.
    """
    if not _COMPONENT.fullmatch(model):
        raise _bad(
            f"failed to load '{shown(model)}': a model loaded from file overrides needs a "
            "name of letters, digits, '_', '.', '-' (not starting with '.')",
            "protocol/load-file-override",
            "the model name of the load request",
        )
    root = Path(tempfile.mkdtemp(prefix=OVERRIDE_PREFIX))
    model_dir = root / model
    try:
        model_dir.mkdir()
        for parts, content in files.items():
            directory = model_dir.joinpath(*parts[:-1])
            directory.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(directory / parts[-1], flags, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(content)
    except OSError as exc:  # one name a directory of another, or no room: nothing stays
        shutil.rmtree(root, ignore_errors=True)
        raise _bad(
            f"failed to load '{shown(model)}': its files cannot be written as given "
            f"({exc.strerror}): a name is both a file and a directory, or the disk is full",
            "protocol/load-file-override",
            "the load request's file: parameters",
        ) from None
    return model_dir
