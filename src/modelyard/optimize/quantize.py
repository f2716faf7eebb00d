"""Write an FP16 or INT8 variant of an ONNX model as the next version.

``to fp16``          onnxconverter-common, inputs and outputs kept FP32
``to int8-dynamic``  onnxruntime.quantization.quantize_dynamic (weights int8, a scale per
                     output channel; activations quantized per tensor as they come, so a
                     matrix product fed by a GELU, whose outputs have outliers, stays in
                     FP32, as do the nodes ``keep_fp32`` patterns name)
``to int8-static``   onnxruntime.quantization.quantize_static, calibrated on
                     rows the user gives (an .npz keyed by input name)

The original version stays; the new one is served next to it (version
policy permitting) and can be canaried like any other version.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from modelyard import error_rules
from modelyard.errors import ConfigError
from modelyard.modelfiles.repository import ModelRepository

TARGETS = ("fp16", "int8-dynamic", "int8-static")


def _error(detail: str, where: str) -> ConfigError:
    return ConfigError.of(error_rules.OPTIMIZE_INPUT, detail, where=where)


REPORT_FILENAME = "optimize-report.json"


def latest_onnx(model_dir: Path) -> tuple[int, Path]:
    """The newest version that is an original, not a variant this tool wrote."""
    versions = ModelRepository.versions(model_dir)
    for version in reversed(versions):
        candidate = model_dir / str(version) / "model.onnx"
        if candidate.is_file() and not (model_dir / str(version) / REPORT_FILENAME).exists():
            return version, candidate
    raise _error(
        f"no <version>/model.onnx under {model_dir}",
        "modelyard optimize works on ONNX models in a Triton-layout model directory",
    )


def load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: np.asarray(data[name]) for name in data.files}
    except (OSError, ValueError) as exc:
        raise _error(f"cannot read {path} as .npz: {exc}", "--calibration / --eval") from None


class _Calibration:
    """onnxruntime's CalibrationDataReader over rows of an .npz, a few at a time."""

    def __init__(self, data: dict[str, np.ndarray], batch: int = 16) -> None:
        rows = min(len(v) for v in data.values())
        self._batches: Iterator[dict[str, np.ndarray]] = iter(
            [
                {k: v[i : i + batch].astype(np.float32, copy=False) for k, v in data.items()}
                for i in range(0, rows, batch)
            ]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)

    def rewind(self) -> None:  # onnxruntime >= 1.17 may call it
        return None


def gelu_fed(model: Any) -> list[str]:
    """The matrix products whose input a GELU made (a Gelu op, or x * (1 + erf(...)) / 2)."""
    producers = {output: node for node in model.graph.node for output in node.output}

    def from_gelu(name: str, depth: int) -> bool:
        node = producers.get(name)
        if node is None:
            return False
        if node.op_type in ("Gelu", "BiasGelu", "FastGelu", "QuickGelu", "Erf"):
            return True
        if depth == 0 or node.op_type not in ("Mul", "Add", "Div"):
            return False
        return any(from_gelu(i, depth - 1) for i in node.input)

    return [n.name for n in model.graph.node if n.op_type == "MatMul" and from_gelu(n.input[0], 3)]


def convert(
    source: Path,
    target: Path,
    to: str,
    calibration: dict[str, np.ndarray] | None,
    keep_fp32: tuple[str, ...] = (),
) -> list[str]:
    """Write the variant; returns the nodes kept in FP32 (int8-dynamic)."""
    import onnx

    if to == "fp16":
        from onnxconverter_common import float16

        model = onnx.load(str(source))
        onnx.save(float16.convert_float_to_float16(model, keep_io_types=True), str(target))
        return []
    from onnxruntime.quantization import QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    # converted models (skl2onnx) carry ai.onnx.ml ops whose outputs have no inferred type
    extra_options = {"DefaultTensorType": onnx.TensorProto.FLOAT}

    with tempfile.TemporaryDirectory() as tmp:
        prepared = Path(tmp) / "prepared.onnx"
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        if to == "int8-dynamic":
            model = onnx.load(str(prepared), load_external_data=False)
            patterns = [re.compile(p) for p in keep_fp32]
            kept = sorted(
                {*gelu_fed(model)}
                | {n.name for n in model.graph.node if any(p.search(n.name) for p in patterns)}
            )
            quantize_dynamic(
                str(prepared),
                str(target),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul", "Gemm"],
                nodes_to_exclude=kept,
                extra_options=extra_options,
            )
            return kept
        if not calibration:
            raise _error(
                "int8-static needs calibration rows", "--calibration FILE.npz (input name → rows)"
            )
        quantize_static(
            str(prepared),
            str(target),
            _Calibration(calibration),
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            extra_options=extra_options,
        )
        return []


def _copy_beside(source: Path, new_dir: Path) -> None:
    """The version's other files (a text model's tokenizer and settings) in the new one."""
    for path in source.parent.iterdir():
        if path.name in (source.name, REPORT_FILENAME) or path.is_symlink():
            continue
        if path.is_dir():
            shutil.copytree(path, new_dir / path.name, symlinks=False)
        elif path.is_file():
            shutil.copyfile(path, new_dir / path.name)


def write_variant(
    model_dir: Path,
    to: str,
    calibration: dict[str, np.ndarray] | None = None,
    keep_fp32: tuple[str, ...] = (),
) -> tuple[Path, Path]:
    """Convert the latest version; returns (original file, new file in version N+1)."""
    if to not in TARGETS:
        raise _error(f"unknown target '{to}' (known: {', '.join(TARGETS)})", "--to")
    _, source = latest_onnx(model_dir)
    new_dir = model_dir / str(max(ModelRepository.versions(model_dir)) + 1)
    new_dir.mkdir(parents=True, exist_ok=False)
    target = new_dir / "model.onnx"
    try:
        _copy_beside(source, new_dir)
        kept = convert(source, target, to, calibration, keep_fp32)
    except BaseException:
        shutil.rmtree(new_dir, ignore_errors=True)
        raise
    # marks the version as a variant; the CLI replaces it with the full report
    marker = {"target": to, "source": str(source.relative_to(model_dir)), "kept_fp32": kept}
    (new_dir / REPORT_FILENAME).write_text(json.dumps(marker))
    return source, target
