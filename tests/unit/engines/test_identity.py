"""Triton's identity backend: OUTPUTn is INPUTn, its config checked at load."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import LoadContext, engine_class, identity
from modelyard.engines.base import BatchedRequest, batch_requests
from modelyard.engines.python_metrics import MODEL_METRICS
from modelyard.errors import EngineError
from modelyard.logging import SETTINGS
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.types import InferRequest
from tests.support.dataplane import run_on_dataplane


def _loaded(tmp_path: Path, text: str, instance: int = 0):  # type: ignore[no-untyped-def]
    config = text_format.Parse(text, mc.ModelConfig(name="nop"))
    engine = engine_class("identity")()
    engine.load(LoadContext(tmp_path, tmp_path, config, instance_index=instance))
    return engine


PAIR = """
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
       { name: "INPUT1" data_type: TYPE_STRING dims: [ 2 ] optional: true }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "OUTPUT1" data_type: TYPE_STRING dims: [ 2 ] }]
"""


def test_each_output_is_its_input_and_a_missing_optional_one_is_zeros(tmp_path: Path) -> None:
    engine = _loaded(tmp_path, PAIR)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = engine.execute({"INPUT0": x}, ["OUTPUT0", "OUTPUT1"])
    assert out["OUTPUT0"] is x
    assert out["OUTPUT1"].shape == (3, 2) and out["OUTPUT1"].tolist() == [[b"", b""]] * 3
    zero = np.zeros((2, 0), dtype=np.float32)  # zero-sized tensors pass through too
    assert engine.execute({"INPUT0": zero}, ["OUTPUT0"])["OUTPUT0"].shape == (2, 0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('input [{ name: "X" data_type: TYPE_FP32 dims: [1] }] '
         'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [1] }]',
         "expected input name to follow INPUT<index> pattern, got 'X'"),
        ('input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [1] }] '
         'output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [1] }]',
         "expected input and output datatype to match, got TYPE_FP32 and TYPE_INT32"),
        ('input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [1] }] '
         'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [2] }]',
         "expected input and output shape to match, got [1] and [2]"),
        ('input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [1] }] '
         'output [{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [1] }]',
         "expected input and output indices to match"),
        ('input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [1] }]',
         "model configuration must have equal input/output pairs"),
        (PAIR + 'parameters { key: "execute_delay_ms" value { string_value: "soon" } }',
         "parameter 'execute_delay_ms' must be an integer"),
        (PAIR + 'parameters { key: "enable_custom_tracing" value { string_value: "true" } } '
         'parameters { key: "single_activity_frequency" value { string_value: "0" } }',
         "parameter 'single_activity_frequency' must be 1 or more"),
        (PAIR + 'parameters { key: "enable_custom_tracing" value { string_value: "true" } } '
         'parameters { key: "nested_span_count" value { string_value: "many" } }',
         "parameter 'nested_span_count' must be an integer"),
    ],
)  # fmt: skip
def test_a_config_the_backend_cannot_serve_is_refused_in_its_words(
    tmp_path: Path, text: str, words: str
) -> None:
    with pytest.raises(EngineError) as refused:
        _loaded(tmp_path, text)
    assert words in refused.value.line()
    assert "rule=engine/identity" in refused.value.line()


def test_the_delay_grows_with_the_instance_where_the_config_asks(tmp_path: Path) -> None:
    delayed = (
        PAIR
        + """
        parameters { key: "execute_delay_ms" value { string_value: "20" } }
        parameters { key: "instance_wise_delay_multiplier" value { string_value: "2" } }
    """
    )
    assert _loaded(tmp_path, delayed, instance=0)._delay_s == pytest.approx(0.02)
    assert _loaded(tmp_path, delayed, instance=3)._delay_s == pytest.approx(0.12)


def test_custom_tracing_s_nested_spans_are_bounded_by_what_the_config_may_ask(
    tmp_path: Path,
) -> None:
    """Each nested span takes 100 ms of a traced request's execution: a config asks for at
    most 100 (the model file controls it); Triton's defaults otherwise."""
    tracing = PAIR + 'parameters { key: "enable_custom_tracing" value { string_value: "true" } } '
    engine = _loaded(tmp_path, tracing + 'parameters { key: "nested_span_count" '
                                         'value { string_value: "1000000" } }')  # fmt: skip
    assert engine.reports_activities and not engine.runs_on_loop
    assert engine._nested_spans == 100 and engine._single_every == 1
    assert not _loaded(tmp_path, PAIR).reports_activities  # off unless the config asks


def _series(name: str) -> list[str]:
    return [line for line in MODEL_METRICS.text().splitlines() if line.startswith(name)]


def test_the_byte_size_counter_counts_what_is_copied_as_triton_counts_it(
    tmp_path: Path,
) -> None:
    """Triton's identity backend counts each copied input's bytes per model and version: a
    BF16 element is 2 bytes (it travels as float32 here), a BYTES element its length and 4;
    a missing optional input counts nothing. The series goes with the model."""
    text = PAIR.replace("TYPE_FP32", "TYPE_BF16")
    engine = _loaded(tmp_path / "7", text)  # version 7: the version folder's name
    engine.execute({"INPUT0": np.ones((2, 3), np.float32)}, ["OUTPUT0", "OUTPUT1"])
    label = 'input_byte_size_counter{model="nop",version="7"}'
    assert _series(label) == [f"{label} 12"]
    strings = np.array([[b"abc", b""]], dtype=np.object_)
    engine.execute({"INPUT0": np.ones((1, 0), np.float32), "INPUT1": strings}, ["OUTPUT1"])
    assert _series(label) == [f"{label} 23"]  # 12 + (4 + 3) + (4 + 0)
    engine.unload()
    assert _series(label) == []


def test_each_request_of_a_batch_is_logged_with_its_byte_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the verbose level, each request's part of the batch (its rows, or a ragged
    input's own elements) is logged with its byte size, as Triton's backend logs it."""
    said: list[str] = []

    class Log:
        def debug(self, event: str, **fields: object) -> None:
            said.append(str(fields["triton"]))

    monkeypatch.setattr(identity, "log", Log())
    monkeypatch.setattr(SETTINGS, "verbose", 1)
    engine = _loaded(tmp_path, PAIR)
    try:
        with batch_requests([BatchedRequest(rows=1), BatchedRequest(rows=2)]):
            engine.execute({"INPUT0": np.ones((3, 4), np.float32)}, ["OUTPUT0"])
    finally:
        engine.unload()
    assert [re.findall(r"shape = \[([0-9,]*)\], byte_size = (\d+)", line) for line in said] == [
        [("1,4", "16")], [("2,4", "32")],
    ]  # fmt: skip
    monkeypatch.setattr(SETTINGS, "verbose", 0)
    engine = _loaded(tmp_path, PAIR)
    with batch_requests([BatchedRequest(rows=1)]):
        engine.execute({"INPUT0": np.ones((1, 4), np.float32)}, ["OUTPUT0"])
    engine.unload()
    assert len(said) == 2  # not verbose: nothing more


def test_every_response_carries_the_backend_s_parameters(tmp_path: Path) -> None:
    model = tmp_path / "nop"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('backend: "identity"\n' + PAIR)

    async def scenario(dp: LocalDataPlane) -> dict[str, object]:
        x = np.ones((1, 2), np.float32)
        request = InferRequest("nop", None, {"INPUT0": x}, input_datatypes={"INPUT0": "FP32"})
        return (await dp.infer(request)).parameters

    assert run_on_dataplane(scenario, tmp_path) == {
        "param0": "an example string parameter", "param1": 42, "param2": False,
        "param3": 123.123,
    }  # fmt: skip
