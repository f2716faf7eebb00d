"""Triton's ragged batching: ragged inputs flat and unpadded, the batch inputs of each kind
computed per execution, batch outputs scattered back by each request's input shape, and
the configs Triton refuses refused in its words."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from google.protobuf import text_format
from onnx import TensorProto, helper
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.clock import FakeClock
from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import ConfigError, EngineError, ModelyardError
from modelyard.modelfiles.config import parse_json_config, read_model_config
from modelyard.server.batcher import BatchingPolicy
from modelyard.server.model_version import ModelVersion, load_model_version
from modelyard.server.ragged import RaggedBatching
from modelyard.server.scheduler import Execution, Scheduler, stack_rows
from modelyard.server.scheduling import Submission

RAGGED = """
name: "m"
max_batch_size: 8
input [{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true },
       { name: "W" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "Z" data_type: TYPE_FP32 dims: [ 2 ] }]
"""


def _config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


def _ragged(text: str) -> RaggedBatching:
    batching = RaggedBatching.from_config(_config(text), "m/config.pbtxt")
    assert batching is not None
    return batching


def _batch_input(kind: str, data_type: str = "TYPE_INT32") -> str:
    return (
        RAGGED + f'batch_input [{{ kind: {kind} target_name: "B" data_type: {data_type} '
        'source_input: "X" }]\n'
    )


# the requests' shapes of X: 3, 4 and 4 elements; 1, 2 and 1 batch items
SHAPES = [(1, 3), (2, 2), (1, 4)]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("BATCH_ELEMENT_COUNT", [3, 4, 4]),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT", [3, 7, 11]),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", [0, 3, 7, 11]),
        ("BATCH_ITEM_SHAPE", [[3], [2], [2], [4]]),
        ("BATCH_ITEM_SHAPE_FLATTEN", [3, 2, 2, 4]),
    ],
)
@pytest.mark.parametrize(
    ("data_type", "dtype"), [("TYPE_INT32", np.int32), ("TYPE_FP32", np.float32)]
)
def test_each_batch_input_kind_is_computed_from_the_source_shapes_of_the_batch(
    kind: str, expected: list[Any], data_type: str, dtype: type
) -> None:
    batching = _ragged(_batch_input(kind, data_type))
    requests = [{"X": np.ones(shape, np.float32), "W": np.ones((shape[0], 2))} for shape in SHAPES]
    tensor = batching.assemble(requests, stack_rows)["B"]
    assert tensor.dtype == dtype
    np.testing.assert_array_equal(tensor, np.array(expected, dtype))


def test_the_largest_element_count_is_a_batch_input_s_shape() -> None:
    batching = _ragged(_batch_input("BATCH_MAX_ELEMENT_COUNT_AS_SHAPE"))
    requests = [{"X": np.ones(shape, np.float32), "W": np.ones((shape[0], 2))} for shape in SHAPES]
    assert batching.assemble(requests, stack_rows)["B"].shape == (4,)


def test_item_shapes_of_a_rank_two_input_leave_its_batch_dimension_out() -> None:
    text = _batch_input("BATCH_ITEM_SHAPE").replace("dims: [ -1 ] allow", "dims: [ -1, -1 ] allow")
    batching = _ragged(text)
    flat = _ragged(text.replace("BATCH_ITEM_SHAPE", "BATCH_ITEM_SHAPE_FLATTEN"))
    requests = [{"X": np.ones((1, 2, 3))}, {"X": np.ones((2, 4, 1))}]
    expected = [[2, 3], [4, 1], [4, 1]]
    np.testing.assert_array_equal(batching.assemble(requests, stack_rows)["B"], expected)
    np.testing.assert_array_equal(flat.assemble(requests, stack_rows)["B"], [2, 3, 4, 1, 4, 1])


def test_a_ragged_input_is_joined_flat_and_the_others_by_rows() -> None:
    batching = _ragged(
        RAGGED + 'batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: ["B", "C"] '
        'data_type: TYPE_INT32 source_input: "X" }]'
    )
    x0, x1 = np.arange(3, dtype=np.float32).reshape(1, 3), np.arange(10, 18, dtype=np.float32)
    w0, w1 = np.zeros((1, 2)), np.ones((2, 2))
    assembled = batching.assemble(
        [{"X": x0, "W": w0}, {"X": x1.reshape(2, 4), "W": w1}], stack_rows
    )
    np.testing.assert_array_equal(assembled["X"], np.concatenate([x0.ravel(), x1]))
    np.testing.assert_array_equal(assembled["W"], np.concatenate([w0, w1]))
    assert assembled["B"].tolist() == [3, 8] and assembled["C"] is assembled["B"]
    # a ragged input's shape is no part of the batch key; any other input's is
    key = batching.shape_key
    assert key({"X": x0, "W": w0}) == key({"X": x1.reshape(2, 4), "W": w1})
    assert key({"X": x0, "W": w0}) != key({"X": x0, "W": np.zeros((1, 3))})


def test_a_batch_output_is_scattered_by_each_request_s_shape_of_its_source() -> None:
    batching = _ragged(
        RAGGED + 'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" '
        'source_input: "X" }]'
    )
    requests = [{"X": np.ones((1, 3))}, {"X": np.ones((2, 2))}]
    results = {"Y": np.arange(7, dtype=np.float32), "Z": np.arange(6).reshape(3, 2)}
    first, second = batching.split(results, requests, [["Y", "Z"], ["Y"]], [1, 2], "here")
    np.testing.assert_array_equal(first["Y"], [[0, 1, 2]])
    np.testing.assert_array_equal(first["Z"], [[0, 1]])
    np.testing.assert_array_equal(second["Y"], [[3, 4], [5, 6]])
    assert list(second) == ["Y"]  # it asked for Y alone
    with pytest.raises(EngineError) as short:
        batching.split({"Y": np.arange(6)}, requests, [["Y"], ["Y"]], [1, 2], "m/1")
    assert "engine returned 6 elements of batch output 'Y' for 7" in short.value.line()
    assert "rule=engine/contract" in short.value.line()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            'batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP32 }]',
            "batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0 for m",
        ),
        (
            'batch_input [{ kind: BATCH_ITEM_SHAPE target_name: "B" data_type: TYPE_FP32 '
            'source_input: ["X", "X"] }]',
            "batch input kind 'BATCH_ITEM_SHAPE' expects 1 source input, got 2 for m",
        ),
        (
            'batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_FP16 '
            'source_input: "X" }]',
            "batch input data type must be TYPE_INT32 or TYPE_FP32 for m",
        ),
        (
            'batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_INT32 '
            'source_input: "UNKNOWN_INPUT" }]',
            "unknown source input name 'UNKNOWN_INPUT' for m",
        ),
        (
            'batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "W" data_type: TYPE_INT32 '
            'source_input: "X" }]',
            "batch input target_name 'W' is also an input of m",
        ),
        (
            'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" }]',
            "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got 0",
        ),
        (
            'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" '
            'source_input: "V" }]',
            "unknown source input name 'V' for m",
        ),
        (
            'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Q" '
            'source_input: "X" }]',
            "unknown target output name 'Q' for m",
        ),
        (
            'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: ["Y", "Y"] '
            'source_input: "X" }]',
            "target output name 'Y' can only be specified once for m",
        ),
    ],
)
def test_a_bad_batch_input_or_output_is_refused_in_triton_s_words(extra: str, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        RaggedBatching.from_config(_config(RAGGED + extra), "m/config.pbtxt")
    line = refused.value.line()
    assert line.startswith(f"[config] {words}"), line
    assert "rule=config/ragged-batch" in line and "m/config.pbtxt" in line


def test_a_batch_output_with_a_variable_dim_its_source_input_lacks_is_refused() -> None:
    """Each -1 of a scattered output takes the source input's size at the same place: one
    past the source's rank would fail every request, so the config is refused at load."""
    text = RAGGED.replace('{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }', (
        '{ name: "Y" data_type: TYPE_FP32 dims: [ -1, -1 ] }'
    )) + (
        'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" '
        'source_input: "X" }]'
    )  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        RaggedBatching.from_config(_config(text), "m/config.pbtxt")
    line = refused.value.line()
    assert "batch output 'Y' [-1, -1, -1] has a -1 at dimension 2" in line, line
    assert "input 'X' has 2 dimensions" in line and "rule=config/ragged-batch" in line


