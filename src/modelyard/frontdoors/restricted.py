"""tritonserver's ``--http-restricted-api`` and ``--grpc-restricted-protocol``.

Each flag names a group of endpoint categories and the header (and value) a call to
them must carry: ``--http-restricted-api=model-repository,health:admin-key=secret``. A
call without it is refused in Triton's words, 403 over HTTP ("This API is restricted,
expecting header 'admin-key'") and PERMISSION_DENIED over gRPC ("This protocol is
restricted, ..."; Triton answers UNAVAILABLE, which clients retry), and nothing else
runs. Over gRPC the header is ``triton-grpc-protocol-<key>``, as in Triton. A category
is in one group at most; an unknown one stops the server at start, in Triton's words.
This is not authentication: the value is a shared secret in the command line; the
service file's auth (``governance/auth.py``) is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from modelyard import error_rules
from modelyard.errors import ConfigError, ProtocolError

# Triton's categories, by the name its flags take
CATEGORIES = (
    "health",
    "metadata",
    "inference",
    "shared-memory",
    "model-config",
    "model-repository",
    "statistics",
    "trace",
    "logging",
)
GRPC_HEADER_PREFIX = "triton-grpc-protocol-"

# each gRPC method's category (the health service's Check is health too)
GRPC_METHODS = {
    "ServerLive": "health",
    "ServerReady": "health",
    "ModelReady": "health",
    "ServerMetadata": "metadata",
    "ModelMetadata": "metadata",
    "ModelInfer": "inference",
    "ModelStreamInfer": "inference",
    "ModelConfig": "model-config",
    "ModelStatistics": "statistics",
    "RepositoryIndex": "model-repository",
    "RepositoryModelLoad": "model-repository",
    "RepositoryModelUnload": "model-repository",
    "SystemSharedMemoryStatus": "shared-memory",
    "SystemSharedMemoryRegister": "shared-memory",
    "SystemSharedMemoryUnregister": "shared-memory",
    "CudaSharedMemoryStatus": "shared-memory",
    "CudaSharedMemoryRegister": "shared-memory",
    "CudaSharedMemoryUnregister": "shared-memory",
    "TraceSetting": "trace",
    "LogSettings": "logging",
}


@dataclass(frozen=True, slots=True)
class Restrictions:
    """The categories restricted on one front door: category -> (header, value); header
    names are lower-case, as both front doors read them."""

    by_category: dict[str, tuple[str, str]]
    protocol: str  # "http" or "grpc"

    @classmethod
    def parse(cls, groups: Iterable[str], protocol: str) -> Restrictions | None:
        """The restrictions the flag's values give (None: none); refuses a malformed value,
        an unknown category or one named twice, in Triton's words."""
        feature = "api" if protocol == "http" else "protocol"
        flag = "--http-restricted-api" if protocol == "http" else "--grpc-restricted-protocol"
        prefix = GRPC_HEADER_PREFIX if protocol == "grpc" else ""
        by_category: dict[str, tuple[str, str]] = {}
        for group in groups:
            names, colon, setting = group.partition(":")
            key, equals, value = setting.partition("=")
            if not colon or not equals or not names or not key or not value:
                raise _flag_error(
                    f"{flag} option format is '<{feature}s>:<key>=<value>'. Got {group}", flag
                )
            for name in names.split(","):
                if name not in CATEGORIES:
                    raise _flag_error(f"unknown restricted {feature} '{name}'", flag)
                if name in by_category:
                    raise _flag_error(
                        f"restricted {feature} '{name}' can not be specified in multiple "
                        "config groups",
                        flag,
                    )
                by_category[name] = ((prefix + key).lower(), value)
        return cls(by_category, protocol) if by_category else None

    def refusal(self, category: str, value_of: dict[str, str]) -> ProtocolError | None:
        """The refusal of a call in ``category`` whose headers are ``value_of``, or None."""
        rule = self.by_category.get(category)
        if rule is None or value_of.get(rule[0]) == rule[1]:
            return None
        header = rule[0]
        if self.protocol == "http":
            detail = f"This API is restricted, expecting header '{header}'"
            where = f"send the header '{header}' (tritonserver --http-restricted-api)"
        else:
            detail = f"This protocol is restricted, expecting header '{header}'"
            where = f"send the metadata '{header}' (tritonserver --grpc-restricted-protocol)"
        return ProtocolError.of(error_rules.RESTRICTED, detail, where=where, triton=True)


def _flag_error(detail: str, flag: str) -> ConfigError:
    return ConfigError.of(
        error_rules.TRITON_FLAG,
        detail,
        where=f"modelyard serve {flag} <categories>:<key>=<value>, categories among "
        + ", ".join(CATEGORIES),
    )
