"""The last instances a client read from the registry, kept on disk with the time they were read.

A gateway or SDK client started while its registry cannot be read (etcd down, a
partition) would know no instance, though every instance may be healthy. Each
snapshot the client reads is written here (only when it differs from the one on
disk, atomically: a reader sees the old file or the new one); at start, when
the registry cannot be read, the client routes on this file and says how old it
is, until the registry answers. Instances that went away meanwhile fail their
attempts and are tried elsewhere or ejected, as dead ones are.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import orjson
import structlog

from modelyard.discovery.registry import Instance

log = structlog.get_logger("modelyard.client")

DEFAULT_CACHE: Any = object()  # the client's default: a file per service and registry URL
MAX_CACHE_BYTES = 16 * 1024 * 1024  # a file written by hand must not cost more than this


def default_cache_path(service: str, registry_url: str) -> Path:
    """``$XDG_CACHE_HOME/modelyard/instances/SERVICE-HASH.json`` (``~/.cache`` by default),
    the hash naming the registry URL, so two registries' views of a service never mix."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.blake2b(registry_url.encode(), digest_size=6).hexdigest()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in service)[:100]
    return Path(base) / "modelyard" / "instances" / f"{safe}-{digest}.json"


class InstancesCache:
    def __init__(self, path: Path, service: str) -> None:
        self.path = path
        self.service = service
        self._written: bytes | None = None

    def save(self, instances: list[Instance]) -> None:
        """Keep ``instances`` as the service's last known ones (a failure is logged: the
        cache is a help, never a reason to fail a call)."""
        body = orjson.dumps(
            [i.to_json() for i in instances if i.service == self.service],
            option=orjson.OPT_SORT_KEYS,
        )
        if body == self._written:
            return
        doc = orjson.dumps({"service": self.service, "saved_at": time.time()})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(doc[:-1] + b',"instances":' + body + b"}")
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("instances_cache_unwritable", path=str(self.path), error=str(exc))
            return
        self._written = body

    def load(self) -> tuple[list[Instance], float] | None:
        """The instances kept, and when they were read from the registry (epoch seconds);
        None when there is no usable file."""
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_CACHE_BYTES + 1)
        except OSError:
            return None
        try:
            if len(raw) > MAX_CACHE_BYTES:
                raise ValueError(f"over {MAX_CACHE_BYTES} bytes")
            doc = orjson.loads(raw)
            if doc.get("service") != self.service:
                raise ValueError(f"it keeps service {doc.get('service')!r}")
            instances = [Instance.from_json(entry) for entry in doc["instances"]]
            saved_at = float(doc["saved_at"])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning("instances_cache_unreadable", path=str(self.path), error=str(exc))
            return None
        return [i for i in instances if i.service == self.service], saved_at
