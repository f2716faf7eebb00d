"""Rendered manifests validate against the Kubernetes schemas."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest

from modelyard.control.kubernetes import ClusterOptions, render
from modelyard.control.spec import parse_platform_spec
from modelyard.errors import ConfigError
from modelyard.governance.auth import hash_secret
from tests.unit.control.test_ledger import BASE

MODELS = ClusterOptions(models_claim="models")  # the model repository's claim


def test_every_manifest_validates_strictly_and_carries_the_spec() -> None:
    manifests = render(parse_platform_spec(BASE), MODELS)
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    deployments = {
        m["metadata"]["name"].rsplit("-", 1)[0]: m
        for m in manifests
        if m["kind"] == "Deployment" and "gateway" not in m["metadata"]["name"]
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
    assert selector == {
        "modelyard.io/data-center": "dc2",
        "modelyard.io/pool": "gpu",
        "nvidia.com/gpu.product": "NVIDIA-A30",  # GPU Feature Discovery's value
    }
    args = container["args"]
    assert args[args.index("--group") + 1] == "gpu"
    assert args[args.index("--queue") + 1] == "dc2-gpu"
    cpu = deployments["com-example-search-ranker-preprocess-cpu-dc1"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "nvidia.com/gpu" not in cpu["resources"]["limits"]


def test_a_broken_manifest_is_caught_by_the_validator() -> None:
    manifest = next(
        m for m in render(parse_platform_spec(BASE), MODELS) if m["kind"] == "Deployment"
    )
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
        manifests = render(parse_platform_spec(text), MODELS)
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


def _kinds(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def test_the_whole_platform_renders_namespaces_quotas_budgets_gateways_and_etcd() -> None:
    options = ClusterOptions(etcd_replicas=3, models_claim="models")
    manifests = render(parse_platform_spec(BASE), options)
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    namespaces = [m["metadata"]["name"] for m in _kinds(manifests, "Namespace")]
    quota_namespace = next(n for n in namespaces if n.startswith("modelyard-search-gpu-"))
    assert namespaces == ["modelyard", quota_namespace]
    (quota,) = _kinds(manifests, "ResourceQuota")
    assert quota["metadata"]["namespace"] == quota_namespace
    assert quota["spec"]["hard"] == {
        "requests.cpu": "256", "limits.cpu": "256", "requests.memory": "1024Gi",
        "limits.memory": "1024Gi", "requests.nvidia.com/gpu": "12",
    }  # fmt: skip
    budgets = _kinds(manifests, "PodDisruptionBudget")
    assert {b["spec"]["selector"]["matchLabels"]["modelyard.io/group"] for b in budgets} == {
        "preprocess", "gpu",
    }  # fmt: skip
    instances = [
        d for d in _kinds(manifests, "Deployment") if "gateway" not in d["metadata"]["name"]
    ]
    for deployment in instances:
        assert deployment["metadata"]["namespace"] == quota_namespace
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        args = container["args"]
        assert args[args.index("--advertise-host") + 1] == "$(POD_IP)"
        assert container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert args[args.index("--registry") + 1] == "etcd://etcd.modelyard.svc:2379"
        assert "startupProbe" in container and pod["securityContext"]["runAsNonRoot"]
        grace = float(args[args.index("--deregister-grace") + 1]) + float(
            args[args.index("--exit-timeout-secs") + 1]
        )
        assert pod["terminationGracePeriodSeconds"] > grace  # deregistration and draining fit
        assert pod["volumes"] == [
            {"name": "models", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}},
            {"name": "weights", "configMap": {"name": "release-weights", "optional": True}},
        ]
        # its registry weight: the key named after its Deployment in its namespace's map
        name = deployment["metadata"]["name"]
        assert args[args.index("--weight-file") + 1] == f"/etc/modelyard/weights/{name}"
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector["modelyard.io/track"] == "stable"  # a release's canaries: "canary"
        assert deployment["spec"]["template"]["metadata"]["labels"] == selector
    weights = [m for m in _kinds(manifests, "ConfigMap") if m["metadata"]["name"] == (
        "release-weights")]  # fmt: skip
    assert [m["metadata"]["namespace"] for m in weights] == [quota_namespace]
    assert all("data" not in m for m in weights)  # the control plane's keys are kept
    (gateway,) = [d for d in _kinds(manifests, "Deployment") if "gateway" in d["metadata"]["name"]]
    assert gateway["metadata"]["namespace"] == "modelyard"
    gateway_pod = gateway["spec"]["template"]["spec"]
    gateway_args = gateway_pod["containers"][0]["args"]
    assert gateway_args[:3] == ["gateway", "--service", "com.example.search.ranker"]
    assert "--attempt-timeout" not in gateway_args  # derived from the latency unless asked
    # the Service's endpoints drop the pod before it stops accepting, then it drains
    prestop = gateway_pod["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert gateway_pod["terminationGracePeriodSeconds"] > prestop + 30
    (etcd,) = _kinds(manifests, "StatefulSet")
    assert etcd["spec"]["replicas"] == 3
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[0] == "etcd"  # etcd's image has no shell
    (cluster,) = [arg for arg in command if arg.startswith("--initial-cluster=")]
    assert cluster.count("=http://etcd-") == 3  # the initial cluster names its three members


def test_an_external_registry_an_image_volume_and_other_label_keys() -> None:
    options = ClusterOptions(
        registry_url="etcd://etcd.infra:2379", models_image="registry.example/models:7",
        data_center_label="topology.kubernetes.io/zone", pool_label="example.com/pool",
        gpu_products={"A30-24G": "NVIDIA-A30-PCIE"}, gateway_attempt_timeout=2.5,
    )  # fmt: skip
    manifests = render(parse_platform_spec(BASE), options)
    assert not _kinds(manifests, "StatefulSet")
    (gateway,) = [d for d in _kinds(manifests, "Deployment") if "gateway" in d["metadata"]["name"]]
    gateway_args = gateway["spec"]["template"]["spec"]["containers"][0]["args"]
    assert gateway_args[gateway_args.index("--attempt-timeout") + 1] == "2.5"
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    pod = next(
        d
        for d in _kinds(manifests, "Deployment")
        if d["metadata"]["name"].startswith("com-example-search-ranker-gpu")
    )["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "topology.kubernetes.io/zone": "dc1", "example.com/pool": "gpu",
        "nvidia.com/gpu.product": "NVIDIA-A30-PCIE",
    }  # fmt: skip
    assert pod["volumes"][0]["image"]["reference"] == "registry.example/models:7"


def test_a_gpu_model_without_a_node_label_value_is_refused() -> None:
    with pytest.raises(ConfigError) as refused:
        render(parse_platform_spec(BASE), ClusterOptions(gpu_products={}, models_claim="models"))
    line = refused.value.line()
    assert "GPU model 'A30-24G' has no node label value" in line
    assert "--gpu-product A30-24G=VALUE" in line and "rule=platform/render" in line
    with pytest.raises(ConfigError):
        render(parse_platform_spec(BASE), ClusterOptions(etcd_replicas=2, models_claim="models"))


def test_an_instance_pod_runs_serve_on_the_flags_the_one_builder_writes() -> None:
    """processes.serve_arguments writes a pod's serve flags: they read back as the instance
    the pod declares (its ports, address, registry entry and models)."""
    from modelyard.cli.serve_settings import serve_settings

    options = ClusterOptions(service_files={"com.example.search.ranker": SERVICE_FILE},
                             models_claim="models")  # fmt: skip
    manifests = render(parse_platform_spec(BASE), options)
    instances = [
        d for d in _kinds(manifests, "Deployment") if "gateway" not in d["metadata"]["name"]
    ]
    assert instances
    for deployment in instances:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["args"][:3] == ["serve", "--model-repository", "/models"]
        settings = serve_settings(container["args"][1:])
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        assert ports == {
            "http": settings.http.port, "grpc": settings.grpc.port,
            "metrics": settings.metrics.port,
        }  # fmt: skip
        assert settings.http.address == "0.0.0.0"
        registration = settings.registration
        assert registration.advertise_host == "$(POD_IP)"
        labels = deployment["metadata"]["labels"]
        assert registration.group == labels["modelyard.io/group"]
        assert registration.weight_file is not None
        assert registration.weight_file.name == deployment["metadata"]["name"]
        assert settings.models.control_mode == "explicit"
        ranker = registration.service == "com.example.search.ranker"
        assert (settings.service_config is not None) == ranker


SERVICE_FILE = """\
service: com.example.search.ranker
limits:
  infer: {instance_qps: 500, cluster_qps: 1000}