def test_a_batch_input_kind_no_one_knows_is_refused() -> None:
    config = parse_json_config(
        {"name": "m", "max_batch_size": 4,
         "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [-1]}],
         "batch_input": [{"kind": 42, "target_name": ["B"], "data_type": "TYPE_INT32",
                          "source_input": ["X"]}]}
    )  # fmt: skip
    with pytest.raises(ConfigError, match="unknown batch input kind '42' for m"):
        RaggedBatching.from_config(config, "m/config.pbtxt")


def test_ragged_batching_on_a_model_that_does_not_batch_is_refused() -> None:
    text = RAGGED.replace("max_batch_size: 8", "max_batch_size: 0")
    with pytest.raises(ConfigError) as refused:
        RaggedBatching.from_config(_config(text), "m/config.pbtxt")
    line = refused.value.line()
    assert "model 'm' does not batch (max_batch_size 0) and input 'X' sets allow_ragged_batch" in (
        line
    )
    assert "change: max_batch_size > 0 with dynamic_batching, or remove allow_ragged_batch" in line


def test_an_optional_ragged_input_is_refused() -> None:
    text = RAGGED.replace("allow_ragged_batch: true", "allow_ragged_batch: true optional: true")
    with pytest.raises(ConfigError, match="ragged input 'X' of m is optional"):
        RaggedBatching.from_config(_config(text), "m/config.pbtxt")


