"""Image classifiers for Triton's image client examples, trained when a test sets up.

The data are scikit-learn's bundled ``load_digits`` (8x8 grey images of the digits 0-9,
shipped with the package: nothing is downloaded). A multinomial logistic regression is
fitted on them (about half a second), and its weights go into a hand-built ONNX graph
that takes the images the examples send: 3 channels of a fixed H x W (NCHW or NHWC),
FP32, with or without a batch dimension. The graph averages the channels, pools the
picture down to 8x8, scales each image to [0, 1] by its own minimum and maximum, and
answers the ten class probabilities (softmax). That scaling makes the answer the same
for the client's ``-s NONE`` pixels (0..255) and ``-s INCEPTION`` ones (-1..1).

The models keep the tensors of Triton's example models: ``densenet_onnx`` (``data_0`` in,
``fc6_1`` out, no batching, both reshaped) and ``inception_onnx`` (``input:0`` NHWC), plus
a batching NCHW one; every output has ``label_filename``. ``preprocess_inception_ensemble``
is Triton's ensemble of that name as its client examples call it: encoded image files in
(``INPUT``, BYTES, dims [1]), a python step decoding them, the classifier after it, and
``OUTPUT`` with labels for the classification extension.
"""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LABELS = ("ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE")
PIXELS = 8  # load_digits' images are 8x8, values 0..16
UPSCALE = 8  # the test images are 64x64


@functools.cache
def trained_digits() -> tuple[np.ndarray, np.ndarray]:
    """Weights [64, 10] and bias [10] of a logistic regression fitted on load_digits, each
    image scaled to [0, 1] by its own range (as the graph does)."""
    from sklearn.linear_model import LogisticRegression

    images, targets = _digits()
    features = _scaled(images.reshape(len(images), -1).astype(np.float64))
    model = LogisticRegression(max_iter=500).fit(features, targets)
    return model.coef_.T.astype(np.float32), model.intercept_.astype(np.float32)


@functools.cache
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digits.images, digits.target


def _scaled(rows: np.ndarray) -> np.ndarray:
    low = rows.min(axis=1, keepdims=True)
    high = rows.max(axis=1, keepdims=True)
    return (rows - low) / (high - low + 1e-6)


@dataclass(frozen=True)
class Classifier:
    """One classifier model as its config declares it."""

    name: str
    input_name: str
    output_name: str
    layout: str  # "NCHW" or "NHWC"
    size: int  # H = W, a multiple of 8
    max_batch_size: int  # 0: no batch dimension; the config reshapes to a batch of 1
    labels: str = "labels.txt"

    @property
    def dims(self) -> list[int]:
        if self.layout == "NCHW":
            return [3, self.size, self.size]
        return [self.size, self.size, 3]


# the tensors of Triton's densenet_onnx, inception_onnx, and a batching NCHW classifier
DIGITS = Classifier("digits_onnx", "data_0", "fc6_1", "NCHW", 32, 8)
DIGITS_NHWC = Classifier(
    "inception_onnx",
    "input:0",
    "InceptionV3/Predictions/Softmax:0",
    "NHWC",
    64,
    4,
    labels="inception_labels.txt",
)
DENSENET = Classifier(
    "densenet_onnx", "data_0", "fc6_1", "NCHW", 224, 0, labels="densenet_labels.txt"
)


