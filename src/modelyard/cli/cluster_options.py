"""The flags that say where a platform runs on a cluster (``platform render`` and
``platform apply --target kubernetes``), and the ``ClusterOptions`` they give."""

from __future__ import annotations

import argparse
from pathlib import Path

from modelyard import error_rules
from modelyard.control.kubernetes import GPU_PRODUCTS, ClusterOptions
from modelyard.errors import ConfigError
from modelyard.governance.service_config import read_service_config
from modelyard.yaml_lines import read_text


def add_cluster_arguments(parser: argparse.ArgumentParser, registry: bool = True) -> None:
    """``registry``: add ``--registry`` too (a parser that has its own says no)."""
    parser.add_argument("--image", default="modelyard:latest")
    parser.add_argument("--namespace", default="modelyard", help="the shared parts' one")
    if registry:
        parser.add_argument(
            "--registry",
            default=None,
            help="an external etcd (etcd://HOST:PORT); default: render one",
        )
    parser.add_argument("--etcd-replicas", type=int, choices=[1, 3], default=1)
    models = parser.add_mutually_exclusive_group()
    models.add_argument("--models-claim", metavar="PVC", help="the model repository's claim")
    models.add_argument("--models-image", metavar="REF", help="an OCI image holding the models")
    parser.add_argument(
        "--gpu-product",
        action="append",
        default=[],
        metavar="MODEL=VALUE",
        help="the node label value of a spec GPU model (GPU Feature Discovery's "
        "nvidia.com/gpu.product, e.g. A30-24G=NVIDIA-A30); repeatable",
    )
    parser.add_argument(
        "--service-file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a service's file (its governance), given to its pods as a ConfigMap, or as a "
        "Secret where it sets auth; repeatable",
    )
    parser.add_argument(
        "--control-auth-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="a service file whose auth.principals guard the control API and console, "
        "given to the control plane as a Secret",
    )
    parser.add_argument(
        "--control-state-size",
        default="1Gi",
        metavar="QUANTITY",
        help="the size of the control plane's state claim (events, releases, replicas), a "
        "Kubernetes quantity such as 1Gi",
    )
    parser.add_argument(
        "--gateway-attempt-timeout",
        type=float,
        default=None,
        metavar="SECS",
        help="the gateways try another instance when one gives no answer in SECS (a dead "
        "node or a cut link); set it above the slowest model's answer; default: off",
    )
    for key, default in (
        ("data-center", "modelyard.io/data-center"),
        ("pool", "modelyard.io/pool"),
        ("gpu-product", "nvidia.com/gpu.product"),
    ):
        parser.add_argument(
            f"--{key}-label", default=default, metavar="KEY", help="the node label that says it"
        )


def cluster_options(args: argparse.Namespace) -> ClusterOptions:
    products = dict(GPU_PRODUCTS)
    for entry in args.gpu_product:
        model, _, value = entry.partition("=")
        if not model or not value:
            raise ConfigError.of(
                error_rules.RENDER_GPU_PRODUCT, f"--gpu-product {entry}: expected MODEL=VALUE"
            )
        products[model] = value
    files: dict[str, str] = {}
    with_auth: set[str] = set()
    cluster_limits = False
    for path in args.service_file:
        config = read_service_config(path)  # checked as serve checks it: file:line in errors
        files[config.service] = read_text(path, "config/service-file", "--service-file FILE")
        if config.auth.enabled or config.auth.by_digest:
            with_auth.add(config.service)
        cluster_limits = cluster_limits or any(
            "cluster_qps" in rule for rule in config.limits.values() if isinstance(rule, dict)
        )
    control_auth = None
    if args.control_auth_file is not None:
        read_service_config(args.control_auth_file)  # as platform up reads it
        control_auth = read_text(args.control_auth_file, "platform/render", "--control-auth-file")
    return ClusterOptions(
        service_files=files,
        service_files_with_auth=frozenset(with_auth),
        control_auth_file=control_auth,
        control_state_size=args.control_state_size,
        cluster_limits=cluster_limits,
        image=args.image,
        namespace=args.namespace,
        registry_url=args.registry,
        etcd_replicas=args.etcd_replicas,
        models_claim=args.models_claim,
        models_image=args.models_image,
        data_center_label=args.data_center_label,
        pool_label=args.pool_label,
        gpu_product_label=args.gpu_product_label,
        gpu_products=products,
        gateway_attempt_timeout=args.gateway_attempt_timeout,
        # the control plane reads the spec as it was rendered from
        spec_text=read_text(args.file, "platform/render", "-f FILE: the platform spec"),
    )
