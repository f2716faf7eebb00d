"""Ledger rules as pure functions: a table of specs → codes, and the ledger's numbers."""

from __future__ import annotations

import pytest

from modelyard.control.ledger import build_ledger, validate
from modelyard.control.spec import InstanceSpec, parse_platform_spec
from modelyard.errors import ConfigError

BASE = """\
quotas:
  search-gpu:
    owner: {org: search, project: ranker}
    cpu_cores: 256
    memory_gb: 1024
    cards: {dc1: {A30-24G: 8}, dc2: {A30-24G: 4}}
queues:
  dc1-gpu: {data_center: dc1, pool: gpu, gpu_models: [A30-24G]}
  dc1-cpu: {data_center: dc1, pool: cpu}
  dc2-gpu: {data_center: dc2, pool: gpu, gpu_models: [A30-24G]}
services:
  com.example.search.ranker:
    interfaces: [infer, metadata]
    quota: search-gpu
    data_centers: [dc1, dc2]
    total_cards: 6
    models: [tokenizer, ranker]
    groups:
      preprocess:
        models: [tokenizer]
        cards: 0
        templates:
          cpu: {spec: 8C/32G, queues: {dc1: dc1-cpu}, replicas: 2, loads: [tokenizer]}
        autoscaling: {min: 1, max: 4}
      gpu:
        models: [ranker]
        cards: 6
        templates:
          a30: {spec: 16C/64G/A30-24G*1, queues: {dc1: dc1-gpu, dc2: dc2-gpu}, replicas: 3,
                loads: [ranker]}
"""


def codes(text: str, **kwargs: object) -> list[str]:
    return sorted({f.code for f in validate(parse_platform_spec(text), **kwargs)})  # type: ignore[arg-type]


def test_the_base_spec_is_valid_and_its_ledger_adds_up() -> None:
    spec = parse_platform_spec(BASE)
    assert validate(spec) == []
    ledger = build_ledger(spec)
    assert ledger.instances == 2 + 3 + 3
    assert ledger.gpu_instances == 6  # the CPU-only pre-processing instances count only above
    assert ledger.total_cards == 6
    assert ledger.cards_by_group == {
        "com.example.search.ranker/preprocess": 0,
        "com.example.search.ranker/gpu": 6,
    }
    rows = {(r.data_center, r.gpu_model): (r.hard, r.used, r.reserved, r.free) for r in ledger.rows}
    assert rows == {("dc1", "A30-24G"): (8, 3, 0, 5), ("dc2", "A30-24G"): (4, 3, 0, 1)}
    assert ledger.cpu_by_quota == {"search-gpu": (2 * 8 + 6 * 16, 256)}


def test_reserved_surge_cards_are_not_free() -> None:
    ledger = build_ledger(parse_platform_spec(BASE), {("search-gpu", "dc2", "A30-24G"): 1})
    row = next(r for r in ledger.rows if r.data_center == "dc2")
    assert (row.used, row.reserved, row.free) == (3, 1, 0)


