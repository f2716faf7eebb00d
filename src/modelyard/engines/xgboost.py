"""XGBoost engine (``model.json``, ``model.ubj``): a Booster saved with ``save_model``.

Conventions shared by the sklearn, xgboost and lightgbm engines:

* one input, FP32, dims ``[n_features]``; its name is whatever the config
  gives it (``input`` when the config is auto-completed);
* classifiers have two outputs: ``label``, the predicted class (INT64, dims
  ``[1]``), and ``probabilities`` (FP32, dims ``[n_classes]``, labelled with the
  classes);
* regressors have one output: ``prediction`` (FP32, dims ``[1]``);
* the model batches: the signature has a leading -1 on every tensor.

A Booster does not keep the labels it was trained on: classes are 0 .. n-1, as
XGBClassifier encodes them. The objective decides the kind of model:
``binary:logistic`` is a two-class classifier with probabilities ``[1-p, p]``
and label ``p > 0.5``; ``multi:softprob`` and ``multi:softmax`` are classifiers
with ``num_class`` classes (softmax of the margins, label the argmax);
``reg:*`` is a regressor. Other objectives are refused.

The parameter ``nthread`` sets the Booster's threads (default 1: on small CPU
machines parallelism comes from model instances).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xgboost as xgb

from modelyard.engines import tabular
from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import Code, EngineError


class XGBoostEngine(Engine):
    name = "xgboost"
    extra = "xgboost"
    default_filenames = ("model.json", "model.ubj")
    describes_signature = True

    def __init__(self) -> None:
        self._booster: xgb.Booster | None = None
        self._input = "input"
        self._objective = ""
        self._threads = 1

    def load(self, ctx: LoadContext) -> Signature:
        rule = f"engine/{self.name}"
        where = f"the file {ctx.artifact.name} of model '{ctx.config.name}'"
        self._threads = int(ctx.parameter("nthread", "1") or 1)
        try:
            booster = xgb.Booster(model_file=str(ctx.artifact))
            learner = json.loads(booster.save_config())["learner"]
        except xgb.core.XGBoostError as exc:
            raise EngineError(
                f"xgboost could not load {ctx.artifact.name}: {exc}",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            ) from exc
        booster.set_param({"nthread": self._threads})
        objective = learner["objective"]["name"]
        params = learner["learner_model_param"]
        n_features = booster.num_features()
        if int(params.get("num_target", "1")) > 1:
            raise EngineError(
                "multi-target boosters are not supported",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            )
        if objective == "binary:logistic":
            n_classes = 2
        elif objective in ("multi:softprob", "multi:softmax"):
            n_classes = int(params["num_class"])
        elif objective.startswith("reg:"):
            n_classes = 0
        else:
            raise EngineError(
                f"objective '{objective}' is not supported (binary:logistic, "
                "multi:softprob, multi:softmax, reg:*)",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            )
        classes = [str(c) for c in range(n_classes)] if n_classes else None
        self._input = tabular.input_name(ctx)
        self._objective = objective
        self._booster = booster
        return tabular.signature(ctx, rule, n_features, classes)

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        assert self._booster is not None
        x = inputs[self._input]
        if self._objective.startswith("reg:"):
            prediction = np.asarray(self._booster.inplace_predict(x), np.float32)
            return {name: prediction.reshape(len(x), 1) for name in outputs}
        if self._objective == "binary:logistic":
            p = np.asarray(self._booster.inplace_predict(x), np.float32).reshape(-1)
            probabilities = np.stack([1 - p, p], axis=1)
            label = (p > 0.5).astype(np.int64)
        elif self._objective == "multi:softprob":
            probabilities = np.asarray(self._booster.inplace_predict(x), np.float32)
            probabilities = probabilities.reshape(len(x), -1)
            label = probabilities.argmax(axis=1).astype(np.int64)
        else:
            # multi:softmax predicts the class only; its margins give the probabilities
            margin = np.asarray(self._booster.inplace_predict(x, predict_type="margin"))
            margin = margin.reshape(len(x), -1)
            probabilities = tabular.softmax(margin).astype(np.float32)
            label = margin.argmax(axis=1).astype(np.int64)
        result = {"label": label.reshape(-1, 1), "probabilities": probabilities}
        return {name: result[name] for name in outputs}

    def unload(self) -> None:
        self._booster = None

    def describe(self) -> dict[str, Any]:
        return {"nthread": self._threads, "objective": self._objective}