cluster: {redis_url: "redis://redis.modelyard.svc:6379/0"}
"""


def test_a_service_file_reaches_its_pods_and_cluster_limits_bring_redis() -> None:
    options = ClusterOptions(
        service_files={"com.example.search.ranker": SERVICE_FILE},
        cluster_limits=True,
        models_claim="models",
    )
    manifests = render(parse_platform_spec(BASE), options)
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    (config_map,) = [m for m in _kinds(manifests, "ConfigMap") if "data" in m]
    assert config_map["data"] == {"service.yaml": SERVICE_FILE}
    for deployment in _kinds(manifests, "Deployment"):
        name = deployment["metadata"]["name"]
        if name.startswith("com-example"):
            pod = deployment["spec"]["template"]["spec"]
            args = pod["containers"][0]["args"]
            assert args[args.index("--service-config") + 1] == "/etc/modelyard/service.yaml"
            assert {
                "name": "service-file",
                "configMap": {"name": config_map["metadata"]["name"]},
            } in pod["volumes"]
    assert [d["metadata"]["name"] for d in _kinds(manifests, "Deployment") if
            d["metadata"]["name"] == "redis"] == ["redis"]  # fmt: skip
    without = render(parse_platform_spec(BASE), MODELS)
    assert not [m for m in _kinds(without, "ConfigMap") if "data" in m]
    assert all(d["metadata"]["name"] != "redis" for d in _kinds(without, "Deployment"))
    with pytest.raises(ConfigError):  # a file of a service the spec does not have
        render(
            parse_platform_spec(BASE),
            ClusterOptions(service_files={"com.other.x": "x"}, models_claim="m"),
        )


def test_the_control_plane_scales_deployments_in_the_quota_namespaces_and_nothing_else() -> None:
    options = ClusterOptions(models_claim="models", spec_text=BASE)
    manifests = render(parse_platform_spec(BASE), options)
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    (plane,) = [
        d for d in _kinds(manifests, "Deployment") if d["metadata"]["name"] == "control-plane"
    ]
    pod = plane["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[:4] == ["platform", "up", "--target", "kubernetes"]
    assert args[args.index("--registry") + 1] == "etcd://etcd.modelyard.svc:2379"
    assert args[args.index("--gateway-port") + 1] == "-1"  # the render's gateways front it
    assert plane["spec"]["replicas"] == 1 and plane["spec"]["strategy"]["type"] == "Recreate"
    (spec_map,) = [
        m for m in _kinds(manifests, "ConfigMap") if m["metadata"]["name"] == "platform-spec"
    ]
    assert spec_map["data"]["platform.yaml"] == BASE  # the spec it was rendered from
    assert pod["serviceAccountName"] == "control-plane"
    quota_namespaces = {m["metadata"]["namespace"] for m in _kinds(manifests, "ResourceQuota")}
    roles = _kinds(manifests, "Role")
    assert {r["metadata"]["namespace"] for r in roles} == quota_namespaces
    deployments = {
        (m["metadata"]["namespace"], m["metadata"]["name"])
        for m in _kinds(manifests, "Deployment")
        if m["metadata"]["namespace"] in quota_namespaces
    }
    for role in roles:
        scale, create, named, weights = role["rules"]
        assert scale["resources"] == ["deployments/scale"] and scale["verbs"] == ["get", "patch"]
        # a release: canaries made from the render's Deployments, their versions promoted;
        # a create cannot name what it makes, the rest names the render's and their canaries
        assert create["resources"] == ["deployments"] and create["verbs"] == ["create"]
        assert named["verbs"] == ["get", "patch", "delete"]
        namespace = role["metadata"]["namespace"]
        stable = {name for ns, name in deployments if ns == namespace}
        canaries = set(named["resourceNames"]) - stable
        assert stable <= set(named["resourceNames"]) and len(canaries) == len(stable)
        assert all(name.startswith(tuple(n[:20] for n in stable)) for name in canaries)
        # the weights map only: no other ConfigMap (a service file) may be read or changed
        assert weights["resources"] == ["configmaps"] and weights["verbs"] == ["get", "patch"]
        assert weights["resourceNames"] == ["release-weights"]
    for binding in _kinds(manifests, "RoleBinding"):
        (subject,) = binding["subjects"]
        assert subject == {
            "kind": "ServiceAccount",
            "name": "control-plane",
            "namespace": "modelyard",
        }
    # it owns the autoscaling group's replicas: a render applied again leaves them be
    replicas = {
        d["metadata"]["labels"].get("modelyard.io/group"): d["spec"].get("replicas")
        for d in _kinds(manifests, "Deployment")
    }
    assert replicas["preprocess"] is None and replicas["gpu"] == 3
    # without the spec's text (a library caller), no control plane, and replicas as given
    plain = render(parse_platform_spec(BASE), ClusterOptions(models_claim="models"))
    assert not _kinds(plain, "Role") and not _kinds(plain, "ServiceAccount")
    preprocess = next(
        d for d in _kinds(plain, "Deployment") if "preprocess" in d["metadata"]["name"]
    )
    assert preprocess["spec"]["replicas"] == 2


AUTH_FILE = f"""\
service: com.example.search.ranker
auth:
  enabled: true
  principals:
    ranker-app: {{api_keys: ["{hash_secret("app-key")}"], allow: {{infer: ["*"]}}}}
