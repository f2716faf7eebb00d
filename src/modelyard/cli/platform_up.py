"""``modelyard platform up``: the control plane on this machine, with its API and console."""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from modelyard import error_rules
from modelyard.control.plane import AUTOSCALE_MODES, TARGETS, ControlPlane, PlaneConfig
from modelyard.errors import ConfigError, ModelyardError
from modelyard.logging import configure_logging

log = structlog.get_logger("modelyard.control")

IRIS_BODY = '{"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'


def add_up_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", type=Path, default=Path("platform.yaml"))
    parser.add_argument("--state", type=Path, required=True, metavar="DIR")
    parser.add_argument("--model-repository", type=Path, default=None, metavar="DIR")
    parser.add_argument("--registry", default=None, metavar="URL", help="default: DIR/registry.db")
    parser.add_argument("--host", default="127.0.0.1", help="address of the API and gateways")
    parser.add_argument(
        "--port", type=int, default=7070, help="the control plane's API and console"
    )
    parser.add_argument(
        "--gateway-port",
        type=int,
        default=8000,
        help="HTTP port of the first service's gateway (others: free ports; -1: none)",
    )
    parser.add_argument("--gateway-grpc-port", type=int, default=-1, help="-1: no gRPC")
    parser.add_argument(
        "--autoscale",
        choices=AUTOSCALE_MODES,
        default="on",
        help="on: change replicas; dry-run: only recommend; off: no evaluation",
    )
    parser.add_argument("--autoscale-every", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument(
        "--data-center-lost-after",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="declare a data centre lost (and replace its instances in the others) when none "
        "of its instances answered this long while another's did; 0: only by "
        "'platform dr fail-over'",
    )
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="local",
        help="local: launch the instances and gateways here; kubernetes: beside a rendered "
        "platform, scale its Deployments (needs --registry)",
    )
    parser.add_argument(
        "--namespace",
        default="modelyard",
        help="kubernetes: the render's shared namespace (quota namespaces are named from it)",
    )
    parser.add_argument(
        "--kubeconfig", default=None, help="kubernetes, outside a pod: the cluster's kubeconfig"
    )
    parser.add_argument(
        "--auth-file",
        type=Path,
        default=None,
        help="a service file whose auth.principals guard the API and console "
        "(metadata: read, admin: releases)",
    )
    parser.add_argument(
        "--keep-instances",
        action="store_true",
        help="leave the instances running on exit (platform down stops them)",
    )
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )


def run_up(args: argparse.Namespace, banner: Any = None) -> int:
    configure_logging(args.log_format, args.log_level)
    try:
        asyncio.run(_up(args, banner))
    except ModelyardError as error:
        print(error.line())
        return 1
    return 0


async def _up(args: argparse.Namespace, banner: Any) -> None:
    from modelyard.control.api import make_app

    auth = None
    if args.auth_file is not None:
        from modelyard.governance.service_config import read_service_config

        auth = read_service_config(args.auth_file).auth
    plane = ControlPlane(
        PlaneConfig(
            spec_file=args.file,
            state_dir=args.state,
            model_repository=args.model_repository,
            registry=args.registry,
            host=args.host,
            gateway_port=args.gateway_port,
            gateway_grpc_port=args.gateway_grpc_port,
            autoscale=args.autoscale,
            autoscale_every=args.autoscale_every,
            keep_instances=args.keep_instances,
            data_center_lost_after=args.data_center_lost_after,
            target=args.target,
            namespace=args.namespace,
            kubeconfig=args.kubeconfig,
        )
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    started = False
    runner = web.AppRunner(make_app(plane, auth), access_log=None)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, args.host, args.port).start()
        except OSError as exc:
            raise ConfigError.of(
                error_rules.API_LISTEN,
                f"the control API cannot listen on {args.host}:{args.port}: {exc.strerror}",
            ) from None
        plane.claim()
        started = True
        for line in await plane.start():
            log.info("applied", what=line)
        summary = _summary(plane, args)
        print(summary if banner is None else banner(plane, args, summary), flush=True)
        log.info("control_plane_ready", console=f"http://{args.host}:{args.port}/")
        await stop.wait()
    finally:
        if started:
            for line in await plane.stop():
                log.info("stopped", what=line)
        await runner.cleanup()


def _summary(plane: ControlPlane, args: argparse.Namespace) -> str:
    state = plane.state()
    lines = [
        "",
        f"modelyard platform up: {len(state.instances)} instance(s) of "
        f"{len(plane.spec.services)} service(s) from {args.file}",
    ]
    services: dict[str, list[Any]] = {}
    for gateway in plane.gateways:
        services.setdefault(gateway.service, []).append(gateway)
    for service, processes in services.items():
        first = processes[0]
        grpc = f", gRPC {args.host}:{first.grpc_port}" if first.grpc_port else ""
        serving = [g for g in processes if g.slot >= 0]
        pids = ", ".join(str(g.pid) for g in serving)
        standby = " and one standing by" if len(serving) < len(processes) else ""
        lines.append(
            f"  gateway   {service}: http://{args.host}:{first.http_port}{grpc} "
            f"({len(serving)} processes on the port: pids {pids}{standby})"
        )
    control = f"http://{args.host}:{args.port}"
    lines += [
        f"  console   {control}/",
        f"  ledger    {control}/api/v1/ledger   (or: modelyard platform ledger -f {args.file})",
        f"  status    modelyard platform status --state {args.state}",
        f"  registry  {state.registry}",
        f"  autoscale {args.autoscale} (every {args.autoscale_every:g}s)",
        "",
    ]
    return "\n".join(lines)
