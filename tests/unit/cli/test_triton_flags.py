"""tritonserver's command line on ``modelyard serve``: applied, not applicable, or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelyard.cli import tritonserver
from modelyard.cli.main import build_parser
from modelyard.cli.serve_settings import instance_settings
from modelyard.cli.triton_flags import apply_triton_flags
from modelyard.errors import ConfigError, listen_failure


def parsed(*flags: str) -> tuple[object, list[tuple[str, str]]]:
    args = build_parser().parse_args(["serve", *flags])
    return args, apply_triton_flags(args)


def test_both_repository_flags_add_up_and_one_is_needed(tmp_path: Path) -> None:
    args, _ = parsed("--model-store", str(tmp_path / "a"), "--model-repository", str(tmp_path))
    assert args.model_repository == [tmp_path / "a", tmp_path]  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as missing:
        parsed("--http-port", "8000")
    assert "rule=config/model-repository" in missing.value.line()


def test_front_doors_turn_off_and_take_their_own_addresses(tmp_path: Path) -> None:
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--allow-grpc=false", "--allow-metrics", "off",
        "--http-address", "0.0.0.0", "--grpc-address=::1",
    )  # fmt: skip
    assert (args.grpc_port, args.metrics_port) == (-1, -1)  # type: ignore[attr-defined]
    assert (args.http_address, args.grpc_address) == ("0.0.0.0", "::1")  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):  # argparse's own answer to a bool it cannot read
        parsed("--model-repository", str(tmp_path), "--allow-grpc=maybe")
    args, _ = parsed("--model-repository", str(tmp_path), "--allow-http=false")
    assert args.allow_http is False  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as no_http:  # gateways reach instances over HTTP
        parsed(
            "--model-repository", str(tmp_path), "--allow-http=false", "--service", "svc",
            "--group", "g",
        )  # fmt: skip
    assert "rule=serve/triton-flag" in no_http.value.line()


@pytest.mark.parametrize(
    ("flags", "level"),
    [
        ((), "info"),
        (("--log-verbose=1",), "debug"),
        (("--log-info=false",), "warning"),
        (("--log-info=false", "--log-warning=false"), "error"),
        (("--log-info=false", "--log-warning=false", "--log-error=false"), "critical"),
    ],
)
def test_tritons_log_flags_set_the_level(
    tmp_path: Path, flags: tuple[str, ...], level: str
) -> None:
    args, _ = parsed("--model-repository", str(tmp_path), "--log-format=ISO8601", *flags)
    assert args.log_level == level and args.log_format == "ISO8601"  # type: ignore[attr-defined]


def test_tuning_without_a_counterpart_is_accepted_and_named(tmp_path: Path) -> None:
    _, not_applied = parsed(
        "--model-repository", str(tmp_path), "--pinned-memory-pool-byte-size=268435456",
        "--cuda-memory-pool-byte-size", "0:67108864",
    )  # fmt: skip
    flags = dict(not_applied)
    assert set(flags) == {"--pinned-memory-pool-byte-size", "--cuda-memory-pool-byte-size"}
    assert all(reason for reason in flags.values())


def test_backend_config_is_applied_per_backend(tmp_path: Path) -> None:
    args, not_applied = parsed(
        "--model-repository", str(tmp_path), "--backend-config=default-max-batch-size=7",
        "--backend-config=onnxruntime,default-max-batch-size=8",
        "--backend-config=onnxruntime,min-compute-capability=XX",
        "--min-supported-compute-capability=7.5", "--strict-model-config=true",
    )  # fmt: skip
    assert "--backend-config" not in dict(not_applied)
    settings = args.backend_settings  # type: ignore[attr-defined]
    assert settings.resolved("onnxruntime") == {
        "auto-complete-config": "false", "backend-directory": "",
        "default-max-batch-size": "8", "min-compute-capability": "XX",
    }  # fmt: skip
    assert settings.resolved("pytorch")["default-max-batch-size"] == "7"
    assert settings.resolved("pytorch")["min-compute-capability"] == "7.500000"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (",default-max-batch-size=3", "No backend specified. --backend-config option format is"),
        ("default-max-batch-size=", "--backend-config option format is '<backend name>"),
        ("default-max-batch-size", "--backend-config option format is '<backend name>"),
        ("onnxruntime,=3", "--backend-config option format is '<backend name>"),
        ("onnxruntime,default-max-batch-size=-1", "default-max-batch-size is a whole number"),
        ("default-max-batch-size=four", "default-max-batch-size is a whole number"),
    ],
)
def test_malformed_backend_config_stops_the_start(tmp_path: Path, entry: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parsed("--model-repository", str(tmp_path), f"--backend-config={entry}")
    assert said in refused.value.line()
    assert "rule=serve/triton-flag" in refused.value.line()


def test_the_cache_flags_size_the_local_response_cache(tmp_path: Path) -> None:
    args, _ = parsed("--model-repository", str(tmp_path))
    assert args.response_cache_bytes is None  # type: ignore[attr-defined]
    args, _ = parsed("--model-repository", str(tmp_path), "--cache-config", "local,size=4096")
    assert args.response_cache_bytes == 4096  # type: ignore[attr-defined]
    args, _ = parsed("--model-repository", str(tmp_path), "--response-cache-byte-size=8192")
    assert args.response_cache_bytes == 8192  # type: ignore[attr-defined]
    args, _ = parsed("--model-repository", str(tmp_path), "--response-cache-byte-size=0")
    assert args.response_cache_bytes is None  # type: ignore[attr-defined]
    for entry in ("redis,host=localhost", "local,size=big", "local,capacity=10"):
        with pytest.raises(ConfigError) as refused:
            parsed("--model-repository", str(tmp_path), f"--cache-config={entry}")
        assert "rule=serve/triton-flag" in refused.value.line()


def test_trace_config_sets_up_opentelemetry_tracing(tmp_path: Path) -> None:
    args, _ = parsed("--model-repository", str(tmp_path))
    assert args.trace == {"resource": {}, "bsp": {}}  # type: ignore[attr-defined]
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--trace-config", "mode=opentelemetry",
        "--trace-config=level=TIMESTAMPS", "--trace-config", "rate=10",
        "--trace-config", "count=-1",
        "--trace-config", "opentelemetry,url=collector:4318/v1/traces",
        "--trace-config", "opentelemetry,resource=deployment=canary",
        "--trace-config", "opentelemetry,bsp_max_queue_size=64",
    )  # fmt: skip
    assert args.trace == {  # type: ignore[attr-defined]
        "mode": "opentelemetry",
        "level": ["TIMESTAMPS"],
        "rate": 10,
        "count": -1,
        "url": "http://collector:4318/v1/traces",
        "resource": {"deployment": "canary"},
        "bsp": {"bsp_max_queue_size": 64, "bsp_max_export_batch_size": 64},
        # as the trace settings report them: as given, then the processor's others
        "options": [
            ("url", "collector:4318/v1/traces"),
            ("resource", "deployment=canary"),
            ("bsp_max_queue_size", "64"),
            ("bsp_schedule_delay", "5000"),
            ("bsp_max_export_batch_size", "64"),
        ],
    }
    for entries in (
        ["level=TIMESTAMPS", "triton,file=/no/such/directory/trace.json"],
        ["triton,log-frequency=-1"],
        ["mode=zipkin"],
        ["mode=opentelemetry", "level=LOUD"],
        ["rate=-1"],
        ["opentelemetry,colour=blue"],
        ["opentelemetry,resource=nothing"],
    ):
        flags = [f"--trace-config={entry}" for entry in entries]
        with pytest.raises(ConfigError) as refused:
            parsed("--model-repository", str(tmp_path), *flags)
        assert "rule=serve/triton-flag" in refused.value.line()


def test_a_trace_level_without_a_file_in_tritons_mode_starts_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Triton starts, and its traces go nowhere (L0_trace's trace_context server)
    args, _ = parsed("--model-repository", str(tmp_path), "--trace-config=level=TIMESTAMPS",
                     "--trace-config=mode=triton")  # fmt: skip
    trace = args.trace  # type: ignore[attr-defined]
    assert trace["level"] == ["TIMESTAMPS"] and "file" not in trace
    said = capsys.readouterr().err
    assert "Triton's trace mode writes a trace file, and none is given" in said
    assert "--trace-config triton,file=PATH" in said


@pytest.mark.parametrize(
    ("flags", "environment", "words"),
    [
        ([], {"OTEL_BSP_MAX_QUEUE_SIZE": "bad_value"}, 'Bad option: "OTEL_BSP_MAX_QUEUE_SIZE".'),
        ([], {"OTEL_BSP_SCHEDULE_DELAY": "bad_value"}, 'Bad option: "OTEL_BSP_SCHEDULE_DELAY".'),
        (["opentelemetry,bsp_max_export_batch_size=bad_value"], {},
         'Bad option: "--trace-config opentelemetry,bsp_max_export_batch_size".'),
        (["opentelemetry,bsp_max_queue_size=8", "opentelemetry,bsp_max_export_batch_size=9"],
         {}, 'Bad option: "bsp_max_export_batch_size" (more than bsp_max_queue_size).'),
    ],
)  # fmt: skip
def test_a_bad_batch_span_processor_setting_stops_the_server_in_tritons_words(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    environment: dict[str, str],
    words: str,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    entries = [f"--trace-config={entry}" for entry in ["mode=opentelemetry", *flags]]
    with pytest.raises(ConfigError) as refused:
        parsed("--model-repository", str(tmp_path), *entries)
    assert refused.value.line().startswith(f"[config] {words}"), refused.value.line()


def test_the_environment_sets_the_batch_span_processor_where_the_flags_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "250")
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--trace-config=mode=opentelemetry",
        "--trace-config=opentelemetry,bsp_max_queue_size=64",
    )  # fmt: skip
    assert args.trace["bsp"] == {  # type: ignore[attr-defined]
        "bsp_max_queue_size": 64, "bsp_schedule_delay": 250,
        "bsp_max_export_batch_size": 64,  # OpenTelemetry's 512, at most the queue
    }  # fmt: skip


def test_triton_mode_trace_files_from_trace_config_or_the_older_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.json"
    args, _ = parsed(
        "--model-repository", str(tmp_path), f"--trace-config=triton,file={path}",
        "--trace-config", "triton,log-frequency=50", "--trace-config", "level=TIMESTAMPS",
        "--trace-config", "level=TENSORS", "--trace-config", "rate=100",
    )  # fmt: skip
    expected = {
        "file": path, "log_frequency": 50, "level": ["TIMESTAMPS", "TENSORS"], "rate": 100,
        "resource": {}, "bsp": {},
    }  # fmt: skip
    assert args.trace == expected  # type: ignore[attr-defined]
    args, _ = parsed(
        "--model-repository", str(tmp_path), f"--trace-file={path}", "--trace-log-frequency=50",
        "--trace-level=TIMESTAMPS", "--trace-level=TENSORS", "--trace-rate=100",
    )  # fmt: skip
    assert args.trace == expected  # type: ignore[attr-defined]
    warned = capsys.readouterr().err.splitlines()  # tritonserver's, once a flag given
    assert warned.count(
        "Warning: '--trace-file' has been deprecated and will be removed in future releases. "
        "Please use '--trace-config triton,file=<filepath> instead."
    ) == 1
    assert sum("'--trace-level' has been deprecated" in line for line in warned) == 2
    assert sum("'--trace-rate' has been deprecated" in line for line in warned) == 1


def test_tritons_older_trace_level_names_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    for level, expected in (("MIN", ["TIMESTAMPS"]), ("max", ["TIMESTAMPS"]), ("false", ["OFF"])):
        args, _ = parsed(
            "--model-repository", str(tmp_path), f"--trace-file={path}", f"--trace-level={level}"
        )
        assert args.trace["level"] == expected  # type: ignore[attr-defined]
    with pytest.raises(ConfigError):
        parsed("--model-repository", str(tmp_path), f"--trace-file={path}", "--trace-level=most")


def test_grpc_keepalive_time_sets_the_server_s_ping_interval(tmp_path: Path) -> None:
    from modelyard.frontdoors.grpc import server_options

    args, _ = parsed("--model-repository", str(tmp_path), "--grpc-keepalive-time=7200000")
    assert args.grpc_keepalive_time == 7200000  # type: ignore[attr-defined]
    assert ("grpc.keepalive_time_ms", 7200000) in server_options(1024, 7200000)
    assert not any(name == "grpc.keepalive_time_ms" for name, _ in server_options(1024))
    with pytest.raises(ConfigError):
        parsed("--model-repository", str(tmp_path), "--grpc-keepalive-time=0")


def test_model_load_retry_count_is_read_and_checked(tmp_path: Path) -> None:
    args, _ = parsed("--model-repository", str(tmp_path), "--model-load-retry-count=2")
    assert args.model_load_retry_count == 2  # type: ignore[attr-defined]
    with pytest.raises(ConfigError):
        parsed("--model-repository", str(tmp_path), "--model-load-retry-count=-1")


def test_the_control_mode_is_read_in_any_case(tmp_path: Path) -> None:
    for flag, expected in (("EXPLICIT", "explicit"), ("Poll", "poll"), ("none", "none")):
        args, _ = parsed("--model-repository", str(tmp_path), f"--model-control-mode={flag}")
        assert args.model_control_mode == expected  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):
        parsed("--model-repository", str(tmp_path), "--model-control-mode=sometimes")


def test_auto_completion_is_on_unless_a_flag_turns_it_off(tmp_path: Path) -> None:
    for flags, expected in (
        ((), True),
        (("--disable-auto-complete-config",), False),
        (("--strict-model-config=true",), False),
        (("--strict-model-config=false",), True),
    ):
        args, _ = parsed("--model-repository", str(tmp_path), *flags)
        assert args.auto_complete is expected, flags  # type: ignore[attr-defined]


def test_header_forward_patterns_compile_or_are_refused(tmp_path: Path) -> None:
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--http-header-forward-pattern", "MY_HEADER.*",
        "--grpc-header-forward-pattern", "(?-i)MY_HEADER.*",
    )  # fmt: skip
    http, grpc = args.http_header_forwarding, args.grpc_header_forwarding  # type: ignore[attr-defined]
    headers = [("my_header_1", "a"), ("MY_HEADER_2", "b"), ("x-other", "c")]
    assert http.parameters(headers) == {"my_header_1": "a", "MY_HEADER_2": "b"}
    assert grpc.parameters(headers) == {"MY_HEADER_2": "b"}
    args, _ = parsed("--model-repository", str(tmp_path))
    assert args.http_header_forwarding is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as refused:
        parsed("--model-repository", str(tmp_path), "--grpc-header-forward-pattern=a(b")
    assert "not a regular expression" in refused.value.line()


def test_rate_limit_resources_are_parsed_and_bad_ones_refused(tmp_path: Path) -> None:
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--rate-limit", "execution_count",
        "--rate-limit-resource", "R1:4", "--rate-limit-resource=R2:2:0",
    )  # fmt: skip
    assert args.rate_limit == "execution_count"  # type: ignore[attr-defined]
    assert args.rate_limit_resources == [("R1", 4, None), ("R2", 2, "cuda:0")]  # type: ignore[attr-defined]
    for text in ("R1", "R1:many", ":3", "R1:3:gpu"):
        with pytest.raises(ConfigError) as refused:
            parsed("--model-repository", str(tmp_path), f"--rate-limit-resource={text}")
        assert "NAME:COUNT[:DEVICE]" in refused.value.line()


def test_bad_numbers_are_refused(tmp_path: Path) -> None:
    for flag in ("--exit-timeout-secs=-1", "--model-load-thread-count=0"):
        with pytest.raises(ConfigError) as refused:
            parsed("--model-repository", str(tmp_path), flag)
        assert "rule=serve/triton-flag" in refused.value.line()


def test_metrics_config_turns_summaries_on_and_counters_off(tmp_path: Path) -> None:
    args, _ = parsed("--model-repository", str(tmp_path))
    assert args.summary_quantiles is None and args.counter_latencies  # type: ignore[attr-defined]
    args, _ = parsed(
        "--model-repository", str(tmp_path), "--metrics-config", "summary_latencies=true",
        "--metrics-config=summary_quantiles=0.5:0.05,0.99:0.001",
        "--metrics-config", "counter_latencies=false",
    )  # fmt: skip
    assert args.summary_quantiles == (0.5, 0.99)  # type: ignore[attr-defined]
    assert args.counter_latencies is False  # type: ignore[attr-defined]
    for entry in ("colour=blue", "summary_latencies=maybe", "summary_quantiles=2:0.1"):
        with pytest.raises(ConfigError) as refused:
            parsed("--model-repository", str(tmp_path), "--metrics-config", entry)
        assert f"--metrics-config {entry}" in refused.value.line()


# every flag of tritonserver 2.51's command line (src/command_line_parser.cc), with a value
TRITONSERVER_FLAGS = [
    "--id=t", "--exit-timeout-secs=5", "--exit-on-error=false",
    "--disable-auto-complete-config", "--strict-readiness=false", "--model-control-mode=none",
    "--repository-poll-secs=5", "--load-model=m", "--model-config-name=c",
    "--model-load-thread-count=2", "--model-load-retry-count=1", "--model-namespacing=false",
    "--enable-peer-access=true", "--allow-http=true", "--http-address=127.0.0.1",
    "--http-port=8000", "--reuse-http-port=false", "--http-header-forward-pattern=x.*",
    "--http-thread-count=4", "--http-restricted-api=trace:k=v", "--allow-grpc=true",
    "--grpc-address=127.0.0.1", "--grpc-port=8001", "--reuse-grpc-port=false",
    "--grpc-header-forward-pattern=x.*", "--grpc-infer-allocation-pool-size=8",
    "--grpc-use-ssl=false", "--grpc-use-ssl-mutual=false", "--grpc-server-cert=c",
    "--grpc-server-key=k", "--grpc-root-cert=r", "--grpc-infer-response-compression-level=low",
    "--grpc-keepalive-time=7200000", "--grpc-keepalive-timeout=20000",
    "--grpc-keepalive-permit-without-calls=true", "--grpc-http2-max-pings-without-data=2",
    "--grpc-http2-min-recv-ping-interval-without-data=300000",
    "--grpc-http2-max-ping-strikes=2", "--grpc-max-connection-age=60000",
    "--grpc-max-connection-age-grace=5000", "--grpc-restricted-protocol=trace:k=v",
    "--log-verbose=0", "--log-info=true", "--log-warning=true", "--log-error=true",
    "--log-format=default", "--log-file=/dev/null", "--allow-sagemaker=false",
    "--sagemaker-port=8080", "--sagemaker-safe-port-range=8000-8080",
    "--sagemaker-thread-count=8", "--allow-vertex-ai=false", "--vertex-ai-port=8080",
    "--vertex-ai-thread-count=8", "--vertex-ai-default-model=m", "--allow-metrics=true",
    "--allow-gpu-metrics=false", "--allow-cpu-metrics=true", "--metrics-address=127.0.0.1",
    "--metrics-port=8002", "--metrics-interval-ms=2000", "--metrics-config=summary_latencies=true",
    "--trace-config=rate=1", "--cache-config=local,size=1024", "--cache-directory=/c",
    "--rate-limit=off", "--rate-limit-resource=R:1", "--pinned-memory-pool-byte-size=1",
    "--cuda-memory-pool-byte-size=0:1", "--cuda-virtual-address-size=0:1",
    "--buffer-manager-thread-count=1", "--host-policy=p,numa-node=0",
    "--model-load-gpu-limit=0:0.5", "--backend-directory=/b", "--backend-config=b,k=v",
    "--repoagent-directory=/r", "--strict-model-config=false", "--response-cache-byte-size=1024",
    "--trace-file=/tmp/t.json", "--trace-level=OFF", "--trace-rate=1", "--trace-count=-1",
    "--trace-log-frequency=0", "--min-supported-compute-capability=6.0",
]  # fmt: skip


def test_every_tritonserver_flag_is_accepted(tmp_path: Path) -> None:
    args, not_applied = parsed("--model-repository", str(tmp_path), *TRITONSERVER_FLAGS)
    assert "--grpc-infer-allocation-pool-size" in dict(not_applied)
    assert args.grpc_connection == {  # type: ignore[attr-defined]
        "keepalive_timeout_ms": 20000,
        "keepalive_permit_without_calls": True,
        "http2_max_pings_without_data": 2,
        "http2_min_recv_ping_interval_without_data_ms": 300000,
        "http2_max_ping_strikes": 2,
        "max_connection_age_ms": 60000,
        "max_connection_age_grace_ms": 5000,
        "reuse_port": False,
    }
    from modelyard.frontdoors.grpc import server_options

    options = dict(server_options(1024, 7200000, **args.grpc_connection))  # type: ignore[attr-defined]
    assert options["grpc.keepalive_timeout_ms"] == 20000
    assert options["grpc.max_connection_age_ms"] == 60000
    assert options["grpc.so_reuseport"] == 0


def test_every_model_at_start_is_asked_for_alone(tmp_path: Path) -> None:
    """tritonserver refuses --load-model=* beside other --load-model flags."""
    def settings(*flags: str) -> object:
        args = tritonserver.build_parser().parse_args(
            ["--model-repository", str(tmp_path), "--model-control-mode=explicit", *flags]
        )
        return instance_settings(args)

    assert settings("--load-model=*")
    with pytest.raises(ConfigError) as refused:
        settings("--load-model=*", "--load-model=ranker")
    assert refused.value.line().startswith(
        "[config] Wildcard model name '*' must be the ONLY startup model if specified at all"
    )
    assert "rule=config/load-model" in refused.value.line()


def test_a_port_in_use_is_said_in_tritonservers_words() -> None:
    assert listen_failure("GRPC", "0.0.0.0:8001", True, "in use") == (
        "failed to start GRPC service: Unavailable - Socket '0.0.0.0:8001' already in use"
    )
    assert listen_failure("HTTP", "10.0.0.9:80", False, "Cannot assign requested address") == (
        "cannot listen for HTTP on 10.0.0.9:80: Cannot assign requested address"
    )


def test_a_compute_capability_that_is_no_number_stops_the_start(tmp_path: Path) -> None:
    """The backends' min-compute-capability setting is read from the flag: garbage there is
    refused at start, not carried into every backend's settings."""
    with pytest.raises(ConfigError) as refused:
        parsed("--model-repository", str(tmp_path), "--min-supported-compute-capability=six")
    assert "--min-supported-compute-capability 'six': a number" in refused.value.line()
    assert "rule=serve/triton-flag" in refused.value.line()


