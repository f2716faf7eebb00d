"""Triton's checksum repository agent: digests checked before a load, in its words."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import ConfigError
from modelyard.modelfiles.config import parse_model_config
from modelyard.modelfiles.repository_agents import run_checksum_agent


def _config(parameters: dict[str, str], agent: str = "checksum") -> mc.ModelConfig:
    entries = ", ".join(f'{{ key: "{k}" value: "{v}" }}' for k, v in parameters.items())
    return text_format.Parse(
        f'name: "m" model_repository_agents {{ agents [{{ name: "{agent}" '
        f"parameters [{entries}] }}] }}",
        mc.ModelConfig(),
    )


def _model(tmp_path: Path) -> Path:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.onnx").write_bytes(b"weights")
    return tmp_path / "m"


def test_matching_digests_pass_and_a_mismatch_is_refused_in_the_agent_s_words(
    tmp_path: Path,
) -> None:
    model = _model(tmp_path)
    right = hashlib.md5(b"weights").hexdigest()
    run_checksum_agent(_config({"MD5:1/model.onnx": right}), model)
    run_checksum_agent(_config({"md5:1/model.onnx": right}), model)  # the key's case
    with pytest.raises(ConfigError) as refused:
        run_checksum_agent(_config({"MD5:1/model.onnx": "0" * 32}), model)
    line = refused.value.line()
    assert line.startswith(
        f"[config] Poll failed for model directory 'm': Mismatched MD5 hash for file "
        f"1/model.onnx, expect: {'0' * 32}, got: {right}"
    ), line
    assert "rule=config/repository-agent" in line


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("1/model.onnx", "failed to parse key: 1/model.onnx"),
        ("SHA1:1/model.onnx", "Unsupported checksum algorithm: SHA1"),
        ("MD5:1/missing.onnx", "failed to open text file for read 1/missing.onnx"),
        ("MD5:../../etc/passwd", "is not inside the model's directory"),
        ("MD5:/etc/passwd", "is not inside the model's directory"),
    ],
)
def test_a_key_the_agent_cannot_check_is_refused(tmp_path: Path, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        run_checksum_agent(_config({key: "x"}), _model(tmp_path))
    assert words in refused.value.line()


def test_a_link_that_leaves_the_model_s_directory_is_refused(tmp_path: Path) -> None:
    model = _model(tmp_path)
    (tmp_path / "outside").write_bytes(b"secret")
    (model / "1" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(ConfigError) as refused:
        run_checksum_agent(_config({"MD5:1/link": "x"}), model)
    assert "is not inside the model's directory" in refused.value.line()


def test_an_agent_other_than_checksum_is_refused_when_the_config_is_read() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_model_config(
            'name: "m"\nmodel_repository_agents { agents [{ name: "relocation" }] }\n', "m"
        )
    assert "only 'checksum' is run" in refused.value.line()
