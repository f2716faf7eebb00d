"""``triton_python_backend_utils`` pieces a model calls directly: a BLS request's parameters
and a decoupled model's response sender."""

from __future__ import annotations

import pytest

from modelyard.engines import pb_utils
from modelyard.types import InferRequest, InferResponse


def test_a_bls_call_carries_the_request_s_own_parameters_and_its_sequence() -> None:
    request = pb_utils.InferenceRequest(
        model_name="target", inputs=[], requested_output_names=[], parameters={"scale": 2},
        correlation_id=7, flags=3,
    )  # fmt: skip
    assert request._call_parameters() == {
        "scale": 2,
        "sequence_id": 7,
        "sequence_start": True,
        "sequence_end": True,
    }
    plain = pb_utils.InferenceRequest(
        model_name="target", inputs=[], requested_output_names=[], parameters={"a": 1}
    )
    assert plain._call_parameters() == {"a": 1}


def test_a_bls_call_made_with_the_request_s_trace_carries_its_context() -> None:
    context = '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
    received = pb_utils.InferenceRequest.received("m", [], [], trace_context=context)
    assert received.trace().get_context() == context
    assert pb_utils.InferenceRequest.received("m", [], []).trace().get_context() is None
    sent: list[InferRequest] = []

    def infer(request: InferRequest) -> InferResponse:
        sent.append(request)
        return InferResponse("target", "1", [])

    pb_utils.calling_through(infer)
    try:
        call = pb_utils.InferenceRequest(
            model_name="target", inputs=[], requested_output_names=[], trace=received.trace()
        )
        assert not call.exec().has_error()
    finally:
        pb_utils.calling_through(None)
    assert [request.trace_parent for request in sent] == [context]
    with pytest.raises(TypeError, match="trace=NoneType"):  # as Triton's binding refuses it
        pb_utils.InferenceRequest(model_name="t", inputs=[], requested_output_names=[], trace=None)


def test_the_sender_refuses_what_triton_s_refuses_and_sends_final_once() -> None:
    sent: list[tuple[object, bool]] = []
    sender = pb_utils.InferenceResponseSender(
        lambda response, final: sent.append((response, final))
    )
    with pytest.raises(pb_utils.TritonModelException, match="Unsupported flag"):
        sender.send(pb_utils.InferenceResponse(), flags=4)
    with pytest.raises(pb_utils.TritonModelException, match="must be provided"):
        sender.send()
    with pytest.raises(pb_utils.TritonModelException, match="not an InferenceResponse"):
        sender.send({"OUT": 1})  # type: ignore[arg-type]
    response = pb_utils.InferenceResponse()
    sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    sender.close_with(lambda: sent.append((None, True)))  # FINAL was sent: nothing runs
    with pytest.raises(pb_utils.TritonModelException, match="has been closed"):
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert sent == [(response, True)]


def test_arguments_are_checked_as_triton_s_binding_checks_them() -> None:
    tensor = pb_utils.Tensor("INPUT0", [1, 2])
    with pytest.raises(TypeError, match="missing required argument 'model_name'"):
        pb_utils.InferenceRequest(inputs=[tensor], requested_output_names=[])
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(inputs=[tensor], requested_output_names=[None], model_name="m")
    with pytest.raises(pb_utils.TritonModelException):
        pb_utils.InferenceRequest(inputs=[None], requested_output_names=[], model_name="m")
    with pytest.raises(pb_utils.TritonModelException, match="bool/int/str"):
        pb_utils.InferenceRequest(
            inputs=[], requested_output_names=[], model_name="m", parameters={"a": 1.5}
        )
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(output_tensors=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pb_utils.Logger.log("a plain int is no level", 1)
    pb_utils.Logger.log("a level", pb_utils.Logger.LogLevel.WARNING)
    request = pb_utils.InferenceRequest(
        inputs=[tensor], requested_output_names=[], model_name="m", correlation_id="s-1"
    )
    assert request.correlation_id() == "s-1"


def test_a_name_may_be_bytes_as_triton_s_binding_takes_them() -> None:
    """python_backend's BLS example names the model with a BYTES input's element
    (``as_numpy()[0]``, bytes): Triton's binding takes bytes where it takes a string."""
    tensor = pb_utils.Tensor(b"INPUT0", [1, 2])
    assert tensor.name() == "INPUT0"
    request = pb_utils.InferenceRequest(
        inputs=[tensor], requested_output_names=[b"OUTPUT0"], model_name=b"add_sub",
        request_id=b"r-1",
    )  # fmt: skip
    assert request.model_name() == "add_sub"
    assert request.requested_output_names() == ["OUTPUT0"]
    assert request.request_id() == "r-1"
    # bytes that are not UTF-8 name no model that exists; never a crash
    odd = pb_utils.InferenceRequest(inputs=[], requested_output_names=[], model_name=b"\xff")
    assert odd.model_name() == "\ufffd"
    with pytest.raises(TypeError, match="model_name=int"):
        pb_utils.InferenceRequest(inputs=[], requested_output_names=[], model_name=3)


def test_a_model_that_is_not_decoupled_sends_one_response_and_final_with_or_after_it() -> None:
    sent: list[tuple[object, bool]] = []
    sender = pb_utils.InferenceResponseSender(
        lambda response, final: sent.append((response, final)), decoupled=False
    )
    with pytest.raises(pb_utils.TritonModelException, match="complete final before"):
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    response = pb_utils.InferenceResponse()
    sender.send(response)
    with pytest.raises(pb_utils.TritonModelException, match="more than one response"):
        sender.send(pb_utils.InferenceResponse())
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert sent == [(response, False), (None, True)]