def test_vertex_ai_s_environment_sets_the_front_doors_where_flags_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AIP_MODE", "AIP_HTTP_PORT", "AIP_STORAGE_URI"):
        monkeypatch.delenv(name, raising=False)
    args, _ = parsed("--model-repository", str(tmp_path))
    assert (args.allow_http, args.allow_grpc, args.allow_vertex_ai) == (True, True, False)  # type: ignore[attr-defined]
    assert args.vertex_ai_port == 8080  # type: ignore[attr-defined]
    monkeypatch.setenv("AIP_MODE", "PREDICTION")
    monkeypatch.setenv("AIP_HTTP_PORT", "5234")
    monkeypatch.setenv("AIP_STORAGE_URI", str(tmp_path))
    args, _ = parsed("--allow-grpc=true")  # the repository from AIP_STORAGE_URI
    assert (args.allow_http, args.allow_grpc, args.allow_vertex_ai) == (False, True, True)  # type: ignore[attr-defined]
    assert args.vertex_ai_port == 5234 and args.model_repository == [tmp_path]  # type: ignore[attr-defined]
    args, _ = parsed("--model-repository", "elsewhere", "--vertex-ai-port", "9000")
    assert args.model_repository == [Path("elsewhere")] and args.vertex_ai_port == 9000  # type: ignore[attr-defined]
    monkeypatch.setenv("AIP_HTTP_PORT", "http")
    with pytest.raises(ConfigError) as not_a_port:
        parsed("--model-repository", str(tmp_path))
    assert "AIP_HTTP_PORT 'http' is not a port" in not_a_port.value.line()


