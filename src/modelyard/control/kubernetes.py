"""Kubernetes manifests for many machines: the platform a spec describes, on a cluster.

``render`` gives, for a spec that passes ``validate``:

* a Namespace for the platform's shared parts (etcd, the gateways), and one per quota,
  whose ResourceQuota holds the quota's hard limits (cpu, memory,
  ``requests.nvidia.com/gpu``: its cards in every data centre), so the cluster enforces
  what the ledger checks;
* per instance template and data centre, a Deployment and a Service in its quota's
  namespace: requests = limits from the instance spec, nodes chosen by the queue's data
  centre and pool and the GPU model (through configurable label keys, and a map from the
  spec's GPU models to the values NVIDIA's GPU Feature Discovery puts on nodes), startup,
  readiness and liveness probes, the pod's IP advertised to the registry (downward
  API), a grace period that covers deregistration and draining (``modelyard serve``
  deregisters on SIGTERM, keeps answering while callers' views drop it, then drains),
  and the model repository from a volume (a PersistentVolumeClaim, or an OCI image, as
  the spec's ``model_repository`` says or a render flag overrides);
* a PodDisruptionBudget per group (one pod of a group down at a time);
* per quota namespace, the ConfigMap ``release-weights``: a Deployment's pods read their
  registry weight from its key named after the Deployment (absent: 1), which the control
  plane writes during a release (``control/kubernetes_release.py``);
* per service, a gateway Deployment and Service: a gateway pod waits in a preStop hook
  while the Service's endpoints drop it, then drains; with ``gateway_attempt_timeout``
  it tries another instance when one gives no answer in time (a dead node, a cut link);
* etcd (a StatefulSet of 1 or 3 members, with its Services) unless an external
  registry is given;
* a service's file (its governance: limits, breakers) as a ConfigMap its pods read, or
  as a Secret where it sets auth (its principals' key digests; no raw key is ever in a
  service file), and Redis when a file sets cluster-wide limits (``cluster_qps``);
* with the spec's text (``spec_text``), the control plane and its console
  (``platform up --target kubernetes``: one pod, the spec from a ConfigMap, its state
  on a PersistentVolumeClaim so events, releases and the ledger's replicas outlive the
  pod, the API's auth file from a Secret), a ServiceAccount, and in each quota's
  namespace a Role and RoleBinding that let it set Deployments' scale, make and delete
  a release's canary Deployments, patch a Deployment's pod template at promotion, and
  write the release weights, and nothing else.

Names are DNS labels unique for their identity (a hash of it follows the readable part).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from modelyard import error_rules
from modelyard.control.spec import Group, PlatformSpec, Quota, Service, Template
from modelyard.errors import ConfigError
from modelyard.processes import FlagValue, serve_arguments

LABEL = "modelyard.io"
ETCD_IMAGE = "quay.io/coreos/etcd:v3.5.17"
ETCD_SERVICE = "etcd"
REDIS_IMAGE = "redis:7.4-alpine"
REDIS_SERVICE = "redis"
SERVICE_FILE_DIR = "/etc/modelyard"
SPEC_DIR = "/etc/modelyard/platform"
CONTROL_PLANE = "control-plane"
CONTROL_STATE = "control-plane-state"
CONTROL_AUTH = "control-plane-auth"
CONTROL_AUTH_DIR = "/etc/modelyard/control-auth"
IMAGE_GID = 10001  # the Containerfile's user's group
CONTROL_PORT = 7070
# a pod's part in its group's release: the Deployments' selectors tell stable from canary
TRACK = f"{LABEL}/track"
# per quota namespace: each Deployment's pods read their registry weight from the key
# named after it (absent: 1); the control plane writes them during a release
WEIGHTS = "release-weights"
WEIGHTS_DIR = "/etc/modelyard/weights"
# the spec's GPU models -> the nvidia.com/gpu.product value GPU Feature Discovery gives
# their nodes; a form factor other than this one (PCIe for SXM) is set with --gpu-product
GPU_PRODUCTS = {
    "A10-24G": "NVIDIA-A10",
    "A30-24G": "NVIDIA-A30",
    "A100-40G": "NVIDIA-A100-SXM4-40GB",
    "A100-80G": "NVIDIA-A100-SXM4-80GB",
    "H100-80G": "NVIDIA-H100-80GB-HBM3",
    "L4-24G": "NVIDIA-L4",
    "T4-16G": "Tesla-T4",
}
DEREGISTER_GRACE_S = 6.0  # over the registry TTL (5 s): callers' views have dropped the pod
EXIT_TIMEOUT_S = 30.0  # requests in flight finish within this
# a gateway pod keeps accepting this long after its deletion starts, while the Service's
# endpoints (kube-proxy, ingresses) drop it; then SIGTERM drains it
GATEWAY_PRESTOP_S = 5
GATEWAY_CLIENT_TIMEOUT_S = 30  # the SDK's default timeout: a forwarded request's longest


@dataclass(slots=True)
class ClusterOptions:
    """Where and how the platform runs on the cluster (``platform render`` flags)."""

    image: str = "modelyard:latest"
    namespace: str = "modelyard"
    registry_url: str | None = None  # None: etcd is rendered in the namespace
    etcd_replicas: int = 1
    models_claim: str | None = None  # a PersistentVolumeClaim holding the model repository
    models_image: str | None = None  # or an OCI image holding it (an image volume)
    data_center_label: str = f"{LABEL}/data-center"
    pool_label: str = f"{LABEL}/pool"
    gpu_product_label: str = "nvidia.com/gpu.product"
    # the spec's GPU model -> the node label's value (GPU Feature Discovery's product name)
    gpu_products: dict[str, str] = field(default_factory=lambda: dict(GPU_PRODUCTS))
    # service -> its service file's text (governance), and whether it sets cluster limits
    service_files: dict[str, str] = field(default_factory=dict)
    cluster_limits: bool = False
    # the services whose file sets auth: that file (key digests) is a Secret, not a ConfigMap
    service_files_with_auth: frozenset[str] = frozenset()
    # a service file whose auth guards the control API and console (its text), as a Secret
    control_auth_file: str | None = None
    control_state_size: str = "1Gi"  # the control plane's state claim: events, releases
    # seconds a gateway waits for one instance before trying another (None: the whole timeout)
    gateway_attempt_timeout: float | None = None
    # the spec file's text: the control plane's ConfigMap (None: no control plane rendered)
    spec_text: str | None = None


_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def _dns(text: str) -> str:
    """An RFC 1123 name: lower case, digits and '-', at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-")


