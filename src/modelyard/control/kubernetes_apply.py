"""Applying rendered manifests to a cluster through Kubernetes' official Python client.

Each object is sent with server-side apply: a ``PATCH`` of the whole object to its own
path, ``Content-Type: application/apply-patch+yaml``, ``fieldManager=modelyard`` and
``force=true``, so applying the same render twice changes nothing, and a field another
manager set is taken over only where the render says otherwise. Scaling a Deployment
is a merge patch of its ``scale`` subresource under a field manager of its own
(``modelyard-control-plane``), so the replicas it sets belong to it and a render that
leaves them out does not take them back; ``read_scale_request`` reads them. A release's
requests (``control/kubernetes_release.py``) go under that manager too: canary
Deployments applied and deleted, a Deployment's container patched (a strategic merge,
as ``kubectl patch``), the weights ConfigMap merge-patched.
``apply_requests`` and the request builders are pure (what the tests check); ``send``
hands them to the client's ``ApiClient``, each call bounded in time.
The client is imported only here (``pip install 'modelyard[kubernetes]'``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from modelyard import error_rules
from modelyard.errors import ConfigError

FIELD_MANAGER = "modelyard"
CONTROL_PLANE_MANAGER = "modelyard-control-plane"
# seconds to connect, to read: a hung API server is an error. An apply may wait on the
# cluster's admission webhooks; a scale is quick.
APPLY_TIMEOUT = (3.0, 60.0)
SCALE_TIMEOUT = (3.0, 10.0)
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON = "application/json"

# kind -> its resource name; which ones live in a namespace
_RESOURCES = {
    "Namespace": ("namespaces", False),
    "ResourceQuota": ("resourcequotas", True),
    "Service": ("services", True),
    "ConfigMap": ("configmaps", True),
    "ServiceAccount": ("serviceaccounts", True),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "Secret": ("secrets", True),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True),
    "Deployment": ("deployments", True),
    "StatefulSet": ("statefulsets", True),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
}


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One call to the cluster's API: what the client sends."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    content_type: str
    body: dict[str, Any]


def object_path(manifest: dict[str, Any]) -> str:
    """The API path of the object a manifest describes."""
    kind = manifest.get("kind")
    if kind not in _RESOURCES:
        raise ConfigError.of(error_rules.KUBERNETES_KIND, f"no API path is known for kind {kind!r}")
    plural, namespaced = _RESOURCES[kind]
    api_version = manifest["apiVersion"]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    name = manifest["metadata"]["name"]
    if namespaced:
        return f"{base}/namespaces/{manifest['metadata']['namespace']}/{plural}/{name}"
    return f"{base}/{plural}/{name}"


def apply_requests(manifests: list[dict[str, Any]]) -> list[ApiRequest]:
    """The server-side applies of a render, namespaces first (the rest lives in them)."""
    ordered = sorted(manifests, key=lambda m: m["kind"] != "Namespace")
    query = (("fieldManager", FIELD_MANAGER), ("force", "true"))
    return [ApiRequest("PATCH", object_path(m), query, APPLY_PATCH, m) for m in ordered]


def _scale_path(namespace: str, deployment: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}/scale"


def scale_request(namespace: str, deployment: str, replicas: int) -> ApiRequest:
    """Scale a Deployment: a merge patch of its scale subresource."""
    return ApiRequest("PATCH", _scale_path(namespace, deployment),
                      (("fieldManager", CONTROL_PLANE_MANAGER),), MERGE_PATCH,
                      {"spec": {"replicas": replicas}})  # fmt: skip


def read_scale_request(namespace: str, deployment: str) -> ApiRequest:
    """A Deployment's scale: its replicas now."""
    return read_request(_scale_path(namespace, deployment))


def deployment_path(namespace: str, deployment: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}"


def read_request(path: str) -> ApiRequest:
    return ApiRequest("GET", path, (), JSON, {})


