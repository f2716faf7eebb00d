"""Triton's ``checksum`` repository agent, run as a model is about to load.

A config's ``model_repository_agents { agents [{ name: "checksum" parameters [...] }] }``
names files of the model's directory and their digests (``key: "MD5:1/model.onnx"``,
``value``: the hex digest); each must match, or the load is refused in the agent's words
(``Mismatched MD5 hash for file 1/model.onnx, expect: ..., got: ...``), led by the core's
(``Poll failed for model directory 'm':``), before any engine reads the files. A file
named outside the model's directory (an absolute path, ``..``, a link that leaves it) is
refused: the names come from the config, which a load request may send.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError, shown

ALGORITHMS = {"md5": "MD5"}  # the agent's, lower-cased key -> its name in its words
_CHUNK = 1 << 20


def run_checksum_agent(config: mc.ModelConfig, model_dir: Path) -> None:
    """Check each digest the config's ``checksum`` agents name against the model's files."""
    where = f"model_repository_agents in {config.name}/config.pbtxt"
    for agent in config.model_repository_agents.agents:
        if agent.name != "checksum":
            continue
        for key in sorted(agent.parameters):
            expected = agent.parameters[key]
            algorithm, colon, relative = key.partition(":")
            if not colon:
                raise _refused(config, f"failed to parse key: {shown(key, 200)}", where)
            name = ALGORITHMS.get(algorithm.lower())
            if name is None:
                raise _refused(
                    config, f"Unsupported checksum algorithm: {shown(algorithm, 40)}", where
                )
            path = _inside(model_dir, relative)
            if path is None:
                raise _refused(
                    config, f"file {shown(relative, 200)} is not inside the model's directory",
                    where,
                )  # fmt: skip
            if not path.is_file():
                raise _refused(
                    config,
                    f"failed to open text file for read {shown(relative, 200)}: "
                    "No such file or directory",
                    where,
                )
            got = _digest(path, algorithm.lower())
            if got != expected:
                raise _refused(
                    config,
                    f"Mismatched {name} hash for file {relative}, expect: "
                    f"{shown(expected, 80)}, got: {got}",
                    f"the file {relative} of model '{config.name}', or its digest in {where}",
                )


def _inside(model_dir: Path, relative: str) -> Path | None:
    if not relative or Path(relative).is_absolute():
        return None
    root = model_dir.resolve()
    path = (root / relative).resolve()
    return path if path.is_relative_to(root) else None


def _digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _refused(config: mc.ModelConfig, detail: str, where: str) -> ConfigError:
    return ConfigError.of(
        error_rules.REPOSITORY_AGENT,
        f"Poll failed for model directory '{config.name}': {detail}",
        where=where,
    )


def agent_source(name: str) -> str:
    """The file that runs repository agent ``name`` (where Triton names its library)."""
    return __file__ if name == "checksum" else ""
