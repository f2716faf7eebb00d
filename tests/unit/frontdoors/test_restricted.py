"""tritonserver's --http-restricted-api / --grpc-restricted-protocol: parsing and refusals."""

from __future__ import annotations

import pytest

from modelyard.errors import Code, ConfigError
from modelyard.frontdoors.http_routes import restricted_category
from modelyard.frontdoors.restricted import Restrictions


def test_groups_name_categories_and_the_header_each_needs() -> None:
    http = Restrictions.parse(["model-repository:Admin-Key=secret", "inference,health:k=v"], "http")
    assert http is not None
    assert http.by_category == {
        "model-repository": ("admin-key", "secret"),
        "inference": ("k", "v"),
        "health": ("k", "v"),
    }
    assert http.refusal("inference", {"k": "v"}) is None
    assert http.refusal("statistics", {}) is None  # not restricted
    refused = http.refusal("model-repository", {"admin-key": "wrong"})
    assert refused is not None and refused.code is Code.PERMISSION_DENIED
    assert refused.line().startswith("This API is restricted, expecting header 'admin-key'")
    grpc = Restrictions.parse(["health:k=v"], "grpc")
    assert grpc is not None and grpc.by_category["health"] == ("triton-grpc-protocol-k", "v")
    refused = grpc.refusal("health", {})
    assert refused is not None
    assert refused.line().startswith(
        "This protocol is restricted, expecting header 'triton-grpc-protocol-k'"
    )
    assert Restrictions.parse([], "http") is None


@pytest.mark.parametrize(
    ("groups", "words"),
    [
        (["model-repository,health:k1=v1", "metadata,health:k2=v2"],
         "restricted api 'health' can not be specified in multiple config groups"),
        (["model-reposit:k=v"], "unknown restricted api 'model-reposit'"),
        (["health"], "option format is '<apis>:<key>=<value>'"),
        (["health:k"], "option format is"),
        (["health:=v"], "option format is"),
    ],
)  # fmt: skip
def test_a_malformed_group_stops_the_server_in_tritons_words(groups: list[str], words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Restrictions.parse(groups, "http")
    assert words in refused.value.line()


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("/v2/models/m/infer", "inference"),
        ("/v2/models/m/versions/2/infer", "inference"),
        ("/v2/models/m/ready", "health"),
        ("/v2/health/live", "health"),
        ("/v2/models/m", "metadata"),
        ("/v2", "metadata"),
        ("/v2/models/m/config", "model-config"),
        ("/v2/models/m/stats", "statistics"),
        ("/v2/models/stats", "statistics"),
        ("/v2/repository/index", "model-repository"),
        ("/v2/repository/models/m/load", "model-repository"),
        ("/v2/systemsharedmemory/status", "shared-memory"),
        ("/v2/cudasharedmemory/region/r/register", "shared-memory"),
        ("/v2/trace/setting", "trace"),
        ("/v2/models/m/trace/setting", "trace"),
        ("/v2/logging", "logging"),
        ("/v2/modelyard/stats", None),
    ],
)
def test_each_http_route_is_in_tritons_category(path: str, category: str | None) -> None:
    assert restricted_category(path) == category
