"""modelyard: serve discriminative models behind the KServe V2 (Triton) API."""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from modelyard import __version__
from modelyard.errors import ModelyardError


def _examples_build(args: argparse.Namespace) -> int:
    from modelyard.examples.build import build_example_repository

    names = build_example_repository(args.directory)
    print(f"built {len(names)} models in {args.directory}: {', '.join(names)}")
    return 0


DEMO_SERVICE = "com.example.demo"
DEMO_LIMIT = 100  # requests/s per instance on infer: a burst shows a refusal


async def _demo_rules(registry: str) -> int | None:
    """The demo's starting governance: central rules (revision 1) limiting infer per instance,
    written once, so a newcomer sees a refusal, its line, and where to change it. None when
    the service already has central rules (an earlier run, or the user's own)."""
    from modelyard.discovery.rules_store import open_rules_store
    from modelyard.governance.rules_document import commit_change

    store = open_rules_store(registry)
    try:
        if await store.get(DEMO_SERVICE) is not None:
            return None
        rules = {"limits": {"infer": {"instance_qps": DEMO_LIMIT, "burst_seconds": 1}}}
        _, written = await commit_change(
            store, DEMO_SERVICE, lambda _: rules, author="modelyard demo",
            action="the demo's starting rules",
        )  # fmt: skip
        return written.revision if written else None
    finally:
        await store.aclose()


def _demo(args: argparse.Namespace) -> int:
    """Build the examples if missing, then run the example platform on this machine."""
    import asyncio
    from importlib import resources

    from modelyard.cli.platform_up import IRIS_BODY, run_up
    from modelyard.control.apply import default_registry
    from modelyard.examples.build import build_example_repository

    repository: Path = args.model_repository
    if not repository.exists():
        names = build_example_repository(repository)
        print(f"built the example repository in {repository}: {', '.join(names)}")
    spec_file = args.state / "platform.yaml"
    if not spec_file.exists():
        args.state.mkdir(parents=True, exist_ok=True)
        packaged = resources.files("modelyard.examples").joinpath("demo-platform.yaml")
        spec_file.write_text(packaged.read_text("utf-8"))
    args.file = spec_file
    args.state.mkdir(parents=True, exist_ok=True)
    registry = args.registry or default_registry(args.state)
    asyncio.run(_demo_rules(registry))

    def banner(plane: object, args: argparse.Namespace, summary: str) -> str:
        port = args.gateway_port
        return (
            f"{summary}\ntry the gateway (callers name only the model):\n"
            f"  curl -s localhost:{port}/v2/models/iris_sklearn/infer -d '{IRIS_BODY}'\n"
            f"governance: the service's central rules limit infer to {DEMO_LIMIT} requests/s "
            "per instance; go over it to see what refused you and where to change it (the "
            "bench prints each rule's count and its first line), then raise the limit:\n"
            f"  modelyard bench --url localhost:{port} --model iris_sklearn --rate 300 "
            "--duration 3 --warmup 0 --no-progress\n"
            f"  modelyard rules get {DEMO_SERVICE} --registry {registry}\n"
            f"  modelyard rules set {DEMO_SERVICE} limits.infer.instance_qps 500 "
            f"--registry {registry}\n"
            f"edit {spec_file} and run modelyard platform plan/apply --state {args.state}, "
            "or watch the console (its governance view lists each refusal with its line)\n"
        )

    return run_up(args, banner)


# name, help, the module that owns its arguments and runs it: a command's module is
# imported only when that command is the one asked for, so ``modelyard --help`` and an
# unknown command answer without loading numpy, the server or the client
COMMANDS = [
    ("serve", "serve a Triton-layout model repository", "serve_flags"),
    (
        "gateway",
        "the V2 HTTP and gRPC API in front of a service found in a registry",
        "gateway_flags",
    ),
    ("bench", "load generator: closed-loop sweep or open-loop fixed rate", "bench"),
    ("rules", "governance rules: live on an instance, or central in the registry", "governance"),
    ("explain", "why a request was refused: the rule, its numbers, how to change it", "explain"),
    ("instances", "list the live instances of a service", "instances"),
    (
        "optimize",
        "write an FP16 / INT8 variant of an ONNX model, with an accuracy report",
        "optimize",
    ),
    ("tune", "sweep instances, batch size and queue delay; recommend within a p99 SLO", "tune"),
    (
        "platform",
        "control plane: spec, ledger, plan / apply, releases, the control plane and console",
        "platform",
    ),
    ("auth", "API keys: hash one, or generate one", "governance"),
]
DEMO_HELP = (
    "the example platform on this machine: build the examples (if missing), launch a CPU "
    "pre-processing group and a GPU group, a gateway and the console"
)
# each command's functions in its module: add_<name>_arguments and run_<name>
_FUNCTIONS = {"platform": ("add_platform_arguments", "run_platform")}
# the commands whose arguments' module is a light one of its own: the module that runs
# them, imported once the arguments are read (an argument error loads no server)
_RUNS_IN = {"serve": "serve", "gateway": "gateway"}
ALL = "*"


def _command_functions(name: str, module: str) -> tuple[Any, Any]:
    imported = importlib.import_module(f"modelyard.cli.{module}")
    add, run = _FUNCTIONS.get(name, (f"add_{name}_arguments", f"run_{name}"))
    if name in _RUNS_IN:
        return getattr(imported, add), functools.partial(_run_in, _RUNS_IN[name], run)
    return getattr(imported, add), getattr(imported, run)


def _run_in(module: str, function: str, args: argparse.Namespace) -> int:
    run = getattr(importlib.import_module(f"modelyard.cli.{module}"), function)
    return int(run(args))


def build_parser(command: str | None = ALL) -> argparse.ArgumentParser:
    """The command line; ``command``: the one command whose arguments are read (the others
    are listed with their help only), ``ALL`` for every command's, None for none."""
    parser = argparse.ArgumentParser(prog="modelyard", description=__doc__)
    parser.add_argument("--version", action="version", version=f"modelyard {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text, module in COMMANDS:
        sub = commands.add_parser(name, help=text)
        if command in (ALL, name):
            add_arguments, handler = _command_functions(name, module)
            add_arguments(sub)
            sub.set_defaults(handler=handler)

    demo = commands.add_parser("demo", help=DEMO_HELP)
    if command in (ALL, "demo"):
        _add_demo_arguments(demo)

    examples = commands.add_parser("examples", help="example model repositories")
    example_commands = examples.add_subparsers(dest="example_command", required=True)
    build = example_commands.add_parser("build", help="train and write the example models")
    build.add_argument("directory", type=Path)
    build.set_defaults(handler=_examples_build)
    return parser


def _add_demo_arguments(demo: argparse.ArgumentParser) -> None:
    from modelyard.cli.platform_up import add_up_arguments

    add_up_arguments(demo)
    demo.set_defaults(
        handler=_demo,
        model_repository=Path("model_repository"),
        state=Path("modelyard-demo"),
        gateway_grpc_port=8001,
    )
    for action in demo._actions:
        if action.dest in ("state", "file"):
            action.required = False
            action.help = argparse.SUPPRESS if action.dest == "file" else action.help


def _chosen(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word (the top level's options take no value)."""
    for word in argv:
        if not word.startswith("-"):
            return word
        if word in ("-h", "--help", "--version"):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(_chosen(words)).parse_args(words)
    return run_command(args.handler, args)


def run_command(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """A command's exit status: its own, 1 with the error line on stderr, 130 on Ctrl-C."""
    try:
        return int(handler(args))
    except ModelyardError as error:
        print(error.line(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