def _classifier_onnx(model: Classifier) -> Any:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights, bias = trained_digits()
    pool = model.size // PIXELS
    batch: list[Any] = ["batch"] if model.max_batch_size > 0 else [1]
    nodes = []
    image = model.input_name
    if model.layout == "NHWC":
        nodes.append(helper.make_node("Transpose", [image], ["nchw"], perm=[0, 3, 1, 2]))
        image = "nchw"
    nodes += [
        helper.make_node("ReduceMean", [image], ["grey"], axes=[1], keepdims=1),
        helper.make_node(
            "AveragePool", ["grey"], ["pooled"], kernel_shape=[pool, pool], strides=[pool, pool]
        ),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("ReduceMin", ["flat"], ["low"], axes=[1], keepdims=1),
        helper.make_node("ReduceMax", ["flat"], ["high"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["flat", "low"], ["shifted"]),
        helper.make_node("Sub", ["high", "low"], ["range"]),
        helper.make_node("Add", ["range", "epsilon"], ["divisor"]),
        helper.make_node("Div", ["shifted", "divisor"], ["scaled"]),
        helper.make_node("MatMul", ["scaled", "weights"], ["logits0"]),
        helper.make_node("Add", ["logits0", "bias"], ["logits"]),
    ]
    if model.max_batch_size > 0:
        nodes.append(helper.make_node("Softmax", ["logits"], [model.output_name], axis=1))
        output_shape: list[Any] = [*batch, len(LABELS)]
    else:  # densenet_onnx's output is [1, 1000, 1, 1]: the config reshapes it to [1000]
        nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1))
        nodes.append(helper.make_node("Reshape", ["probabilities", "shape"], [model.output_name]))
        output_shape = [1, len(LABELS), 1, 1]
    initializers = [
        numpy_helper.from_array(weights, "weights"),
        numpy_helper.from_array(bias, "bias"),
        numpy_helper.from_array(np.array([1e-6], dtype=np.float32), "epsilon"),
        numpy_helper.from_array(np.array([1, len(LABELS), 1, 1], dtype=np.int64), "shape"),
    ]
    graph = helper.make_graph(
        nodes,
        model.name,
        [helper.make_tensor_value_info(model.input_name, TensorProto.FLOAT, batch + model.dims)],
        [helper.make_tensor_value_info(model.output_name, TensorProto.FLOAT, output_shape)],
        initializer=initializers if model.max_batch_size == 0 else initializers[:3],
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    return onnx_model


def classifier(repository: Path, model: Classifier) -> Path:
    """The model's directory: ``1/model.onnx``, its labels file and a config.pbtxt written
    as Triton's densenet_onnx and inception_onnx ones are (format, label_filename, and for
    a model without batching a reshape to the batch of 1 the ONNX file has)."""
    import onnx

    model_dir = repository / model.name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    onnx.save(_classifier_onnx(model), model_dir / "1" / "model.onnx")
    (model_dir / model.labels).write_text("\n".join(LABELS) + "\n")
    dims = ", ".join(str(d) for d in model.dims)
    reshape_in = reshape_out = ""
    if model.max_batch_size == 0:
        reshape_in = f"reshape {{ shape: [ 1, {dims} ] }}"
        reshape_out = f"reshape {{ shape: [ 1, {len(LABELS)}, 1, 1 ] }}"
    (model_dir / "config.pbtxt").write_text(
        textwrap.dedent(
            f"""\
            name: "{model.name}"
            platform: "onnxruntime_onnx"
            max_batch_size: {model.max_batch_size}
            input [
              {{
                name: "{model.input_name}"
                data_type: TYPE_FP32
                format: FORMAT_{model.layout}
                dims: [ {dims} ]
                {reshape_in}
              }}
            ]
            output [
              {{
                name: "{model.output_name}"
                data_type: TYPE_FP32
                dims: [ {len(LABELS)} ]
                {reshape_out}
                label_filename: "{model.labels}"
              }}
            ]
            """
        )
    )
    return model_dir


# ---- the ensemble: encoded image files in, classes out ------------------------------------

PREPROCESS = """
import io
import json

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image


class TritonPythonModel:
    # decodes each encoded image (PNG, JPEG, ...) and gives it as the classifier takes it:
    # RGB, resized to the output's H x W, scaled as INCEPTION does ([-1, 1]), CHW
    def initialize(self, args):
        config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(config, "OUTPUT")
        self.channels, self.height, self.width = (int(d) for d in output["dims"])

    def execute(self, requests):
        responses = []
        for request in requests:
            encoded = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            images = []
            for row in encoded.reshape(len(encoded), -1):
                picture = Image.open(io.BytesIO(row[0])).convert("RGB")
                picture = picture.resize((self.width, self.height), Image.Resampling.BILINEAR)
                pixels = np.asarray(picture, dtype=np.float32) / 127.5 - 1
                images.append(pixels.transpose(2, 0, 1))
            out = pb_utils.Tensor("OUTPUT", np.stack(images).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""


def preprocess_inception_ensemble(
    repository: Path, model: Classifier = DIGITS, max_batch_size: int = 8
) -> Path:
    """Triton's ``preprocess_inception_ensemble`` as its client examples call it: INPUT
    (BYTES, dims [1], one encoded image file a row), OUTPUT (FP32, with labels for the
    classification extension); steps ``image_preprocess`` (python) then ``model``."""
    assert model.layout == "NCHW" and model.max_batch_size >= max_batch_size
    preprocess_dir = repository / "image_preprocess"
    (preprocess_dir / "1").mkdir(parents=True, exist_ok=True)
    (preprocess_dir / "1" / "model.py").write_text(textwrap.dedent(PREPROCESS))
    dims = ", ".join(str(d) for d in model.dims)
    (preprocess_dir / "config.pbtxt").write_text(
        textwrap.dedent(
            f"""\
            name: "image_preprocess"
            backend: "python"
            max_batch_size: {max_batch_size}
            input [{{ name: "INPUT" data_type: TYPE_STRING dims: [ 1 ] }}]
            output [{{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ {dims} ] }}]
            """
        )
    )
    ensemble_dir = repository / "preprocess_inception_ensemble"
    (ensemble_dir / "1").mkdir(parents=True, exist_ok=True)
    (ensemble_dir / "labels.txt").write_text("\n".join(LABELS) + "\n")
    (ensemble_dir / "config.pbtxt").write_text(
        textwrap.dedent(
            f"""\
            name: "preprocess_inception_ensemble"
            platform: "ensemble"
            max_batch_size: {max_batch_size}
            input [{{ name: "INPUT" data_type: TYPE_STRING dims: [ 1 ] }}]
            output [
              {{
                name: "OUTPUT"
                data_type: TYPE_FP32
                dims: [ {len(LABELS)} ]
                label_filename: "labels.txt"
              }}
            ]
            ensemble_scheduling {{
              step [
                {{
                  model_name: "image_preprocess"
                  model_version: -1
                  input_map {{ key: "INPUT" value: "INPUT" }}
                  output_map {{ key: "OUTPUT" value: "preprocessed_image" }}
                }},
                {{
                  model_name: "{model.name}"
                  model_version: -1
                  input_map {{ key: "{model.input_name}" value: "preprocessed_image" }}
                  output_map {{ key: "{model.output_name}" value: "OUTPUT" }}
                }}
              ]
            }}
            """
        )
    )
    return ensemble_dir


# ---- test images --------------------------------------------------------------------------


def _picture(index: int) -> Any:
    from PIL import Image

    images, _ = _digits()
    grey = np.round(images[index] * (255 / 16)).astype(np.uint8)
    return Image.fromarray(grey, mode="L").resize(
        (PIXELS * UPSCALE, PIXELS * UPSCALE), Image.Resampling.NEAREST
    )


def predict_locally(picture: Any, size: int) -> int:
    """What the graph answers for a picture the examples' way: RGB, bilinear to size x
    size; the channel mean pooled to 8x8, scaled by its own range, then the regression."""
    from PIL import Image

    weights, bias = trained_digits()
    pixels = np.asarray(
        picture.convert("RGB").resize((size, size), Image.Resampling.BILINEAR), np.float32
    )
    pool = size // PIXELS
    grey = pixels.mean(axis=2).reshape(PIXELS, pool, PIXELS, pool).mean(axis=(1, 3))
    scaled = _scaled(grey.reshape(1, -1))
    return int(np.argmax(scaled @ weights + bias))


def write_digit_images(
    directory: Path, wanted: dict[str, int], sizes: tuple[int, ...] = (32, 64, 224)
) -> dict[str, str]:
    """For each file name, the first load_digits image of that digit that the models
    (at each of ``sizes``) classify right once written (PNG grey, JPEG as RGB), upscaled
    to 64x64. Returns the label each file should get, by file name."""
    from PIL import Image

    _, targets = _digits()
    directory.mkdir(parents=True, exist_ok=True)
    expected: dict[str, str] = {}
    for filename, digit in wanted.items():
        path = directory / filename
        for index in np.flatnonzero(targets == digit):
            picture = _picture(int(index))
            if path.suffix.lower() in (".jpg", ".jpeg"):
                picture.convert("RGB").save(path, quality=95)
            else:
                picture.save(path)
            with Image.open(path) as written:
                if all(predict_locally(written, size) == digit for size in sizes):
                    break
        else:
            raise AssertionError(f"no load_digits image of {digit} is classified right")
        expected[filename] = LABELS[digit]
    return expected