BROKEN = [
    ("group quotas not summing", ("total_cards: 6", "total_cards: 7"), "GROUP_QUOTA_SUM"),
    ("quota exceeded", ("replicas: 3,", "replicas: 5,"), "QUOTA_EXCEEDED"),
    ("a quota of 0 cards holds none", ("dc2: {A30-24G: 4}", "dc2: {A30-24G: 0}"), "QUOTA_EXCEEDED"),
    ("GPU model not in quota", ("A30-24G*1", "T4-16G*1"), "GPU_NOT_IN_QUOTA"),
    ("queue does not offer the GPU", ("A30-24G*1", "T4-16G*1"), "QUEUE_GPU_MISMATCH"),
    (
        "model bound to no group",
        ("models: [tokenizer, ranker]", "models: [tokenizer, ranker, reranker]"),
        "MODEL_UNBOUND",
    ),
    (
        "model bound twice",
        ("models: [tokenizer]\n", "models: [tokenizer, ranker]\n"),
        "MODEL_BOUND_TWICE",
    ),
    (
        "template loads a foreign model",
        ("loads: [tokenizer]", "loads: [tokenizer, ranker]"),
        "TEMPLATE_FOREIGN_MODEL",
    ),
    ("replica bounds invalid", ("{min: 1, max: 4}", "{min: 5, max: 4}"), "REPLICAS_INVALID"),
    ("replicas outside bounds", ("replicas: 2,", "replicas: 9,"), "REPLICAS_INVALID"),
    ("malformed spec string", ("8C/32G", "8 cores"), "SPEC_MALFORMED"),
    ("unknown queue", ("dc1: dc1-cpu", "dc1: dc9-cpu"), "QUEUE_UNKNOWN"),
    ("a DC the service does not run in", ("[dc1, dc2]", "[dc1]"), "DC_NOT_IN_SERVICE"),
    ("queue in another DC", ("dc2: dc2-gpu", "dc2: dc1-gpu"), "QUEUE_DC_MISMATCH"),
    ("group over its share", ("        cards: 6\n", "        cards: 5\n"), "GROUP_CARDS_EXCEEDED"),
    ("unknown quota", ("quota: search-gpu", "quota: nope"), "QUOTA_UNKNOWN"),
    ("CPU cores exceeded", ("cpu_cores: 256", "cpu_cores: 8"), "QUOTA_CPU_EXCEEDED"),
    ("memory exceeded", ("memory_gb: 1024", "memory_gb: 32"), "QUOTA_MEMORY_EXCEEDED"),
    ("a CPU quota of 0 allows none", ("cpu_cores: 256", "cpu_cores: 0"), "QUOTA_CPU_EXCEEDED"),
    ("a memory quota of 0", ("memory_gb: 1024", "memory_gb: 0"), "QUOTA_MEMORY_EXCEEDED"),
    ("an instance with no CPU", ("8C/32G", "0C/1G"), "SPEC_EMPTY"),
    ("an instance with no memory", ("8C/32G", "8C/0G"), "SPEC_EMPTY"),
    ("a GPU model with no cards", ("A30-24G*1", "A30-24G*0"), "SPEC_EMPTY"),
    (
        "a group model the service does not have",
        ("models: [ranker]\n", "models: [ranker, reranker]\n"),
        "GROUP_FOREIGN_MODEL",
    ),
    ("a service with no interfaces", ("[infer, metadata]", "[]"), "SERVICE_NO_INTERFACES"),
    ("an interface twice", ("[infer, metadata]", "[infer, infer]"), "INTERFACE_DUPLICATE"),
    (
        "a service name that is not reverse-DNS",
        ("com.example.search.ranker:", "Ranker_Service:"),
        "SERVICE_NAME_INVALID",
    ),
    (
        "a service name of one label",
        ("com.example.search.ranker:", "ranker:"),
        "SERVICE_NAME_INVALID",
    ),
]


@pytest.mark.parametrize(
    ("replace", "code"), [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN]
)
def test_each_broken_rule_has_its_code(replace: tuple[str, str], code: str) -> None:
    old, new = replace
    assert old in BASE
    assert code in codes(BASE.replace(old, new, 1))


def test_findings_carry_numbers_file_line_and_the_hint() -> None:
    spec = parse_platform_spec(BASE.replace("replicas: 3,", "replicas: 5,"), "platform.yaml")
    finding = next(f for f in validate(spec) if f.code == "QUOTA_EXCEEDED")
    assert (finding.requested, finding.used, finding.limit) == (5, 5, 4)
    assert finding.where == "platform.yaml:6"
    line = finding.line()
    assert line.startswith("[platform] QUOTA_EXCEEDED: quota search-gpu in dc2 holds 4 A30-24G")
    assert "(requested 5, used 5, limit 4)" in line
    assert "rule=platform/quota_exceeded; change: platform.yaml:6 (expand the quota first)" in line


def test_a_release_reservation_can_push_a_quota_over() -> None:
    assert "QUOTA_EXCEEDED" in codes(BASE, reserved={("search-gpu", "dc2", "A30-24G"): 2})


def test_spec_strings() -> None:
    assert InstanceSpec.parse("16C/64G/A30-24G*1") == InstanceSpec(16, 64, "A30-24G", 1)
    assert InstanceSpec.parse("8C/32G") == InstanceSpec(8, 32)
    assert str(InstanceSpec(8, 32, "T4-16G", 2)) == "8C/32G/T4-16G*2"
    for bad in ("8C", "8C/32", "C/32G", "8C/32G/A30*", "8C/32G/*1"):
        assert InstanceSpec.parse(bad) is None