def control_plane_apply_request(manifest: dict[str, Any]) -> ApiRequest:
    """A server-side apply of an object the control plane owns (a canary Deployment)."""
    query = (("fieldManager", CONTROL_PLANE_MANAGER), ("force", "true"))
    return ApiRequest("PATCH", object_path(manifest), query, APPLY_PATCH, manifest)


def container_args_request(
    namespace: str, deployment: str, container: str, args: list[str]
) -> ApiRequest:
    """A Deployment's container with new arguments: a rolling update of its pods."""
    body = {"spec": {"template": {"spec": {"containers": [{"name": container, "args": args}]}}}}
    return ApiRequest("PATCH", deployment_path(namespace, deployment),
                      (("fieldManager", CONTROL_PLANE_MANAGER),), STRATEGIC_MERGE_PATCH,
                      body)  # fmt: skip


def config_map_data_request(namespace: str, name: str, data: dict[str, str | None]) -> ApiRequest:
    """Keys of a ConfigMap set (a string) or removed (None): a merge patch."""
    return ApiRequest("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/{name}",
                      (("fieldManager", CONTROL_PLANE_MANAGER),), MERGE_PATCH,
                      {"data": data})  # fmt: skip


def delete_request(path: str) -> ApiRequest:
    """Delete an object; its pods go with it (in the background)."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    return ApiRequest("DELETE", path, (), JSON, body)


def api_client(kubeconfig: str | None = None) -> Any:
    """The official client's ApiClient: in a pod, its service account; else a kubeconfig."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise ConfigError.of(
            error_rules.KUBERNETES_CLIENT_MISSING, "Kubernetes' Python client is not installed"
        ) from None
    if kubeconfig is not None:  # named: it wins over the pod's own account
        config.load_kube_config(config_file=kubeconfig)
        return client.ApiClient()
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.ApiClient()


def send(
    client: Any,
    requests: list[ApiRequest],
    timeout: tuple[float, float] = APPLY_TIMEOUT,
    missing_ok: bool = False,
) -> list[str]:
    """Send each request through an ``ApiClient``; one line per object, as it answered.
    Stops at the first refusal, with the cluster's status and reason (``missing_ok``: an
    object that does not exist yet is a line, not a refusal)."""
    lines = []
    for request in requests:
        status, _ = _call(client, request, timeout, missing_ok)
        if status == 404:
            lines.append(f"not there yet: {request.path} (404)")
        else:
            lines.append(f"applied {request.path} ({status})")
    return lines


def fetch(client: Any, request: ApiRequest) -> dict[str, Any] | None:
    """One request's answer, as JSON; None when the object does not exist (404)."""
    status, answer = _call(client, request, SCALE_TIMEOUT, missing_ok=True)
    return None if status == 404 else answer


def _call(
    client: Any, request: ApiRequest, timeout: tuple[float, float], missing_ok: bool = False
) -> tuple[int, dict[str, Any]]:
    method, url, headers, body, _ = client.param_serialize(
        request.method,
        request.path,
        query_params=list(request.query),
        header_params={"Content-Type": request.content_type, "Accept": "application/json"},
        body=request.body if request.method != "GET" else None,
        auth_settings=["BearerToken"],
    )
    try:
        response = client.call_api(
            method, url, header_params=headers, body=body, _request_timeout=timeout
        )
        data = response.read()
    except Exception as exc:  # urllib3's timeouts and connection errors
        raise ConfigError.of(
            error_rules.KUBERNETES_UNREACHABLE,
            f"the cluster did not answer {request.method} {request.path}: "
            f"{type(exc).__name__}: {exc}",
        ) from None
    if missing_ok and response.status == 404:
        return 404, {}
    if not 200 <= response.status < 300:
        raise ConfigError.of(
            error_rules.KUBERNETES_REFUSED,
            f"the cluster refused {request.method} {request.path}: {response.status} "
            f"{response.reason}",
        )
    try:
        answer = json.loads(data) if data else {}
    except ValueError:
        answer = {}
    return response.status, answer if isinstance(answer, dict) else {}
