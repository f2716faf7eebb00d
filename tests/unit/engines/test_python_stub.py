"""A Triton python-backend model in its own process (engines/python_stub.py): execute,
BLS calls back into the server, decoupled responses after execute returns, a crash and
the restart after it, a model that dies at once, finalize on unload."""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.dataplane import StreamResponse
from modelyard.engines.base import (
    BatchedRequest,
    BatchOutcomes,
    DecoupledRequest,
    LoadContext,
    batch_requests,
)
from modelyard.engines.python import PythonEngine
from modelyard.errors import Code, EngineError, ModelServerError
from modelyard.server.decoupled import ResponseStream
from modelyard.types import InferResponse, OutputTensor

MODEL = """
import os
import threading
import time
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.folder = Path(args["model_repository"])
        (self.folder / f"initialized-{os.getpid()}").touch()

    def execute(self, requests):
        x = pb_utils.get_input_tensor_by_name(requests[0], "X").as_numpy()
        if x[0, 0] == -1:
            os._exit(7)
        if self.decoupled:
            sender = requests[0].get_response_sender()

            def later():
                time.sleep(0.05)
                for step in range(3):
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x + step)]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

            threading.Thread(target=later).start()
            return None
        if x[0, 0] == -3:  # a BLS call, answered by the server's infer
            call = pb_utils.InferenceRequest(
                model_name="other", requested_output_names=["Z"],
                inputs=[pb_utils.Tensor("A", x)],
            )
            answer = call.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            y = pb_utils.get_output_tensor_by_name(answer, "Z").as_numpy()
        else:
            import json
            y = x * len(requests) + len(json.loads(requests[0].parameters()))
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", y)]) for _ in requests]

    def finalize(self):
        (self.folder / "finalized").touch()
"""

CONFIG = """
name: "stubbed"
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_FP32 dims: [ 1, 2 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 1, 2 ] }]
"""


def _engine(tmp_path: Path, decoupled: bool = False, infer: Any = None) -> PythonEngine:
    version_dir = tmp_path / "stubbed" / "1"
    version_dir.mkdir(parents=True, exist_ok=True)
    source = MODEL.replace("self.decoupled", str(decoupled))
    (version_dir / "model.py").write_text(textwrap.dedent(source))
    decoupled_policy = "model_transaction_policy { decoupled: true }" if decoupled else ""
    config = text_format.Parse(CONFIG + decoupled_policy, mc.ModelConfig())
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config, infer=infer))
    return engine


X = np.array([[1.0, 2.0]], dtype=np.float32)


