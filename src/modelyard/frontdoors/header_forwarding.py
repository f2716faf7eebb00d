"""tritonserver's ``--http-header-forward-pattern`` and ``--grpc-header-forward-pattern``.

The headers (gRPC metadata) of an infer request whose names match the pattern become
string parameters of the request, which a model reads as any other parameter
(``request.parameters()`` in a python-backend model). As in Triton, the pattern
matches anywhere in the name, ignoring case unless it starts with ``(?-i)`` (HTTP
names arrive lower-cased, as ASGI gives them; gRPC metadata keys are lower-case); a
matching header named as a parameter the protocol reads (``sequence_id``,
``priority``, ...) or starting with ``triton_`` is refused, so that no header can
steer the server. A header a request carries twice is forwarded once, its last value,
and a forwarded header takes the place of a body parameter of the same name.

Names and values are bounded by the front door's header limits before they get here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from modelyard import error_rules
from modelyard.errors import ConfigError, ProtocolError, shown
from modelyard.types import PROTOCOL_PARAMETERS

# Triton's reserved parameter keys: a forwarded header may not be one of them
RESERVED = PROTOCOL_PARAMETERS | {"headers"}


class HeaderForwarding:
    """Which headers of a request become its parameters."""

    def __init__(self, pattern: str, flag: str) -> None:
        self.pattern = pattern
        flags = re.IGNORECASE
        if pattern.startswith("(?-i)"):  # RE2's case-sensitive switch, which re lacks
            pattern, flags = pattern[len("(?-i)") :], re.NOFLAG
        try:
            self._regex = re.compile(pattern, flags)
        except re.error as exc:
            raise ConfigError.of(
                error_rules.TRITON_FLAG,
                f"{flag} {shown(self.pattern, 80)}: not a regular expression ({exc})",
                where=f"modelyard serve {flag} PATTERN (e.g. 'x-user-.*')",
            ) from None

    def parameters(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        """The parameters the matching ``(name, value)`` pairs give; raises on a reserved one."""
        found: dict[str, str] = {}
        search = self._regex.search
        for name, value in headers:
            if search(name) is None:
                continue
            if name in RESERVED or name.startswith("triton_"):
                raise ProtocolError.of(
                    error_rules.RESERVED_HEADER,
                    f"Header '{shown(name, 80)}' is reserved for Triton usage and cannot be "
                    "forwarded",
                )
            found[name] = value
        return found
