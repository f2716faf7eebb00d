"""Per-version memory footprints and the instance's memory budget."""

from __future__ import annotations

import asyncio
import gc
import mmap
from pathlib import Path

import numpy as np
import pytest

from modelyard.errors import Code, ConfigError, ModelyardError
from modelyard.examples.build import build_mlp_onnx, build_tiny_onnx, example_inputs
from modelyard.hardware.memory import parse_size, settled_resident_bytes
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.types import InferRequest
from tests.support.models import write_python_model


def test_sizes_parse_with_units() -> None:
    assert parse_size("512M") == 512 << 20
    assert parse_size("4G") == 4 << 30
    assert parse_size("1.5GiB") == int(1.5 * (1 << 30))
    assert parse_size("1000") == 1000
    with pytest.raises(ConfigError) as bad:
        parse_size("lots")
    assert "--memory-budget" in bad.value.line()


def test_the_measure_counts_what_the_process_holds_not_the_files_it_maps(tmp_path: Path) -> None:
    mapped_file = tmp_path / "weights.bin"
    mapped_file.write_bytes(b"\1" * (24 << 20))
    before = settled_resident_bytes()
    with (
        mapped_file.open("rb") as source,
        mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as pages,
    ):
        assert sum(pages[offset] for offset in range(0, len(pages), 4096)) == len(pages) // 4096
        mapped = settled_resident_bytes() - before  # file pages the kernel may drop at any time
    held = np.ones(24 << 20, dtype=np.uint8)
    grown = settled_resident_bytes() - before
    assert mapped < 4 << 20, mapped
    assert 23 << 20 <= grown <= 30 << 20, grown
    del held


def test_a_load_over_the_budget_is_refused_and_the_others_keep_serving(tmp_path: Path) -> None:
    build_tiny_onnx(tmp_path, seed=0)
    build_mlp_onnx(tmp_path, seed=0)  # a 5 MB model file

    async def scenario() -> None:
        manager = ModelManager(
            ModelRepository(tmp_path), ControlMode.EXPLICIT, memory_budget=1 << 30
        )
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            await manager.load("tiny_onnx")
            held = manager.held_memory()[0][2]
            manager.memory_budget = held + (3 << 20)  # room for 3 MB more, not 5
            with pytest.raises(ModelyardError) as refused:
                await manager.load("mlp_onnx")
            line = refused.value.line()
            assert refused.value.code is Code.RESOURCE_EXHAUSTED
            assert "model 'mlp_onnx' version 1 needs 5.0 MB (estimated from its files" in line
            assert "3.0 MB of the memory budget" in line and "held by tiny_onnx/1" in line
            assert "rule=model-server/memory-budget" in line
            assert "change: modelyard serve --memory-budget" in line
            rows = {r["name"]: r for r in manager.index() if "state" in r}
            assert rows["mlp_onnx"]["state"] == "UNAVAILABLE"
            assert "memory budget" in rows["mlp_onnx"]["reason"]
            inputs = example_inputs("tiny_onnx", 2)
            response = await dp.infer(InferRequest("tiny_onnx", None, inputs, {"input": "FP32"}))
            assert np.asarray(response.outputs[0].data).shape == (2, 3)
        finally:
            await manager.stop()

    asyncio.run(scenario())


def test_each_version_reports_its_footprint(tmp_path: Path) -> None:
    build_mlp_onnx(tmp_path, seed=0)
    # what earlier tests left for the collector, freed during the load, would read as
    # memory the load gave back
    gc.collect()

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(tmp_path))
        dp = LocalDataPlane(manager)
        await manager.start()
        try:
            row = next(r for r in manager.index() if r.get("version") == "1")
            assert row["memory_bytes"] > 1 << 20  # the MLP's weights are resident
            stats = dp.statistics("mlp_onnx", None)["model_stats"][0]
            assert stats["memory_bytes"] == row["memory_bytes"]
        finally:
            await manager.stop()

    asyncio.run(scenario())


FAILS_SECOND = """
class Model:
    def initialize(self, args):
        if args["instance_index"] == "1":
            raise RuntimeError("instance 1 refuses to start")
        import numpy as np
        self.table = np.ones(2_000_000)  # 16 MB each

    def execute(self, inputs):
        return {"Y": inputs["X"]}
"""


def test_a_load_whose_instance_fails_holds_nothing_of_the_budget(tmp_path: Path) -> None:
    """The instances that loaded are released with the failed load, and nothing of it is
    counted against the budget: the next load has the whole budget."""
    write_python_model(
        tmp_path,
        "fails_second",
        FAILS_SECOND,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "X" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "Y" data_type: TYPE_FP32 dims: [ 2 ] }]
        instance_group [{ count: 3 kind: KIND_CPU }]
        """,
    )
    build_tiny_onnx(tmp_path, seed=0)

    async def scenario() -> None:
        manager = ModelManager(
            ModelRepository(tmp_path), ControlMode.EXPLICIT, memory_budget=1 << 30
        )
        await manager.start()
        try:
            with pytest.raises(ModelyardError) as failed:
                await manager.load("fails_second")
            assert "instance 1 refuses to start" in failed.value.line()
            assert manager.held_memory() == []
            await manager.load("tiny_onnx")
            assert [name for name, _, _ in manager.held_memory()] == ["tiny_onnx"]
        finally:
            await manager.stop()

    asyncio.run(scenario())