def test_a_triton_model_executes_in_a_process_of_its_own(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    try:
        assert engine.takes_requests and not engine.runs_on_loop
        with batch_requests([BatchedRequest(1, {"a": 1, "b": 2})]):
            result = engine.execute({"X": X}, ["Y"])
        np.testing.assert_array_equal(result["Y"], X + 2)  # one request, two parameters
        (marker,) = (tmp_path / "stubbed").glob("initialized-*")
        assert marker.name != "initialized-" + str(__import__("os").getpid())
    finally:
        engine.unload()
    assert (tmp_path / "stubbed" / "finalized").exists()


def test_a_bls_call_reaches_the_server_s_infer_and_its_error_comes_back(tmp_path: Path) -> None:
    calls = []

    def infer(request: Any) -> InferResponse:
        calls.append(request.model_name)
        if request.inputs["A"][0, 1] > 5:
            raise ModelServerError("Request for unknown model: 'other' is not found",
                                   code=Code.NOT_FOUND)  # fmt: skip
        return InferResponse("other", "1", [OutputTensor("Z", "FP32", request.inputs["A"] * 10)])

    engine = _engine(tmp_path, infer=infer)
    try:
        x = np.array([[-3.0, 1.0]], dtype=np.float32)
        np.testing.assert_array_equal(engine.execute({"X": x}, ["Y"])["Y"], x * 10)
        with pytest.raises(EngineError) as failed:
            engine.execute({"X": np.array([[-3.0, 9.0]], dtype=np.float32)}, ["Y"])
        # the model raised TritonModelException with the call's error: Triton's stub words
        # any exception from execute so
        assert failed.value.detail.startswith(
            "Failed to process the request(s) for model 'stubbed_0_0', message: "
            "TritonModelException: Request for unknown model: 'other' is not found"
        ), failed.value.detail
        assert failed.value.code is Code.INTERNAL
        assert calls == ["other", "other"]
    finally:
        engine.unload()


def test_a_decoupled_model_s_responses_come_after_execute_returns(tmp_path: Path) -> None:
    engine = _engine(tmp_path, decoupled=True)
    got: list[tuple[Any, Any, bool]] = []
    done = threading.Event()

    def deliver(outputs: Any, error: Any, final: bool) -> None:
        got.append((None if outputs is None else outputs["Y"].tolist(), error, final))
        if final:
            done.set()

    try:
        engine.execute_decoupled([DecoupledRequest({"X": X}, ["Y"], deliver, lambda: False)])
        assert done.wait(10)
        assert got == [([[1, 2]], None, False), ([[2, 3]], None, False), ([[3, 4]], None, False),
                       (None, None, True)]  # fmt: skip
    finally:
        engine.unload()


STREAMS_UNTIL_CANCELLED = """
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self.stream, args=(request.get_response_sender(),)).start()

    def stream(self, sender):
        sent = 0
        zeros = pb_utils.Tensor("Y", np.zeros((1, 2), np.float32))
        while not sender.is_cancelled() and sent < 5000:
            sender.send(pb_utils.InferenceResponse([zeros]))
            sent += 1
            time.sleep(0.002)
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        counted = np.full((1, 2), sent, np.float32)
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", counted)]), flags=final)
"""


def test_a_decoupled_request_s_cancellation_reaches_its_model_without_a_question(
    tmp_path: Path,
) -> None:
    """A streaming model calls ``is_cancelled()`` before each response: the parent sends
    the child the cancellation as it happens (and one that came before the request
    reached the child with it), so the check costs no round trip; a request whose
    cancellation nobody tells (no ``on_cancel``) is asked about, as before."""
    version_dir = tmp_path / "streams" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(STREAMS_UNTIL_CANCELLED)
    config = text_format.Parse(
        CONFIG.replace('"stubbed"', '"streams"') + "model_transaction_policy { decoupled: true }",
        mc.ModelConfig(),
    )
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config))

    def request(on_cancel: Any, is_cancelled: Any) -> tuple[DecoupledRequest, list[Any], Any]:
        got: list[Any] = []
        done = threading.Event()

        def deliver(outputs: Any, error: Any, final: bool) -> None:
            got.append(outputs["Y"][0, 0] if final else error)
            if final:
                done.set()

        sent = DecoupledRequest({"X": X}, ["Y"], deliver, is_cancelled, on_cancel=on_cancel)
        return sent, got, done

    try:
        asked: list[str] = []
        told = ResponseStream("streams")
        streaming, got, done = request(
            told.on_cancel, lambda: asked.append("told") or told.cancelled
        )
        engine.execute_decoupled([streaming])
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        told.cancel()
        assert done.wait(10)
        assert 3 <= got[-1] < 5000 and got[:-1] == [None] * (len(got) - 1)
        assert asked == ["told"]  # read once, as the request was sent; never asked after

        before = ResponseStream("streams")
        before.cancel()
        streaming, got, done = request(before.on_cancel, lambda: before.cancelled)
        engine.execute_decoupled([streaming])
        assert done.wait(10) and got == [0]  # its first check said yes

        # a cancellation while another thread holds the stub's send lock: the loop never
        # waits for it, the notice is sent from the pool once the lock is free
        held = ResponseStream("streams")
        streaming, got, done = request(held.on_cancel, lambda: held.cancelled)
        engine.execute_decoupled([streaming])
        stub = engine._stub
        assert stub is not None
        with stub._send_lock:
            held.cancel()  # returns at once
        assert done.wait(10) and got[-1] < 5000

        flag = threading.Event()
        streaming, got, done = request(None, lambda: asked.append("asked") or flag.is_set())
        engine.execute_decoupled([streaming])
        time.sleep(0.05)
        flag.set()
        assert done.wait(10) and got[-1] < 5000
        assert asked.count("asked") == got[-1] + 1  # one question a check
    finally:
        engine.unload()


