"""The model repository on disk, in Triton's layout.

    <root>/<model>/config.pbtxt          optional
    <root>/<model>/<version>/<file>      version: a positive integer

Several roots are served together, as tritonserver serves several
``--model-repository``: a model's name must be unique across them (a name found
in two roots at start is refused; one added later is served from the first root).
Names that come from requests are only ever compared against the names read
from the directory listings; they are never joined into a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from modelyard.errors import Code, ConfigError

_MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True, slots=True)
class ModelFingerprint:
    """What poll mode compares to see a change: config and each version's files."""

    config: tuple[tuple[str, int, int], ...]
    versions: dict[int, tuple[tuple[str, int, int], ...]]


def _files_signature(directory: Path) -> tuple[tuple[str, int, int], ...]:
    entries: list[tuple[str, int, int]] = []
    for dirpath, _dirnames, filenames in os.walk(directory):
        for filename in filenames:
            path = Path(dirpath) / filename
            try:
                st = path.stat()
            except OSError:
                continue
            entries.append((str(path.relative_to(directory)), st.st_mtime_ns, st.st_size))
    return tuple(sorted(entries))


def _listed(root: Path) -> list[str]:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    return sorted(e.name for e in entries if e.is_dir() and _MODEL_NAME.match(e.name) is not None)


class ModelRepository:
    def __init__(self, root: Path | list[Path], config_name: str | None = None) -> None:
        # tritonserver's --model-config-name: a model with configs/NAME.pbtxt loads from it
        self.config_name = config_name
        roots = root if isinstance(root, list) else [root]
        for path in roots:
            if not path.is_dir():
                raise ConfigError(
                    f"model repository {path} is not a directory",
                    code=Code.INVALID_ARGUMENT,
                    rule="config/model-repository",
                    where="--model-repository",
                )
        seen: dict[str, Path] = {}
        for path in roots:
            for name in _listed(path):
                if name in seen:
                    raise ConfigError(
                        f"model '{name}' is in two repositories, {seen[name]} and {path}; "
                        "a name must be unique across them",
                        code=Code.INVALID_ARGUMENT,
                        rule="config/model-repository",
                        where=f"rename or remove one of {seen[name] / name} and {path / name}",
                    )
                seen[name] = path
        self.roots = roots

    def model_names(self) -> list[str]:
        return sorted({name for root in self.roots for name in _listed(root)})

    def model_dir(self, name: str) -> Path | None:
        """The directory of a model named in a request, if a repository lists it."""
        for root in self.roots:
            for listed in _listed(root):
                if listed == name:
                    return root / listed
        return None

    @staticmethod
    def versions(model_dir: Path) -> list[int]:
        try:
            entries = list(os.scandir(model_dir))
        except OSError:
            return []
        return sorted(
            int(e.name)
            for e in entries
            if e.is_dir() and e.name.isdigit() and not e.name.startswith("0")
        )

    def fingerprint(self, model_dir: Path) -> ModelFingerprint:
        config_entries: list[tuple[str, int, int]] = []
        for entry in sorted(os.scandir(model_dir), key=lambda e: e.name):
            if entry.is_file():
                st = entry.stat()
                config_entries.append((entry.name, st.st_mtime_ns, st.st_size))
        if self.config_name and (model_dir / "configs").is_dir():  # custom configs come and go
            signature = _files_signature(model_dir / "configs")
            config_entries += [(f"configs/{name}", mtime, size) for name, mtime, size in signature]
        versions = {v: _files_signature(model_dir / str(v)) for v in self.versions(model_dir)}
        return ModelFingerprint(tuple(config_entries), versions)
