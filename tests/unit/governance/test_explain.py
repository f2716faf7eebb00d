"""``modelyard explain``'s logic and the recent-rejection record, without sockets."""

from __future__ import annotations

import pytest

from modelyard.governance.explain import (
    Context,
    ParsedLine,
    budget_sharing,
    explain,
    parse_line,
    query_kind,
    rule_of_key,
    rule_setting,
    sections_from_rows,
)
from modelyard.governance.rejections import RejectionLog

SERVICE = "com.example.search.ranker"
CLUSTER_LINE = (
    "[governance] request rejected: cluster-qps 131/s over limit 100/s for interface infer "
    "(model ranker, reserved 40/s) (strategy: cluster-qps, code: 429, msg: the current limit "
    f"has been reached); rule=ratelimit/cluster-qps; change: limits.infer.cluster_qps in "
    f"central:{SERVICE}@r7; retry after 0.05s"
)
BREAKER_LINE = (
    "[governance] request rejected: breaker slow-ranker OPEN for model ranker on interface "
    "infer: slow-call ratio 0.60 over threshold 0.50 (12 of 20 calls over 100 ms in 10 s); "
    "recovers in 4.20s; rule=breaker/slow-ranker; change: breakers.slow-ranker in svc.yaml; "
    "retry after 4.20s"
)
SECTIONS = {
    "limits": {"infer": {"cluster_qps": 100, "models": {"ranker": {"reserved_qps": 40}}}},
    "breakers": {"slow-ranker": {"interface": "infer", "threshold": 0.5, "window_s": 10}},
}


def test_query_kind_tells_lines_rules_and_request_ids_apart() -> None:
    assert query_kind(CLUSTER_LINE) == "line"
    assert query_kind('{"error": "[governance] x; rule=auth/permission"}') == "line"
    assert query_kind("ratelimit/cluster-qps") == "rule"
    assert query_kind("breakers.slow-ranker.threshold") == "rule"
    assert query_kind("9f1c2b7a0d3e4f51") == "request"


def test_a_rate_limit_line_reads_back_into_its_numbers() -> None:
    parsed = parse_line(CLUSTER_LINE)
    assert parsed.layer == "governance"
    assert parsed.rule == "ratelimit/cluster-qps"
    assert parsed.where == f"limits.infer.cluster_qps in central:{SERVICE}@r7"
    assert parsed.central == (SERVICE, 7)
    assert (parsed.interface, parsed.model, parsed.retry_after) == ("infer", "ranker", 0.05)
    assert parsed.numbers == {"observed_qps": 131.0, "limit_qps": 100.0, "reserved_qps": 40.0}


def test_a_breaker_line_keeps_its_window_and_the_semicolon_in_its_detail() -> None:
    parsed = parse_line('{"error": "' + BREAKER_LINE + '"}')
    assert parsed.rule == "breaker/slow-ranker"
    assert parsed.where == "breakers.slow-ranker in svc.yaml"
    assert parsed.numbers == {
        "state": "OPEN",
        "measure": "slow-call ratio",
        "value": 0.6,
        "threshold": 0.5,
        "bad_calls": 12,
        "calls": 20,
        "window_s": 10.0,
        "recovers_in_s": 4.2,
    }


def test_auth_and_concurrency_lines() -> None:
    denied = parse_line(
        "[governance] request rejected: principal 'reader' may not call interface admin; "
        "rule=auth/permission; change: auth.principals.reader.allow.admin in service.yaml "
        "(service.yaml:7)"
    )
    assert denied.numbers == {"principal": "reader"} and denied.interface == "admin"
    full = parse_line(
        "[governance] request rejected: 64 calls in flight at concurrency limit 64 for model "
        "ranker (aimd: ...); rule=concurrency/ranker-aimd; change: concurrency.ranker-aimd in "
        "s.yaml; retry after 0.05s"
    )
    assert full.numbers == {"in_flight": 64, "limit": 64} and full.model == "ranker"


def test_rule_settings_and_the_keys_that_change_them() -> None:
    limit = rule_setting(SECTIONS, "ratelimit/cluster-qps", "infer", "ranker")
    assert limit is not None
    assert (limit.key, limit.value, limit.change_key) == (
        "limits.infer.cluster_qps",
        100,
        "limits.infer.cluster_qps",
    )
    breaker = rule_setting(SECTIONS, "breaker/slow-ranker", "infer", "ranker")
    assert breaker is not None
    assert (breaker.change_key, breaker.change_value) == ("breakers.slow-ranker.threshold", 0.5)
    assert rule_setting(SECTIONS, "auth/permission", "infer", None) is None
    assert rule_setting(SECTIONS, "ratelimit/cluster-qps", None, "ranker") is None
    limited = {"concurrency": {"ranker-cap": {"max_limit": 64}}}
    cap = rule_setting(limited, "concurrency/ranker-cap", "infer", "ranker")
    assert cap is not None
    assert (cap.change_key, cap.change_value) == ("concurrency.ranker-cap.max_limit", 64)
    assert rule_of_key("limits.search.instance_qps") == ("ratelimit/instance-qps", "search")
    assert rule_of_key("breakers.slow-ranker.threshold") == ("breaker/slow-ranker", "infer")
    assert rule_of_key("concurrency.ranker-cap") == ("concurrency/ranker-cap", "infer")


