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


def custom_identity_int32(repository: Path) -> Path:
    """Triton's example model ``custom_identity_int32``: INT32 [batch, 16] in, the same out."""
    return write_python_model(
        repository,
        "custom_identity_int32",
        IDENTITY,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }]
        output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }]
        """,
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


def sequence_accumulator(
    repository: Path,
    name: str = "accumulator",
    strategy: str = "direct { }",
    max_batch_size: int = 8,
    idle_us: int = 5_000_000,
    instances: int = 1,
) -> Path:
    """A stateful ONNX model with implicit state: OUTPUT is the running sum of a sequence's
    INPUTs (INT32 [1]). START resets the sum to the request's INPUT; a row whose READY is
    false leaves its state as it was. The state travels as INPUT_STATE -> OUTPUT_STATE."""
    import onnx
    from onnx import TensorProto, helper

    batch = ["batch", 1] if max_batch_size > 0 else [1]

    def tensor(tensor_name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(tensor_name, TensorProto.INT32, batch)

    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["START"], ["start_b"], to=TensorProto.BOOL),
            helper.make_node("Cast", ["READY"], ["ready_b"], to=TensorProto.BOOL),
            helper.make_node("Add", ["INPUT_STATE", "INPUT"], ["sum"]),
            helper.make_node("Where", ["start_b", "INPUT", "sum"], ["next"]),
            helper.make_node("Where", ["ready_b", "next", "INPUT_STATE"], ["OUTPUT_STATE"]),
            helper.make_node("Identity", ["OUTPUT_STATE"], ["OUTPUT"]),
        ],
        name,
        [tensor("INPUT"), tensor("START"), tensor("READY"), tensor("INPUT_STATE")],
        [tensor("OUTPUT"), tensor("OUTPUT_STATE")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    model_dir = repository / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    onnx.save(model, model_dir / "1" / "model.onnx")
    (model_dir / "config.pbtxt").write_text(
        f"""
