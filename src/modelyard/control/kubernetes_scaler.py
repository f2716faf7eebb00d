"""The control plane's hands on a cluster: a template's replicas become its Deployments' scale.

On a cluster the Deployments ``platform render kubernetes`` made run the
instances and heal them; the control plane only decides how many. A template's
replicas are per data centre, as on one machine, so a decision of N patches
the ``scale`` subresource of each of the template's Deployments to N
(``kubernetes_apply.scale_request``), in its quota's namespace, under the name
the render gave it, under a field manager of its own. ``replicas`` reads what
the Deployments hold now, so a control plane that starts without them in its
state (a first start, a claim replaced) adopts the cluster's replicas instead of
resetting them. A data centre declared lost sets each Deployment on its own
(``scale_deployments``): none in the lost place, the replacements in the others.
"""

from __future__ import annotations

from typing import Any

from modelyard.control.kubernetes import ClusterOptions, deployment_name, quota_namespace
from modelyard.control.kubernetes_apply import (
    SCALE_TIMEOUT,
    ApiRequest,
    fetch,
    read_scale_request,
    scale_request,
    send,
)
from modelyard.control.spec import Group, PlatformSpec


def group_deployments(
    spec: PlatformSpec,
    options: ClusterOptions,
    service: str,
    group: Group,
    template: str | None = None,
) -> list[tuple[str, str]]:
    """The namespace and name of each of the template's Deployments (one per data centre;
    each template's, for ``None``), as the render names them."""
    namespace = quota_namespace(options, spec.services[service].quota)
    return [
        (namespace, deployment_name(service, group.name, chosen.name, dc))
        for chosen in group.templates.values()
        if chosen.spec is not None and template in (None, chosen.name)
        for dc in sorted(chosen.queues)
    ]


def group_scale_requests(
    spec: PlatformSpec,
    options: ClusterOptions,
    service: str,
    group: Group,
    replicas: int,
    template: str | None = None,
) -> list[ApiRequest]:
    """The scale patches that give each of the template's Deployments ``replicas`` pods."""
    return [
        scale_request(namespace, name, replicas)
        for namespace, name in group_deployments(spec, options, service, group, template)
    ]


class DeploymentScaler:
    """Scales groups through an ``ApiClient`` (the official client's; its service account
    in a pod, a kubeconfig elsewhere)."""

    def __init__(self, options: ClusterOptions, client: Any) -> None:
        self.options = options
        self.client = client

    def scale(
        self,
        spec: PlatformSpec,
        service: str,
        group: Group,
        replicas: int,
        template: str | None = None,
    ) -> list[str]:
        requests = group_scale_requests(spec, self.options, service, group, replicas, template)
        # a Deployment not applied yet (a new template or data centre) is skipped, not fatal
        return send(self.client, requests, SCALE_TIMEOUT, missing_ok=True)

    def scale_deployments(
        self, spec: PlatformSpec, counts: dict[tuple[str, str, str, str], int]
    ) -> list[str]:
        """Each Deployment to its own count (a data centre lost, its replacements placed)."""
        requests = [
            scale_request(
                quota_namespace(self.options, spec.services[service].quota),
                deployment_name(service, group, template, dc),
                count,
            )
            for (service, group, template, dc), count in sorted(counts.items())
        ]
        return send(self.client, requests, SCALE_TIMEOUT, missing_ok=True)

    def replicas(
        self, spec: PlatformSpec, service: str, group: Group, template: str | None = None
    ) -> list[int | None]:
        """What each of the template's Deployments holds now (None: it does not exist yet)."""
        counts: list[int | None] = []
        for namespace, name in group_deployments(spec, self.options, service, group, template):
            answer = fetch(self.client, read_scale_request(namespace, name))
            replicas = (answer or {}).get("spec", {}).get("replicas")
            counts.append(replicas if isinstance(replicas, int) else None)
        return counts
