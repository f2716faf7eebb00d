"""Ensembles with python step models, in one process: wiring checks, errors, step schedulers."""

from __future__ import annotations

import asyncio
import shutil
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelyard.errors import ModelyardError
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.ensemble import _batch_converted, load_order
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode
from modelyard.tracing import Tracing
from modelyard.types import InferRequest, RequestedOutput
from tests.support.dataplane import run_on_dataplane as run
from tests.support.models import failing, sequence_accumulator, write_python_model

ADD_VERSION = """
import numpy as np


class Model:
    def initialize(self, args):
        self.version = np.float32(args["model_version"])

    def execute(self, inputs):
        return {"y": inputs["x"] + self.version}
"""

DOUBLE = """
class Model:
    def execute(self, inputs):
        return {"y": inputs["x"] * 2}
"""

COMBINE = """
class Model:
    def execute(self, inputs):
        return {"s": inputs["a"] + inputs["b"]}
"""

# Each side signals that it started and waits for the other: it only returns if both
# steps execute at the same time.
MEET = """
import time
from pathlib import Path


class Model:
    def initialize(self, args):
        self.rendezvous = Path(args["model_repository"]).parent.parent / "rendezvous"
        self.me = args["model_name"]
        self.other = "meet_right" if self.me == "meet_left" else "meet_left"

    def execute(self, inputs):
        (self.rendezvous / self.me).touch()
        deadline = time.monotonic() + 10
        while not (self.rendezvous / self.other).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.other} never ran while {self.me} ran")
            time.sleep(0.005)
        return {"y": inputs["x"]}
"""

XY = """
backend: "python"
max_batch_size: 8
input [{{ name: "x" data_type: {dtype} dims: [ 2 ] }}]
output [{{ name: "y" data_type: {dtype} dims: [ 2 ] }}]
"""


def step(model: str, inputs: dict[str, str], outputs: dict[str, str], version: int = -1) -> str:
    maps = "".join(f' input_map {{ key: "{k}" value: "{v}" }}' for k, v in inputs.items())
    maps += "".join(f' output_map {{ key: "{k}" value: "{v}" }}' for k, v in outputs.items())
    return f'{{ model_name: "{model}" model_version: {version}{maps} }}'


def ensemble(
    repo: Path,
    name: str,
    steps: list[str],
    inputs: str = '{ name: "IN" data_type: TYPE_FP32 dims: [ 2 ] }',
    outputs: str = '{ name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] }',
    max_batch_size: int = 8,
) -> Path:
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)  # Triton wants an empty version dir
    (model_dir / "config.pbtxt").write_text(
        textwrap.dedent(
            f"""
            platform: "ensemble"
            max_batch_size: {max_batch_size}
            input [ {inputs} ]
            output [ {outputs} ]
            ensemble_scheduling {{ step [ {", ".join(steps)} ] }}
            """
        )
    )
    return model_dir


def combine(repo: Path) -> None:
    write_python_model(
        repo,
        "combine",
        COMBINE,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "a" data_type: TYPE_FP32 dims: [ 2 ] },
               { name: "b" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "s" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
    )


def step_models(repo: Path) -> None:
    write_python_model(repo, "add_version", ADD_VERSION, XY.format(dtype="TYPE_FP32"))
    write_python_model(repo, "double", DOUBLE, XY.format(dtype="TYPE_FP32"))
    combine(repo)


def diamond(repo: Path, name: str = "diamond") -> Path:
    """OUT = (IN + version of add_version) + 2 * IN, the first two steps side by side."""
    step_models(repo)
    return ensemble(
        repo,
        name,
        [
            step("add_version", {"x": "IN"}, {"y": "plus"}),
            step("double", {"x": "IN"}, {"y": "twice"}),
            step("combine", {"a": "plus", "b": "twice"}, {"s": "OUT"}),
        ],
    )


def request(model: str, rows: list[list[float]]) -> InferRequest:
    return InferRequest(
        model_name=model,
        model_version=None,
        inputs={"IN": np.array(rows, dtype=np.float32)},
        input_datatypes={"IN": "FP32"},
    )


