"""Authentication and authorisation: API keys and bearer tokens, by hash.

The service file stores only ``sha256:<hex>`` digests of keys and tokens.
A principal holds permissions per interface, each a list of model name
patterns (``fnmatch``: ``ranker``, ``digits_*``, ``*``). Admin operations
(repository load/unload, rule reload) are the ``admin`` interface. Health
checks are never authenticated, as load balancers probe them anonymously.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from modelyard.errors import Code, GovernanceError
from modelyard.governance.guard import Call

AUTH_RULES = "auth/"  # the family every auth rule id belongs to
UNAUTHENTICATED_RULE = "auth/unauthenticated"
PERMISSION_RULE = "auth/permission"

INTERFACES = ("infer", "metadata", "admin", "health")
OPEN_INTERFACES = frozenset({"health"})


def hash_secret(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode("utf-8")).hexdigest()


def generate_key() -> str:
    return "my_" + secrets.token_urlsafe(24)


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    allow: dict[str, tuple[str, ...]]  # interface -> model patterns
    line: str = ""  # file:line where it is defined

    def may(self, interface: str, model: str | None) -> bool:
        patterns = self.allow.get(interface)
        if not patterns:
            return False
        if model is None:
            return True
        return any(fnmatchcase(model, p) for p in patterns)


@dataclass(slots=True)
class AuthConfig:
    enabled: bool = False
    by_digest: dict[str, Principal] = field(default_factory=dict)
    service_file: str = "service.yaml"

    def principal(self, name: str | None) -> Principal | None:
        """The principal of that name (auth sets ``Call.principal`` to it), if any."""
        return next((p for p in self.by_digest.values() if p.name == name), None)


def permission_denied(
    principal: Principal, interface: str, model: str | None, service_file: str, through: str = ""
) -> GovernanceError:
    """The refusal of a call the principal may not make; ``through``: how the call names
    ``model`` when it is not the model called (an ensemble step of a loaded config)."""
    target = f" for model '{model}'" if model else ""
    return GovernanceError(
        f"request rejected: principal '{principal.name}' may not call interface "
        f"{interface}{target}{through}",
        code=Code.PERMISSION_DENIED,
        rule=PERMISSION_RULE,
        where=f"auth.principals.{principal.name}.allow.{interface} in "
        f"{service_file}" + (f" ({principal.line})" if principal.line else ""),
    )


_CACHE_SIZE = 1024


class AuthGuard:
    learns_from_outcomes = False  # record() is a no-op: the chain skips it

    def __init__(self, config: AuthConfig) -> None:
        self.config = config
        self.rejections: dict[str, int] = {UNAUTHENTICATED_RULE: 0, PERMISSION_RULE: 0}
        # per-request work is a dict lookup: digests of recent secrets, decisions per model
        self._digests: dict[str, str] = {}
        self._decisions: dict[tuple[str, str, str | None], bool] = {}

    def _digest(self, secret: str) -> str:
        digest = self._digests.get(secret)
        if digest is None:
            if len(self._digests) >= _CACHE_SIZE:
                self._digests.clear()
            digest = self._digests[secret] = hash_secret(secret)
        return digest

    def _may(self, principal: Principal, interface: str, model: str | None) -> bool:
        key = (principal.name, interface, model)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= _CACHE_SIZE:
                self._decisions.clear()
            decision = self._decisions[key] = principal.may(interface, model)
        return decision

    def check(self, call: Call) -> None:
        error = self._refusal(call)
        if error is not None:
            self.rejections[error.rule or UNAUTHENTICATED_RULE] += 1
            raise error

    def quick(self, call: Call) -> None:
        """Auth decides on the credentials, interface and model alone: once per ticket."""
        error = self._refusal(call)
        if error is not None:
            raise error

    def _refusal(self, call: Call) -> GovernanceError | None:
        """None when the call may go on (and ``call.principal`` is set), else why not."""
        interface = call.protocol_interface
        if interface in OPEN_INTERFACES:
            return None
        secret = call.api_key or call.bearer_token
        if not secret:
            return GovernanceError(
                f"request rejected: no credentials for interface {interface}",
                code=Code.UNAUTHENTICATED,
                rule=UNAUTHENTICATED_RULE,
                where="send an API key in the x-api-key header (gRPC metadata) or "
                "'Authorization: Bearer <token>'; keys are listed under auth.principals "
                f"in {self.config.service_file}",
            )
        principal = self.config.by_digest.get(self._digest(secret))
        if principal is None:
            return GovernanceError(
                f"request rejected: unknown API key or token for interface {interface}",
                code=Code.UNAUTHENTICATED,
                rule=UNAUTHENTICATED_RULE,
                where="use a key whose sha256 digest is under auth.principals in "
                f"{self.config.service_file} (modelyard auth hash-key KEY prints it)",
            )
        call.principal = principal.name
        if self._may(principal, interface, call.model):
            return None
        return permission_denied(principal, interface, call.model, self.config.service_file)

    def record(self, call: Call, latency: float, error: BaseException | None) -> None:
        return None
