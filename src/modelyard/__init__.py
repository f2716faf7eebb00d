"""modelyard: serve discriminative models online."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from modelyard.errors import (
    Code,
    ConfigError,
    EngineError,
    GovernanceError,
    ModelServerError,
    ModelyardError,
    ProtocolError,
)

if TYPE_CHECKING:
    from modelyard.types import InferRequest, InferResponse, OutputTensor, RequestedOutput

__version__ = "0.1.0"

# the request and response types hold numpy arrays: imported on first use, so a command
# line that only parses its arguments (modelyard --help) never loads numpy
_TYPES = ("InferRequest", "InferResponse", "OutputTensor", "RequestedOutput")


def __getattr__(name: str) -> Any:
    if name in _TYPES:
        from modelyard import types

        return getattr(types, name)
    raise AttributeError(f"module 'modelyard' has no attribute {name!r}")


__all__ = [
    "Code",
    "ConfigError",
    "EngineError",
    "GovernanceError",
    "InferRequest",
    "InferResponse",
    "ModelServerError",
    "ModelyardError",
    "OutputTensor",
    "ProtocolError",
    "RequestedOutput",
    "__version__",
]