"""


def test_files_with_keys_are_secrets_and_the_control_plane_keeps_its_state_on_a_claim() -> None:
    options = ClusterOptions(
        service_files={"com.example.search.ranker": AUTH_FILE},
        service_files_with_auth=frozenset({"com.example.search.ranker"}),
        control_auth_file=AUTH_FILE,
        control_state_size="2Gi",
        models_claim="models",
        spec_text=BASE,
    )
    manifests = render(parse_platform_spec(BASE), options)
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)
    secrets = {m["metadata"]["name"]: m for m in _kinds(manifests, "Secret")}
    (service_secret,) = [m for n, m in secrets.items() if n.startswith("service-file")]
    assert service_secret["stringData"] == {"service.yaml": AUTH_FILE}
    # the file holds digests only: no raw key is rendered anywhere
    assert "app-key" not in repr(manifests)
    assert all(
        m.get("data", {}).get("service.yaml") is None for m in _kinds(manifests, "ConfigMap")
    )  # the file is not also a ConfigMap
    for deployment in _kinds(manifests, "Deployment"):
        if deployment["metadata"]["name"].startswith("com-example"):
            volumes = deployment["spec"]["template"]["spec"]["volumes"]
            secret = {"secretName": service_secret["metadata"]["name"]}
            assert {"name": "service-file", "secret": secret} in volumes
    (plane,) = [
        d for d in _kinds(manifests, "Deployment") if d["metadata"]["name"] == "control-plane"
    ]
    pod = plane["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[args.index("--auth-file") + 1] == "/etc/modelyard/control-auth/control.yaml"
    assert secrets["control-plane-auth"]["stringData"] == {"control.yaml": AUTH_FILE}
    assert {"name": "auth", "secret": {"secretName": "control-plane-auth"}} in pod["volumes"]
    (claim,) = _kinds(manifests, "PersistentVolumeClaim")
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    state = {"name": "state", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
    assert state in pod["volumes"] and pod["securityContext"]["fsGroup"] == 10001
    # a file without auth stays a ConfigMap; a size that is no quantity is refused
    plain = render(
        parse_platform_spec(BASE),
        ClusterOptions(service_files={"com.example.search.ranker": SERVICE_FILE},
                       models_claim="models"),
    )  # fmt: skip
    assert not _kinds(plain, "Secret")
    assert len([m for m in _kinds(plain, "ConfigMap") if "data" in m]) == 1
    with pytest.raises(ConfigError, match="'lots' is not a Kubernetes quantity"):
        render(
            parse_platform_spec(BASE),
            ClusterOptions(models_claim="models", spec_text=BASE, control_state_size="lots"),
        )


def _models_volumes(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        volume
        for deployment in _kinds(manifests, "Deployment")
        for volume in deployment["spec"]["template"]["spec"].get("volumes", [])
        if volume["name"] == "models"
    ]


def test_the_spec_chooses_the_model_volume_and_a_render_flag_overrides_it() -> None:
    claimed = parse_platform_spec("model_repository: {claim: repo}\n" + BASE)
    volumes = _models_volumes(render(claimed))
    assert len(volumes) == 3  # every instance Deployment
    assert all(
        v == {"name": "models", "persistentVolumeClaim": {"claimName": "repo", "readOnly": True}}
        for v in volumes
    )
    imaged = parse_platform_spec("model_repository: {image: registry.example/models:7}\n" + BASE)
    (first, *_) = _models_volumes(render(imaged))
    assert first["image"] == {
        "reference": "registry.example/models:7",
        "pullPolicy": "IfNotPresent",
    }
    (overridden, *_) = _models_volumes(render(claimed, ClusterOptions(models_claim="other")))
    assert overridden["persistentVolumeClaim"]["claimName"] == "other"
    for section in ("{claim: a, image: b}", "{}"):
        with pytest.raises(ConfigError) as error:
            parse_platform_spec(f"model_repository: {section}\n" + BASE)
        assert "invalid platform.yaml:1 at model_repository: names a claim or an image" in str(
            error.value
        )
    with pytest.raises(ConfigError) as error:
        render(parse_platform_spec(BASE))
    assert "model_repository: {claim: PVC}" in str(error.value)  # where to say it


def test_the_spec_attempts_reach_the_rendered_gateway() -> None:
    text = BASE.replace(
        "    interfaces: [infer, metadata]\n",
        "    interfaces: [infer, metadata]\n"
        "    attempts: {infer: {timeout_s: 0.4, hedge: true}, metadata: {timeout_s: off}}\n",
    )
    manifests = render(parse_platform_spec(text), MODELS)
    (gateway,) = [d for d in _kinds(manifests, "Deployment") if "gateway" in d["metadata"]["name"]]
    args = gateway["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = [args[i + 1] for i, arg in enumerate(args) if arg == "--interface-attempts"]
    assert flags == ["infer=0.4,hedge", "metadata=off"]
