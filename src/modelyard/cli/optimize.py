"""``modelyard optimize MODEL_DIR --to fp16|int8-dynamic|int8-static``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from modelyard.errors import Code, ConfigError
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


def _example_rows(model_name: str, rows: int) -> dict[str, np.ndarray] | None:
    from modelyard.examples.build import MODEL_NAMES, example_inputs

    return example_inputs(model_name, rows) if model_name in MODEL_NAMES else None


def run_optimize(args: argparse.Namespace) -> int:
    model_dir: Path = args.model_dir
    name = model_dir.resolve().name
    evaluation = load_npz(args.eval) if args.eval else _example_rows(name, 512)
    if evaluation is None:
        raise ConfigError(
            f"no evaluation rows for model '{name}'",
            code=Code.INVALID_ARGUMENT,
            rule="optimize/input",
            where="--eval FILE.npz (input name → held-out rows)",
        )
    calibration = load_npz(args.calibration) if args.calibration else None
    if args.to == "int8-static" and calibration is None:
        calibration = _example_rows(name, 256)
    original, converted = write_variant(model_dir, args.to, calibration)
    report = accuracy_report(original, converted, evaluation)
    report["target"] = args.to
    (converted.parent / REPORT_FILENAME).write_text(json.dumps(report, indent=2))
    print(format_report(report, original, converted))
    return 0
