"""Which governance interface and model an admin route counts as: routes that act for the
whole server ask for an admin of every model ("*"), a model's trace settings its admin."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tritonclient.grpc import service_pb2 as pb

from modelyard.frontdoors.grpc import _SERVER_WIDE, governed_call
from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.http_routes import ROUTES, governed_as, model_route, route_of
from modelyard.governance.auth import Principal
from modelyard.governance.runtime import Governance
from modelyard.governance.service_config import empty_service_config


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/v2/systemsharedmemory/region/ranker/register", "*"),
        ("/v2/systemsharedmemory/status", "*"),
        ("/v2/cudasharedmemory/region/r/unregister", "*"),
        ("/v2/trace/setting", "*"),
        ("/v2/models/ranker/trace/setting", "ranker"),
    ],
)
def test_admin_routes_name_what_they_act_for(path: str, model: str) -> None:
    assert governed_as(path) == ("admin", model, None)


def test_an_admin_of_one_model_may_not_act_for_the_whole_server() -> None:
    scoped = Principal("ops", allow={"admin": ["ranker"]})  # type: ignore[call-arg]
    everything = Principal("root", allow={"admin": ["*"]})  # type: ignore[call-arg]
    assert scoped.may("admin", "ranker") and not scoped.may("admin", "*")
    assert everything.may("admin", "*")


def test_a_shared_memory_rpcs_region_name_is_never_taken_for_a_model() -> None:
    assert {"SystemSharedMemoryRegister", "CudaSharedMemoryStatus"} <= _SERVER_WIDE
    governance = Governance(empty_service_config("com.example.s"))
    context = SimpleNamespace(invocation_metadata=lambda: ())
    request = pb.SystemSharedMemoryRegisterRequest(name="ranker", key="/k", byte_size=8)
    call = governed_call(governance, "SystemSharedMemoryRegister", request, context)  # type: ignore[arg-type]
    assert (call.interface, call.model) == ("admin", "*")
    infer = governed_call(
        governance, "ModelInfer", pb.ModelInferRequest(model_name="ranker"), context
    )  # type: ignore[arg-type]
    assert infer.model == "ranker"


def test_every_route_is_answered_by_a_method_of_the_front_door() -> None:
    for route in ROUTES:
        if route.answer:
            assert callable(getattr(HttpFrontend, route.answer, None)), route
        else:  # taken before the table's dispatch: an infer call, in V2's words or another's
            assert route.methods == ("POST",) and route.category == "inference", route


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/v2/models/m/versions/2/infer", ("POST",)),
        ("/v2/models/m/ready", ("GET", "HEAD")),
        ("/v2/models/stats", ("GET", "HEAD")),
        ("/v2/logging", ("GET", "HEAD", "POST")),
        ("/v2/systemsharedmemory/status", ("GET", "HEAD")),
        ("/v2/systemsharedmemory/region/r/register", ("POST",)),
        ("/v2/repository/models/m/unload", ("POST",)),
    ],
)
def test_a_paths_route_says_the_methods_it_takes(path: str, methods: tuple[str, ...]) -> None:
    found = route_of(path)
    assert found is not None and found[0].methods == methods


def test_a_model_named_stats_is_never_routed_as_a_model() -> None:
    assert model_route("/v2/models/stats") is None
    assert model_route("/v2/models/stats/versions/1/infer") is None
    assert model_route("/v2/models/statsx/infer") == ("statsx", None, "/infer")
    assert route_of("/v2/nothing") is None


@pytest.mark.parametrize("action", ["generate", "generate_stream"])
def test_a_generate_call_is_an_infer_call_on_its_model(action: str) -> None:
    path = f"/v2/models/llm/versions/2/{action}"
    assert model_route(path) == ("llm", "2", f"/{action}")
    assert governed_as(path) == ("infer", "llm", "2")
    found = route_of(path)
    assert found is not None and found[0].category == "inference"  # --http-restricted-api
    assert found[0].methods == ("POST",)
