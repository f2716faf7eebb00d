"""A config's ``model_warmup`` samples as Triton makes them: one sample's data in every
row of the batch, strings from a file of serialized BYTES, a bad file refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import ConfigError
from modelyard.modelfiles.config import compile_spec
from modelyard.server.model_version import WARMUP_INPUT_MAX_BYTES, WarmupSample, warmup_samples

CONFIG = """
name: "m"
max_batch_size: 8
input [{ name: "S" data_type: TYPE_STRING dims: [ 2 ] },
       { name: "F" data_type: TYPE_FP32 dims: [ 3 ] }]
output [{ name: "O" data_type: TYPE_FP32 dims: [ 3 ] }]
model_warmup [{
  name: "files" batch_size: 4 count: 2
  inputs { key: "S" value: { data_type: TYPE_STRING dims: [ 2 ] input_data_file: "s" } }
  inputs { key: "F" value: { data_type: TYPE_FP32 dims: [ 3 ] input_data_file: "f" } }
}]
"""


def _samples(tmp_path: Path, strings: bytes, floats: bytes) -> list[WarmupSample]:
    (tmp_path / "warmup").mkdir(exist_ok=True)
    (tmp_path / "warmup" / "s").write_bytes(strings)
    (tmp_path / "warmup" / "f").write_bytes(floats)
    config = text_format.Parse(CONFIG, mc.ModelConfig())
    return warmup_samples(config, compile_spec(config, "m/config.pbtxt"), tmp_path)


def test_a_file_holds_one_sample_and_every_row_of_the_batch_gets_it(tmp_path: Path) -> None:
    strings = b"\x03\x00\x00\x00233\x01\x00\x00\x00x"
    floats = np.array([1.5, 2.5, 3.5], dtype=np.float32).tobytes()
    ((name, inputs, outputs, count),) = _samples(tmp_path, strings, floats)
    assert (name, outputs, count) == ("files", ["O"], 2)
    assert inputs["S"].shape == (4, 2) and inputs["S"].tolist() == [[b"233", b"x"]] * 4
    assert inputs["F"].shape == (4, 3) and inputs["F"].tolist() == [[1.5, 2.5, 3.5]] * 4


@pytest.mark.parametrize(
    ("strings", "floats", "words"),
    [
        (b"\x09\x00\x00\x00233", b"\x00" * 12, "input 'S': the file is not serialized BYTES"),
        (b"\x01\x00", b"\x00" * 12, "input 'S': the file is not serialized BYTES"),
        (b"\x01\x00\x00\x00a", b"\x00" * 8, "input 'F': the file holds 8 bytes, less than the 12"),
    ],
)
def test_a_file_that_cannot_be_one_sample_is_refused(
    tmp_path: Path, strings: bytes, floats: bytes, words: str
) -> None:
    with pytest.raises(ConfigError, match=words) as refused:
        _samples(tmp_path, strings, floats)
    line = refused.value.line()  # the layer, the rule, and the file and config to change
    assert "rule=config/model-config" in line and "m/warmup/" in line
    assert "model_warmup 'files' input_data_file in m/config.pbtxt" in line


def test_a_file_name_that_leaves_the_warmup_folder_is_refused(tmp_path: Path) -> None:
    """No path from a config reaches outside the model's own ``warmup/`` folder."""
    (tmp_path / "secret").write_bytes(b"\x00" * 12)
    (tmp_path / "model" / "warmup").mkdir(parents=True)
    (tmp_path / "model" / "warmup" / "s").write_bytes(b"\x01\x00\x00\x00a")
    config = text_format.Parse(CONFIG.replace('"f"', '"../secret"'), mc.ModelConfig())
    with pytest.raises(ConfigError, match=r"input 'F': the file name '\.\./secret' must be"):
        warmup_samples(config, compile_spec(config, "m/config.pbtxt"), tmp_path / "model")


def test_a_sample_larger_than_the_bound_is_refused_before_it_is_made(tmp_path: Path) -> None:
    """A config's dims, or a file of the model's folder, cost no memory past the bound."""
    huge = CONFIG.replace("dims: [ 3 ] input_data_file", "dims: [ 100000000 ] input_data_file")
    config = text_format.Parse(huge, mc.ModelConfig())
    with pytest.raises(ConfigError, match=r"input 'F': shape \[4, 100000000\] holds more than"):
        warmup_samples(config, compile_spec(config, "m/config.pbtxt"), tmp_path)
    (tmp_path / "warmup").mkdir()
    (tmp_path / "warmup" / "s").write_bytes(b"\x01\x00\x00\x00a")
    with (tmp_path / "warmup" / "f").open("wb") as sparse:  # no disk: a hole
        sparse.truncate(WARMUP_INPUT_MAX_BYTES + 1)
    config = text_format.Parse(CONFIG, mc.ModelConfig())
    with pytest.raises(ConfigError, match="input 'F': the file is larger than the 268435456"):
        warmup_samples(config, compile_spec(config, "m/config.pbtxt"), tmp_path)