def test_queues_hold_no_counts_and_shapes_are_checked_with_file_line() -> None:
    with pytest.raises(ConfigError) as counted:
        parse_platform_spec(BASE.replace("pool: cpu}", "pool: cpu, count: 3}"), "p.yaml")
    assert "p.yaml:9" in counted.value.line() and "never how many" in counted.value.line()
    with pytest.raises(ConfigError) as shaped:
        parse_platform_spec(BASE.replace("replicas: 2,", "replicas: two,"), "p.yaml")
    assert "p.yaml:" in shaped.value.line() and "expected an integer" in shaped.value.line()


def test_spec_file_errors_name_the_platform_rule_with_file_line() -> None:
    with pytest.raises(ConfigError) as bad_yaml:
        parse_platform_spec("services: [unclosed\n", "platform.yaml")
    assert bad_yaml.value.rule == "platform/spec" and "platform.yaml:" in bad_yaml.value.line()
    typo = BASE.replace("autoscaling: {min: 1, max: 4}", "autoscalling: {min: 1, max: 4}")
    with pytest.raises(ConfigError) as unknown:
        parse_platform_spec(typo, "platform.yaml")
    assert "unknown group field 'autoscalling'" in unknown.value.line()
    line = unknown.value.line()
    assert "rule=platform/spec" in line and "change: fix platform.yaml:24" in line


def test_a_quota_without_cpu_or_memory_limits_neither_and_a_negative_one_is_refused() -> None:
    unlimited = BASE.replace("    cpu_cores: 256\n", "").replace("    memory_gb: 1024\n", "")
    spec = parse_platform_spec(unlimited)
    assert (spec.quotas["search-gpu"].cpu_cores, spec.quotas["search-gpu"].memory_gb) == (
        None,
        None,
    )
    assert validate(spec) == []
    assert build_ledger(spec).cpu_by_quota == {"search-gpu": (2 * 8 + 6 * 16, None)}
    with pytest.raises(ConfigError) as negative:
        parse_platform_spec(BASE.replace("cpu_cores: 256", "cpu_cores: -1"), "platform.yaml")
    line = negative.value.line()
    assert "at quotas.search-gpu.cpu_cores: cannot be negative, got -1" in line
    assert "platform.yaml:4" in line


def test_an_autoscaling_max_beyond_the_group_s_card_share_or_the_quota_is_refused() -> None:
    text = BASE.replace(
        "                loads: [ranker]}\n",
        "                loads: [ranker]}\n        autoscaling: {min: 1, max: 50}\n",
    )
    share, dc1, dc2 = validate(parse_platform_spec(text))
    assert share.code == "AUTOSCALE_MAX_OVER_SHARE"
    assert (share.requested, share.limit) == (100, 6)  # 50 replicas x 2 data centres
    # and the quota's hard cards of each data centre: 50 against 8 in dc1, 4 in dc2
    assert (dc1.code, dc1.requested, dc1.limit) == ("AUTOSCALE_MAX_OVER_QUOTA", 50, 8)
    assert "take 50 A30-24G cards in dc1, over quota search-gpu's 8" in dc1.message
    assert (dc2.code, dc2.requested, dc2.limit) == ("AUTOSCALE_MAX_OVER_QUOTA", 50, 4)
    at_share = text.replace("max: 50", "max: 3")
    assert validate(parse_platform_spec(at_share)) == []
    # within the share, beyond what dc2's quota holds
    small_dc2 = at_share.replace("dc2: {A30-24G: 4}", "dc2: {A30-24G: 2}")
    codes = [(f.code, f.requested, f.limit) for f in validate(parse_platform_spec(small_dc2))]
    assert ("AUTOSCALE_MAX_OVER_QUOTA", 3, 2) in codes


def test_the_ledger_shows_each_quota_s_owner_cores_and_memory_and_each_group_s_share() -> None:
    doc = build_ledger(parse_platform_spec(BASE)).to_json()
    (quota,) = doc["quotas"]
    assert quota["owner"] == {"org": "search", "project": "ranker"}
    # 2 x 8 cores for preprocess, 6 x 16 for the GPU group; 2 x 32 + 6 x 64 GB
    assert quota["cpu_cores"] == {"used": 112, "hard": 256}
    assert quota["memory_gb"] == {"used": 448, "hard": 1024}
    assert doc["groups"] == [
        {"group": "com.example.search.ranker/gpu", "cards_used": 6, "cards_share": 6},
        {"group": "com.example.search.ranker/preprocess", "cards_used": 0, "cards_share": 0},
    ]