def object_name(*identity: str) -> str:
    """A name that is readable, DNS-safe and unique for its identity.

    The whole identity goes in (``com.teama.ranker`` and ``com.teamb.ranker`` must not
    share a Deployment), and a hash of it follows: folding names into DNS labels can make
    two identities read the same, and a long one is cut.
    """
    digest = hashlib.sha256("\0".join(identity).encode()).hexdigest()[:8]
    # begins with a letter, as a Service's name must: validate holds service names to
    # reverse-DNS keys, and render takes only a spec that passes it
    readable = _dns("-".join(identity))[:54].rstrip("-")
    return f"{readable}-{digest}"


def _render_error(detail: str, where: str) -> ConfigError:
    return ConfigError.of(error_rules.RENDER, detail, where=where)


def quota_namespace(options: ClusterOptions, quota: str) -> str:
    return object_name(options.namespace, quota)


def deployment_name(service: str, group: str, template: str, data_center: str) -> str:
    """The Deployment of one template of a group in one data centre."""
    return object_name(service, group, template, data_center)


def canary_name(service: str, group: str, template: str, data_center: str) -> str:
    """A release's canary Deployment beside one template's in one data centre."""
    return object_name(service, group, template, data_center, "canary")


def registry_url(options: ClusterOptions) -> str:
    if options.registry_url:
        return options.registry_url
    return f"etcd://{ETCD_SERVICE}.{options.namespace}.svc:2379"


def render(spec: PlatformSpec, options: ClusterOptions | None = None) -> list[dict[str, Any]]:
    options = _checked_options(spec, options or ClusterOptions())
    manifests: list[dict[str, Any]] = [_namespace(options.namespace)]
    for quota in sorted(spec.quotas.values(), key=lambda q: q.name):
        manifests += _quota_parts(options, quota)
    for service in spec.services.values():
        manifests += _service_parts(spec, options, service)
    if not options.registry_url:
        manifests += _etcd(options)
    if options.cluster_limits:
        manifests += _redis(options)
    if options.spec_text is not None:
        manifests += _control_plane(options, options.spec_text, _releasable(spec, options))
    return manifests


