"""A version's instances load at once (server/instance_loading.py), as Triton creates a
model's instances: the first until its config is complete, then the others beside the
rest of it; engines in instance order; a failure fails the load with the last one's error
once every instance that loaded is unloaded again."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from modelyard.engines import Engine, LoadContext, Signature
from modelyard.errors import ModelyardError
from modelyard.modelfiles.config import read_model_config
from modelyard.server.instance_loading import Loaded, load_instances
from modelyard.server.model_version import ModelVersion, load_model_version
from tests.support.models import write_python_model

WAIT_S = 5.0  # what a rendezvous waits at most: far more than it takes when loads overlap


class FakeEngine(Engine):
    """Records its load and unload; ``index`` is its instance's."""

    name = "fake"
    extra = "all"
    default_filenames = ()

    def __init__(self, index: int) -> None:
        self.index = index
        self.unloaded = False

    def load(self, ctx: LoadContext) -> Signature | None:
        return None

    def execute(self, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        return {}

    def unload(self) -> None:
        self.unloaded = True


class Loads:
    """The loads of one version's instances: each index's engine, and what happened."""

    def __init__(self, step: Callable[[int, Callable[[], None] | None], None]) -> None:
        self.step = step
        self.engines: dict[int, FakeEngine] = {}
        self.events: list[str] = []
        self.lock = threading.Lock()

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def __call__(self, index: int, config_complete: Callable[[], None] | None) -> Loaded:
        self.note(f"start {index}")
        self.step(index, config_complete)
        engine = self.engines[index] = FakeEngine(index)
        self.note(f"end {index}")
        return engine, None


def indexes(engines: list[Engine]) -> list[int]:
    return [engine.index for engine in engines if isinstance(engine, FakeEngine)]


def no_warm_up(signature: Signature | None) -> Callable[[Engine, int], None]:
    return lambda engine, index: None


def test_the_others_load_beside_the_first_once_its_config_is_complete() -> None:
    """Three instances that each wait at a barrier until all three are loading: it only
    opens if they load at the same time; the first reached it after completing its config."""
    barrier = threading.Barrier(3, timeout=WAIT_S)

    def step(index: int, config_complete: Callable[[], None] | None) -> None:
        assert (config_complete is not None) == (index == 0)
        if config_complete is not None:
            config_complete()
        barrier.wait()

    loads = Loads(step)
    engines = load_instances(3, loads, no_warm_up, completes_early=True, model="m")
    assert indexes(engines) == [0, 1, 2]


def test_an_engine_that_describes_its_file_completes_the_config_when_its_load_ends() -> None:
    """Its signature completes the config: no other instance starts before it has."""
    signature = Signature(inputs=[], outputs=[])
    seen: list[Signature | None] = []

    def complete(described: Signature | None) -> Callable[[Engine, int], None]:
        seen.append(described)
        return lambda engine, index: None

    def load(index: int, config_complete: Callable[[], None] | None) -> Loaded:
        assert config_complete is None  # an engine that describes its file is never offered it
        loads.note(f"start {index}")
        time.sleep(0.05 if index == 0 else 0)
        loads.note(f"end {index}")
        return FakeEngine(index), signature if index == 0 else None

    loads = Loads(lambda index, complete: None)
    engines = load_instances(3, load, complete, completes_early=False, model="m")
    assert loads.events[:2] == ["start 0", "end 0"]
    assert seen == [signature]
    assert len(engines) == 3


def test_engines_come_back_in_instance_order_whatever_order_their_loads_end_in() -> None:
    """The scheduler's instance N is the Nth placement's (its device, its rate limiter)."""

    def step(index: int, config_complete: Callable[[], None] | None) -> None:
        if config_complete is not None:
            config_complete()
        time.sleep(0.03 * (3 - index))  # the last ends first

    loads = Loads(step)
    engines = load_instances(4, loads, no_warm_up, completes_early=True, model="m")
    assert indexes(engines) == [0, 1, 2, 3]
    ends = [event for event in loads.events if event.startswith("end")]
    assert ends[0] != "end 0"  # they did end in another order


def test_a_failed_instance_fails_the_load_with_the_last_failure_and_the_others_are_unloaded() -> (
    None
):
    """As Triton: every instance's creation is waited for, each failure logged in its words,
    the last one's error is the load's; the instances that loaded are released."""

    def step(index: int, config_complete: Callable[[], None] | None) -> None:
        if config_complete is not None:
            config_complete()
        time.sleep(0.02)
        if index in (1, 3):
            raise RuntimeError(f"instance {index} cannot start")

    loads = Loads(step)
    with capture_logs() as logs, pytest.raises(RuntimeError, match="instance 3 cannot start"):
        load_instances(5, loads, no_warm_up, completes_early=True, model="m")
    assert sorted(loads.engines) == [0, 2, 4]
    assert all(engine.unloaded for engine in loads.engines.values())
    failed = [entry for entry in logs if entry["event"] == "model_instance_load_failed"]
    assert [entry["instance"] for entry in failed] == [1, 3]
    assert failed[0]["triton"] == "Failed to create instance: instance 1 cannot start"
    assert all(entry["model"] == "m" for entry in failed)


def test_a_config_that_cannot_complete_fails_the_load_before_any_other_instance_starts() -> (
    None
):
    def complete(described: Signature | None) -> Callable[[Engine, int], None]:
        raise ValueError("the config cannot be completed")

    def step(index: int, config_complete: Callable[[], None] | None) -> None:
        if config_complete is not None:
            config_complete()
        time.sleep(0.05)  # the rest of the first's load: waited for, then it is unloaded

    loads = Loads(step)
    with pytest.raises(ValueError, match="cannot be completed"):
        load_instances(3, loads, complete, completes_early=True, model="m")
    assert list(loads.engines) == [0]
    assert loads.engines[0].unloaded


def test_a_first_instance_that_fails_before_completing_starts_no_other() -> None:
    def step(index: int, config_complete: Callable[[], None] | None) -> None:
        raise OSError("no such file")

    loads = Loads(step)
    with pytest.raises(OSError, match="no such file"):
        load_instances(3, loads, no_warm_up, completes_early=True, model="m")
    assert loads.events == ["start 0"]


def test_each_instance_warms_up_once_loaded_and_one_that_fails_to_is_unloaded() -> None:
    warmed: list[int] = []

    def complete(described: Signature | None) -> Callable[[Engine, int], None]:
        def warm_up(engine: Any, index: int) -> None:
            assert index == engine.index  # each warms up as the instance it is
            if engine.index == 2:
                raise RuntimeError("warm-up of instance 2 failed")
            warmed.append(engine.index)

        return warm_up

    loads = Loads(lambda index, config_complete: None)
    with pytest.raises(RuntimeError, match="warm-up of instance 2"):
        load_instances(3, loads, complete, completes_early=False, model="m")
    assert sorted(warmed) == [0, 1]
    assert all(engine.unloaded for engine in loads.engines.values())


# -- real python models: Triton's (each instance a process of its own) and modelyard's ---

# initialize waits until every instance is in its initialize (a file each in the model's
# folder): it only returns if they initialize at the same time; then it records the config
# it was given; instance FAIL's raises instead (after the others arrived)
RENDEZVOUS = """
import json
import os
import time
from pathlib import Path

{imports}


class {cls}:
    {auto_complete}

    def initialize(self, args):
        folder = Path(args["model_repository"])
        index = args["instance_index"]
        (folder / f"pid-{{index}}").write_text(str(os.getpid()))
        (folder / f"started-{{index}}").touch()
        deadline = time.monotonic() + 10
        while len(list(folder.glob("started-*"))) < {count}:
            if time.monotonic() > deadline:
                raise RuntimeError(f"instance {{index}} initialized alone")
            time.sleep(0.005)
        if index == "{fail}":
            raise RuntimeError(f"instance {{index}} refuses to start")
        (folder / f"config-{{index}}.json").write_text(args["model_config"])
        self.folder, self.index = folder, index

    def execute(self, {execute_args}):
        {execute_body}

    def finalize(self):
        (self.folder / f"finalized-{{self.index}}").touch()
"""

# the models echo X as Y (these tests only load them)
TRITON_ECHO = (
    "return [pb_utils.InferenceResponse([pb_utils.Tensor("
    '"Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())]) for r in requests]'
)

AUTO_COMPLETE = """@staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [2]})
        config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [2]})
        config.set_max_batch_size(4)
        return config
"""


def _python_model(tmp_path: Path, triton: bool, count: int, fail: int = -1) -> Path:
    source = RENDEZVOUS.format(
        imports="import triton_python_backend_utils as pb_utils" if triton else "",
        cls="TritonPythonModel" if triton else "Model",
        auto_complete=AUTO_COMPLETE if triton else "",
        count=count,
        fail=fail,
        execute_args="requests" if triton else "inputs",
        execute_body=TRITON_ECHO if triton else 'return {"Y": inputs["X"]}',
    )
    config = f'backend: "python"\ninstance_group [{{ count: {count} kind: KIND_CPU }}]\n'
    if not triton:
        config += (
            'max_batch_size: 4\ninput [{ name: "X" data_type: TYPE_FP32 dims: [ 2 ] }]\n'
            'output [{ name: "Y" data_type: TYPE_FP32 dims: [ 2 ] }]\n'
        )
    return write_python_model(tmp_path, "rendezvous", source, config)


def _load(model_dir: Path) -> ModelVersion:
    config = read_model_config(model_dir)
    return load_model_version(model_dir, 1, config, "python")


@pytest.mark.parametrize("triton", [True, False])
def test_a_python_model_s_instances_initialize_at_once_with_the_completed_config(
    tmp_path: Path, triton: bool
) -> None:
    """Triton's python model runs auto_complete_config once, and each instance (a process
    of its own) initializes with the config it completed, at the same time as the others;
    a modelyard model's instances too (threads of the server)."""
    model_dir = _python_model(tmp_path, triton, count=3)
    version = _load(model_dir)
    try:
        assert len(version.engines) == 3
        for index in range(3):
            seen = json.loads((model_dir / f"config-{index}.json").read_text())
            assert [tensor["name"] for tensor in seen["input"]] == ["X"]
            assert seen["max_batch_size"] == 4
            # as the server serves it (Triton's NormalizeModelConfig): the latest version,
            # pinned input and output memory
            assert seen["version_policy"] == {"latest": {"num_versions": 1}}
            assert seen["optimization"]["input_pinned_memory"] == {"enable": True}
        assert [tensor.name for tensor in version.config.input] == ["X"]
        pids = {(model_dir / f"pid-{index}").read_text() for index in range(3)}
        assert len(pids) == (3 if triton else 1)  # Triton's: a process each
    finally:
        version.drain_and_unload(5)
    assert sorted(p.name for p in model_dir.glob("finalized-*")) == [
        "finalized-0", "finalized-1", "finalized-2",
    ]  # fmt: skip


@pytest.mark.parametrize("triton", [True, False])
def test_an_instance_that_fails_fails_the_load_and_the_others_are_finalized_and_gone(
    tmp_path: Path, triton: bool
) -> None:
    """Instance 1 of 3 raises in initialize: the load fails with its error; instances 0 and
    2, which started, are finalized, and their processes (Triton's model) have ended."""
    model_dir = _python_model(tmp_path, triton, count=3, fail=1)
    with pytest.raises(ModelyardError) as failed:
        _load(model_dir)
    line = failed.value.line()
    assert "initialize failed: RuntimeError: instance 1 refuses to start" in line, line
    assert sorted(p.name for p in model_dir.glob("finalized-*")) == ["finalized-0", "finalized-2"]
    if triton:
        for index in range(3):
            pid = int((model_dir / f"pid-{index}").read_text())
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # ended and reaped: no stub process is left behind
