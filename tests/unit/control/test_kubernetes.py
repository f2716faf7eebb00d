"""Rendered manifests validate against the Kubernetes schemas."""

from __future__ import annotations

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
    deployments = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Deployment"}
    assert set(deployments) == {
        "ranker-preprocess-cpu-dc1",
        "ranker-gpu-a30-dc1",
        "ranker-gpu-a30-dc2",
    }
    gpu = deployments["ranker-gpu-a30-dc2"]["spec"]
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
    cpu = deployments["ranker-preprocess-cpu-dc1"]["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in cpu["resources"]["limits"]


def test_a_broken_manifest_is_caught_by_the_validator() -> None:
    manifest = render(parse_platform_spec(BASE))[0]
    manifest["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)
