"""Which models of a repository are served, and when (tritonserver's --model-control-mode).

Its own module, light, so the command line declares the flag without loading the server."""

from __future__ import annotations

from enum import StrEnum


class ControlMode(StrEnum):
    NONE = "none"  # every model at start, then as it is
    POLL = "poll"  # every model, following the repository's changes
    EXPLICIT = "explicit"  # the models a load request (or --load-model) names
