"""The model repository on disk, in Triton's layout.

    <root>/<model>/config.pbtxt          optional
    <root>/<model>/<version>/<file>      version: a positive integer

Several roots are served together, as tritonserver serves several
``--model-repository`` (a root given twice is one root): a model's name must be unique
across them. As Triton, a name found in two roots serves from neither: it is listed
(``duplicates``) but not found (``model_dir``), so the index shows it unavailable, poll
mode unloads it when a second root gains it, and a load of it fails.

With namespacing (tritonserver's ``--model-namespacing``) a name may be in several
roots: each root is a namespace, and such a model is served under a key that names
its root, ``NAME::N`` (N: the root's place on the command line, from 1). A request
for the bare name is ambiguous and refused, as Triton refuses it; an ensemble's step
names the model of its own root first (Triton's rule), else the one model of that
name. A name in one root only keeps its bare name.

Roots can be registered while the server runs (Triton's repository registration, which
SageMaker's multi-model endpoints use), with a mapping that serves a folder of the root
under another name (``{folder: name}``): the folder is listed under that name only, its
config's name is not checked against the folder's (the served config takes the mapped
name), and, as Triton looks a mapping up first, a folder of that name in another root is
passed over. Roots given at start cannot be unregistered.

Names that come from requests are only ever compared against the names read
from the directory listings; they are never joined into a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from modelyard import error_rules
from modelyard.errors import Code, ConfigError, ModelServerError

# Triton serves any folder that is not hidden (its generators name some
# ``nop_TYPE_FP16_-1,-1``); left out here: whitespace and control characters, which a
# log line or a label would have to escape, path separators, and ':' (NAMESPACE_MARK)
_MODEL_NAME = re.compile(r"^[^.\s/\\:\x00-\x1f\x7f][^\s/\\:\x00-\x1f\x7f]{0,254}$")


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


NAMESPACE_MARK = "::"  # in a namespaced key; never in a model name (_MODEL_NAME)


def is_model_name(name: str) -> bool:
    """Whether a repository could serve a model of this name (a folder it lists)."""
    return _MODEL_NAME.match(name) is not None


class ModelRepository:
    def __init__(
        self,
        root: Path | list[Path],
        config_name: str | None = None,
        namespacing: bool = False,
    ) -> None:
        # tritonserver's --model-config-name: a model with configs/NAME.pbtxt loads from it
        self.config_name = config_name
        self.namespacing = namespacing
        # namespacing: each name in several roots -> its key in each (from the last listing)
        self._shared: dict[str, dict[Path, str]] = {}
        roots = root if isinstance(root, list) else [root]
        for path in roots:
            if not path.is_dir():
                raise ConfigError.of(
                    error_rules.MODEL_REPOSITORY_DIR, f"model repository {path} is not a directory"
                )
        self.roots = list(dict.fromkeys(roots))  # as tritonserver: a root given twice is one
        # roots registered at run time -> their mapping {folder: served name}
        self._registered: dict[Path, dict[str, str]] = {}
        self.model_names()

    def register(self, root: Path, mapping: dict[str, str]) -> None:
        """Serve ``root`` too, its folders named in ``mapping`` under the mapped names;
        refused in Triton's words where the root is no directory, is served already, or a
        mapped name is another registered root's."""
        if not root.is_dir():
            raise _registration_error(
                Code.INVALID_ARGUMENT, f"failed to register '{root}', repository not found"
            )
        if root in self.roots:
            raise _registration_error(
                Code.ALREADY_EXISTS, f"model repository '{root}' has already been registered"
            )
        taken = {name for names in self._registered.values() for name in names.values()}
        for name in mapping.values():
            if name in taken:
                raise _registration_error(
                    Code.ALREADY_EXISTS,
                    f"failed to register '{name}', there is a conflicting mapping for '{name}'",
                )
            if not is_model_name(name):
                raise _registration_error(
                    Code.INVALID_ARGUMENT, f"failed to register '{name}': not a model name"
                )
        # new objects, not changed ones: listings in other threads read the ones they took
        self.roots = [*self.roots, root]
        self._registered = {**self._registered, root: dict(mapping)}

    def unregister(self, root: Path) -> None:
        """Stop serving a root ``register`` added (its loaded models stay loaded)."""
        if root not in self._registered:
            raise _registration_error(
                Code.INVALID_ARGUMENT, f"failed to unregister '{root}', repository not found"
            )
        self._registered = {key: names for key, names in self._registered.items() if key != root}
        self.roots = [known for known in self.roots if known != root]

    def mapped(self, key: str) -> bool:
        """Whether a registered root's mapping gives this name (its config's name is then
        not its folder's)."""
        return any(key in names.values() for names in self._registered.values())

    def _mapping_root(self, name: str) -> list[Path]:
        """The registered root whose mapping gives ``name`` and lists it, if one does."""
        return [root for root, mapping in self._registered.items()
                if name in mapping.values() and name in self._entries(root)]  # fmt: skip

    def _entries(self, root: Path) -> dict[str, str]:
        """The models a root lists: served name -> folder."""
        mapping = self._registered.get(root, {})
        return {mapping.get(folder, folder): folder for folder in _listed(root)}

    def model_names(self) -> list[str]:
        """The keys of the models the roots list now (a name, or ``NAME::N`` when namespaced
        models share it)."""
        every = self.roots  # one list throughout: a registration makes a new one
        found = self._found(every)
        if not self.namespacing:
            return sorted(name for name, roots in found.items() if len(roots) == 1)
        self._shared = {
            name: {root: f"{name}{NAMESPACE_MARK}{every.index(root) + 1}" for root in roots}
            for name, roots in found.items()
            if len(roots) > 1
        }
        keys = [name for name in found if name not in self._shared]
        keys += [key for owners in self._shared.values() for key in owners.values()]
        return sorted(keys)

    def _found(self, roots: list[Path] | None = None) -> dict[str, list[Path]]:
        found: dict[str, list[Path]] = {}
        for root in self.roots if roots is None else roots:
            for name in self._entries(root):
                found.setdefault(name, []).append(root)
        for root, mapping in self._registered.items():  # as Triton: a mapping comes first
            for name in mapping.values():
                if root in found.get(name, ()):
                    found[name] = [root]
        return found

    def duplicates(self) -> list[str]:
        """The names several roots list, which none serves (without namespacing)."""
        if self.namespacing:
            return []
        return sorted(name for name, roots in self._found().items() if len(roots) > 1)

    def model_dir(self, key: str) -> Path | None:
        """The directory of a model named in a request, if a repository lists it."""
        name, mark, _ = key.partition(NAMESPACE_MARK)
        if mark:  # a namespaced key, exactly as listed (no "::01"): its root only
            owners = self._shared.get(name, {})
            roots = [root for root, listed_key in owners.items() if listed_key == key]
        elif name in self._shared:
            return None  # the bare name of a namespaced model: which one is ambiguous
        else:
            roots = self._mapping_root(name) or self.roots
        found = [root / folder for root in roots
                 for listed, folder in self._entries(root).items() if listed == name]  # fmt: skip
        return found[0] if len(found) == 1 else None  # in two roots: neither serves

    def keys_of(self, name: str) -> list[str]:
        """The keys a name loads: its own, or each namespaced model's of that name."""
        return sorted(self._shared[name].values()) if name in self._shared else [name]

    def ambiguity(self, name: str) -> int:
        """How many namespaced models share the bare ``name`` (0: it is not ambiguous)."""
        return len(self._shared.get(name, ()))

    def step_key(self, name: str, ensemble_dir: Path | None) -> str:
        """The key of the model an ensemble's step names: its own root's model first."""
        owners = self._shared.get(name)
        if owners is None or ensemble_dir is None:
            return name
        return owners.get(ensemble_dir.parent, name)

    @staticmethod
    def versions(model_dir: Path) -> list[int]:
        try:
            entries = list(os.scandir(model_dir))
        except OSError:
            return []
        return sorted(
            int(e.name)
            for e in entries
            if e.is_dir() and e.name.isascii() and e.name.isdigit() and not e.name.startswith("0")
        )

    @staticmethod
    def ignored_versions(model_dir: Path) -> list[str]:
        """Why each folder of a model that is not a version is passed over, in Triton's
        words (its log says so at each load)."""
        try:
            entries = sorted(e.name for e in os.scandir(model_dir) if e.is_dir())
        except OSError:
            return []
        reasons = []
        for name in entries:
            if name.isascii() and name.isdigit():
                if name.startswith("0"):
                    reasons.append(
                        f"ignore version directory '{name}' which contains leading zeros in "
                        "its directory name"
                    )
            else:
                reasons.append(
                    f"ignore version directory '{name}' which fails to convert to integral "
                    "number"
                )
        return reasons

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


def _registration_error(code: Code, detail: str) -> ModelServerError:
    rule = error_rules.REPOSITORY_REGISTRATION
    return ModelServerError(detail, code=code, rule=rule.id, where=rule.where, triton=True)