def test_sagemaker_s_safe_port_range_holds_the_other_front_doors(tmp_path: Path) -> None:
    base = ("--model-repository", str(tmp_path), "--allow-sagemaker=true",
            "--sagemaker-safe-port-range=8081-9000")  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        parsed(*base, "--http-port=8000", "--grpc-port=8085", "--metrics-port=8086")
    assert ("The server cannot listen to HTTP requests at port 8000, allowed port range is "
            "[8081, 9000]") in refused.value.line()  # fmt: skip
    args, _ = parsed(*base, "--http-port=8084", "--grpc-port=8085", "--metrics-port=8086")
    assert args.sagemaker_port == 8080  # type: ignore[attr-defined]  # its own is not checked
    parsed(*base, "--allow-http=false", "--allow-grpc=false", "--allow-metrics=false")
    with pytest.raises(ConfigError):
        parsed("--model-repository", str(tmp_path), "--allow-sagemaker=true",
               "--sagemaker-safe-port-range=high-low")  # fmt: skip


def test_log_verbose_takes_tritons_true_and_false(tmp_path: Path) -> None:
    for given, level in (("true", "debug"), ("false", "info"), ("2", "debug")):
        args, _ = parsed("--model-repository", str(tmp_path), f"--log-verbose={given}")
        assert args.log_level == level  # type: ignore[attr-defined]