def _checked_options(spec: PlatformSpec, options: ClusterOptions) -> ClusterOptions:
    """The render's options once checked against themselves and the spec, with the
    spec's model repository where no flag names one."""
    if options.etcd_replicas not in (1, 3):
        raise _render_error(
            f"etcd runs 1 or 3 members, not {options.etcd_replicas}",
            "modelyard platform render --etcd-replicas 1|3",
        )
    if not _QUANTITY.match(options.control_state_size):
        raise _render_error(
            f"the control plane's state size '{options.control_state_size}' is not a "
            "Kubernetes quantity",
            "modelyard platform render --control-state-size 1Gi (a number and Ki, Mi, Gi, Ti "
            "or k, M, G, T)",
        )
    if options.models_claim and options.models_image:
        raise _render_error(
            "the model repository comes from a claim or an image, not both",
            "modelyard platform render --models-claim NAME or --models-image REF",
        )
    if not (options.models_claim or options.models_image) and spec.model_volume is not None:
        # the spec's choice; a flag given for this render wins
        volume = spec.model_volume
        options = replace(options, models_claim=volume.claim, models_image=volume.image)
    unknown = sorted(set(options.service_files) - set(spec.services))
    if unknown:
        raise _render_error(
            f"service file of '{unknown[0]}', which the spec does not have",
            "modelyard platform render --service-file FILE (a service of the spec)",
        )
    loads = any(
        template.loads
        for service in spec.services.values()
        for group in service.groups.values()
        for template in group.templates.values()
    )
    if loads and not (options.models_claim or options.models_image):
        raise _render_error(
            "the templates load models, and no model repository is given for the pods",
            "model_repository: {claim: PVC} (in each quota's namespace) or {image: REF} in "
            "the spec, or modelyard platform render --models-claim PVC / --models-image REF",
        )
    return options


def _quota_parts(options: ClusterOptions, quota: Quota) -> list[dict[str, Any]]:
    """A quota's namespace, its ResourceQuota and its release weights."""
    namespace = quota_namespace(options, quota.name)
    return [
        _namespace(namespace),
        _resource_quota(quota, namespace),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": WEIGHTS, "namespace": namespace},
        },
    ]


def _service_parts(
    spec: PlatformSpec, options: ClusterOptions, service: Service
) -> list[dict[str, Any]]:
    """A service's file, its groups' disruption budgets and instances, its gateway."""
    namespace = quota_namespace(options, service.quota)
    manifests: list[dict[str, Any]] = []
    if service.name in options.service_files:
        manifests.append(_service_file(options, service.name, namespace))
    for group in service.groups.values():
        manifests.append(_disruption_budget(service.name, group.name, namespace))
        for template, dc, queue_name in _placed_templates(group):
            manifests += _instances(spec, options, namespace, service.name, group.name,
                                    template, dc, queue_name)  # fmt: skip
    return manifests + _gateway(options, service.name, service.attempts)


def _placed_templates(group: Group) -> Iterator[tuple[Template, str, str]]:
    """Each template that runs instances, with each data centre and queue it runs in."""
    for template in group.templates.values():
        if template.spec is not None:
            for dc, queue_name in sorted(template.queues.items()):
                yield template, dc, queue_name


def _releasable(spec: PlatformSpec, options: ClusterOptions) -> dict[str, list[str]]:
    """Per quota namespace, the Deployments a release may change: each rendered one and
    its canary."""
    releasable: dict[str, list[str]] = {quota_namespace(options, q): [] for q in spec.quotas}
    for service in spec.services.values():
        names = releasable[quota_namespace(options, service.quota)]
        for group in service.groups.values():
            for template, dc, _ in _placed_templates(group):
                slot = (service.name, group.name, template.name, dc)
                names += [deployment_name(*slot), canary_name(*slot)]
    return releasable


