"""Rendered manifests validate against the Kubernetes schemas."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest

from modelyard.control.kubernetes import render
from modelyard.control.spec import parse_platform_spec
from tests.unit.control.test_ledger import BASE


def test_every_manifest_validates_strictly_and_carries_the_spec() -> None:
    manifests = render(parse_platform_spec(BASE))
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    deployments = {
        m["metadata"]["name"].rsplit("-", 1)[0]: m for m in manifests if m["kind"] == "Deployment"
    }
    assert set(deployments) == {
        "com-example-search-ranker-preprocess-cpu-dc1",
        "com-example-search-ranker-gpu-a30-dc1",
        "com-example-search-ranker-gpu-a30-dc2",
    }
    gpu = deployments["com-example-search-ranker-gpu-a30-dc2"]["spec"]
    container = gpu["template"]["spec"]["containers"][0]
    assert gpu["replicas"] == 3
    assert container["resources"]["limits"] == {
        "cpu": "16",
        "memory": "64Gi",
        "nvidia.com/gpu": "1",
    }
    selector = gpu["template"]["spec"]["nodeSelector"]
    assert selector["modelyard.io/data-center"] == "dc2"
    assert selector["modelyard.io/pool"] == "gpu"
    args = container["args"]
    assert args[args.index("--group") + 1] == "gpu"
    assert args[args.index("--queue") + 1] == "dc2-gpu"
    cpu = deployments["com-example-search-ranker-preprocess-cpu-dc1"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "nvidia.com/gpu" not in cpu["resources"]["limits"]


def test_a_broken_manifest_is_caught_by_the_validator() -> None:
    manifest = render(parse_platform_spec(BASE))[0]
    manifest["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)


def test_names_are_unique_and_dns_safe_for_any_service_name() -> None:
    two_teams = BASE.replace("  com.example.search.ranker:", "  com.teama.ranker:").replace(
        "services:\n", "services:\n" + _service("com.teamb.ranker"), 1
    )
    long_name = "com." + "very-long-label." * 6 + "ranker"
    folded = BASE.replace("  com.example.search.ranker:", "  com.team-a.ranker:").replace(
        "services:\n", "services:\n" + _service("com.team.a-ranker") + _service(long_name), 1
    )
    for text in (two_teams, folded):
        manifests = render(parse_platform_spec(text))
        names = [(m["kind"], m["metadata"]["name"]) for m in manifests]
        assert len(names) == len(set(names))
        for _, name in names:
            assert len(name) <= 63
            assert re.fullmatch(r"[a-z]([a-z0-9-]*[a-z0-9])?", name), name
        version = kubernetes_validate.latest_version()
        for manifest in manifests:
            kubernetes_validate.validate(manifest, version, strict=True)


def _service(name: str) -> str:
    """One more service in BASE's style, with one GPU template in dc1."""
    return (
        f"  {name}:\n"
        "    interfaces: [infer]\n    quota: search-gpu\n    data_centers: [dc1]\n"
        "    total_cards: 1\n    models: [ranker]\n    groups:\n      gpu:\n"
        "        models: [ranker]\n        cards: 1\n        templates:\n"
        "          a30: {spec: 16C/64G/A30-24G*1, queues: {dc1: dc1-gpu}, replicas: 1,"
        " loads: [ranker]}\n"
    )