def test_a_crash_fails_its_batch_and_the_next_batch_starts_the_process_again(
    tmp_path: Path,
) -> None:
    engine = _engine(tmp_path)
    try:
        engine.execute({"X": X}, ["Y"])  # it served: a crash now restarts at once
        with pytest.raises(EngineError) as failed:
            engine.execute({"X": np.array([[-1.0, 0.0]], dtype=np.float32)}, ["Y"])
        assert "ended while executing (exit code 7)" in failed.value.detail
        assert failed.value.code is Code.INTERNAL
        np.testing.assert_array_equal(engine.execute({"X": X}, ["Y"])["Y"], X)
        assert len(list((tmp_path / "stubbed").glob("initialized-*"))) == 2
        # a process that dies before it served anything waits a second before the next
        with pytest.raises(EngineError):
            engine.execute({"X": np.array([[-1.0, 0.0]], dtype=np.float32)}, ["Y"])
        with pytest.raises(EngineError):
            engine.execute({"X": np.array([[-1.0, 0.0]], dtype=np.float32)}, ["Y"])
        with pytest.raises(EngineError) as waiting:
            engine.execute({"X": X}, ["Y"])
        assert waiting.value.code is Code.UNAVAILABLE and waiting.value.retry_after
        time.sleep(waiting.value.retry_after + 0.05)
        np.testing.assert_array_equal(engine.execute({"X": X}, ["Y"])["Y"], X)
    finally:
        engine.unload()


EACH_ON_ITS_OWN = """
import numpy as np
import triton_python_backend_utils as pb_utils

CODES = {1: pb_utils.TritonError.UNKNOWN, 2: pb_utils.TritonError.ALREADY_EXISTS,
         3: pb_utils.TritonError.CANCELLED, 4: pb_utils.TritonError.UNSUPPORTED}


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            code = int(x[0, 0])
            if code == 9:
                undefined_name
            if code in CODES:
                error = pb_utils.TritonError(f"code {code}", CODES[code])
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            gone = np.full(x.shape, float(request.is_cancelled()), np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", gone)]))
        return responses
"""


def _batching_engine(tmp_path: Path) -> PythonEngine:
    version_dir = tmp_path / "each" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(EACH_ON_ITS_OWN)
    config = text_format.Parse(
        CONFIG.replace('"stubbed"', '"each"').replace("max_batch_size: 0", "max_batch_size: 8")
        .replace("dims: [ 1, 2 ]", "dims: [ 2 ]"),
        mc.ModelConfig(),
    )  # fmt: skip
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config))
    return engine


def test_each_request_of_a_batch_is_answered_with_its_own_response(tmp_path: Path) -> None:
    """Triton's python backend: one response per request, some with an error; the others'
    outputs, and each request's own caller (asked back from the server's process)."""
    engine = _batching_engine(tmp_path)
    try:
        x = np.array([[0, 0], [1, 1], [0, 0], [3, 3], [4, 4]], np.float32)
        batch = [BatchedRequest(1, {}, 0, 0, lambda: False), BatchedRequest(1),
                 BatchedRequest(1, {}, 0, 0, lambda: True), BatchedRequest(1),
                 BatchedRequest(1)]  # fmt: skip
        with batch_requests(batch), pytest.raises(BatchOutcomes) as answered:
            engine.execute({"X": x}, ["Y"])
        first, unknown, gone, cancelled, unsupported = answered.value.outcomes
        assert isinstance(first, dict) and first["Y"].tolist() == [[0, 0]]
        assert isinstance(gone, dict) and gone["Y"].tolist() == [[1, 1]]
        codes = [(e.code, e.line()) for e in (unknown, cancelled, unsupported)
                 if isinstance(e, EngineError)]  # fmt: skip
        assert codes == [
            (Code.UNKNOWN, "code 1; rule=engine/python; change: model.py of model 'each'"),
            (Code.CANCELLED, "code 3; rule=engine/python; change: model.py of model 'each'"),
            (Code.UNIMPLEMENTED, "code 4; rule=engine/python; change: model.py of model 'each'"),
        ]
        with pytest.raises(EngineError) as failed:  # execute raised: the whole batch fails
            engine.execute({"X": np.array([[9, 9]], np.float32)}, ["Y"])
        assert failed.value.line().startswith(
            "Failed to process the request(s) for model 'each_0_0', message: NameError: name "
            "'undefined_name' is not defined; rule=engine/python"
        )
        assert failed.value.code is Code.INTERNAL
    finally:
        engine.unload()


