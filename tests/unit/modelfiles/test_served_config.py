"""The config as Triton serves it: what it fills in where a config is silent."""

from __future__ import annotations

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.modelfiles.served_config import fill_backend_fields, served_config


def config(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


def test_a_silent_config_is_served_with_tritons_defaults() -> None:
    served = served_config(config('name: "m" max_batch_size: 8 dynamic_batching {}'))
    assert served.version_policy == mc.ModelVersionPolicy(
        latest=mc.ModelVersionPolicy.Latest(num_versions=1)
    )
    assert list(served.dynamic_batching.preferred_batch_size) == [8]
    assert served.optimization.input_pinned_memory.enable
    assert served.optimization.output_pinned_memory.enable


def test_what_a_config_says_is_served_as_it_says_it() -> None:
    text = (
        'name: "m" max_batch_size: 8 version_policy { all {} } '
        "dynamic_batching { preferred_batch_size: [2, 4] } "
        "optimization { input_pinned_memory { enable: false } }"
    )
    served = served_config(config(text))
    assert served.version_policy.HasField("all")
    assert list(served.dynamic_batching.preferred_batch_size) == [2, 4]
    assert not served.optimization.input_pinned_memory.enable  # given, though false
    assert served.optimization.output_pinned_memory.enable


def test_a_model_that_does_not_batch_has_no_preferred_size() -> None:
    assert not served_config(config("dynamic_batching {}")).dynamic_batching.preferred_batch_size


def test_sequence_batching_gets_its_idle_time_and_an_oldest_preferred_size() -> None:
    served = served_config(config("max_batch_size: 4 sequence_batching { oldest {} }"))
    assert served.sequence_batching.max_sequence_idle_microseconds == 1_000_000
    assert list(served.sequence_batching.oldest.preferred_batch_size) == [4]
    direct = served_config(config("sequence_batching { max_sequence_idle_microseconds: 5 }"))
    assert direct.sequence_batching.max_sequence_idle_microseconds == 5


def test_an_ensemble_gets_no_pinned_memory_and_the_served_copy_leaves_the_config() -> None:
    ensemble = config('name: "e" platform: "ensemble" ensemble_scheduling {}')
    served = served_config(ensemble)
    assert not served.HasField("optimization")
    assert served.HasField("version_policy") and not ensemble.HasField("version_policy")


def test_backend_fields_are_filled_as_triton_fills_them() -> None:
    def filled(text: str, backend: str, custom: bool = False) -> tuple[str, str, str]:
        made = config(text)
        fill_backend_fields(made, backend, custom)
        return made.backend, made.platform, made.default_model_filename

    assert filled("", "onnxruntime") == ("onnxruntime", "onnxruntime_onnx", "model.onnx")
    assert filled('backend: "onnxruntime" default_model_filename: "a.onnx"', "onnxruntime") == (
        "onnxruntime", "onnxruntime_onnx", "a.onnx",
    )  # fmt: skip
    assert filled("", "pytorch") == ("pytorch", "pytorch_libtorch", "model.pt")
    # a PyTorch model whose config names its platform gets no file name (as in Triton)
    assert filled('platform: "pytorch_libtorch"', "pytorch") == ("pytorch", "pytorch_libtorch", "")
    assert filled("", "python") == ("python", "", "model.py")
    assert filled("", "sklearn") == ("sklearn", "", "")
    # a custom backend named by the model's folder (MODEL.BACKEND), from a silent config
    assert filled("", "identity", custom=True) == ("identity", "", "model.identity")
    assert filled('backend: "identity"', "identity", custom=True) == ("identity", "", "")