name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: {max_batch_size}
instance_group [{{ kind: KIND_CPU count: {instances} }}]
input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
output [{{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
sequence_batching {{
  max_sequence_idle_microseconds: {idle_us}
  {strategy}
  control_input [
    {{ name: "START" control [{{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }}] }},
    {{ name: "READY" control [{{ kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] }}] }}
  ]
  state [{{
    input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [ 1 ]
    initial_state {{ data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "zeros" }}
  }}]
}}
"""
    )
    return model_dir


def _control(name: str, kind: str, values: str = "int32_false_true: [ 0, 1 ]") -> str:
    return f'{{ name: "{name}" control [{{ kind: CONTROL_SEQUENCE_{kind} {values} }}] }}'


def simple_sequence(repository: Path, dyna: bool = False) -> Path:
    """Triton's example models ``simple_sequence`` (direct) and ``simple_dyna_sequence``
    (oldest, CORRID UINT64, two instances) as ONNX, the graphs Triton's repository ships:
    OUTPUT = READY * (INPUT + START), the dyna one adding END * CORRID."""
    import onnx
    from onnx import TensorProto, helper

    name = "simple_dyna_sequence" if dyna else "simple_sequence"

    def tensor(tensor_name: str, element: int = TensorProto.INT32) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(tensor_name, element, ["batch", 1])

    nodes = [helper.make_node("Add", ["INPUT", "START"], ["started"])]
    inputs = [tensor("INPUT"), tensor("START"), tensor("READY")]
    if dyna:
        inputs += [tensor("END"), tensor("CORRID", TensorProto.UINT64)]
        nodes += [
            helper.make_node("Cast", ["CORRID"], ["corrid"], to=TensorProto.INT32),
            helper.make_node("Mul", ["END", "corrid"], ["ended"]),
            helper.make_node("Add", ["started", "ended"], ["sum"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["started"], ["sum"]))
    nodes.append(helper.make_node("Mul", ["READY", "sum"], ["OUTPUT"]))
    graph = helper.make_graph(nodes, name, inputs, [tensor("OUTPUT")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    model_dir = repository / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    onnx.save(model, model_dir / "1" / "model.onnx")
    controls = [_control("START", "START"), _control("READY", "READY")]
    strategy = "direct { }"
    instances = 1
    if dyna:
        controls += [
            _control("END", "END"),
            _control("CORRID", "CORRID", "data_type: TYPE_UINT64"),
        ]
        strategy = "oldest { max_candidate_sequences: 1024 max_queue_delay_microseconds: 10000 }"
        instances = 2
    (model_dir / "config.pbtxt").write_text(
        f"""
name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 8
instance_group [{{ kind: KIND_CPU count: {instances} }}]
input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
output [{{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
sequence_batching {{
  max_sequence_idle_microseconds: 10000000
  {strategy}
  control_input [ {", ".join(controls)} ]
}}
"""
    )
    return model_dir


STRING_DYNA_SEQUENCE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    # Triton's dyna_sequence test backend: a running sum per sequence (START sets it to the
    # input); END adds the correlation id, which a string id gives as its digits
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = int(pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()[0, 0])
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()[0, 0]
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()[0, 0]
            ready = pb_utils.get_input_tensor_by_name(request, "READY").as_numpy()[0, 0]
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()[0, 0]
            assert corrid.decode() == str(request.correlation_id())
            assert request.flags() == (1 if start else 0) | (2 if end else 0)
            key = request.correlation_id()
            total = 0
            if ready:
                total = value if start else self.sums.get(key, 0) + value
                self.sums[key] = total
                if end:
                    total += int(corrid)
                    del self.sums[key]
            out = pb_utils.Tensor("OUTPUT", np.array([[total]], dtype=np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""


def simple_string_dyna_sequence(repository: Path) -> Path:
    """Triton's ``simple_string_dyna_sequence`` (a test backend in Triton's repository) as a
    python-backend model: string correlation ids, a running sum per sequence, END adding
    the id's number; it reads its control inputs and each request's correlation_id()."""
    controls = ", ".join(
        [
            _control("START", "START"),
            _control("END", "END"),
            _control("READY", "READY"),
            _control("CORRID", "CORRID", "data_type: TYPE_STRING"),
        ]
    )
    return write_python_model(
        repository,
        "simple_string_dyna_sequence",
        STRING_DYNA_SEQUENCE,
        f"""
        backend: "python"
        max_batch_size: 8
        instance_group [{{ kind: KIND_CPU count: 2 }}]
        input [{{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
        output [{{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }}]
        sequence_batching {{
          max_sequence_idle_microseconds: 10000000
          oldest {{ max_candidate_sequences: 1024 max_queue_delay_microseconds: 10000 }}
          control_input [ {controls} ]
        }}
        """,
    )


REPEAT = """
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    # python_backend's examples/decoupled/repeat_model.py, in its own words: one response
    # per element of IN, DELAY[i] ms apart, from a thread; then the FINAL flag alone
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()
            thread = threading.Thread(target=self.respond, args=(sender, values, delays))
            thread.start()
            self.threads.append(thread)
        return None

    def respond(self, sender, values, delays):
        for index, (value, delay) in enumerate(zip(values, delays)):
            if sender.is_cancelled():  # the caller has gone: stop early, as Triton's models do
                break
            time.sleep(delay / 1000)
            out = pb_utils.Tensor("OUT", np.array([value], dtype=np.int32))
            idx = pb_utils.Tensor("IDX", np.array([index], dtype=np.uint32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[out, idx]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for thread in self.threads:
            thread.join(5)
"""


SEQUENCE_COUNTER = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.counts = {}

    def execute(self, requests):
        for request in requests:
            sid, flags = request.correlation_id(), request.flags()
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().ravel()[0])
            delay = int(pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().ravel()[0])
            corrid = pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().ravel()[0]
            if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.counts[sid] = 0
            sender = request.get_response_sender()
            for _ in range(count):
                time.sleep(delay / 1000)
                self.counts[sid] += 1
                out = np.array([[self.counts[sid], flags, int(corrid)]], dtype=np.int32)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", out)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def sequence_counter(
    repository: Path, name: str = "sequence_counter", oldest: str = "", instances: int = 1
) -> Path:
    """A decoupled sequence model (python backend): each request sends IN responses, one
    every DELAY ms, of OUT = [the sequence's running count of responses, the request's
    flags (1 START, 2 END), its CORRID control input]; START resets the count."""
    return write_python_model(
        repository,
        name,
        SEQUENCE_COUNTER,
        f"""
        backend: "python"
        max_batch_size: 4
        model_transaction_policy {{ decoupled: true }}
        instance_group [{{ kind: KIND_CPU count: {instances} }}]
        input [
          {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }},
          {{ name: "DELAY" data_type: TYPE_INT32 dims: [ 1 ] }}
        ]
        output [{{ name: "OUT" data_type: TYPE_INT32 dims: [ 3 ] }}]
        sequence_batching {{
          oldest {{ max_candidate_sequences: 4 {oldest} }}
          control_input [{{
            name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }}]
          }}]
        }}
        """,
    )


def repeat_int32(repository: Path) -> Path:
    """Triton's decoupled example ``repeat_int32`` as python_backend writes it: IN [-1] INT32,
    DELAY [-1] UINT32 (ms), WAIT [1] UINT32; one response (OUT, IDX) per element of IN."""
    return write_python_model(
        repository,
        "repeat_int32",
        REPEAT,
        """
        backend: "python"
        max_batch_size: 0
        model_transaction_policy { decoupled: True }
        input [
          { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
          { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
          { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
        ]
        output [
          { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
          { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
        ]
        instance_group [{ kind: KIND_CPU count: 2 }]
        """,
    )
