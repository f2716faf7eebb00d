"""modelyard: serve discriminative models online."""

from modelyard.errors import (
    Code,
    ConfigError,
    EngineError,
    GovernanceError,
    ModelServerError,
    ModelyardError,
    ProtocolError,
)
from modelyard.types import InferRequest, InferResponse, OutputTensor, RequestedOutput

__version__ = "0.1.0"

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
