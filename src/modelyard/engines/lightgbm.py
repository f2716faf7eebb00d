"""LightGBM engine (``model.txt``): a Booster saved with ``save_model``.

Its tensors follow the tabular conventions (``engines/tabular.py``): one FP32
input; ``label`` and ``probabilities`` for a classifier, ``prediction`` for a
regressor; batched.

A Booster does not keep the labels it was trained on: classes are 0 .. n-1, as
LGBMClassifier encodes them. The objective decides the kind of model:
``binary`` is a two-class classifier with probabilities ``[1-p, p]`` and label
``p > 0.5``; ``multiclass`` and ``multiclassova`` are classifiers with
``num_class`` classes (label: the argmax); the regression objectives
(``regression``, ``regression_l1``, ``huber``, ``fair``, ``poisson``,
``quantile``, ``mape``, ``gamma``, ``tweedie``, ``cross_entropy``) are
regressors. Ranking and custom objectives are refused.

The parameter ``num_threads`` sets LightGBM's threads per prediction (default
1: on small CPU machines parallelism comes from model instances).
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np

from modelyard.engines import tabular
from modelyard.engines.base import LoadContext, unreadable_artifact

_REGRESSION = frozenset(
    {
        "regression",
        "regression_l1",
        "huber",
        "fair",
        "poisson",
        "quantile",
        "mape",
        "gamma",
        "tweedie",
        "cross_entropy",
        "cross_entropy_lambda",
    }
)
_MULTICLASS = frozenset({"multiclass", "multiclassova"})


class LightGBMEngine(tabular.BoosterEngine):
    name = "lightgbm"
    extra = "lightgbm"
    default_filenames = ("model.txt",)
    threads_parameter = "num_threads"
    objectives = "binary, multiclass, multiclassova or a regression objective"

    def open(self, ctx: LoadContext, rule: str, where: str) -> tuple[Any, str, int, int | None]:
        try:
            booster = lgb.Booster(model_file=str(ctx.artifact))
        except lgb.basic.LightGBMError as exc:
            raise unreadable_artifact(self.name, ctx, exc) from exc
        # "multiclass num_class:3" in the file; the params hold the bare name
        objective = str(booster.params.get("objective", "")).split(" ")[0]
        n_classes: int | None = None
        if objective == "binary":
            n_classes = 2
        elif objective in _MULTICLASS:
            n_classes = int(booster.params.get("num_class", booster.num_model_per_iteration()))
        elif objective in _REGRESSION:
            n_classes = 0
        return booster, objective, booster.num_feature(), n_classes

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        x = inputs[self._input]
        raw = np.asarray(self._booster.predict(x, num_threads=self._threads))
        if self._objective in _REGRESSION:
            prediction = raw.astype(np.float32).reshape(len(x), 1)
            return {name: prediction for name in outputs}
        if self._objective == "binary":
            return tabular.classified(tabular.two_classes(raw), outputs)
        return tabular.classified(raw.reshape(len(x), -1), outputs)
