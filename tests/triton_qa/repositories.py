"""The model repositories Triton's QA files and client examples run against.

Triton's own repositories hold TensorFlow, TensorRT and custom C++ backend models made
by its CI; here the same names and configs are served by models this machine can run:
ONNX models made by Triton's own generators (``qa/common/gen_qa_*.py``, run at test
time), its python-backend models as they are, and, where Triton's model is a TensorFlow
graph or a custom backend, an ONNX or python model with the same config (named in each
builder's docstring).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.support.image_models import DENSENET, DIGITS, Classifier, classifier
from tests.support.image_models import preprocess_inception_ensemble as image_ensemble
from tests.support.models import (
    custom_identity_int32,
    simple_add_sub,
    simple_identity,
    simple_sequence,
    simple_string,
    simple_string_dyna_sequence,
)
from tests.triton_qa import harness

PYTHON_BACKEND = harness.VENDOR / "python_backend"

# Triton's inception_graphdef example (a TensorFlow graph): the same tensors and config,
# served by an ONNX classifier trained here on scikit-learn's digits
INCEPTION = Classifier(
    "inception_graphdef",
    "input",
    "InceptionV3/Predictions/Softmax",
    "NHWC",
    299,
    8,
    labels="inception_labels.txt",
)


def example_models(repository: Path) -> Path:
    """Triton's example model repository (``docs/examples/model_repository``, fetched by
    its ``fetch_models.sh``) and the example ``repeat_int32``: ``simple``, ``simple_int8``
    (TensorFlow graphs there; ONNX here with their configs), ``simple_string``,
    ``simple_identity``, ``simple_sequence``, ``simple_dyna_sequence``,
    ``simple_string_dyna_sequence`` and ``custom_identity_int32`` (tests/support/models.py),
    ``repeat_int32`` (python_backend's ``examples/decoupled`` files, unchanged),
    ``inception_graphdef``, ``densenet_onnx`` and ``preprocess_inception_ensemble``
    (classifiers with Triton's tensors, tests/support/image_models.py)."""
    repository.mkdir(parents=True, exist_ok=True)
    simple_add_sub(repository)
    simple_add_sub(repository, "simple_int8", "INT8")
    simple_string(repository)
    simple_identity(repository)
    simple_sequence(repository)
    simple_sequence(repository, dyna=True)
    simple_string_dyna_sequence(repository)
    custom_identity_int32(repository)
    repeat_int32(repository)
    for model in (INCEPTION, DENSENET, DIGITS):
        classifier(repository, model)
    image_ensemble(repository, DIGITS)
    return repository


def repeat_int32(repository: Path) -> Path:
    """python_backend's decoupled example model, its ``repeat_model.py`` and
    ``repeat_config.pbtxt`` as they are."""
    source = PYTHON_BACKEND / "examples" / "decoupled"
    model_dir = repository / "repeat_int32"
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "repeat_model.py", model_dir / "1" / "model.py")
    shutil.copy(source / "repeat_config.pbtxt", model_dir / "config.pbtxt")
    return model_dir


def counted_example_models(repository: Path, grpc: bool = False) -> Path:
    """Triton's example models as L0_http's repository holds them (seven: its model-control
    example and aio test count them) or, with ``grpc``, L0_grpc's (eight: densenet_onnx
    besides)."""
    repository.mkdir(parents=True, exist_ok=True)
    if grpc:
        classifier(repository, DENSENET)
    simple_add_sub(repository)
    simple_add_sub(repository, "simple_int8", "INT8")
    simple_string(repository)
    simple_identity(repository)
    simple_sequence(repository)
    simple_sequence(repository, dyna=True)
    classifier(repository, INCEPTION)
    return repository


def generated(work: Path, generator: str, *args: str) -> None:
    """Run one of Triton's generators from the work directory's ``qa/common`` (ONNX models
    at the opset onnx writes by default, as its gen_qa_model_repository does)."""
    harness.generate(generator, *args, cwd=work.parent / "common")


def identity_models(work: Path, models: Path, ensembles: bool = True) -> Path:
    """Triton's qa_identity_model_repository (ONNX) and, with ``ensembles``, its
    qa_ensemble_model_repository/qa_identity_model_repository (the ensembles and their
    ``nop_*`` identity-backend steps, version folders made as util.sh's
    create_nop_version_dir makes them)."""
    models.mkdir(parents=True, exist_ok=True)
    generated(work, "gen_qa_identity_models.py", "--onnx", f"--models_dir={models}")
    if ensembles:
        generated(work, "gen_qa_identity_models.py", "--ensemble", f"--models_dir={models}")
        for nop in models.glob("nop_*"):
            (nop / "1").mkdir(exist_ok=True)
    return models


def renamed(source: Path, name: str) -> Path:
    """A copy of a generated model under another name (Triton's TensorFlow model of the
    same tensors, here served by the ONNX one)."""
    target = source.parent / name
    shutil.copytree(source, target)
    config = target / "config.pbtxt"
    config.write_text(config.read_text().replace(f'"{source.name}"', f'"{name}"'))
    return target


SEQUENCE_BACKEND = Path(__file__).with_name("sequence_backend.py")


def custom_sequence_int32(target: Path, source: Path | None = None) -> Path:
    """``qa/custom_models/custom_sequence_int32`` (or ``source``, a copy of it test.sh
    edited), Triton's C++ ``sequence`` backend: its config with ``backend: "python"`` and
    without the C++ library's ``default_model_filename``, served by sequence_backend.py,
    which computes what the C++ backend computes."""
    source = source or harness.QA / "custom_models" / "custom_sequence_int32"
    model = target / source.name
    (model / "1").mkdir(parents=True, exist_ok=True)
    config = (source / "config.pbtxt").read_text()
    config = config.replace('backend: "sequence"', 'backend: "python"')
    config = re.sub(r'(?m)^default_model_filename: "libtriton_sequence\.so"\n', "", config)
    (model / "config.pbtxt").write_text(config)
    shutil.copy(SEQUENCE_BACKEND, model / "1" / "model.py")
    return model
