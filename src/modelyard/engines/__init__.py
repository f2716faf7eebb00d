"""Engines, imported lazily so a missing extra only breaks the models that need it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from pathlib import Path

from modelyard import error_rules
from modelyard.engines.base import Engine, LoadContext, Signature, TensorSpec
from modelyard.errors import ConfigError, MissingExtraError

# backend name -> (module, class name, python module it needs, extra)
_ENGINES: dict[str, tuple[str, str, str, str]] = {
    "onnxruntime": ("modelyard.engines.onnx", "OnnxRuntimeEngine", "onnxruntime", "onnx"),
    "pytorch": ("modelyard.engines.torch", "TorchScriptEngine", "torch", "torch"),
    "sklearn": ("modelyard.engines.sklearn", "SklearnEngine", "sklearn", "sklearn"),
    "xgboost": ("modelyard.engines.xgboost", "XGBoostEngine", "xgboost", "xgboost"),
    "lightgbm": ("modelyard.engines.lightgbm", "LightGBMEngine", "lightgbm", "lightgbm"),
    "python": ("modelyard.engines.python", "PythonEngine", "numpy", "all"),
    "tensorrt": ("modelyard.engines.tensorrt", "TensorRTEngine", "tensorrt", "tensorrt"),
    "identity": ("modelyard.engines.identity", "IdentityEngine", "numpy", "all"),
}

# Triton platform names -> backend
PLATFORMS = {
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "tensorrt_plan": "tensorrt",
}

# file name -> backend, used when config.pbtxt names neither platform nor backend
_BY_FILENAME = {
    "model.onnx": "onnxruntime",
    "model.pt": "pytorch",
    "model.plan": "tensorrt",
    "model.py": "python",
    "model.skops": "sklearn",
    "model.joblib": "sklearn",
    "model.pkl": "sklearn",
    "model.json": "xgboost",
    "model.ubj": "xgboost",
    "model.txt": "lightgbm",
}

BACKENDS = tuple(_ENGINES)

# a Python-based backend's name: one plain folder name (no separator, no leading dot)
_BACKEND_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")
PYTHON_BACKEND_FILE = "model.py"


def python_based_backend(backend: str, backend_directory: Path | None) -> Path | None:
    """Triton's Python-based backend of a name modelyard has no engine of: the folder
    ``<backend_directory>/<backend>`` whose ``model.py`` serves the models that name it;
    None where there is none. Only a file under the backend directory is taken: the name
    is one plain folder name, and the file's real path (links followed) must stay under
    the directory's."""
    if backend in _ENGINES or backend_directory is None or not _BACKEND_NAME.fullmatch(backend):
        return None
    root = os.path.realpath(backend_directory)
    source = os.path.realpath(backend_directory / backend / PYTHON_BACKEND_FILE)
    if os.path.commonpath([root, source]) != root or not os.path.isfile(source):
        return None
    return Path(source).parent


def engine_source(backend: str, backend_directory: Path | None) -> str:
    """The file that serves ``backend``: its engine's module, or a Python-based
    backend's ``model.py`` (where Triton names the backend's shared library)."""
    if backend in _ENGINES:
        spec = importlib.util.find_spec(_ENGINES[backend][0])
        return str(spec.origin) if spec is not None else _ENGINES[backend][0]
    folder = python_based_backend(backend, backend_directory)
    return str(folder / PYTHON_BACKEND_FILE) if folder is not None else ""


def engine_class(backend: str) -> type[Engine]:
    try:
        module_name, class_name, needs, extra = _ENGINES[backend]
    except KeyError:
        raise ConfigError.of(
            error_rules.UNKNOWN_BACKEND,
            f"unable to find backend library for backend '{backend}', try specifying runtime "
            f"on the model configuration. (unknown backend '{backend}': modelyard serves "
            f"{', '.join(BACKENDS)})",
            triton=True,
        ) from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == needs:
            raise MissingExtraError(backend, needs, extra) from exc
        raise
    cls: type[Engine] = getattr(module, class_name)
    return cls


def backend_for(platform: str, backend: str, version_dirs: list[Path]) -> str | None:
    """The backend a model uses: from the config, else from the files it ships."""
    if backend:
        return backend
    if platform:
        return PLATFORMS.get(platform, platform)
    for version_dir in version_dirs:
        for filename, name in _BY_FILENAME.items():
            if (version_dir / filename).exists():
                return name
    return None


__all__ = [
    "BACKENDS",
    "PLATFORMS",
    "Engine",
    "LoadContext",
    "Signature",
    "TensorSpec",
    "backend_for",
    "engine_class",
    "python_based_backend",
]