def test_a_config_that_asks_for_none_of_it_has_no_ragged_batching() -> None:
    plain = _config(RAGGED.replace(" allow_ragged_batch: true", ""))
    assert RaggedBatching.from_config(plain, "m/config.pbtxt") is None


class _SegmentSums(Engine):
    """Y = 2X over the flat ragged X; S: each request's sum of X (a request a row), by the
    batch input's running element counts."""

    name = "segments"
    extra = "all"
    default_filenames = ()
    serves_ragged_batches = True

    def __init__(self) -> None:
        self.batches: list[dict[str, np.ndarray]] = []

    def load(self, ctx: LoadContext) -> Signature | None:
        return None

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        self.batches.append(inputs)
        x, ends = inputs["X"], inputs["ENDS"]
        starts = np.concatenate([[0], ends[:-1]])
        sums = np.array([x[s:e].sum() for s, e in zip(starts, ends, strict=True)], np.float32)
        return {"Y": x * 2, "S": sums.reshape(-1, 1)}


SEGMENTS = """
name: "segments"
max_batch_size: 8
input [{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "S" data_type: TYPE_FP32 dims: [ 1 ] }]
batch_input [{ kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "ENDS" data_type: TYPE_INT32
               source_input: "X" }]
batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "Y" source_input: "X" }]
dynamic_batching { preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 5000000 }
"""


def _answers(
    scheduler: Any, requests: list[dict[str, np.ndarray]], outputs: list[str]
) -> list[dict[str, np.ndarray]]:
    """Each request's answer, the requests submitted in one turn of the loop."""

    async def infer() -> list[dict[str, np.ndarray]]:
        futures = [
            scheduler.submit(Submission(inputs, outputs, len(next(iter(inputs.values())))))
            for inputs in requests
        ]
        return list(await asyncio.gather(*futures))

    try:
        return asyncio.run(infer())
    finally:
        scheduler.close()
        scheduler.join(5)


def test_requests_of_different_shapes_share_one_execution_of_a_ragged_model() -> None:
    config = _config(SEGMENTS)
    engine = _SegmentSums()
    ragged = RaggedBatching.from_config(config, "segments/config.pbtxt")
    policy = BatchingPolicy.from_config(config)
    scheduler = Scheduler("segments", 1, [engine], policy, ragged=ragged)
    xs = [np.arange(3, dtype=np.float32).reshape(1, 3), np.ones((1, 4), np.float32),
          np.full((1, 5), 2, np.float32)]  # fmt: skip
    answers = _answers(scheduler, [{"X": x} for x in xs], ["Y", "S"])
    assert len(engine.batches) == 1  # one execution of 3 rows, 12 elements
    assert engine.batches[0]["X"].shape == (12,)
    assert engine.batches[0]["ENDS"].tolist() == [3, 7, 12]
    for x, answer in zip(xs, answers, strict=True):
        np.testing.assert_array_equal(answer["Y"], x * 2)  # its own shape back
    assert [a["S"].tolist() for a in answers] == [[[3.0]], [[4.0]], [[10.0]]]
    assert scheduler.stats.inference_count == 3 and scheduler.stats.success_count == 3


