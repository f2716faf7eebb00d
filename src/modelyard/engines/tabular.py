"""The tensor conventions shared by the tabular engines (sklearn, xgboost, lightgbm),
and what the two booster engines share (``BoosterEngine``).

One FP32 input of ``n_features`` (named ``input`` when the config names none).
Classifiers answer ``label`` ([1]: INT64, or BYTES for string classes) and
``probabilities`` ([n_classes], FP32, class names as labels for the
classification extension); regressors answer ``prediction`` ([1], FP32).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from modelyard.engines.base import Engine, LoadContext, Signature, TensorSpec
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


def classified(probabilities: np.ndarray, outputs: list[str]) -> dict[str, np.ndarray]:
    """A classifier's answer from its class probabilities (rows x classes): the argmax."""
    label = probabilities.argmax(axis=1).astype(np.int64)
    result = {"label": label.reshape(-1, 1), "probabilities": probabilities.astype(np.float32)}
    return {name: result[name] for name in outputs}


def two_classes(p: np.ndarray) -> np.ndarray:
    """The probabilities [1 - p, p] of a binary classifier's positive-class probability."""
    p = p.reshape(-1)
    return np.stack([1 - p, p], axis=1)


class BoosterEngine(Engine):
    """What the gradient-boosting engines share: one booster, its objective and threads.

    A subclass opens the booster (``open``) and answers a batch (``execute``); this
    class turns what ``open`` found into the tabular signature.
    """

    describes_signature = True
    threads_parameter: ClassVar[str]  # the config parameter that sets the booster's threads
    objectives: ClassVar[str]  # the objectives it serves, as its refusal of another names them

    def __init__(self) -> None:
        self._booster: Any = None
        self._input = "input"
        self._objective = ""
        self._threads = 1

    @abstractmethod
    def open(self, ctx: LoadContext, rule: str, where: str) -> tuple[Any, str, int, int | None]:
        """Load the booster: it, its objective, its features and its classes (0: a regressor,
        None: an objective the engine refuses).

        Raises the engine's error line for a file it cannot read.
        """

    def load(self, ctx: LoadContext) -> Signature:
        rule = f"engine/{self.name}"
        where = f"the file {ctx.artifact.name} of model '{ctx.config.name}'"
        self._threads = int(ctx.parameter(self.threads_parameter, "1") or 1)
        booster, objective, n_features, n_classes = self.open(ctx, rule, where)
        if n_classes is None:
            raise unsupported_objective(objective, self.objectives, rule, where)
        classes = [str(c) for c in range(n_classes)] if n_classes else None
        self._input = input_name(ctx)
        self._objective = objective
        self._booster = booster
        return signature(ctx, rule, n_features, classes)

    def unload(self) -> None:
        self._booster = None

    def describe(self) -> dict[str, Any]:
        return {self.threads_parameter: self._threads, "objective": self._objective}


def unsupported_objective(objective: str, supported: str, rule: str, where: str) -> EngineError:
    return EngineError(
        f"objective '{objective}' is not supported ({supported})",
        code=Code.INVALID_ARGUMENT,
        rule=rule,
        where=where,
    )
