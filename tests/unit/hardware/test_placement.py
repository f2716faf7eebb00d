"""Instance placement on devices, and device memory on a real GPU (marked gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.hardware.placement import (
    asks_for_gpus,
    normalize_instance_groups,
    placements,
    visible_gpus,
)


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


def test_cpu_instances_and_the_default_of_one() -> None:
    assert placements(config(""), []) == ["cpu"]
    assert placements(config("instance_group [{ count: 3 kind: KIND_CPU }]"), []) == ["cpu"] * 3


def test_gpu_instances_go_count_times_on_each_listed_gpu() -> None:
    text = "instance_group [{ count: 2 kind: KIND_GPU gpus: [0, 1] }, { kind: KIND_CPU }]"
    assert placements(config(text), [0, 1]) == ["cuda:0", "cuda:0", "cuda:1", "cuda:1", "cpu"]
    assert placements(config("instance_group [{ kind: KIND_GPU }]"), [0, 1]) == [
        "cuda:0",
        "cuda:1",
    ]


def test_gpu_requests_a_host_cannot_meet_are_explained_in_tritons_words() -> None:
    def said(text: str, gpus: list[int]) -> object:
        return placements(text_format.Parse(text, mc.ModelConfig(name="m")), gpus)

    assert said("instance_group [{ kind: KIND_GPU }]", []) == (
        "instance group m_0 of model m has kind KIND_GPU but no GPUs are available"
    )
    assert said("instance_group [{ kind: KIND_CPU }, { name: 'g' kind: KIND_GPU gpus: [3] }]",
                [0]) == (
        "instance group g of model m specifies invalid or unsupported gpu id 3. GPUs with at "
        "least the minimum required CUDA compute compatibility of 6.000000 are: 0"
    )  # fmt: skip
    assert said("instance_group [{ kind: KIND_CPU gpus: [0] }]", [0]) == (
        "instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs"
    )
    # KIND_AUTO naming a GPU the host lacks is KIND_CPU, which may name none
    assert said("instance_group [{ gpus: [0] }]", []) == (
        "instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs"
    )
    assert said("instance_group [{ gpus: [1] count: 2 }]", [0, 1]) == ["cuda:1", "cuda:1"]


def test_instance_groups_are_normalized_as_triton_normalizes_them() -> None:
    def normalized(text: str, backend: str, as_tritonserver: bool = True) -> str:
        made = text_format.Parse(text, mc.ModelConfig())
        made.name = "m"
        normalize_instance_groups(made, backend, as_tritonserver)
        return text_format.MessageToString(made, as_one_line=True)

    # none: one named after the model; an unnamed one: <model>_<index>; KIND_AUTO resolved
    assert normalized("", "pytorch") == (
        'name: "m" instance_group { name: "m" count: 1 kind: KIND_CPU }'
    )
    assert normalized("instance_group [{ name: 'a' }, { kind: KIND_CPU count: 3 }]",
                      "pytorch") == (
        'name: "m" instance_group { name: "a" count: 1 kind: KIND_CPU } '
        'instance_group { name: "m_1" count: 3 kind: KIND_CPU }'
    )  # fmt: skip
    # Triton gives a CPU group of onnxruntime (and tensorflow) two instances; modelyard
    # serve gives every group one
    assert "count: 2 kind: KIND_CPU" in normalized("", "onnxruntime")
    assert "count: 1 kind: KIND_CPU" in normalized("", "onnxruntime", as_tritonserver=False)
    assert "count: 4 kind: KIND_CPU" in normalized("instance_group [{ count: 4 }]", "onnxruntime")
    assert placements(text_format.Parse(normalized("", "onnxruntime"), mc.ModelConfig()),
                      []) == ["cpu", "cpu"]  # fmt: skip
    # normalizing twice changes nothing; an ensemble has no instance groups
    once = normalized("instance_group [{ gpus: [0] }]", "onnxruntime")
    assert normalized(once, "onnxruntime") == once
    assert normalized("ensemble_scheduling {}", "ensemble") == 'name: "m" ensemble_scheduling { }'


def test_only_a_config_with_a_gpu_group_looks_for_gpus() -> None:
    assert not asks_for_gpus(config(""))
    assert not asks_for_gpus(config("instance_group [{ count: 2 kind: KIND_CPU }]"))
    assert asks_for_gpus(config("instance_group [{ kind: KIND_CPU }, { kind: KIND_GPU }]"))
    assert asks_for_gpus(config("instance_group [{ gpus: [0] }]"))  # KIND_AUTO naming one


@pytest.mark.gpu
def test_a_gpu_instance_reports_its_device_memory(tmp_path: Path) -> None:
    if not visible_gpus():
        pytest.skip("needs an NVIDIA GPU visible to torch (CUDA build)")
    import asyncio

    from modelyard.examples.build import build_mlp_onnx
    from modelyard.modelfiles.repository import ModelRepository
    from modelyard.server.manager import ModelManager

    build_mlp_onnx(tmp_path, seed=0)
    path = tmp_path / "mlp_onnx" / "config.pbtxt"
    path.write_text(path.read_text() + "\ninstance_group [{ kind: KIND_GPU gpus: [0] }]\n")

    async def scenario() -> None:
        manager = ModelManager(ModelRepository(tmp_path))
        await manager.start()
        try:
            (mv,) = manager.ready_versions()
            assert mv.devices == ["cuda:0"]
            assert mv.device_memory_bytes > 0
        finally:
            await manager.stop()

    asyncio.run(scenario())