def test_a_fast_ragged_model_run_on_the_event_loop_answers_each_request_in_its_shape() -> None:
    """Once its executions show it is fast, a request runs at once on the loop: assembled
    and scattered back as on the instance threads."""
    config = _config(SEGMENTS.split("dynamic_batching")[0] + "dynamic_batching { }")
    engine = _SegmentSums()
    ragged = RaggedBatching.from_config(config, "segments/config.pbtxt")
    policy = BatchingPolicy.from_config(config)
    # executions timed on a clock that stands still: fast however busy the machine is
    scheduler = Scheduler("segments", 1, [engine], policy, clock=FakeClock(), ragged=ragged)

    async def in_turn() -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
        answers = []
        for size in range(1, 21):
            x = np.arange(size, dtype=np.float32).reshape(1, size)
            answers.append((x, await scheduler.submit(Submission({"X": x}, ["Y", "S"], 1))))
        return answers

    try:
        assert scheduler.execution is Execution.INSTANCE_THREADS
        answers = asyncio.run(in_turn())
        assert scheduler.execution is Execution.RUN_NOW  # the last ones ran on the loop
    finally:
        scheduler.close()
        scheduler.join(5)
    for x, answer in answers:
        np.testing.assert_array_equal(answer["Y"], x * 2)
        assert answer["S"].tolist() == [[x.sum()]]
    assert engine.batches[-1]["ENDS"].tolist() == [20]


def _ragged_repository(tmp_path: Path, backend: str, text: str) -> Path:
    model_dir = tmp_path / backend
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "config.pbtxt").write_text(f'backend: "{backend}"\n' + text)
    return model_dir


def _load(model_dir: Path, backend: str) -> ModelVersion:
    return load_model_version(model_dir, 1, read_model_config(model_dir), backend)


IDENTITY = """
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
dynamic_batching { preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000 }
"""


def test_an_identity_model_answers_each_request_of_a_ragged_batch_with_its_own_input(
    tmp_path: Path,
) -> None:
    """Triton's identity backend answers each request with its own input: a ragged batch's
    output comes back in each request's shape, with no batch_output named."""
    version = _load(_ragged_repository(tmp_path, "identity", IDENTITY), "identity")
    xs = [np.arange(16, dtype=np.float32).reshape(1, 16), np.ones((1, 8), np.float32)]
    answers = _answers(version.scheduler, [{"INPUT0": x} for x in xs], ["OUTPUT0"])
    for x, answer in zip(xs, answers, strict=True):
        np.testing.assert_array_equal(answer["OUTPUT0"], x)
    stats = version.scheduler.stats
    assert stats.execution_count == 1 and stats.inference_count == 2


IDENTITY_OPTIONAL = """
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true },
       { name: "INPUT1" data_type: TYPE_FP32 dims: [ 2 ] optional: true },
       { name: "INPUT2" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 2 ] },
        { name: "OUTPUT2" data_type: TYPE_FP32 dims: [ 1 ] }]
dynamic_batching { preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 5000000 }
"""


def test_an_identity_model_s_left_out_optional_input_has_a_row_per_row_of_a_ragged_batch(
    tmp_path: Path,
) -> None:
    """The zeros for an optional input left out take their rows from an input stacked by
    rows, never from the flat run of a ragged one (its elements, not its rows)."""
    version = _load(_ragged_repository(tmp_path, "identity", IDENTITY_OPTIONAL), "identity")
    requests = [
        {"INPUT0": np.ones((1, 16), np.float32), "INPUT2": np.ones((1, 1), np.float32)},
        {"INPUT0": np.ones((2, 3), np.float32), "INPUT2": np.ones((2, 1), np.float32)},
    ]
    answers = _answers(version.scheduler, requests, ["OUTPUT0", "OUTPUT1"])
    assert [a["OUTPUT1"].shape for a in answers] == [(1, 2), (2, 2)]
    assert [a["OUTPUT0"].shape for a in answers] == [(1, 16), (2, 3)]
    assert version.scheduler.stats.execution_count == 1


