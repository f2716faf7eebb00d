"""XGBoost engine (``model.json``, ``model.ubj``): a Booster saved with ``save_model``.

Its tensors follow the tabular conventions (``engines/tabular.py``): one FP32
input; ``label`` and ``probabilities`` for a classifier, ``prediction`` for a
regressor; batched.

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
from modelyard.engines.base import LoadContext, unreadable_artifact
from modelyard.errors import Code, EngineError


class XGBoostEngine(tabular.BoosterEngine):
    name = "xgboost"
    extra = "xgboost"
    default_filenames = ("model.json", "model.ubj")
    threads_parameter = "nthread"
    objectives = "binary:logistic, multi:softprob, multi:softmax, reg:*"

    def open(self, ctx: LoadContext, rule: str, where: str) -> tuple[Any, str, int, int | None]:
        try:
            booster = xgb.Booster(model_file=str(ctx.artifact))
            learner = json.loads(booster.save_config())["learner"]
        except xgb.core.XGBoostError as exc:
            raise unreadable_artifact(self.name, ctx, exc) from exc
        booster.set_param({"nthread": self._threads})
        objective = learner["objective"]["name"]
        params = learner["learner_model_param"]
        if int(params.get("num_target", "1")) > 1:
            raise EngineError(
                "multi-target boosters are not supported",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            )
        n_classes: int | None = None
        if objective == "binary:logistic":
            n_classes = 2
        elif objective in ("multi:softprob", "multi:softmax"):
            n_classes = int(params["num_class"])
        elif objective.startswith("reg:"):
            n_classes = 0
        return booster, objective, booster.num_features(), n_classes

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        booster = self._booster
        x = inputs[self._input]
        if self._objective.startswith("reg:"):
            prediction = np.asarray(booster.inplace_predict(x), np.float32)
            return {name: prediction.reshape(len(x), 1) for name in outputs}
        if self._objective == "binary:logistic":
            probabilities = tabular.two_classes(np.asarray(booster.inplace_predict(x), np.float32))
        elif self._objective == "multi:softprob":
            probabilities = np.asarray(booster.inplace_predict(x), np.float32).reshape(len(x), -1)
        else:
            # multi:softmax predicts the class only; its margins give the probabilities
            margin = np.asarray(booster.inplace_predict(x, predict_type="margin"))
            probabilities = tabular.softmax(margin.reshape(len(x), -1))
        return tabular.classified(probabilities, outputs)
