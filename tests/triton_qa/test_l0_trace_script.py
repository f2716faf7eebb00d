"""Triton's qa/L0_trace test.sh: its checks of Triton's trace mode around the Python
files, each server as test.sh starts it.

Trace settings switched on through the API (``OFF`` at start, ``TIMESTAMPS`` posted: only
the requests after it traced), a model's own settings beside the global ones
(``log_frequency`` 2: the trace file split into ``global_trace.log.0`` and ``.1``), a
model's level ``OFF`` then cleared with ``null`` (the global settings again), a trace
count (5: the count read back as 0 once spent, the indexed file written, out-of-range
counts, rates and frequencies refused), ``--trace-config`` flags read back with BLS calls
traced (the ensemble and its ``simple`` step, two spans with a parent), trace settings of
a model that is not loaded refused (before its load, after its unload), and the identity
backend's custom activities in the trace file. Each trace file is read by Triton's
``trace_summary.py``, as test.sh reads it.

Traffic comes from ``one_inference_client.py``: rounds of one inference over HTTP and one
over gRPC, as test.sh's rounds of its C++ ``simple_http_infer_client`` and
``simple_grpc_infer_client`` (not built here). The refused trace file is checked for
Triton's text leading its error (Differences kept: Whole messages); test.sh's grep of
``"trace_mode":"triton"`` in that refusal's body is not made (Triton's refusal body holds
only its error either).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.netns import LoopbackHost
from tests.triton_qa import harness
from tests.triton_qa.test_l0_trace import otel_repository

pytestmark = [pytest.mark.slow, pytest.mark.triton_qa_full, pytest.mark.timeout(900)]

CLIENT = Path(__file__).resolve().parent / "one_inference_client.py"
# test.sh's first custom_identity_int32: 500 ms an execution, its custom activities
CUSTOM_IDENTITY_CONFIG = """name: "custom_identity_int32"
backend: "identity"
max_batch_size: 1024
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] }]
instance_group [{ kind: KIND_CPU }]
parameters [{ key: "execute_delay_ms" value: { string_value: "500" } },
            { key: "enable_custom_tracing" value: { string_value: "true" } }]
