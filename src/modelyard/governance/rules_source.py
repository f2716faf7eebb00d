"""Which governance rules an instance enforces (``modelyard serve --rules-source``).

Its own module, light, so the command line declares the flag without loading governance."""

from __future__ import annotations

from enum import StrEnum


class RulesSource(StrEnum):
    AUTO = "auto"  # the service's central rules once it has any, else the local file's
    CENTRAL = "central"  # the central rules only (none until the first revision)
    LOCAL = "local"  # the local service file only
