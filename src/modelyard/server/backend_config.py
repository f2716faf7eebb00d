"""tritonserver's ``--backend-config``: settings per backend, resolved as Triton resolves them.

``[BACKEND,]SETTING=VALUE`` sets a setting of one backend or, without a name, of every
backend. A model's backend gets the settings of all backends, then its own over them,
then the defaults it was not given (``default-max-batch-size``: 4). The server adds three
settings of all backends after the command line's (Triton's order, which they win over):
``auto-complete-config``, ``min-compute-capability`` and ``backend-directory``.

What modelyard applies is ``default-max-batch-size``: the ``max_batch_size`` that
auto-complete gives a model whose file batches and whose config names no tensors (0:
auto-complete leaves such a model unbatched). The other settings are kept and logged, as
Triton hands them to its backends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import structlog

from modelyard import error_rules
from modelyard.errors import ConfigError

log = structlog.get_logger("modelyard.server")

DEFAULT_MAX_BATCH_SIZE = "default-max-batch-size"
_DEFAULTS = {DEFAULT_MAX_BATCH_SIZE: "4"}
# Triton's --min-supported-compute-capability default, as std::to_string writes it
_MIN_COMPUTE_CAPABILITY = 6.0
_FORMAT = "--backend-config option format is '<backend name>,<setting>=<value>'. Got {}"


def _refusal(detail: str) -> ConfigError:
    return ConfigError.of(
        error_rules.TRITON_FLAG, detail, where="modelyard serve --backend-config"
    )


def parse_backend_setting(text: str) -> tuple[str, str, str]:
    """One ``--backend-config`` value as (backend, setting, value); backend "" for every
    backend. Refused in tritonserver's words where its parser refuses it."""
    name, comma, rest = text.partition(",")
    if not comma:
        name, rest = "", text
    elif not name:
        raise _refusal(
            "No backend specified. --backend-config option format is "
            f"<backend name>,<setting>=<value> or <setting>=<value>. Got {text}"
        )
    setting, equals, value = rest.partition("=")
    if not equals or not setting or not value:
        raise _refusal(_FORMAT.format(text))
    if setting == DEFAULT_MAX_BATCH_SIZE and not (value.isdigit() and value.isascii()):
        raise _refusal(
            f"--backend-config {text}: {DEFAULT_MAX_BATCH_SIZE} is a whole number >= 0 "
            "(0: auto-complete leaves a model unbatched)"
        )
    return name, setting, value


@dataclass(frozen=True)
class BackendConfig:
    """The command line's backend settings, in the order given, the server's own after."""

    settings: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def from_command_line(
        cls,
        given: list[str],
        auto_complete: bool = True,
        min_compute_capability: float | None = None,
        backend_directory: str = "",
    ) -> BackendConfig:
        capability = _MIN_COMPUTE_CAPABILITY if min_compute_capability is None else (
            min_compute_capability
        )  # fmt: skip
        server = (
            ("", "auto-complete-config", "true" if auto_complete else "false"),
            ("", "min-compute-capability", f"{capability:f}"),
            ("", "backend-directory", backend_directory),
        )
        return cls(tuple(parse_backend_setting(text) for text in given) + server)

    def resolved(self, backend: str, quiet: bool = False) -> dict[str, str]:
        """The settings a backend gets: every backend's, its own over them, then the
        defaults it was not given (each said as Triton says it, at the verbose level,
        unless ``quiet``)."""
        settings: dict[str, str] = {}
        for scope in ("", backend):
            for name, setting, value in self.settings:
                if name == scope:
                    settings[setting] = value
        resolved = dict(sorted(settings.items()))
        for setting, value in _DEFAULTS.items():
            if quiet:
                resolved.setdefault(setting, value)
            elif setting in resolved:
                said = f"Found overwritten default setting: {setting},{resolved[setting]}"
                log.debug("backend_setting_overwritten", backend=backend, triton=said)
            else:
                said = f"Adding default backend config setting: {setting},{value}"
                log.debug("backend_setting_default", backend=backend, triton=said)
                resolved[setting] = value
        return resolved


def default_max_batch_size(settings: dict[str, str]) -> int:
    return int(settings.get(DEFAULT_MAX_BATCH_SIZE, _DEFAULTS[DEFAULT_MAX_BATCH_SIZE]))


def log_backend_configuration(backend: str, settings: dict[str, str]) -> None:
    """The settings a backend starts with, as Triton's backends log them when they start."""
    text = json.dumps({"cmdline": settings}, separators=(",", ":"))
    log.info("backend_configuration", backend=backend, triton=f"backend configuration:\n{text}")
