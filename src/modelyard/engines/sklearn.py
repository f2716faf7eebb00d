"""scikit-learn engine (``model.skops``, ``model.joblib``, ``model.pkl``).

Conventions shared by the sklearn, xgboost and lightgbm engines:

* one input, FP32, dims ``[n_features]``; its name is whatever the config
  gives it (``input`` when the config is auto-completed);
* classifiers have two outputs: ``label``, the predicted class (INT64 when the
  classes are integers, BYTES when they are strings, dims ``[1]``), and
  ``probabilities`` (FP32, dims ``[n_classes]``, labelled with the classes);
* regressors have one output: ``prediction`` (FP32, dims ``[1]``);
* the model batches: the signature has a leading -1 on every tensor.

``label`` comes from ``predict`` and ``probabilities`` from ``predict_proba``,
never one from the other: for some estimators (SVC with Platt scaling) they
disagree, and the server must answer what the library answers. A classifier
without ``predict_proba`` has only ``label``.

Loading. ``model.skops`` is loaded with ``skops.io``, which refuses types it
does not know. Without trust this engine adds to skops' own trusted list only
``_HELPER_TYPES``, named one by one: pure-Python state that fitted estimators
hold and ``predict`` never reads. Whole packages are not trusted: numpy alone
has ``numpy.memmap``, whose constructor opens (and with mode ``w+`` truncates)
any path a crafted file names. Everything else, tree node storage that
scikit-learn indexes without bounds checks included, loads only from a
trusted repository. ``model.joblib`` and
``model.pkl`` are pickles, which can run arbitrary code while loading: they load
only from a trusted repository (``--trusted-repository`` or ``--trust-model``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import skops.io as sio
from sklearn.base import is_classifier

from modelyard import error_rules
from modelyard.engines import tabular
from modelyard.engines.base import Engine, LoadContext, Signature
from modelyard.errors import Code, EngineError

# Types skops does not trust that fitted estimators need, beyond the estimators
# themselves (skops trusts those): MLP*'s solver state, kept after fit.
_HELPER_TYPES = frozenset(
    {
        "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
        "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    }
)

_PICKLE_SUFFIXES = (".joblib", ".pkl")


class SklearnEngine(Engine):
    name = "sklearn"
    extra = "sklearn"
    default_filenames = ("model.skops", "model.joblib", "model.pkl")
    describes_signature = True

    def __init__(self) -> None:
        self._model: Any = None
        self._input = "input"
        self._classifier = False
        self._has_proba = False
        self._string_labels = False

    def load(self, ctx: LoadContext) -> Signature:
        model = self._read(ctx)
        rule = f"engine/{self.name}"
        where = f"the file {ctx.artifact.name} of model '{ctx.config.name}'"
        n_features = getattr(model, "n_features_in_", None)
        if not isinstance(n_features, int) or not hasattr(model, "predict"):
            raise EngineError(
                f"{type(model).__name__} is not a fitted estimator with n_features_in_ "
                "and predict()",
                code=Code.INVALID_ARGUMENT,
                rule=rule,
                where=where,
            )
        self._classifier = is_classifier(model)
        class_names: list[str] | None = None
        label_type = "INT64"
        if self._classifier:
            classes = np.asarray(model.classes_)
            if classes.dtype.kind in "USO" and all(isinstance(c, str) for c in classes):
                label_type = "BYTES"
            elif classes.dtype.kind not in "biu":
                raise EngineError(
                    f"classes of dtype {classes.dtype} are neither integers nor strings",
                    code=Code.INVALID_ARGUMENT,
                    rule=rule,
                    where=f"{where}: fit the classifier on integer or string labels",
                )
            self._string_labels = label_type == "BYTES"
            self._has_proba = hasattr(model, "predict_proba")
            class_names = [str(c) for c in classes]
        self._input = tabular.input_name(ctx)
        self._model = model
        return tabular.signature(
            ctx,
            rule,
            n_features,
            class_names,
            label_datatype=label_type,
            probabilities=self._has_proba,
        )

    def _read(self, ctx: LoadContext) -> Any:
        path = ctx.artifact
        if path.suffix in _PICKLE_SUFFIXES:
            if not ctx.trusted:
                raise EngineError.of(
                    error_rules.UNTRUSTED_PICKLE,
                    f"{path.name} is a pickle-based file, and loading it could run "
                    "arbitrary code; this repository is not trusted",
                )
            import joblib

            return self._guarded(ctx, lambda: joblib.load(path))
        untrusted = self._guarded(ctx, lambda: sio.get_untrusted_types(file=path))
        refused = [t for t in untrusted if t not in _HELPER_TYPES]
        if refused and not ctx.trusted:
            raise EngineError.of(
                error_rules.UNTRUSTED_TYPES,
                f"{path.name} holds types that skops does not trust: {', '.join(refused)}",
            )
        return self._guarded(ctx, lambda: sio.load(path, trusted=untrusted))

    def _guarded(self, ctx: LoadContext, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except EngineError:
            raise
        except Exception as exc:  # corrupt files raise anything from zipfile to pickle
            raise EngineError(
                f"could not load {ctx.artifact.name}: {type(exc).__name__}: {exc}",
                code=Code.INVALID_ARGUMENT,
                rule=f"engine/{self.name}",
                where=f"the file {ctx.artifact.name} of model '{ctx.config.name}'",
            ) from exc

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        x = inputs[self._input]
        result: dict[str, np.ndarray] = {}
        for name in outputs:
            if name == "probabilities":
                result[name] = self._model.predict_proba(x).astype(np.float32, copy=False)
            elif name == "label":
                label = np.asarray(self._model.predict(x)).reshape(-1, 1)
                if self._string_labels:
                    result[name] = np.vectorize(str.encode, otypes=[object])(label)
                else:
                    result[name] = label.astype(np.int64, copy=False)
            else:
                prediction = np.asarray(self._model.predict(x), dtype=np.float32)
                result[name] = prediction.reshape(len(x), -1)
        return result

    def refuses_input(self, error: Exception) -> bool:
        # sklearn's input checks (NaN, inf, a value past float32) raise ValueError; the
        # dataplane has checked shapes and dtypes already
        return isinstance(error, ValueError)

    def unload(self) -> None:
        self._model = None

    def describe(self) -> dict[str, Any]:
        return {"estimator": type(self._model).__name__}