def test_an_identity_model_whose_rows_only_a_ragged_input_carries_is_refused_with_an_optional(
    tmp_path: Path,
) -> None:
    """With every input ragged or optional, a ragged batch that leaves the optional one out
    has nothing to count its rows by: refused at load, with the line."""
    text = IDENTITY_OPTIONAL.replace(
        "dims: [ 1 ] }]\noutput", "dims: [ 1 ] optional: true }]\noutput"
    )
    assert text != IDENTITY_OPTIONAL
    with pytest.raises(ModelyardError) as refused:
        _load(_ragged_repository(tmp_path, "identity", text), "identity")
    line = refused.value.line()
    assert "ragged input 'INPUT0'" in line and "optional" in line, line


def _onnx_model(model_dir: Path, x_shape: list[Any]) -> None:
    """OUTPUT0 = INPUT0; COUNT = the batch input N as one row per request."""
    nodes = [
        helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"]),
        helper.make_node("Reshape", ["N", "column"], ["COUNT"]),
    ]
    graph = helper.make_graph(
        nodes, "ragged",
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, x_shape),
         helper.make_tensor_value_info("N", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, x_shape),
         helper.make_tensor_value_info("COUNT", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor("column", TensorProto.INT64, [2], [-1, 1])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(model_dir / "1" / "model.onnx"))


ONNX = """
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
        { name: "COUNT" data_type: TYPE_FP32 dims: [ 1 ] }]
batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_FP32
               source_input: "INPUT0" }]
batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "OUTPUT0"
                source_input: "INPUT0" }]
dynamic_batching { preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000 }
"""


def test_an_onnx_model_takes_a_ragged_batch_with_its_batch_input(tmp_path: Path) -> None:
    model_dir = _ragged_repository(tmp_path, "onnxruntime", ONNX)
    _onnx_model(model_dir, [None])
    version = _load(model_dir, "onnxruntime")
    assert [i.name for i in version.config.input] == ["INPUT0"]  # N is the server's
    xs = [np.arange(16, dtype=np.float32).reshape(1, 16), np.ones((1, 8), np.float32)]
    answers = _answers(version.scheduler, [{"INPUT0": x} for x in xs], ["OUTPUT0", "COUNT"])
    for x, answer in zip(xs, answers, strict=True):
        np.testing.assert_array_equal(answer["OUTPUT0"], x)
        assert answer["COUNT"].tolist() == [[x.size]]
    assert version.scheduler.stats.execution_count == 1


@pytest.mark.parametrize(
    ("backend", "text", "graph_x", "words"),
    [
        ("onnxruntime", ONNX, [None, None],
         "configuration expects model provides input with shape [-1] for ragged input 'INPUT0', "
         "model provides [-1, -1]"),
        ("onnxruntime", ONNX.replace('target_name: "N"', 'target_name: "M"'), [None],
         "batch_input target 'M' is not an input of the model file"),
        ("python", ONNX, None,
         "the python backend takes allow_ragged_batch (each request in its own shape) but not "
         "batch_input or batch_output"),
        ("identity", IDENTITY.split("dynamic_batching")[0]
         + "model_transaction_policy { decoupled: true }", None,
         "ragged batching is served by the dynamic and sequence batchers, not a decoupled "
         "model's scheduler"),
        ("identity", IDENTITY.replace("max_batch_size: 8", "max_batch_size: 0"), None,
         "does not batch (max_batch_size 0) and input 'INPUT0' sets allow_ragged_batch"),
    ],
)  # fmt: skip
def test_a_ragged_model_its_engine_or_scheduler_cannot_serve_is_refused_at_load(
    tmp_path: Path, backend: str, text: str, graph_x: list[Any] | None, words: str
) -> None:
    model_dir = _ragged_repository(tmp_path, backend, text)
    if graph_x is not None:
        _onnx_model(model_dir, graph_x)
    if backend == "python":
        (model_dir / "1" / "model.py").write_text(
            "class Model:\n    def execute(self, inputs):\n        return inputs\n"
        )
    with pytest.raises(ModelyardError) as refused:
        _load(model_dir, backend)
    assert words in refused.value.line(), refused.value.line()