def test_tritonservers_log_switches_stand_each_on_its_own_beside_the_verbose_level(
    tmp_path: Path,
) -> None:
    def switches(*flags: str) -> object:
        args = tritonserver.build_parser().parse_args(["--model-repository", str(tmp_path), *flags])
        return instance_settings(args).log.switches

    assert switches("--log-info=false", "--log-verbose=3", "--log-warn=false") == {
        "log_info": False, "log_warning": False, "log_error": True, "log_verbose_level": 3,
    }  # fmt: skip
    serve = build_parser().parse_args(["serve", "--model-repository", str(tmp_path)])
    assert instance_settings(serve).log.switches is None  # --log-level decides


def test_tritonservers_options_table_holds_its_rows_in_its_order(tmp_path: Path) -> None:
    args = tritonserver.build_parser().parse_args([
        "--model-repository", str(tmp_path), "--model-control-mode=explicit", "--load-model=a",
        "--rate-limit=execution_count", "--rate-limit-resource=R2:5",
        "--rate-limit-resource=R1:4:1", "--rate-limit-resource=R2:3", "--exit-timeout-secs=7",
        "--strict-model-config=true", "--min-supported-compute-capability=7",
    ])  # fmt: skip
    rows = dict(instance_settings(args).triton_options)
    assert list(rows)[:5] == ["server_id", "server_version", "server_extensions",
                              "model_repository_path[0]", "model_control_mode"]  # fmt: skip
    assert rows["server_id"] == "triton" and "model_repository(unload_dependents)" in (
        rows["server_extensions"]
    )
    assert rows["model_control_mode"] == "MODE_EXPLICIT" and rows["startup_models_0"] == "a"
    assert rows["rate_limit"] == "EXEC_COUNT"
    assert rows["rate_limit_resource[0]"] == '{"name":"R2", "count":3 "device":-1}'  # the least
    assert rows["rate_limit_resource[1]"] == '{"name":"R1", "count":4 "device":1}'
    assert (rows["strict_model_config"], rows["exit_timeout"]) == ("1", "7")
    assert rows["min_supported_compute_capability"] == "7.0"
    assert rows["pinned_memory_pool_byte_size"] == "268435456"  # Triton's default
    serve = build_parser().parse_args(["serve", "--model-repository", str(tmp_path)])
    assert instance_settings(serve).triton_options == ()  # written under tritonserver only