def test_an_ensemble_runs_each_step_through_its_own_scheduler(tmp_path: Path) -> None:
    diamond(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        response = await dp.infer(request("diamond", [[1.0, 2.0], [3.0, 4.0]]))
        assert response.model_name == "diamond" and response.model_version == "1"
        assert response.outputs[0].name == "OUT"
        assert response.outputs[0].data.tolist() == [[4.0, 7.0], [10.0, 13.0]]
        await dp.infer(request("diamond", [[0.0, 0.0]]))

        def stats_by_model() -> dict[str, Any]:
            return {s["name"]: s for s in dp.statistics(None, None)["model_stats"]}

        # instance threads record an execution just after they answer it, so a step's
        # record can land after a later step's
        steps = ("add_version", "double", "combine")
        for _ in range(200):
            if all(stats_by_model()[m]["execution_count"] == 2 for m in steps):
                break
            await asyncio.sleep(0.01)
        stats = stats_by_model()
        for model in steps:
            assert stats[model]["execution_count"] == 2
            assert stats[model]["inference_count"] == 3
        assert stats["diamond"]["inference_stats"]["success"]["count"] == 2
        assert stats["diamond"]["inference_count"] == 3
        metadata = dp.model_metadata("diamond", None)
        assert metadata["platform"] == "ensemble"
        assert metadata["inputs"] == [{"name": "IN", "datatype": "FP32", "shape": [-1, 2]}]
        config = dp.model_config("diamond", None)
        assert [s["model_name"] for s in config["ensemble_scheduling"]["step"]] == [
            "add_version",
            "double",
            "combine",
        ]
        assert {
            "name": "diamond",
            "version": "1",
            "state": "READY",
            "reason": "",
            "memory_bytes": 0,  # an ensemble loads no engine of its own
            "device_memory_bytes": 0,
        } in dp.manager.index()
        assert dp.server_ready()

    run(scenario, tmp_path)


def test_steps_whose_inputs_are_ready_run_at_the_same_time(tmp_path: Path) -> None:
    (tmp_path / "rendezvous").mkdir()
    repo = tmp_path / "models"
    for name in ("meet_left", "meet_right"):
        write_python_model(repo, name, MEET, XY.format(dtype="TYPE_FP32"))
    combine(repo)
    ensemble(
        repo,
        "meeting",
        [
            step("meet_left", {"x": "IN"}, {"y": "left"}),
            step("meet_right", {"x": "IN"}, {"y": "right"}),
            step("combine", {"a": "left", "b": "right"}, {"s": "OUT"}),
        ],
    )

    async def scenario(dp: LocalDataPlane) -> None:
        response = await dp.infer(request("meeting", [[1.0, 2.0]]))
        assert response.outputs[0].data.tolist() == [[2.0, 4.0]]

    run(scenario, repo)


def test_a_failing_step_returns_that_models_own_error_line(tmp_path: Path) -> None:
    failing(tmp_path)
    ensemble(
        tmp_path,
        "fails_inside",
        [step("failing", {"x": "IN"}, {"y": "OUT"})],
        inputs='{ name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }',
        outputs='{ name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }',
        max_batch_size=4,
    )

    async def scenario(dp: LocalDataPlane) -> tuple[str, str]:
        with pytest.raises(ModelyardError) as direct:
            await dp.infer(
                InferRequest("failing", None, {"x": np.ones((1, 1), np.float32)}, {"x": "FP32"})
            )
        with pytest.raises(ModelyardError) as through:
            await dp.infer(request("fails_inside", [[1.0]]))
        stats = dp.statistics("fails_inside", None)["model_stats"][0]
        # Triton's count: the failure as the ensemble answers it, and its request's end
        assert stats["inference_stats"]["fail"]["count"] == 2
        return direct.value.line(), through.value.line()

    direct, through = run(scenario, tmp_path)
    assert through == direct
    assert through.startswith("[engine] execute failed: ValueError: the model refuses negative")
    assert "rule=engine/python; change: model.py of model 'failing'" in through


def _wiring(repo: Path, case: str) -> None:
    step_models(repo)
    ok = step("double", {"x": "IN"}, {"y": "OUT"})
    steps = {
        "missing step model": [step("nowhere", {"x": "IN"}, {"y": "OUT"})],
        "unknown step input": [step("double", {"x": "IN", "z": "IN"}, {"y": "OUT"})],
        "unknown step output": [step("double", {"x": "IN"}, {"out": "OUT"})],
        "unmapped step input": [step("combine", {"a": "IN"}, {"s": "OUT"})],
        "never produced": [step("combine", {"a": "IN", "b": "nothing"}, {"s": "OUT"})],
        "datatype mismatch": [step("double_int", {"x": "IN"}, {"y": "OUT"})],
        "output not produced": [step("double", {"x": "IN"}, {"y": "elsewhere"})],
        "input unused": [ok],
        "produced twice": [ok, step("add_version", {"x": "IN"}, {"y": "OUT"})],
        "cycle": [
            step("combine", {"a": "IN", "b": "loop"}, {"s": "mid"}),
            step("double", {"x": "mid"}, {"y": "loop"}),
            step("add_version", {"x": "mid"}, {"y": "OUT"}),
        ],
        "batch too big": [ok],
        "batch output": [ok],
    }[case]
    inputs = '{ name: "IN" data_type: TYPE_FP32 dims: [ 2 ] }'
    if case == "input unused":
        inputs += ', { name: "EXTRA" data_type: TYPE_FP32 dims: [ 2 ] }'
    write_python_model(repo, "double_int", DOUBLE, XY.format(dtype="TYPE_INT32"))
    model_dir = ensemble(
        repo, "wired", steps, inputs=inputs, max_batch_size=16 if case == "batch too big" else 8
    )
    if case == "batch output":
        config = model_dir / "config.pbtxt"
        config.write_text(
            config.read_text() + 'batch_output [{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE '
            'target_name: "OUT" source_input: "IN" }]\n'
        )


@pytest.mark.parametrize(
    ("case", "triton", "detail"),
    [
        ("missing step model",
         "ensemble wired contains models that are not available or ambiguous: nowhere",
         "step 1 (model 'nowhere'): model 'nowhere' is not loaded"),
        ("unknown step input",
         "in ensemble wired, ensemble tensor IN is mapping to non-existing input z in model "
         "double", "step 1 (model 'double') has no input 'z' (it has x)"),
        ("unknown step output",
         "in ensemble wired, ensemble tensor OUT is mapped from non-existing output out in "
         "model double", "step 1 (model 'double') has no output 'out' (it has y)"),
        ("unmapped step input",
         "in ensemble wired, input b in model combine is not mapped to any ensemble tensors",
         "step 1 (model 'combine') leaves input b unmapped"),
        ("datatype mismatch",
         "in ensemble wired, ensemble tensor IN: inconsistent data type: TYPE_FP32 is "
         "inferred from model wired while TYPE_INT32 is inferred from model double_int",
         "tensor 'IN' is FP32 from the ensemble input but INT32 for step 1"),
        ("batch too big",
         "ensemble wired allows maximum batch size 16, but it contains model double which "
         "only allows maximum batch size to be 8",
         "max_batch_size 16 is over the max_batch_size 8 of step 1"),
        ("batch output", "",
         "an ensemble batches nothing of its own: its steps' configs name"),
    ],
)  # fmt: skip
def test_wiring_errors_are_rejected_at_load_with_the_error_line(
    tmp_path: Path, case: str, triton: str, detail: str
) -> None:
    """Each wiring error Triton also refuses leads with its words, modelyard's after."""
    _wiring(tmp_path, case)
    said = f"{triton} (ensemble 'wired': {detail}" if triton else f"ensemble 'wired': {detail}"

    async def scenario(dp: LocalDataPlane) -> None:
        with pytest.raises(ModelyardError) as refused:
            await dp.manager.load("wired")
        line = refused.value.line()
        # the load API answers in Triton's words; the rule names the layer
        assert line.startswith(
            "load failed for model 'wired': version 1 is at UNAVAILABLE state: Invalid "
            f"argument: {said}"
        ), line
        rule = "; rule=model-server/ensemble; change: ensemble_scheduling in wired/config.pbtxt"
        assert rule in line
        row = next(r for r in dp.manager.index() if r["name"] == "wired")
        assert row["state"] == "UNAVAILABLE"
        assert row["reason"].startswith(said if triton else f"[model-server] {said}")
        assert row["reason"].endswith(line.partition("; rule=")[2])
        assert not dp.model_ready("wired", None)

    run(scenario, tmp_path, mode=ControlMode.EXPLICIT, startup_models=["*"])


@pytest.mark.parametrize(
    ("case", "detail"),
    [
        ("never produced", "output 'OUT' for ensemble 'wired' is not written: at least one of "
                           "its depending tensors, 'nothing', is not connected"),
        ("output not produced", "ensemble output 'OUT' for ensemble wired' is not used"),
        ("input unused", "ensemble input 'EXTRA' for ensemble wired' is not used"),
        ("produced twice", "ensemble tensor 'OUT' can appear in an output map only once for "
                           "ensemble 'wired' step 1"),
        ("cycle", "output 'OUT' for ensemble 'wired' is not written: at least one of its "
                  "depending tensors, 'loop', is not connected"),
    ],
)  # fmt: skip
def test_a_data_flow_triton_refuses_is_refused_as_it_reads_the_config(
    tmp_path: Path, case: str, detail: str
) -> None:
    """Triton checks an ensemble's data flow from its config alone, before any step is
    looked up: those refusals are its, in its words (the ones only the steps' configs can
    tell, above, are modelyard's)."""
    _wiring(tmp_path, case)

    async def scenario(dp: LocalDataPlane) -> None:
        with pytest.raises(ModelyardError) as refused:
            await dp.manager.load("wired")
        line = refused.value.line()
        assert line == f"{detail}; rule=config/model-config; change: fix wired/config.pbtxt"
        row = next(r for r in dp.manager.index() if r["name"] == "wired")
        assert (row["state"], row["reason"]) == ("UNAVAILABLE", line)
        assert not dp.model_ready("wired", None)

    run(scenario, tmp_path, mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_ensembles_load_after_their_step_models_and_take_new_versions(tmp_path: Path) -> None:
    diamond(tmp_path, "a_diamond")  # sorts before the models it uses
    ensemble(
        tmp_path,
        "a_nested",
        [
            step("a_diamond", {"IN": "IN"}, {"OUT": "mid"}),
            step("double", {"x": "mid"}, {"y": "OUT"}),
        ],
    )
    order = load_order(ModelRepository(tmp_path).model_names(), lambda n: tmp_path / n)
    assert order.index("a_nested") > order.index("a_diamond") > order.index("add_version")

    async def scenario(dp: LocalDataPlane) -> None:
        first = await dp.infer(request("a_nested", [[1.0, 2.0]]))
        assert first.outputs[0].data.tolist() == [[8.0, 14.0]]  # 2 * ((x + 1) + 2x)
        shutil.copytree(tmp_path / "add_version" / "1", tmp_path / "add_version" / "2")
        await dp.manager.poll_once()
        second = await dp.infer(request("a_nested", [[1.0, 2.0]]))
        assert second.outputs[0].data.tolist() == [[10.0, 16.0]]  # version 2 adds 2

    run(scenario, tmp_path, mode=ControlMode.POLL, poll_secs=3600)


def test_unloading_a_step_model_unloads_the_ensembles_that_call_it(tmp_path: Path) -> None:
    """As Triton: the ensemble goes with its step; unload_dependents takes the steps with
    the ensemble."""
    diamond(tmp_path)

    async def scenario(dp: LocalDataPlane) -> None:
        await dp.manager.unload("double")
        assert not dp.model_ready("double", None) and not dp.model_ready("diamond", None)
        assert dp.model_ready("combine", None)
        with pytest.raises(ModelyardError) as gone:
            await dp.infer(request("diamond", [[1.0, 2.0]]))
        assert gone.value.line().startswith(
            "Request for unknown model: 'diamond' has no available versions"
        )
        await dp.manager.load("diamond")
        assert dp.model_ready("diamond", None) and dp.model_ready("double", None)
        await dp.manager.unload("diamond", unload_dependents=True)
        assert not any(dp.model_ready(m, None) for m in ("diamond", "double", "combine"))

    run(scenario, tmp_path, mode=ControlMode.EXPLICIT, startup_models=["*"])


def test_a_tensor_crosses_between_batching_and_non_batching_steps_as_in_triton() -> None:
    """Triton's ReshapeTensorDims: an unbatched tensor shaped as a batching step's dims
    goes as one row; a one-row tensor not shaped as a non-batching step's dims loses its
    batch dimension; anything else goes as it is."""
    flat = np.zeros((2, 0), dtype=np.float16)
    assert _batch_converted((-1, -1), True, 0, flat).shape == (1, 2, 0)
    assert _batch_converted((-1,), True, 0, flat).shape == (2, 0)  # taken as a batch already
    row = np.zeros((1, 5), dtype=np.float32)
    assert _batch_converted((-1, -1), False, 1, row).shape == (1, 5)  # its dims fit: kept
    assert _batch_converted((-1,), False, 1, row).shape == (5,)
    assert _batch_converted((-1,), False, 2, np.zeros((2, 5))).shape == (2, 5)
    assert _batch_converted((-1,), True, 3, np.zeros((3, 5))).shape == (3, 5)  # both batch


def test_an_ensemble_with_its_own_cache_answers_a_repeat_without_running_its_steps(
    tmp_path: Path,
) -> None:
    """Triton's top-level cache: the whole answer is kept; a hit counts on the ensemble and
    runs no step; an answer bigger than the cache is not kept (two misses)."""
    from modelyard.server.response_cache import ResponseCache

    model_dir = diamond(tmp_path)
    config = model_dir / "config.pbtxt"
    config.write_text(config.read_text() + "\nresponse_cache { enable: true }\n")

    async def scenario(dp: LocalDataPlane) -> None:
        first = await dp.infer(request("diamond", [[1.0, 2.0]]))
        again = await dp.infer(request("diamond", [[1.0, 2.0]]))
        assert again.outputs[0].data.tolist() == first.outputs[0].data.tolist() == [[4.0, 7.0]]
        stats = {s["name"]: s for s in dp.statistics(None, None)["model_stats"]}
        diamond_stats = stats["diamond"]["inference_stats"]
        assert diamond_stats["cache_hit"]["count"] == 1
        assert diamond_stats["cache_miss"]["count"] == 1
        assert diamond_stats["success"]["count"] == 2
        for _ in range(200):  # a step records its execution just after it answers
            if stats["combine"]["execution_count"] == 1:
                break
            await asyncio.sleep(0.01)
            stats = {s["name"]: s for s in dp.statistics(None, None)["model_stats"]}
        assert stats["combine"]["execution_count"] == 1  # the hit ran no step

    run(scenario, tmp_path, response_cache=ResponseCache(1 << 20))

    async def too_small(dp: LocalDataPlane) -> None:
        for _ in range(2):
            await dp.infer(request("diamond", [[1.0, 2.0]]))
        stats = {s["name"]: s for s in dp.statistics(None, None)["model_stats"]}
        assert stats["diamond"]["inference_stats"]["cache_miss"]["count"] == 2
        assert stats["diamond"]["inference_stats"]["cache_hit"].get("count", 0) == 0

    run(too_small, tmp_path, response_cache=ResponseCache(100))


def test_an_ensemble_passes_its_requests_sequence_to_a_sequence_step(tmp_path: Path) -> None:
    sequence_accumulator(tmp_path, "acc", max_batch_size=4)
    ensemble(
        tmp_path,
        "summing",
        [step("acc", {"INPUT": "IN"}, {"OUTPUT": "OUT"})],
        inputs='{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }',
        outputs='{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }',
        max_batch_size=4,
    )

    def call(value: int, rows: int = 1, **parameters: Any) -> InferRequest:
        inputs = {"IN": np.full((rows, 1), value, np.int32)}
        return InferRequest("summing", None, inputs, {"IN": "INT32"}, parameters=parameters)

    async def scenario(dp: LocalDataPlane) -> list[Any]:
        sums = []
        for value, flags in ((5, {"sequence_start": True}), (2, {}), (1, {"sequence_end": True})):
            response = await dp.infer(call(value, sequence_id=11, **flags))
            sums.append(int(response.outputs[0].data.ravel()[0]))
            # its place in the sequence, as Triton's ensembles answer it
            assert response.parameters == {
                "sequence_id": 11,
                "sequence_start": flags.get("sequence_start", False),
                "sequence_end": flags.get("sequence_end", False),
            }
        lines = []
        for refused in (call(1), call(1, 2, sequence_id=12, sequence_start=True)):
            with pytest.raises(ModelyardError) as caught:
                await dp.infer(refused)
            lines.append(caught.value.line())
        return [sums, *lines]

    sums, nameless, two_rows = run(scenario, tmp_path)
    assert sums == [5, 7, 8]  # the step kept the sequence's state
    # a step's refusal in Triton's words, named by the ensemble as Triton names it
    assert nameless.startswith(
        "in ensemble 'summing', inference request to model 'acc' must specify a non-zero"
    )
    assert two_rows.startswith(
        "in ensemble 'summing', inference request to model 'acc' must specify batch-size 1"
    )


# declares y and z, and answers y only (as Triton's identity_fp32 answers OUTPUT0 only)
HALF = """
class Model:
    def execute(self, inputs):
        return {"y": inputs["x"]}
"""


# adds b to a where it is given, 100 where it is not
MAYBE_ADD = """
class Model:
    def execute(self, inputs):
        return {"s": inputs["a"] + (inputs["b"] if "b" in inputs else 100.0)}
"""


def test_an_output_a_step_leaves_out_is_left_out_or_fails_the_step_that_needs_it(
    tmp_path: Path,
) -> None:
    """As Triton's ensembles: an ensemble output its step's model did not return is left out
    of the answer; a later step whose input it was runs without it where that input is
    optional, and fails the request, naming who left it out, where it is not."""
    step_models(tmp_path)
    write_python_model(
        tmp_path,
        "half",
        HALF,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] },
                { name: "z" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
    )
    two_outputs = (
        '{ name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] }, '
        '{ name: "OUT2" data_type: TYPE_FP32 dims: [ 2 ] }'
    )
    ensemble(
        tmp_path,
        "half_out",
        [
            step("half", {"x": "IN"}, {"y": "a", "z": "OUT2"}),
            step("double", {"x": "a"}, {"y": "OUT"}),
        ],
        outputs=two_outputs,
    )
    write_python_model(
        tmp_path,
        "maybe_add",
        MAYBE_ADD,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "a" data_type: TYPE_FP32 dims: [ 2 ] },
               { name: "b" data_type: TYPE_FP32 dims: [ 2 ] optional: true }]
        output [{ name: "s" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
    )
    ensemble(
        tmp_path,
        "half_optional",
        [
            step("half", {"x": "IN"}, {"y": "a", "z": "b"}),
            step("maybe_add", {"a": "a", "b": "b"}, {"s": "OUT"}),
        ],
    )
    ensemble(
        tmp_path,
        "half_in",
        [
            step("half", {"x": "IN"}, {"y": "a", "z": "b"}),
            step("combine", {"a": "a", "b": "b"}, {"s": "OUT"}),
        ],
    )

    async def scenario(dp: LocalDataPlane) -> str:
        response = await dp.infer(request("half_out", [[1.0, 2.0]]))
        assert [(o.name, o.data.tolist()) for o in response.outputs] == [("OUT", [[2.0, 4.0]])]
        # an optional input the step before left out: the step runs without it
        response = await dp.infer(request("half_optional", [[1.0, 2.0]]))
        assert response.outputs[0].data.tolist() == [[101.0, 102.0]]
        with pytest.raises(ModelyardError) as failed:
            await dp.infer(request("half_in", [[1.0, 2.0]]))
        return failed.value.line()

    line = run(scenario, tmp_path)
    assert line.startswith(
        "[model-server] ensemble 'half_in': step 2 (model 'combine') needs input 'b' (tensor "
        "'b'), which output 'z' of step 1 (model 'half') left out of its response"
    ), line
    assert "rule=model-server/ensemble" in line


def test_an_optional_ensemble_input_the_request_leaves_out_is_left_out_of_its_steps(
    tmp_path: Path,
) -> None:
    """As Triton's ensembles (a null tensor for it): the steps it feeds run without it where
    their input is optional (Triton's L0_optional_input), and a step that needs it fails the
    request, saying the request left it out."""
    step_models(tmp_path)
    write_python_model(
        tmp_path,
        "maybe_add",
        MAYBE_ADD,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "a" data_type: TYPE_FP32 dims: [ 2 ] },
               { name: "b" data_type: TYPE_FP32 dims: [ 2 ] optional: true }]
        output [{ name: "s" data_type: TYPE_FP32 dims: [ 2 ] }]
        """,
    )
    two_inputs = (
        '{ name: "IN" data_type: TYPE_FP32 dims: [ 2 ] }, '
        '{ name: "B" data_type: TYPE_FP32 dims: [ 2 ] optional: true }'
    )
    ensemble(
        tmp_path,
        "add_maybe",
        [step("maybe_add", {"a": "IN", "b": "B"}, {"s": "OUT"})],
        inputs=two_inputs,
    )
    ensemble(
        tmp_path,
        "add_needs",
        [step("combine", {"a": "IN", "b": "B"}, {"s": "OUT"})],
        inputs=two_inputs,
    )

    async def scenario(dp: LocalDataPlane) -> str:
        response = await dp.infer(request("add_maybe", [[1.0, 2.0]]))
        assert response.outputs[0].data.tolist() == [[101.0, 102.0]]
        given = request("add_maybe", [[1.0, 2.0]])
        given.inputs["B"] = np.array([[5.0, 5.0]], dtype=np.float32)
        given.input_datatypes["B"] = "FP32"
        response = await dp.infer(given)
        assert response.outputs[0].data.tolist() == [[6.0, 7.0]]
        with pytest.raises(ModelyardError) as failed:
            await dp.infer(request("add_needs", [[1.0, 2.0]]))
        return failed.value.line()

    line = run(scenario, tmp_path)
    assert line.startswith(
        "[model-server] ensemble 'add_needs': step 1 (model 'combine') needs input 'b' (tensor "
        "'B'), which the request left out (an optional input of the ensemble)"
    ), line
    assert "rule=model-server/ensemble" in line


LABELLED = """
backend: "python"
max_batch_size: 8
input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] label_filename: "labels.txt" }]
"""


def test_an_ensemble_output_without_labels_takes_those_of_the_step_that_produces_it(
    tmp_path: Path,
) -> None:
    """As Triton completes an ensemble's labels at load: an output with no label file of
    its own gets the producing step output's labels, through a nested ensemble too; an
    ensemble's own label file wins."""
    write_python_model(tmp_path, "double", DOUBLE, LABELLED)
    (tmp_path / "double" / "labels.txt").write_text("step0\nstep1\n")
    ensemble(tmp_path, "inherits", [step("double", {"x": "IN"}, {"y": "OUT"})])
    ensemble(tmp_path, "nested", [step("inherits", {"IN": "IN"}, {"OUT": "OUT"})])
    own = ensemble(
        tmp_path,
        "own",
        [step("double", {"x": "IN"}, {"y": "OUT"})],
        outputs='{ name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] label_filename: "l.txt" }',
    )
    (own / "l.txt").write_text("mine0\nmine1\n")

    async def scenario(dp: LocalDataPlane) -> None:
        for model, label in (("inherits", "step1"), ("nested", "step1"), ("own", "mine1")):
            classify = request(model, [[1.0, 2.0]])
            classify.outputs = [RequestedOutput("OUT", classification=1)]
            response = await dp.infer(classify)
            assert response.outputs[0].data.tolist() == [[f"4.000000:1:{label}".encode()]]

    run(scenario, tmp_path)


