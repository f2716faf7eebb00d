"""LightGBM engine (``model.txt``): a Booster saved with ``save_model``.

Conventions shared by the sklearn, xgboost and lightgbm engines:

* one input, FP32, dims ``[n_features]``; its name is whatever the config
  gives it (``input`` when the config is auto-completed);
* classifiers have two outputs: ``label``, the predicted class (INT64, dims
  ``[1]``), and ``probabilities`` (FP32, dims ``[n_classes]``, labelled with the
  classes);
* regressors have one output: ``prediction`` (FP32, dims ``[1]``);
* the model batches: the signature has a leading -1 on every tensor.

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
from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import Code, EngineError

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


class LightGBMEngine(Engine):
    name = "lightgbm"
    extra = "lightgbm"
    default_filenames = ("model.txt",)
    describes_signature = True

    def __init__(self) -> None:
        self._booster: lgb.Booster | None = None
        self._input = "input"
        self._objective = ""
        self._threads = 1

    def load(self, ctx: LoadContext) -> Signature:
        rule = f"engine/{self.name}"
        where = f"the file {ctx.artifact.name} of model '{ctx.config.name}'"
        self._threads = int(ctx.parameter("num_threads", "1") or 1)
        try:
            booster = lgb.Booster(model_file=str(ctx.artifact))
        except lgb.basic.LightGBMError as exc:
            raise EngineError(
                f"lightgbm could not load {ctx.artifact.name}: {exc}",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            ) from exc
        # "multiclass num_class:3" in the file; the params hold the bare name
        objective = str(booster.params.get("objective", "")).split(" ")[0]
        if objective == "binary":
            n_classes = 2
        elif objective in _MULTICLASS:
            n_classes = int(booster.params.get("num_class", booster.num_model_per_iteration()))
        elif objective in _REGRESSION:
            n_classes = 0
        else:
            raise EngineError(
                f"objective '{objective}' is not supported (binary, multiclass, "
                "multiclassova or a regression objective)",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            )
        classes = [str(c) for c in range(n_classes)] if n_classes else None
        self._input = tabular.input_name(ctx)
        self._objective = objective
        self._booster = booster
        return tabular.signature(ctx, rule, booster.num_feature(), classes)

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert self._booster is not None
        x = inputs[self._input]
        raw = np.asarray(self._booster.predict(x, num_threads=self._threads))
        if self._objective in _REGRESSION:
            prediction = raw.astype(np.float32).reshape(len(x), 1)
            return {name: prediction for name in outputs}
        if self._objective == "binary":
            p = raw.reshape(-1)
            probabilities = np.stack([1 - p, p], axis=1)
            label = (p > 0.5).astype(np.int64)
        else:
            probabilities = raw.reshape(len(x), -1)
            label = probabilities.argmax(axis=1).astype(np.int64)
        result = {
            "label": label.reshape(-1, 1),
            "probabilities": probabilities.astype(np.float32),
        }
        return {name: result[name] for name in outputs}

    def unload(self) -> None:
        self._booster = None

    def describe(self) -> dict[str, Any]:
        return {"num_threads": self._threads, "objective": self._objective}
