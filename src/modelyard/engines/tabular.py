"""The tensor conventions shared by the tabular engines (sklearn, xgboost, lightgbm).

One FP32 input of ``n_features`` (named ``input`` when the config names none).
Classifiers answer ``label`` ([1]: INT64, or BYTES for string classes) and
``probabilities`` ([n_classes], FP32, class names as labels for the
classification extension); regressors answer ``prediction`` ([1], FP32).
"""

from __future__ import annotations

import numpy as np

from modelyard.engines.base import LoadContext, Signature, TensorSpec
from modelyard.errors import Code, EngineError


def signature(
    ctx: LoadContext,
    rule: str,
    n_features: int,
    classes: list[str] | None,
    *,
    label_datatype: str = "INT64",
    probabilities: bool = True,
) -> Signature:
    """The model's tensors; refuses a config that asks for an output it cannot produce."""
    labels: dict[str, list[str]] = {}
    if classes is None:
        outputs = [TensorSpec("prediction", "FP32", (-1, 1))]
    else:
        outputs = [TensorSpec("label", label_datatype, (-1, 1))]
        if probabilities:
            outputs.append(TensorSpec("probabilities", "FP32", (-1, len(classes))))
            labels = {"probabilities": classes}
    produced = [o.name for o in outputs]
    unknown = [o.name for o in ctx.config.output if o.name not in produced]
    if unknown:
        raise EngineError(
            f"the config asks for output {', '.join(unknown)}; this model produces "
            f"{', '.join(produced)}",
            code=Code.INVALID_ARGUMENT,
            rule=rule,
            where=f"output in config.pbtxt of model '{ctx.config.name}'",
        )
    return Signature(
        inputs=[TensorSpec("input", "FP32", (-1, n_features))],
        outputs=outputs,
        batched=True,
        labels=labels,
    )


def input_name(ctx: LoadContext) -> str:
    return ctx.config.input[0].name if ctx.config.input else "input"


def softmax(margin: np.ndarray) -> np.ndarray:
    shifted = np.exp(margin - margin.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)
