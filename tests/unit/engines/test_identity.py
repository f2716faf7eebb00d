"""Triton's identity backend: OUTPUTn is INPUTn, its config checked at load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import LoadContext, engine_class
from modelyard.errors import EngineError


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