def _control_plane(
    options: ClusterOptions, spec_text: str, releasable: dict[str, list[str]]
) -> list[dict[str, Any]]:
    """The control plane and console. In each quota's namespace (``releasable``: the names
    of its Deployments and their canaries) it may set Deployments' scale, create canaries,
    read, patch and delete those Deployments only, and write the release weights."""
    namespace = options.namespace
    labels = {f"{LABEL}/component": CONTROL_PLANE}
    args = [
        "platform", "up", "--target", "kubernetes", "-f", f"{SPEC_DIR}/platform.yaml",
        "--state", "/var/lib/modelyard", "--registry", registry_url(options),
        "--namespace", namespace, "--host", "0.0.0.0", "--port", str(CONTROL_PORT),
        "--gateway-port", "-1", "--log-format", "json",
    ]  # fmt: skip
    volumes: list[dict[str, Any]] = [
        {"name": "spec", "configMap": {"name": "platform-spec"}},
        {"name": "state", "persistentVolumeClaim": {"claimName": CONTROL_STATE}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "spec", "mountPath": SPEC_DIR, "readOnly": True},
        {"name": "state", "mountPath": "/var/lib/modelyard"},
    ]
    secrets: list[dict[str, Any]] = []
    if options.control_auth_file is not None:
        args += ["--auth-file", f"{CONTROL_AUTH_DIR}/control.yaml"]
        secrets.append(_secret(CONTROL_AUTH, namespace, "control.yaml", options.control_auth_file))
        volumes.append({"name": "auth", "secret": {"secretName": CONTROL_AUTH}})
        mounts.append({"name": "auth", "mountPath": CONTROL_AUTH_DIR, "readOnly": True})
    container = {
        "name": CONTROL_PLANE,
        "image": options.image,
        "command": ["modelyard"],
        "args": args,
        "ports": [{"name": "http", "containerPort": CONTROL_PORT}],
        "readinessProbe": {"httpGet": {"path": "/api/v1/health", "port": "http"}},
        "livenessProbe": {"httpGet": {"path": "/api/v1/health", "port": "http"}},
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
        "volumeMounts": mounts,
    }
    subject = {"kind": "ServiceAccount", "name": CONTROL_PLANE, "namespace": namespace}
    access: list[dict[str, Any]] = []
    for quota_ns, names in sorted(releasable.items()):
        meta = {"name": f"modelyard-{CONTROL_PLANE}", "namespace": quota_ns}
        rules: list[dict[str, Any]] = [
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch"]},
            # a release makes canaries (a name cannot bound a create) ...
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]},
        ]
        if names:  # ... and reads, promotes and deletes only the render's and their canaries
            rules.append(
                {
                    "apiGroups": ["apps"],
                    "resources": ["deployments"],
                    "resourceNames": sorted(names),
                    "verbs": ["get", "patch", "delete"],
                }
            )
        access += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": dict(meta),
                "rules": [
                    *rules,
                    {
                        "apiGroups": [""],
                        "resources": ["configmaps"],
                        "resourceNames": [WEIGHTS],
                        "verbs": ["get", "patch"],
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": dict(meta),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": meta["name"],
                },
                "subjects": [dict(subject)],
            },
        ]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "platform-spec", "namespace": namespace},
            "data": {"platform.yaml": spec_text},
        },
        *secrets,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CONTROL_STATE, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": options.control_state_size}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": CONTROL_PLANE, "namespace": namespace},
        },
        *access,
        _deployment(
            CONTROL_PLANE,
            namespace,
            labels,
            {
                "serviceAccountName": CONTROL_PLANE,
                # the image's user (and its group) may write the claim's files
                "securityContext": {
                    "runAsNonRoot": True,
                    "fsGroup": IMAGE_GID,
                    "fsGroupChangePolicy": "OnRootMismatch",
                },
                "containers": [container],
                "volumes": volumes,
            },
            replicas=1,  # one writer of the ledger's state
            strategy={"type": "Recreate"},
        ),
        _service(
            CONTROL_PLANE,
            namespace,
            labels,
            [{"name": "http", "port": CONTROL_PORT, "targetPort": "http"}],
            labels=labels,
        ),
    ]


def _service_file(options: ClusterOptions, service: str, namespace: str) -> dict[str, Any]:
    name, text = object_name("service-file", service), options.service_files[service]
    if service in options.service_files_with_auth:
        return _secret(name, namespace, "service.yaml", text)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"service.yaml": text},
    }


def _service_file_volume(options: ClusterOptions, service: str) -> dict[str, Any]:
    name = object_name("service-file", service)
    if service in options.service_files_with_auth:
        return {"name": "service-file", "secret": {"secretName": name}}
    return {"name": "service-file", "configMap": {"name": name}}