STREAMING_BLS = """
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        x = pb_utils.get_input_tensor_by_name(requests[0], "X").as_numpy()
        call = pb_utils.InferenceRequest(
            model_name="counter", requested_output_names=["Z"], inputs=[pb_utils.Tensor("A", x)]
        )
        if x[0, 0] == 0:  # from a thread of its own, after execute returned
            sender = requests[0].get_response_sender()

            def later():
                for response in call.exec(decoupled=True):
                    if response.output_tensors():
                        z = response.output_tensors()[0].as_numpy()
                        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", z)]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

            threading.Thread(target=later).start()
            return None
        got = [r.output_tensors()[0].as_numpy() if r.output_tensors() else "final"
               for r in call.exec(decoupled=True)]
        sender = requests[0].get_response_sender()
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", np.array(
            [[len(got), float(got[0][0, 0])]], np.float32))]),
            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def test_a_call_to_a_decoupled_model_streams_its_responses_from_any_thread(
    tmp_path: Path,
) -> None:
    """Triton's BLS exec(decoupled=True): the called model's responses as they come, an
    empty one for its lone FINAL; from execute, or from the model's own thread later."""

    def infer(request: Any, stream: bool = False) -> Any:
        assert stream and request.model_name == "counter"
        a = request.inputs["A"]
        for step in (1, 2):
            z = OutputTensor("Z", "FP32", a + step)
            yield StreamResponse(InferResponse("counter", "1", [z]), None, False)
        yield StreamResponse(None, None, True)

    version_dir = tmp_path / "streaming" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(STREAMING_BLS)
    config = text_format.Parse(CONFIG + "model_transaction_policy { decoupled: true }",
                               mc.ModelConfig())  # fmt: skip
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config, infer=infer))
    try:
        for first, expected in ((5.0, [[[3.0, 6.0]]]), (0.0, [[[1.0, 1.0]], [[2.0, 2.0]]])):
            got: list[Any] = []
            done = threading.Event()

            def deliver(
                outputs: Any, error: Any, final: bool, got: list[Any] = got,
                done: threading.Event = done,
            ) -> None:  # fmt: skip
                assert error is None, error
                if outputs is not None:
                    got.append(outputs["Y"].tolist())
                if final:
                    done.set()

            x = np.array([[first, 0.0]], dtype=np.float32)
            engine.execute_decoupled([DecoupledRequest({"X": x}, ["Y"], deliver, lambda: False)])
            assert done.wait(10)
            assert got == expected
    finally:
        engine.unload()


SENT_AFTER_RETURN = """
import threading
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        senders = [(request.get_response_sender(),
                    pb_utils.get_input_tensor_by_name(request, "X").as_numpy())
                   for request in requests]

        def later():
            time.sleep(0.2)
            for sender, x in senders:
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x * 3)]),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        threading.Thread(target=later).start()
        return None
"""


def test_a_model_that_is_not_decoupled_may_answer_through_its_sender_after_returning(
    tmp_path: Path,
) -> None:
    """As Triton's python backend (24.10): execute returns None and a thread of the model
    sends each request's one response, FINAL with it, after; the batch waits for them."""
    version_dir = tmp_path / "later" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(SENT_AFTER_RETURN)
    config = text_format.Parse(CONFIG, mc.ModelConfig())
    engine = PythonEngine()
    engine.load(LoadContext(version_dir / "model.py", version_dir, config))
    try:
        np.testing.assert_array_equal(engine.execute({"X": X}, ["Y"])["Y"], X * 3)
    finally:
        engine.unload()