NOBATCH_DOUBLE = """
backend: "python"
max_batch_size: 0
input [{ name: "x" data_type: TYPE_FP32 dims: [ -1, -1 ] }]
output [{ name: "y" data_type: TYPE_FP32 dims: [ -1, -1 ] }]
"""


def test_a_batching_ensemble_may_hold_a_non_batching_step(tmp_path: Path) -> None:
    """As Triton's ensemble check: a step's max_batch_size under the ensemble's is refused
    only where the step batches; a non-batching step whose dims take the batch gets the
    whole batch (Triton's qa/ensemble_models ``batch_to_nobatch``)."""
    write_python_model(tmp_path, "nobatch_double", DOUBLE, NOBATCH_DOUBLE)
    ensemble(tmp_path, "wired", [step("nobatch_double", {"x": "IN"}, {"y": "OUT"})])

    async def scenario(dp: LocalDataPlane) -> None:
        for rows in ([[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]):
            response = await dp.infer(request("wired", rows))
            assert response.outputs[0].data.tolist() == (2 * np.array(rows)).tolist()

    run(scenario, tmp_path)


def test_a_request_for_some_outputs_runs_only_the_steps_they_need(tmp_path: Path) -> None:
    step_models(tmp_path)
    ensemble(
        tmp_path,
        "fork",
        [
            step("add_version", {"x": "IN"}, {"y": "plus"}),
            step("double", {"x": "plus"}, {"y": "OUT_TWICE"}),
            step("add_version", {"x": "IN"}, {"y": "OUT_PLUS"}),
        ],
        outputs='{ name: "OUT_TWICE" data_type: TYPE_FP32 dims: [ 2 ] },'
        '{ name: "OUT_PLUS" data_type: TYPE_FP32 dims: [ 2 ] }',
    )

    async def scenario(dp: LocalDataPlane) -> tuple[list[str], dict[str, int], dict[str, Any]]:
        asked = request("fork", [[1.0, 2.0]])
        asked.outputs = [RequestedOutput("OUT_PLUS")]
        response = await dp.infer(asked)
        for _ in range(200):  # a step's record lands just after its answer
            counts = {
                s["name"]: s["inference_count"] for s in dp.statistics(None, None)["model_stats"]
            }
            if counts["add_version"] == 1:
                break
            await asyncio.sleep(0.01)
        return [o.name for o in response.outputs], counts, response.parameters

    names, counts, parameters = run(scenario, tmp_path)
    assert names == ["OUT_PLUS"]
    # the first two steps make only OUT_TWICE: left out, as Triton prunes them
    assert counts["add_version"] == 1 and counts["double"] == 0
    assert parameters == {}  # a request of no sequence


def test_an_ensemble_output_without_labels_takes_its_step_models_labels(tmp_path: Path) -> None:
    """As Triton's: classification of an ensemble output whose config names no
    label_filename reads the labels of the step model output that makes it."""
    write_python_model(
        tmp_path,
        "double",
        DOUBLE,
        """
        backend: "python"
        max_batch_size: 8
        input [{ name: "x" data_type: TYPE_FP32 dims: [ 2 ] }]
        output [{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] label_filename: "y.txt" }]
        """,
    )
    (tmp_path / "double" / "y.txt").write_text("small\nlarge\n")
    ensemble(tmp_path, "labelled", [step("double", {"x": "IN"}, {"y": "OUT"})])

    async def scenario(dp: LocalDataPlane) -> None:
        asked = request("labelled", [[1.0, 3.0]])
        asked.outputs = [RequestedOutput("OUT", classification=1)]
        response = await dp.infer(asked)
        assert response.outputs[0].data.tolist() == [[b"6.000000:1:large"]]

    run(scenario, tmp_path)


def test_a_traced_nested_ensemble_records_its_own_steps_under_it(tmp_path: Path) -> None:
    """A traced request's steps, as Triton traces them: each step's times, and a nested
    ensemble's steps under that step (tracing.StepTimes), each sent before it executes."""
    diamond(tmp_path, "inner")
    ensemble(tmp_path, "outer", [step("double", {"x": "IN"}, {"y": "twice"}),
                                 step("inner", {"IN": "twice"}, {"OUT": "OUT"})])  # fmt: skip

    async def scenario(dp: LocalDataPlane) -> None:
        traced = request("outer", [[1.0, 2.0]])
        traced.trace = trace = Tracing(level=["TIMESTAMPS"], rate=1, file=tmp_path / "t.json") \
            .begin("outer", None, None, "http", {}, 0)  # fmt: skip
        assert trace is not None
        response = await dp.infer(traced)
        assert response.outputs[0].data.tolist() == [[7.0, 13.0]]  # (2x + 1) + 2(2x)
        outer = {s[0]: s for s in trace.steps}
        assert set(outer) == {"double", "inner"} and outer["double"][5] == []
        inner = {s[0]: s for s in outer["inner"][5]}
        assert set(inner) == {"add_version", "double", "combine"}
        for model, _, sent_ns, answered_ns, timing, _, kept in [*outer.values(), *inner.values()]:
            assert kept is None  # TIMESTAMPS: no tensors kept
            assert len(timing) == 5 or model == "inner", model
            assert sent_ns <= (timing[1] if timing else answered_ns) <= answered_ns, model
        assert outer["inner"][2] <= min(s[2] for s in inner.values())

    run(scenario, tmp_path)