def _secret(name: str, namespace: str, key: str, text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": {key: text},
    }


def _redis(options: ClusterOptions) -> list[dict[str, Any]]:
    """Redis for the cluster-wide limits (``cluster.redis_url`` in the service files:
    ``redis://redis.NAMESPACE.svc:6379/0``); its counts are leases, not data to keep."""
    labels = {f"{LABEL}/component": "redis"}
    namespace = options.namespace
    container = {
        "name": "redis",
        "image": REDIS_IMAGE,
        "args": ["--save", "", "--appendonly", "no"],
        "ports": [{"name": "redis", "containerPort": 6379}],
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
    }
    return [
        _deployment(REDIS_SERVICE, namespace, labels, {"containers": [container]}, replicas=1),
        _service(REDIS_SERVICE, namespace, labels, [{"name": "redis", "port": 6379}]),
    ]


def _deployment(
    name: str,
    namespace: str,
    labels: dict[str, str],
    pod: dict[str, Any],
    *,
    replicas: int | None,
    strategy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Deployment of ``pod`` (a pod spec) whose pods carry ``labels``, which select them;
    ``replicas`` None: left to whoever scales it."""
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    spec["selector"] = {"matchLabels": dict(labels)}
    if strategy is not None:
        spec["strategy"] = strategy
    spec["template"] = {"metadata": {"labels": dict(labels)}, "spec": pod}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": spec,
    }


def _service(
    name: str,
    namespace: str,
    selector: dict[str, str],
    ports: list[dict[str, Any]],
    *,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Service of the pods ``selector`` picks; ``spec``: its other fields (clusterIP ...)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {**spec, "selector": dict(selector), "ports": ports},
    }


def _service_ports(**ports: int) -> list[dict[str, Any]]:
    """A Service's ports, each reaching the container's port of the same name."""
    return [{"name": name, "port": port, "targetPort": name} for name, port in ports.items()]


def _namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {f"{LABEL}/part-of": "modelyard"}},
    }


def _resource_quota(quota: Quota, namespace: str) -> dict[str, Any]:
    hard: dict[str, str] = {}
    if quota.cpu_cores is not None:
        hard["requests.cpu"] = hard["limits.cpu"] = f"{quota.cpu_cores:g}"
    if quota.memory_gb is not None:
        hard["requests.memory"] = hard["limits.memory"] = f"{quota.memory_gb:g}Gi"
    cards = sum(count for models in quota.cards.values() for count in models.values())
    if quota.cards:
        hard["requests.nvidia.com/gpu"] = str(cards)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": object_name(quota.name), "namespace": namespace},
        "spec": {"hard": hard},
    }


def _group_labels(service: str, group: str) -> dict[str, str]:
    return {f"{LABEL}/service": _dns(service), f"{LABEL}/group": _dns(group)}


def _disruption_budget(service: str, group: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": object_name(service, group), "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": _group_labels(service, group)}},
    }


def _node_selector(
    spec: PlatformSpec, options: ClusterOptions, template: Any, dc: str, queue_name: str
) -> dict[str, str]:
    selector = {options.data_center_label: _dns(dc)}
    queue = spec.queues.get(queue_name)
    if queue is not None:
        selector[options.pool_label] = _dns(queue.pool)
    gpu_model = template.spec.gpu_model if template.spec.cards else None
    if gpu_model:
        product = options.gpu_products.get(gpu_model)
        if product is None:
            raise _render_error(
                f"GPU model '{gpu_model}' has no node label value: a pod would land on no node, "
                "or on the wrong one",
                f"modelyard platform render --gpu-product {gpu_model}=VALUE (the "
                f"{options.gpu_product_label} value GPU Feature Discovery puts on its nodes)",
            )
        selector[options.gpu_product_label] = product
    return selector


def _models_volume(options: ClusterOptions) -> dict[str, Any]:
    if options.models_image:
        return {"name": "models", "image": {"reference": options.models_image,
                                            "pullPolicy": "IfNotPresent"}}  # fmt: skip
    if options.models_claim:
        return {
            "name": "models",
            "persistentVolumeClaim": {"claimName": options.models_claim, "readOnly": True},
        }
    return {"name": "models", "emptyDir": {}}  # no template loads a model


def _instances(
    spec: PlatformSpec,
    options: ClusterOptions,
    namespace: str,
    service: str,
    group: str,
    template: Any,
    dc: str,
    queue_name: str,
) -> list[dict[str, Any]]:
    name = deployment_name(service, group, template.name, dc)
    slot_labels = {
        **_group_labels(service, group),
        f"{LABEL}/template": _dns(template.name),
        f"{LABEL}/data-center": _dns(dc),
    }
    labels = {**slot_labels, TRACK: "stable"}  # a release's canaries: "canary"
    resources: dict[str, str] = {
        "cpu": str(template.spec.cpu_cores),
        "memory": f"{template.spec.memory_gb}Gi",
    }
    if template.spec.cards:
        resources["nvidia.com/gpu"] = str(template.spec.cards)
    volumes = [
        _models_volume(options),
        # optional: a pod starts while the namespace's ConfigMap is still being applied
        {"name": "weights", "configMap": {"name": WEIGHTS, "optional": True}},
    ]
    mounts = [
        {"name": "models", "mountPath": "/models", "readOnly": True},
        {"name": "weights", "mountPath": WEIGHTS_DIR, "readOnly": True},
    ]
    service_file: dict[str, FlagValue] = {}
    if service in options.service_files:
        service_file["service_config"] = f"{SERVICE_FILE_DIR}/service.yaml"
        volumes.append(_service_file_volume(options, service))
        mounts.append({"name": "service-file", "mountPath": SERVICE_FILE_DIR, "readOnly": True})
    args = [
        "serve",
        *serve_arguments(
            "/models", http_port=8000, grpc_port=8001, metrics_port=8002,  # the container's
            host="0.0.0.0", advertise_host="$(POD_IP)", service=service, group=group,
            registry=registry_url(options), data_center=dc, queue=queue_name,
            template=template.name, spec=str(template.spec), model_control_mode="explicit",
            deregister_grace=f"{DEREGISTER_GRACE_S:g}", exit_timeout_secs=f"{EXIT_TIMEOUT_S:g}",
            weight_file=f"{WEIGHTS_DIR}/{name}", load_model=list(template.loads), **service_file,
        ),
    ]  # fmt: skip
    container = {
        "name": "modelyard",
        "image": options.image,
        "command": ["modelyard"],
        "args": args,
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [
            {"name": "http", "containerPort": 8000},
            {"name": "grpc", "containerPort": 8001},
            {"name": "metrics", "containerPort": 8002},
        ],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "volumeMounts": mounts,
        # models load before the pod is ready: up to ten minutes for large ones
        "startupProbe": {
            "httpGet": {"path": "/v2/health/live", "port": "http"},
            "periodSeconds": 5,
            "failureThreshold": 120,
        },
        "readinessProbe": {
            "httpGet": {"path": "/v2/health/ready", "port": "http"},
            "periodSeconds": 2,
        },
        "livenessProbe": {
            "httpGet": {"path": "/v2/health/live", "port": "http"},
            "periodSeconds": 10,
        },
    }
    # deregistration, draining, then the gRPC grace and the models' finalize
    grace = math.ceil(DEREGISTER_GRACE_S + 2 * EXIT_TIMEOUT_S) + 10
    # the rendered control plane owns an autoscaling group's replicas: applying the render
    # again must not take them back (a Deployment created without starts at 1, and the
    # control plane sets it at its start)
    autoscaled = options.spec_text is not None and spec.services[service].groups[group].autoscaling
    deployment = _deployment(
        name,
        namespace,
        labels,
        {
            "nodeSelector": _node_selector(spec, options, template, dc, queue_name),
            "terminationGracePeriodSeconds": grace,
            "securityContext": {"runAsNonRoot": True},
            "containers": [container],
            "volumes": volumes,
        },
        replicas=None if autoscaled else template.replicas,
        # one pod at a time, none extra: a full quota or a full GPU pool cannot stall it
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
    )
    ports = _service_ports(http=8000, grpc=8001, metrics=8002)
    # the Service selects the slot's canary pods too
    return [deployment, _service(name, namespace, slot_labels, ports, labels=labels)]


def _gateway(
    options: ClusterOptions, service: str, attempts: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A service's gateway: callers that know only its name reach its instances through it;
    ``attempts``: the spec's per interface (timeout_s, hedge)."""
    name = object_name("gateway", service)
    labels = {f"{LABEL}/gateway": _dns(service), f"{LABEL}/component": "gateway"}
    args = [
        "gateway",
        "--service",
        service,
        "--registry",
        registry_url(options),
        "--host",
        "0.0.0.0",
    ]
    if options.gateway_attempt_timeout is not None:
        args += ["--attempt-timeout", f"{options.gateway_attempt_timeout:g}"]
    for interface, rule in (attempts or {}).items():
        timeout = rule.get("timeout_s", "auto")
        if timeout is False:  # YAML's reading of a bare off
            timeout = "off"
        value = timeout if isinstance(timeout, str) else f"{timeout:g}"
        hedge = ",hedge" if rule.get("hedge") else ""
        args += ["--interface-attempts", f"{interface}={value}{hedge}"]
    container = {
        "name": "gateway",
        "image": options.image,
        "command": ["modelyard"],
        "args": args,
        "ports": [{"name": "http", "containerPort": 8000}, {"name": "grpc", "containerPort": 8001}],
        "readinessProbe": {"httpGet": {"path": "/v2/health/ready", "port": "http"}},
        "livenessProbe": {"httpGet": {"path": "/v2/health/live", "port": "http"}},
        "lifecycle": {"preStop": {"sleep": {"seconds": GATEWAY_PRESTOP_S}}},
        "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "2", "memory": "2Gi"},
        },
    }
    pod = {
        # the preStop wait, then requests in flight (the client's 30 s at most)
        "terminationGracePeriodSeconds": GATEWAY_PRESTOP_S + GATEWAY_CLIENT_TIMEOUT_S + 5,
        "securityContext": {"runAsNonRoot": True},
        "containers": [container],
    }
    ports = _service_ports(http=8000, grpc=8001)
    return [
        _deployment(name, options.namespace, labels, pod, replicas=2),
        _service(name, options.namespace, labels, ports, labels=labels),
    ]


