"""Small model repositories written by tests (python models need no training)."""

from __future__ import annotations

import textwrap
from pathlib import Path

BYTES_ECHO = """
import numpy as np


class Model:
    def execute(self, inputs):
        text = inputs["text"]
        upper = np.array([t.upper() for t in text.ravel()], dtype=object).reshape(text.shape)
        lengths = np.array([len(t) for t in text.ravel()], dtype=np.int32).reshape(text.shape)
        return {"upper": upper, "length": lengths}
"""

SLOW_DOUBLE = """
import time
from pathlib import Path


class Model:
    def initialize(self, args):
        self.delay = float((Path(args["model_repository"]) / "delay.txt").read_text())
        self.version = int(args["model_version"])

    def execute(self, inputs):
        time.sleep(self.delay)
        return {"y": inputs["x"] * 2 + self.version * 1000}
"""

FAILING = """
class Model:
    def execute(self, inputs):
        raise ValueError("the model refuses negative input")
"""


def write_python_model(
    repository: Path,
    name: str,
    source: str,
    config: str,
    versions: tuple[int, ...] = (1,),
) -> Path:
    model_dir = repository / name
    for version in versions:
        version_dir = model_dir / str(version)
        version_dir.mkdir(parents=True, exist_ok=True)
        (version_dir / "model.py").write_text(textwrap.dedent(source))
    (model_dir / "config.pbtxt").write_text(textwrap.dedent(config))
    return model_dir


def bytes_echo(repository: Path) -> Path:
    return write_python_model(
        repository,
        "bytes_echo",
        BYTES_ECHO,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "text" data_type: TYPE_STRING dims: [ -1 ] }]
        output [
          { name: "upper" data_type: TYPE_STRING dims: [ -1 ] },
          { name: "length" data_type: TYPE_INT32 dims: [ -1 ] }
        ]
        """,
    )


def slow_double(repository: Path, delay: float = 0.0, versions: tuple[int, ...] = (1,)) -> Path:
    model_dir = write_python_model(
        repository,
        "slow_double",
        SLOW_DOUBLE,
        """
        backend: "python"
        max_batch_size: 16
        version_policy { latest { num_versions: 1 } }
        dynamic_batching { default_queue_policy { allow_timeout_override: true } }
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
        versions,
    )
    (model_dir / "delay.txt").write_text(str(delay))
    return model_dir


def failing(repository: Path) -> Path:
    return write_python_model(
        repository,
        "failing",
        FAILING,
        """
        backend: "python"
        max_batch_size: 4
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 1 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 1 ] }]
        """,
    )


TIMES_TEN = """
class Model:
    def execute(self, inputs):
        return {"y": inputs["x"] * 10}
"""


def times_ten(repository: Path, name: str) -> Path:
    """A batching python model x -> y = 10 x, FP32 dims [2] (slow_double's tensors)."""
    return write_python_model(
        repository,
        name,
        TIMES_TEN,
        """
        backend: "python"
        max_batch_size: 16
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
    )


# the tensors of slow_double and times_ten, as a JSON config
XY_TENSORS = {
    "max_batch_size": 16,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [2]}],
}
# a JSON config override that turns a model into an ensemble whose one step is "other"
ENSEMBLE_OVER_OTHER = {
    "platform": "ensemble",
    **XY_TENSORS,
    "ensemble_scheduling": {
        "step": [
            {
                "model_name": "other",
                "model_version": -1,
                "input_map": {"x": "x"},
                "output_map": {"y": "y"},
            }
        ]
    },
}


def simple_add_sub(
    repository: Path, name: str = "simple", datatype: str = "INT32", extra_config: str = ""
) -> Path:
    """Triton's example model ``simple`` as ONNX: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 =
    INPUT0 - INPUT1, each [batch, 16], as its client examples call it."""
    import onnx
    from onnx import TensorProto, helper

    element = {"INT32": TensorProto.INT32, "INT8": TensorProto.INT8, "FP32": TensorProto.FLOAT}[
        datatype
    ]

    def tensor(tensor_name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(tensor_name, element, ["batch", 16])

    graph = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ],
        name,
        [tensor("INPUT0"), tensor("INPUT1")],
        [tensor("OUTPUT0"), tensor("OUTPUT1")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])  # INT8 Add
    model.ir_version = 8
    model_dir = repository / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    onnx.save(model, model_dir / "1" / "model.onnx")
    tensors = "\n".join(
        f'{kind} {{ name: "{tensor_name}" data_type: TYPE_{datatype} dims: [ 16 ] }}'
        for kind, tensor_name in (
            ("input", "INPUT0"),
            ("input", "INPUT1"),
            ("output", "OUTPUT0"),
            ("output", "OUTPUT1"),
        )
    )
    (model_dir / "config.pbtxt").write_text(
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n{tensors}\n'
        + extra_config
    )
    return model_dir


SIMPLE_STRING = """
import numpy as np


class Model:
    def execute(self, inputs):
        a = np.array([int(v) for v in inputs["INPUT0"].ravel()]).reshape(inputs["INPUT0"].shape)
        b = np.array([int(v) for v in inputs["INPUT1"].ravel()]).reshape(inputs["INPUT1"].shape)

        def text(values):
            return np.array([str(v).encode() for v in values.ravel()], dtype=object).reshape(
                values.shape
            )

        return {"OUTPUT0": text(a + b), "OUTPUT1": text(a - b)}
"""

IDENTITY = """
class Model:
    def execute(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}
"""


def simple_string(repository: Path) -> Path:
    """Triton's example model ``simple_string``: decimal strings in, their sum and
    difference out as strings, each [batch, 16]."""
    tensors = "\n".join(
        f'{kind} {{ name: "{name}" data_type: TYPE_STRING dims: [ 16 ] }}'
        for kind, name in (
            ("input", "INPUT0"),
            ("input", "INPUT1"),
            ("output", "OUTPUT0"),
            ("output", "OUTPUT1"),
        )
    )
    return write_python_model(
        repository,
        "simple_string",
        SIMPLE_STRING,
        f'backend: "python"\nmax_batch_size: 8\n{tensors}\n',
    )


def simple_identity(repository: Path) -> Path:
    """Triton's example model ``simple_identity``: BYTES [batch, -1] in, the same out."""
    return write_python_model(
        repository,
        "simple_identity",
        IDENTITY,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] }]
        output [{ name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] }]
        """,
    )
