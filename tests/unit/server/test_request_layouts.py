"""Binary requests that repeat their JSON header: parsed once; a version's lane validated once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import Code, ModelyardError, ProtocolError
from modelyard.protocol.v2_http import (
    BinaryLayouts,
    JsonLayout,
    decode_infer_request,
    decode_with_layout,
    json_layout_key,
)
from modelyard.server.manager import ControlMode
from modelyard.types import RequestedOutput
from tests.support.dataplane import running_dataplane
from tests.support.models import slow_double


def binary_body(rows: np.ndarray, name: str = "x") -> tuple[bytes, int]:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": name,
                    "shape": list(rows.shape),
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": rows.nbytes},
                }
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    return header + rows.astype("<f4").tobytes(), len(header)


def test_a_repeated_header_reuses_its_layout_and_reads_each_body() -> None:
    first, length = binary_body(np.array([[1.0, 2.0]], dtype=np.float32))
    second, _ = binary_body(np.array([[5.0, 7.0]], dtype=np.float32))
    layouts = BinaryLayouts()
    a, layout_a = decode_with_layout(first, length, "m", None, layouts=layouts)
    b, layout_b = decode_with_layout(second, length, "m", None, layouts=layouts)
    assert layout_a is not None and layout_b is layout_a
    assert a.inputs["x"].tolist() == [[1.0, 2.0]]
    assert b.inputs["x"].tolist() == [[5.0, 7.0]]
    assert (b.binary_output_default, b.input_datatypes) == (True, {"x": "FP32"})


def test_a_request_from_a_layout_carries_every_option_of_its_header() -> None:
    rows = np.array([[1.0, 2.0]], dtype=np.float32)
    header = json.dumps(
        {
            "id": "req-7",
            "inputs": [
                {"name": "x", "shape": [1, 2], "datatype": "FP32",
                 "parameters": {"binary_data_size": rows.nbytes}},
            ],
            "outputs": [{"name": "y", "parameters": {"binary_data": False}}],
            "parameters": {"priority": 2, "timeout": 1500, "binary_data_output": True},
        }
    ).encode()  # fmt: skip
    body = header + rows.tobytes()
    for _ in range(2):  # the first makes the layout, the second is made from it
        request, layout = decode_with_layout(body, len(header), "m", "3")
        assert (request.model_name, request.model_version) == ("m", "3")
        assert request.inputs["x"].tolist() == [[1.0, 2.0]]
        assert request.input_datatypes == {"x": "FP32"}
        assert request.outputs is not None
        assert [(o.name, o.binary) for o in request.outputs] == [("y", False)]
        assert request.id == "req-7"
        assert request.parameters == {"priority": 2, "timeout": 1500, "binary_data_output": True}
        assert (request.binary_output_default, request.priority, request.timeout_us) == (
            True,
            2,
            1500,
        )
        assert request.deadline is None and layout is not None


def test_a_known_header_with_too_few_bytes_still_gets_the_error() -> None:
    body, length = binary_body(np.array([[1.0, 2.0]], dtype=np.float32))
    layouts = BinaryLayouts()
    decode_with_layout(body, length, "m", None, layouts=layouts)
    for short in (body[:-4], body + b"\0\0\0\0"):
        with pytest.raises(ProtocolError) as error:
            decode_with_layout(short, length, "m", None, layouts=layouts)
        assert "rule=protocol/v2-request" in error.value.line()


def test_a_repeated_bytes_header_decodes_each_body_and_refuses_a_broken_one() -> None:
    def body(*items: bytes) -> tuple[bytes, int]:
        raw = b"".join(len(item).to_bytes(4, "little") + item for item in items)
        header = json.dumps(
            {
                "inputs": [
                    {"name": "text", "shape": [len(items)], "datatype": "BYTES",
                     "parameters": {"binary_data_size": len(raw)}},
                ]
            }
        ).encode()  # fmt: skip
        return header + raw, len(header)

    first, length = body(b"ab", b"cd")
    second, _ = body(b"xy", b"zw")
    layouts = BinaryLayouts()
    _, layout_a = decode_with_layout(first, length, "m", None, layouts=layouts)
    b, layout_b = decode_with_layout(second, length, "m", None, layouts=layouts)
    assert layout_b is layout_a is not None
    assert b.inputs["text"].tolist() == [b"xy", b"zw"]
    broken = second[:length] + (9).to_bytes(4, "little") + second[length + 4 :]
    with pytest.raises(ProtocolError) as error:
        decode_with_layout(broken, length, "m", None, layouts=layouts)
    assert "BYTES element of 9 bytes runs past the 12 bytes of data" in error.value.line()
    assert "rule=protocol/tensor-size" in error.value.line()


def test_json_data_leaves_a_json_layout_and_broken_headers_leave_none() -> None:
    doc = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}
    layout = decode_with_layout(json.dumps(doc).encode(), None, "m", None)[1]
    assert isinstance(layout, JsonLayout) and layout.tensors == (("x", "FP32", (1, 2)),)
    key = json_layout_key(doc)  # what a JSON lane is kept under: neither values nor the id
    assert key is not None and b"1.0" not in key and json_layout_key({**doc, "id": "a"}) == key
    mixed = {
        "inputs": [
            doc["inputs"][0],
            {"name": "z", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}},
        ]
    }
    header = json.dumps(mixed).encode()  # one input as JSON values, one as binary data
    assert decode_with_layout(header + b"\0" * 4, len(header), "m", None)[1] is None
    header = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [1, 2], "datatype": "FP32",
                 "parameters": {"binary_data_size": 4}},
            ]
        }
    ).encode()  # fmt: skip
    layouts = BinaryLayouts()
    for _ in range(2):  # 4 bytes cannot hold two FP32 values, the first time or the next
        with pytest.raises(ProtocolError, match="Expected 8, got 4"):
            decode_with_layout(header + b"\0" * 4, len(header), "m", None, layouts=layouts)
    assert len(layouts) == 0


def test_remembered_layouts_stay_bounded() -> None:
    layouts = BinaryLayouts()
    for i in range(BinaryLayouts.MAX + 5):
        body, length = binary_body(np.zeros((1, 2), dtype=np.float32), name=f"x{i}")
        decode_with_layout(body, length, "m", None, layouts=layouts)
        assert len(layouts) <= BinaryLayouts.MAX


def _shrink_batches(model_dir: Path) -> None:
    """A new config for the next load: batches of 2 rows, so 3-row requests are refused."""
    config = model_dir / "config.pbtxt"
    config.write_text(config.read_text().replace("max_batch_size: 16", "max_batch_size: 2"))


def test_a_validated_layout_is_rechecked_by_a_reloaded_version(tmp_path: Path) -> None:
    model_dir = slow_double(tmp_path)
    three_rows = np.arange(6, dtype=np.float32).reshape(3, 2)
    body, length = binary_body(three_rows)
    other, _ = binary_body(three_rows + 10)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.EXPLICIT) as dp:
            await dp.manager.load("slow_double")
            lane = dp.lane(decode_infer_request(body, length, "slow_double", None))
            first = await lane.submit(decode_infer_request(body, length, "m", None).inputs)
            again = await lane.submit(decode_infer_request(other, length, "m", None).inputs)
            assert first["y"].tolist() == (three_rows * 2 + 1000).tolist()
            assert again["y"].tolist() == ((three_rows + 10) * 2 + 1000).tolist()
            assert lane.is_current()

            _shrink_batches(model_dir)
            await dp.manager.load("slow_double")
            assert not lane.is_current()  # a front door drops it, and validates anew
            with pytest.raises(ModelyardError) as refused:
                dp.lane(decode_infer_request(body, length, "slow_double", None))
            assert "rule=model-server/max-batch-size" in refused.value.line()

    asyncio.run(scenario())


def test_a_refused_layout_is_refused_every_time(tmp_path: Path) -> None:
    slow_double(tmp_path)
    body, length = binary_body(np.zeros((1, 3), dtype=np.float32))  # x is [-1, 2]

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            for _ in range(2):
                with pytest.raises(ModelyardError) as refused:
                    await dp.infer(decode_infer_request(body, length, "slow_double", None))
                assert "Expected [-1,2], got [1,3]" in refused.value.line()

    asyncio.run(scenario())


def test_a_lane_runs_inputs_of_its_shape_and_counts_them_in_flight(tmp_path: Path) -> None:
    slow_double(tmp_path)
    rows = np.arange(6, dtype=np.float32).reshape(3, 2)
    body, length = binary_body(rows)
    other, _ = binary_body(rows + 10)

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.EXPLICIT) as dp:
            await dp.manager.load("slow_double")
            layouts = BinaryLayouts()
            request, _ = decode_with_layout(body, length, "slow_double", None, layouts=layouts)
            lane = dp.lane(request)
            assert (lane.model_name, lane.model_version, lane.rows) == ("slow_double", "1", 3)
            layout = layouts.find(other, length)
            assert layout is not None
            future = lane.submit(layout.inputs(other, length))
            assert dp.in_flight == 1  # queued or executing until its answer comes
            results = await future
            assert results["y"].tolist() == ((rows + 10) * 2 + 1000).tolist()
            assert dp.in_flight == 0

            await dp.manager.unload("slow_double")
            assert not lane.is_current()

    asyncio.run(scenario())


def test_a_known_layout_needs_its_header_and_its_binary_size() -> None:
    body, length = binary_body(np.array([[1.0, 2.0]], dtype=np.float32))
    layouts = BinaryLayouts()
    decode_with_layout(body, length, "m", None, layouts=layouts)
    assert layouts.find(body, length) is not None
    assert layouts.find(body + b"\0\0\0\0", length) is None  # more data than it says
    assert layouts.find(body[:-4], length) is None
    assert layouts.find(body, None) is None
    assert layouts.find(body, -1) is None
    assert layouts.find(body, len(body) + 8) is None  # a header past the body's end
    assert layouts.find(body, length + 1) is None  # a header one byte off


def test_names_and_versions_no_model_has_are_404s_with_short_lines(tmp_path: Path) -> None:
    slow_double(tmp_path)
    body, length = binary_body(np.zeros((1, 2), dtype=np.float32))

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            # "²".isdigit() is true and int() refuses it; int() of 4,301 digits raises too
            for version in ("²", "٣", "9" * 4301, "1" * 19, "abc"):
                with pytest.raises(ModelyardError) as refused:
                    dp.manager.resolve("slow_double", version)
                assert refused.value.code is Code.NOT_FOUND, version
                assert len(refused.value.line()) < 1_000
            with pytest.raises(ModelyardError) as unknown:
                dp.manager.resolve("m" * 100_000, None)
            assert unknown.value.code is Code.NOT_FOUND and len(unknown.value.line()) < 1_000
            request = decode_infer_request(body, length, "slow_double", None)
            request.outputs = [RequestedOutput(f"o{i}") for i in range(3)]
            with pytest.raises(ModelyardError, match="3 outputs requested, and the model has"):
                await dp.infer(request)

    asyncio.run(scenario())


def test_a_raw_binary_body_is_the_one_input_the_config_describes(tmp_path: Path) -> None:
    """Triton's raw request (Inference-Header-Content-Length: 0): the config names, types
    and shapes the body; a model it cannot describe is refused in Triton's words."""
    slow_double(tmp_path)  # x: FP32 dims [2], max_batch_size 16
    raw = np.array([1.0, 2.0], dtype="<f4").tobytes()

    async def scenario() -> None:
        async with running_dataplane(tmp_path, ControlMode.NONE) as dp:
            request = decode_infer_request(raw, 0, "slow_double", None)
            assert request.inputs == {} and request.raw_input == raw
            response = await dp.infer(request)
            assert response.outputs[0].binary  # as Triton: binary outputs by default
            assert response.outputs[0].data.tolist() == [[1002.0, 1004.0]]
            with pytest.raises(ModelyardError) as short:
                await dp.infer(decode_infer_request(raw[:6], 0, "slow_double", None))
            assert short.value.line().startswith(
                "input byte size mismatch for input 'x' for model 'slow_double'. Expected 8, got 6"
            )

    asyncio.run(scenario())
