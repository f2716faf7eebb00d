"""Kubernetes manifests for many machines: a Deployment and a Service per
service / group / template / data centre.

Resources come from the instance spec (cores, memory, ``nvidia.com/gpu`` for
cards); node selection comes from the queue (data centre, pool, GPU model);
each pod runs ``modelyard serve`` registered under its service, group and
queue, so callers find it by service name and model.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from modelyard.control.spec import PlatformSpec

LABEL = "modelyard.io"


def _dns(text: str) -> str:
    """An RFC 1123 name: lower case, digits and '-', at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:63].rstrip("-")


def _object_name(service: str, group: str, template: str, data_center: str) -> str:
    """A Deployment's and Service's name: readable, DNS-safe and unique for its identity.

    The whole service name goes in (``com.teama.ranker`` and ``com.teamb.ranker`` must not
    share a Deployment), and a hash of the exact identity follows it: folding names into
    DNS labels can make two identities read the same, and a long one is cut.
    """
    identity = "\0".join((service, group, template, data_center)).encode()
    digest = hashlib.sha256(identity).hexdigest()[:8]
    # begins with a letter, as a Service's name must: validate holds service names to
    # reverse-DNS keys, and render takes only a spec that passes it
    readable = _dns(f"{service}-{group}-{template}-{data_center}")[:54].rstrip("-")
    return f"{readable}-{digest}"


def render(
    spec: PlatformSpec,
    *,
    image: str = "modelyard:latest",
    registry_url: str = "etcd://etcd.modelyard.svc:2379",
    repository: str = "/models",
) -> list[dict[str, Any]]:
    manifests: list[dict[str, Any]] = []
    for service in spec.services.values():
        for group in service.groups.values():
            for template in group.templates.values():
                if template.spec is None:
                    continue
                for dc, queue_name in sorted(template.queues.items()):
                    queue = spec.queues.get(queue_name)
                    name = _object_name(service.name, group.name, template.name, dc)
                    labels = {
                        f"{LABEL}/service": _dns(service.name),
                        f"{LABEL}/group": _dns(group.name),
                        f"{LABEL}/template": _dns(template.name),
                        f"{LABEL}/data-center": _dns(dc),
                    }
                    selector = {f"{LABEL}/data-center": _dns(dc)}
                    if queue is not None:
                        selector[f"{LABEL}/pool"] = _dns(queue.pool)
                    resources: dict[str, str] = {
                        "cpu": str(template.spec.cpu_cores),
                        "memory": f"{template.spec.memory_gb}Gi",
                    }
                    if template.spec.cards:
                        resources["nvidia.com/gpu"] = str(template.spec.cards)
                        selector["nvidia.com/gpu.product"] = _dns(template.spec.gpu_model or "")
                    args = [
                        "serve", "--model-repository", repository, "--host", "0.0.0.0",
                        "--service", service.name, "--group", group.name,
                        "--registry", registry_url, "--data-center", dc,
                        "--queue", queue_name, "--spec", str(template.spec),
                        "--model-control-mode", "explicit",
                    ]  # fmt: skip
                    for model in template.loads:
                        args += ["--load-model", model]
                    container = {
                        "name": "modelyard",
                        "image": image,
                        "command": ["modelyard"],
                        "args": args,
                        "ports": [
                            {"name": "http", "containerPort": 8000},
                            {"name": "grpc", "containerPort": 8001},
                            {"name": "metrics", "containerPort": 8002},
                        ],
                        "resources": {"requests": dict(resources), "limits": dict(resources)},
                        "readinessProbe": {
                            "httpGet": {"path": "/v2/health/ready", "port": "http"},
                            "periodSeconds": 2,
                        },
                        "livenessProbe": {
                            "httpGet": {"path": "/v2/health/live", "port": "http"},
                            "periodSeconds": 10,
                        },
                    }
                    manifests.append(
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "metadata": {"name": name, "labels": dict(labels)},
                            "spec": {
                                "replicas": template.replicas,
                                "selector": {"matchLabels": dict(labels)},
                                "template": {
                                    "metadata": {"labels": dict(labels)},
                                    "spec": {
                                        "nodeSelector": selector,
                                        "terminationGracePeriodSeconds": 30,
                                        "containers": [container],
                                    },
                                },
                            },
                        }
                    )
                    manifests.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Service",
                            "metadata": {"name": name, "labels": dict(labels)},
                            "spec": {
                                "selector": dict(labels),
                                "ports": [
                                    {"name": "http", "port": 8000, "targetPort": "http"},
                                    {"name": "grpc", "port": 8001, "targetPort": "grpc"},
                                    {"name": "metrics", "port": 8002, "targetPort": "metrics"},
                                ],
                            },
                        }
                    )
    return manifests
