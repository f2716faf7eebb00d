"""The repository load request's parameters, the same for HTTP and gRPC."""

from __future__ import annotations

from typing import Any

import orjson
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import Code, ProtocolError
from modelyard.modelfiles.config import parse_json_config


def load_override(model: str, params: dict[str, Any]) -> mc.ModelConfig | None:
    """The config override of a load request, or None; refuses model file overrides."""
    if any(key.startswith("file:") for key in params):
        raise ProtocolError(
            "model file overrides in a load request are not supported: requests never "
            "write to the model repository",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/load-file-override",
            where="put model files in the repository, then load by name",
        )
    if "config" not in params:
        return None
    text = params["config"]
    if not isinstance(text, str):
        raise ProtocolError(
            "load parameter 'config' must be a JSON string",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/load-config",
            where="the load request's parameters.config",
        )
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(
            f"load parameter 'config' is not valid JSON: {exc}",
            code=Code.INVALID_ARGUMENT,
            rule="protocol/load-config",
            where="the load request's parameters.config",
        ) from None
    return parse_json_config(document, f"load request for '{model}'")