def _etcd(options: ClusterOptions) -> list[dict[str, Any]]:
    """etcd for the registry and the central rules: 1 or 3 members, each with its volume."""
    namespace = options.namespace
    members = options.etcd_replicas
    peers = f"{ETCD_SERVICE}-peer"
    labels = {f"{LABEL}/component": "etcd"}
    cluster = ",".join(
        f"{ETCD_SERVICE}-{i}=http://{ETCD_SERVICE}-{i}.{peers}.{namespace}.svc:2380"
        for i in range(members)
    )
    # etcd's images have no shell: Kubernetes itself expands $(POD_NAME) in the arguments
    command = [
        "etcd", "--name=$(POD_NAME)", "--data-dir=/var/lib/etcd",
        "--listen-client-urls=http://0.0.0.0:2379",
        f"--advertise-client-urls=http://$(POD_NAME).{peers}.{namespace}.svc:2379",
        "--listen-peer-urls=http://0.0.0.0:2380",
        f"--initial-advertise-peer-urls=http://$(POD_NAME).{peers}.{namespace}.svc:2380",
        f"--initial-cluster={cluster}", "--initial-cluster-state=new",
    ]  # fmt: skip
    return [
        _service(
            peers,
            namespace,
            labels,
            [{"name": "peer", "port": 2380}, {"name": "client", "port": 2379}],
            clusterIP="None",
            publishNotReadyAddresses=True,
        ),
        _service(ETCD_SERVICE, namespace, labels, [{"name": "client", "port": 2379}]),
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": ETCD_SERVICE, "namespace": namespace, "labels": dict(labels)},
            "spec": {
                "serviceName": peers,
                "replicas": members,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "containers": [
                            {
                                "name": "etcd",
                                "image": ETCD_IMAGE,
                                "command": command,
                                "env": [
                                    {
                                        "name": "POD_NAME",
                                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                    }
                                ],
                                "ports": [
                                    {"name": "client", "containerPort": 2379},
                                    {"name": "peer", "containerPort": 2380},
                                ],
                                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/etcd"}],
                                "resources": {
                                    "requests": {"cpu": "500m", "memory": "1Gi"},
                                    "limits": {"cpu": "2", "memory": "2Gi"},
                                },
                            }
                        ]
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "8Gi"}},
                        },
                    }
                ],
            },
        },
    ]