def test_budget_sharing_names_reserved_shares_or_every_model() -> None:
    shared = budget_sharing(SECTIONS, "ratelimit/cluster-qps", "infer", ["ranker", "digits"])
    assert shared == (
        "reserved shares on every instance of the service: ranker 40/s; "
        "the pool (60/s, plus unused shares) goes to digits"
    )
    plain = {"limits": {"infer": {"instance_qps": 20}}}
    assert budget_sharing(plain, "ratelimit/instance-qps", "infer", ["a", "b"]) == (
        "one budget on each instance for every model on interface infer: a, b"
    )
    assert budget_sharing(SECTIONS, "breaker/slow-ranker", "infer", []) is None


def test_a_declared_interface_s_budget_is_shared_by_the_models_it_covers_only() -> None:
    sections = {
        "interfaces": {"rank": ["ranker*"]},
        "limits": {"rank": {"instance_qps": 20}, "infer": {"instance_qps": 50}},
    }
    models = ["ranker", "ranker_v2", "digits"]
    assert budget_sharing(sections, "ratelimit/instance-qps", "rank", models) == (
        "one budget on each instance for every model on interface rank: ranker, ranker_v2"
    )
    assert budget_sharing(sections, "ratelimit/instance-qps", "infer", models) == (
        "one budget on each instance for every model on interface infer: digits"
    )
    rows = [{"rule": "interfaces.rank", "value": {"models": ["ranker*"]}}]
    assert sections_from_rows(rows) == {"interfaces": {"rank": ["ranker*"]}}


def test_explain_names_the_rule_its_value_and_the_command() -> None:
    context = Context(
        service=SERVICE,
        sections=SECTIONS,
        in_force="central",
        revision=8,
        revision_by="alice@host",
        registry="etcd://10.0.0.1:2379",
        models=["digits", "ranker"],
        record={
            "request_id": "abc",
            "time": 0.0,
            "code": 429,
            "status": "resource_exhausted",
            "setting": {"key": "limits.infer.cluster_qps", "value": 80},
            "rules_revision": 7,
        },
        instance="10.0.0.2:8000",
    )
    rows = dict(explain(parse_line(CLUSTER_LINE), context))
    assert rows["what"].startswith("request abc rejected at ")
    assert "by instance 10.0.0.2:8000" in rows["what"]
    assert "cluster-qps (one budget for every instance" in rows["layer"]
    assert rows["rule"] == (
        "ratelimit/cluster-qps: limits.infer.cluster_qps = 100 (central revision 8 by "
        "alice@host); at the time: 80 (revision 7)"
    )
    assert rows["numbers"] == (
        "observed 131/s over limit 100/s; interface infer; model ranker; reserved 40/s; "
        "retry after 0.05s"
    )
    assert rows["change"] == (
        f"modelyard rules set {SERVICE} limits.infer.cluster_qps <value> "
        "--registry etcd://10.0.0.1:2379"
    )


def test_explain_points_at_the_local_file_when_the_instance_enforces_it() -> None:
    context = Context(service=SERVICE, sections=SECTIONS, in_force="local", local_file="s.yaml")
    rows = dict(explain(parse_line(BREAKER_LINE), context))
    assert rows["layer"] == "governance > circuit breaker"
    assert rows["numbers"].startswith("breaker OPEN; slow-call ratio 0.6 vs threshold 0.5 (12 of")
    assert rows["change"].startswith("breakers.slow-ranker.threshold in s.yaml")
    unknown = dict(explain(ParsedLine("", rule="model-server/queue-full"), Context()))
    assert unknown["rule"] == "model-server/queue-full"


def test_sections_come_back_from_the_live_rules_rows() -> None:
    rows = [
        {"rule": "auth", "value": {"enabled": False}},
        {"rule": "limits.infer.cluster_qps", "value": 100},
        {"rule": "limits.infer.models.ranker", "value": {"reserved_qps": 40}},
        {"rule": "breakers.slow-ranker", "value": SECTIONS["breakers"]["slow-ranker"]},
    ]
    assert sections_from_rows(rows) == SECTIONS


def test_the_rejection_record_is_bounded_and_finds_the_latest_by_request_id() -> None:
    log = RejectionLog(capacity=3)
    for index in range(5):
        log.add({"request_id": f"r{index}", "n": index})
    assert len(log) == 3 and log.total == 5
    assert log.get("r0") is None and log.get("r1") is None
    assert log.get("r4") == {"request_id": "r4", "n": 4}
    assert [e["n"] for e in log.recent(2)] == [4, 3]
    reused = RejectionLog(capacity=3)
    for n, request_id in enumerate(["a", "b", "a", "c"]):  # a client reused request id "a"
        reused.add({"request_id": request_id, "n": n})
    assert reused.get("a") == {"request_id": "a", "n": 2}  # evicting the older one kept it
    with pytest.raises(ValueError):
        RejectionLog(capacity=0)


def test_a_line_in_tritons_words_is_read_with_the_layer_its_rule_names() -> None:
    parsed = parse_line(
        "Request for unknown model: 'm' is not found; rule=model-server/unknown-model; "
        "change: GET /v2/repository/index lists the models"
    )
    assert (parsed.layer, parsed.rule) == ("model-server", "model-server/unknown-model")
    assert parsed.detail == "Request for unknown model: 'm' is not found"
    assert parsed.where == "GET /v2/repository/index lists the models"
