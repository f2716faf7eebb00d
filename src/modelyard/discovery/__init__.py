"""(1) Discovery: service name → live instances that serve the model.

``open_registry(url)`` picks the backend from the URL:

    embedded                         SQLite file at the default path (one machine)
    embedded:///abs/path/registry.db SQLite file at that path
    etcd://host:port[,host:port]     an etcd cluster (many machines)

The default embedded path is ``$XDG_RUNTIME_DIR/modelyard/registry.db``, or
``~/.cache/modelyard/registry.db`` where ``XDG_RUNTIME_DIR`` is unset. The
same URL opens the services' central governance rules
(``rules_store.open_rules_store``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from modelyard import error_rules
from modelyard.clock import SYSTEM_CLOCK, Clock
from modelyard.discovery.registry import Instance, Lease, Registry, Snapshot
from modelyard.errors import ConfigError, ModelyardError

__all__ = [
    "DEFAULT_REGISTRY_URL",
    "REGISTRY_URL_FORMS",
    "Instance",
    "Lease",
    "Registry",
    "RegistryError",
    "Snapshot",
    "default_embedded_path",
    "deregistered_error",
    "open_registry",
    "registry_location",
    "require_registry",
]

DEFAULT_REGISTRY_URL = "embedded"

REGISTRY_URL_FORMS = "embedded, embedded:///abs/path/registry.db or etcd://host:port[,host:port]"


class RegistryError(ModelyardError):
    """The registry could not be read or written (unreachable, refused, corrupt)."""

    layer = "discovery"


def deregistered_error(lease: Lease) -> RegistryError:
    """An update through a lease the registry no longer holds."""
    return RegistryError.of(
        error_rules.LEASE,
        f"lease {lease.lease_id} of {lease.service}/{lease.instance_id} was deregistered",
    )


def default_embedded_path() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime else Path.home() / ".cache"
    return base / "modelyard" / "registry.db"


def open_registry(url: str, *, clock: Clock = SYSTEM_CLOCK) -> Registry:
    """The registry that ``url`` names; ``ConfigError`` when the URL is not one of the forms."""
    location = registry_location(url)
    if isinstance(location, Path):
        from modelyard.discovery.embedded import EmbeddedRegistry

        return EmbeddedRegistry(location, clock=clock)
    from modelyard.discovery.etcd import EtcdRegistry

    return EtcdRegistry(location)


def require_registry(url: str) -> None:
    """A command that reads or changes a registry needs one that exists: opening an embedded
    file that is not there would make a new, empty registry, and the change would land
    where no instance reads it. The error names the registries found nearby."""
    location = registry_location(url)
    if not isinstance(location, Path) or location.is_file():
        return
    found = nearby_registries(location)
    seen = ", ".join(f"embedded://{path}" for path in found) if found else "none found"
    raise ConfigError.of(
        error_rules.REGISTRY_MISSING,
        f"no registry at {location}: nothing has made one there (registries nearby: {seen})",
    )


def nearby_registries(missing: Path, limit: int = 5) -> list[Path]:
    """Embedded registries that exist near ``missing``: beside it, one folder up from it or
    down from the working directory (where ``modelyard demo`` keeps modelyard-demo/), and
    the default one."""
    places = [missing.parent, missing.parent.parent, Path.cwd()]
    found: list[Path] = []
    for place in places:
        for pattern in ("*.db", "*/registry.db"):
            try:
                found += sorted(place.glob(pattern))
            except OSError:
                continue
    found.append(default_embedded_path())
    unique: list[Path] = []
    for path in found:
        resolved = path.resolve()
        if resolved not in unique and resolved != missing and _is_registry(resolved):
            unique.append(resolved)
    return unique[:limit]


def _is_registry(path: Path) -> bool:
    """Whether ``path`` is an SQLite file (every embedded registry is one)."""
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def registry_location(url: str) -> Path | list[str]:
    """The embedded registry's file, or the etcd endpoints (``http://host:port``), of ``url``."""
    scheme, _, rest = url.partition(":")
    if scheme == "embedded":
        return _embedded_path(url, rest)
    if scheme == "etcd":
        return _etcd_endpoints(url)
    raise _bad_url(url, f"unknown scheme '{scheme}'" if rest else "no scheme")


def _embedded_path(url: str, rest: str) -> Path:
    if rest in ("", "//"):
        return default_embedded_path()
    parts = urlsplit(url)
    if parts.netloc or parts.query or parts.fragment:
        raise _bad_url(url, "an embedded registry is a local file: embedded:///abs/path")
    path = Path(unquote(parts.path))
    if not path.is_absolute() or not rest.startswith("///"):
        raise _bad_url(url, "the embedded registry's path must be absolute (three slashes)")
    return path


def _etcd_endpoints(url: str) -> list[str]:
    parts = urlsplit(url)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _bad_url(url, "an etcd URL names hosts only: etcd://host:port[,host:port]")
    endpoints: list[str] = []
    for member in parts.netloc.split(","):
        host, sep, port = member.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise _bad_url(url, f"'{member}' is not host:port")
        endpoints.append(f"http://{host}:{port}")
    return endpoints


def _bad_url(url: str, why: str) -> ConfigError:
    return ConfigError.of(
        error_rules.REGISTRY_URL,
        f"bad registry URL '{url}': {why}",
        where=f"--registry takes {REGISTRY_URL_FORMS}",
    )