"""
SEND_BLS = """import opentelemetry_unittest
opentelemetry_unittest.send_bls_request(model_name="ensemble_add_sub_int32_int32_int32")
"""


class Script:
    """test.sh's steps in its folder: servers, clients, curl and the failures seen."""

    def __init__(self, host: LoopbackHost, work: Path, models: Path) -> None:
        self.host = host
        self.work = work
        self.models = models
        self.failures: list[str] = []

    @contextmanager
    def server(self, *args: str) -> Iterator[None]:
        argv = [*args, f"--model-repository={self.models}"]
        log = self.work / f"server{len(self.failures)}.{id(args)}.log"
        with harness.tritonserver(self.host, argv, log, cwd=self.work):
            yield

    def expect(self, holds: bool, what: str) -> None:
        if not holds:
            self.failures.append(what)

    def setting(self, model: str | None, body: str | None = None) -> tuple[str, str]:
        """GET, or POST ``body`` to, the global or a model's trace settings."""
        path = f"/v2/models/{model}/trace/setting" if model else "/v2/trace/setting"
        options = ["-X", "POST", "-d", body] if body is not None else []
        return harness.curl_at(self.host, f"localhost:8000{path}", *options)

    def holds(self, answer: tuple[str, str], level: str, rate: str, frequency: str, file: str,
              count: str | None = None) -> None:  # fmt: skip
        """test.sh's greps of a settings answer."""
        code, body = answer
        expected = [f'"trace_level":["{level}"]', f'"trace_rate":"{rate}"',
                    f'"log_frequency":"{frequency}"', f'"trace_file":"{file}"',
                    '"trace_mode":"triton"']  # fmt: skip
        if count is not None:
            expected.append(f'"trace_count":"{count}"')
        for text in expected:
            self.expect(code == "200" and body.count(text) == 1, f"{text} not in {code} {body}")

    def refused(self, answer: tuple[str, str], what: str) -> None:
        self.expect(answer[0] != "200", f"{what} answered 200: {answer[1]}")

    def rounds(self, count: int) -> None:
        done = subprocess.run(
            self.host.command([sys.executable, str(CLIENT), str(count)]), cwd=self.work,
            env=harness.environment(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.expect(done.returncode == 0, f"client: {(done.stdout + done.stderr)[-800:]}")

    def summary(self, trace_file: str, counts: dict[str, int]) -> None:
        """trace_summary.py -t FILE, and test.sh's line counts of what it prints
        (``^name``: lines starting with a model's name)."""
        done = subprocess.run(
            [sys.executable, str(self.work.parent / "common" / "trace_summary.py"), "-t",
             trace_file],
            cwd=self.work, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        lines = done.stdout.splitlines()
        for text, expected in counts.items():
            if text.startswith("^"):
                seen = sum(line.startswith(text[1:]) for line in lines)
            else:
                seen = sum(text in line for line in lines)
            self.expect(seen == expected, f"{trace_file}: {text} on {seen} lines, not {expected}")


def test_trace_script(host: LoopbackHost, tmp_path: Path) -> None:
    work = harness.work_directory(tmp_path, "L0_trace")
    models = otel_repository(work)
    (models / "custom_identity_int32" / "config.pbtxt").write_text(CUSTOM_IDENTITY_CONFIG)
    script = Script(host, work, models)
    traced = {"COMPUTE_INPUT_END": 20, "^simple": 20}

    # trace level OFF at start, TIMESTAMPS through the API: only what follows is traced
    with script.server("--trace-config", "triton,file=trace_off_to_min.log",
                       "--trace-config", "level=OFF", "--trace-config", "rate=1"):  # fmt: skip
        answer = script.setting(None, '{"trace_level":["TIMESTAMPS"]}')
        script.holds(answer, "TIMESTAMPS", "1", "0", "trace_off_to_min.log")
        script.rounds(10)
    script.summary("trace_off_to_min.log", traced)

    # a model's own setting beside the global ones
    global_args = ["--trace-config", "triton,file=global_trace.log", "--trace-config",
                   "level=TIMESTAMPS", "--trace-config", "rate=6"]  # fmt: skip
    with script.server(*global_args):
        code, body = script.setting("simple", '{"trace_file":"global_trace.log"}')
        refusal = '"error":"trace file location can not be updated through network protocol'
        script.expect(code != "200" and refusal in body, f"trace_file refusal: {code} {body}")
        answer = script.setting("simple", '{"log_frequency":"2"}')
        script.holds(answer, "TIMESTAMPS", "6", "2", "global_trace.log", count="-1")
        script.rounds(10)
    script.expect(not (work / "simple_trace.log").exists(), "a trace file the API named")
    script.summary("global_trace.log.0", {"COMPUTE_INPUT_END": 2, "^simple": 2})
    script.summary("global_trace.log.1", {"COMPUTE_INPUT_END": 1, "^simple": 1})

    # a model's setting updated, then cleared back to the global ones
    (work / "global_trace.log").unlink(missing_ok=True)
    with script.server(*global_args):
        script.expect(script.setting("simple", '{"trace_rate":"1"}')[0] == "200", "rate 1")
        answer = script.setting("simple", '{"trace_level":["OFF"]}')
        script.holds(answer, "OFF", "1", "0", "global_trace.log", count="-1")
        script.rounds(10)
        answer = script.setting("simple", '{"trace_level":null}')
        script.holds(answer, "TIMESTAMPS", "1", "0", "global_trace.log", count="-1")
        script.rounds(5)
    script.expect(not (work / "update_trace.log").exists(), "a trace file the API named")
    script.summary("global_trace.log", {"COMPUTE_INPUT_END": 10, "^simple": 10})

    # a trace count
    with script.server("--trace-config", "triton,file=global_count.log", "--trace-config",
                       "level=TIMESTAMPS", "--trace-config", "rate=1"):  # fmt: skip
        script.rounds(10)
        answer = script.setting("simple")
        script.holds(answer, "TIMESTAMPS", "1", "0", "global_count.log", count="-1")
        answer = script.setting(None, '{"trace_count":"5"}')
        script.holds(answer, "TIMESTAMPS", "1", "0", "global_count.log", count="5")
        script.rounds(10)
        answer = script.setting("simple")
        script.holds(answer, "TIMESTAMPS", "1", "0", "global_count.log", count="0")
        script.expect((work / "global_count.log.0").exists(), "no indexed file once counted")
        for setting in ("trace_count", "trace_rate", "log_frequency"):
            refused = script.setting("simple", f'{{"{setting}":"10000000000"}}')
            script.refused(refused, f"{setting} out of range")
    script.summary("global_count.log", traced)
    script.summary("global_count.log.0", {"COMPUTE_INPUT_END": 5, "^simple": 5})

    # --trace-config's settings read back, BLS calls traced
    with script.server("--trace-config=triton,file=bls_trace.log",
                       "--trace-config=level=TIMESTAMPS", "--trace-config=rate=4",
                       "--trace-config=count=6", "--trace-config=mode=triton"):  # fmt: skip
        answer = script.setting("simple")
        script.holds(answer, "TIMESTAMPS", "4", "0", "bls_trace.log", count="6")
        for _ in range(4):
            sent = subprocess.run(host.command([sys.executable, "-c", SEND_BLS]), cwd=work,
                                  env=harness.environment(), capture_output=True, text=True,
                                  timeout=120)  # fmt: skip
            script.expect(sent.returncode == 0, f"bls request: {sent.stderr[-800:]}")
    script.summary(
        "bls_trace.log",
        {"COMPUTE_INPUT_END": 2, "^ensemble_add_sub_int32_int32_int32": 1, "^simple": 1},
    )
    parents = (work / "bls_trace.log").read_text().count("parent_id")
    script.expect(parents == 2, f"parent_id {parents} times in bls_trace.log, not 2")

    # trace settings of a model that is not loaded
    with script.server("--model-control-mode=explicit"):
        load = harness.curl_at(host, "localhost:8000/v2/repository/models/simple/load", "-X",
                               "POST")  # fmt: skip
        script.expect(load[0] == "200", f"load: {load}")
        script.refused(script.setting("does-not-exist"), "GET of a model that does not exist")
        script.refused(script.setting("does-not-exist", '{"log_frequency":"1"}'),
                       "POST of a model that does not exist")  # fmt: skip
        script.expect(script.setting("simple")[0] == "200", "GET of a loaded model")
        script.expect(script.setting("simple", '{"log_frequency":"1"}')[0] == "200",
                      "POST of a loaded model")  # fmt: skip
        harness.curl_at(host, "localhost:8000/v2/repository/models/simple/unload", "-X", "POST")
        script.refused(script.setting("simple"), "GET of an unloaded model")
        script.refused(script.setting("simple", '{"log_frequency":"1"}'),
                       "POST of an unloaded model")  # fmt: skip
        harness.curl_at(host, "localhost:8000/v2/repository/models/simple/load", "-X", "POST")
        script.expect(script.setting("simple")[0] == "200", "GET of a reloaded model")

    # the identity backend's custom activities in Triton's trace file
    with script.server("--model-control-mode=explicit", "--load-model=custom_identity_int32",
                       "--trace-config=level=TIMESTAMPS",
                       "--trace-config=triton,file=custom_tracing_triton.log",
                       "--trace-config=rate=1", "--trace-config=mode=triton"):  # fmt: skip
        data = '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,1],"data":[4]}]}'
        answer = harness.curl_at(host, "localhost:8000/v2/models/custom_identity_int32/infer",
                                 "-X", "POST", "-d", data)  # fmt: skip
        script.expect(answer[0] == "200", f"custom_identity_int32: {answer}")
    script.summary("custom_tracing_triton.log", {"CUSTOM_SINGLE_ACTIVITY": 1,
                                                 "CUSTOM_ACTIVITY_START": 1,
                                                 "CUSTOM_ACTIVITY_END": 1})  # fmt: skip

    assert not script.failures, "\n".join(script.failures)
