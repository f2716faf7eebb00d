"""``modelyard optimize MODEL_DIR --to fp16|int8-dynamic|int8-static``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.errors import ConfigError
from modelyard.optimize.quantize import REPORT_FILENAME, TARGETS, load_npz, write_variant
from modelyard.optimize.report import accuracy_report, format_report


def add_optimize_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", type=Path, help="a model directory of a repository")
    parser.add_argument("--to", required=True, choices=TARGETS)
    parser.add_argument(
        "--calibration", type=Path, default=None, help=".npz of input rows (int8-static)"
    )
    parser.add_argument(
        "--eval", type=Path, default=None, help=".npz of held-out input rows for the report"
    )
    parser.add_argument(
        "--keep-fp32",
        action="append",
        default=[],
        metavar="REGEX",
        help="int8-dynamic: keep the nodes whose name matches in FP32 (repeatable; matrix "
        "products fed by a GELU always are)",
    )
    parser.add_argument(
        "--eval-texts",
        type=Path,
        default=None,
        metavar="FILE",
        help="a text model's report: texts, one per line (the example's: its topic sentences)",
    )


def _example_rows(model_name: str, rows: int) -> dict[str, np.ndarray] | None:
    from modelyard.examples.build import MODEL_NAMES, example_inputs

    return example_inputs(model_name, rows) if model_name in MODEL_NAMES else None


def _is_text_model(model_dir: Path) -> bool:
    from modelyard.modelfiles.config import read_model_config

    config = read_model_config(model_dir)
    takes_text = bool(config.input) and all(i.data_type == mc.TYPE_STRING for i in config.input)
    return "tokenizer" in config.parameters or takes_text


def _texts(path: Path | None, name: str) -> list[str]:
    if path is not None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError.of(
                error_rules.EVAL_TEXTS, f"cannot read {path} as UTF-8 text: {exc}"
            ) from None
        return [line for line in lines if line.strip()]
    from modelyard.examples.text import EMBEDDING, topic_sentences

    if name != EMBEDDING:
        raise ConfigError.of(error_rules.EVAL_TEXTS, f"no evaluation texts for text model '{name}'")
    return topic_sentences()[0]


def _optimize_text_model(args: argparse.Namespace, model_dir: Path, name: str) -> int:
    from modelyard.optimize.text_report import format_text_report, text_accuracy_report

    if args.to == "int8-static":
        raise ConfigError.of(
            error_rules.TEXT_MODEL_TARGET,
            f"int8-static is not offered for text model '{name}' (its calibration rows would "
            "be token ids)",
        )
    texts = _texts(args.eval_texts, name)
    original, converted = write_variant(model_dir, args.to, keep_fp32=tuple(args.keep_fp32))
    report = text_accuracy_report(
        model_dir, int(original.parent.name), int(converted.parent.name), texts
    )
    report.update(_marker(converted))
    (converted.parent / REPORT_FILENAME).write_text(json.dumps(report, indent=2))
    print(format_text_report(report, original, converted))
    return 0


def _marker(converted: Path) -> dict[str, object]:
    """What write_variant noted of the variant: its target and the nodes kept in FP32."""
    marker: dict[str, object] = json.loads((converted.parent / REPORT_FILENAME).read_text())
    return {"target": marker["target"], "kept_fp32": marker.get("kept_fp32", [])}


def run_optimize(args: argparse.Namespace) -> int:
    model_dir: Path = args.model_dir
    name = model_dir.resolve().name
    if _is_text_model(model_dir):
        return _optimize_text_model(args, model_dir, name)
    evaluation = load_npz(args.eval) if args.eval else _example_rows(name, 512)
    if evaluation is None:
        raise ConfigError.of(error_rules.EVAL_ROWS, f"no evaluation rows for model '{name}'")
    calibration = load_npz(args.calibration) if args.calibration else None
    if args.to == "int8-static" and calibration is None:
        calibration = _example_rows(name, 256)
    original, converted = write_variant(
        model_dir, args.to, calibration, keep_fp32=tuple(args.keep_fp32)
    )
    report = accuracy_report(original, converted, evaluation)
    report.update(_marker(converted))
    (converted.parent / REPORT_FILENAME).write_text(json.dumps(report, indent=2))
    print(format_report(report, original, converted))
    return 0
