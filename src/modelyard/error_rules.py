"""The rules modelyard's own error lines name: one constant for each, with its id, the code
it answers with and, where one setting governs it, where to change it.

A raise site names its rule and says what happened::

    raise ConfigError.of(error_rules.MEMORY_SIZE, f"memory size '{text}' is not a number")

and passes ``where=`` only when the place to change depends on the call (a model's
config.pbtxt). Rule ids are what users grep for and alert on: a new refusal adds its rule
here. The governance guards' rules (rate limits, breakers, concurrency, auth) are a service's
own, named by its rules document, and live beside their guards; ``errors.INTERNAL``, a bug's,
is the error module's own.
"""

from __future__ import annotations

from modelyard.errors import LOAD_TIME_RULE, MEMORY_BUDGET_RULE, Code, Rule

# ---- config

NO_BACKEND = Rule("config/backend", Code.INVALID_ARGUMENT)
UNKNOWN_BACKEND = Rule(
    "config/backend", Code.INVALID_ARGUMENT, "backend or platform in config.pbtxt"
)
CENTRAL_REVISION = Rule("config/central-rules", Code.NOT_FOUND)
CENTRAL_RULES = Rule("config/central-rules", Code.INVALID_ARGUMENT)
GRPC_PORT = Rule(
    "config/grpc-port",
    Code.UNAVAILABLE,
    "--grpc-port (another process may hold it; -1 turns gRPC off)",
)
HTTP_PORT = Rule("config/http-port", Code.UNAVAILABLE, "--http-port (another process may hold it)")
LOAD_MODEL = Rule(
    "config/load-model",
    Code.INVALID_ARGUMENT,
    "--load-model=* alone, or --load-model NAME for each model",
)
MEMORY_SIZE = Rule("config/memory-budget", Code.INVALID_ARGUMENT, "--memory-budget (e.g. 512M, 4G)")
METRICS_PORT = Rule(
    "config/metrics-port",
    Code.UNAVAILABLE,
    "modelyard serve --metrics-port (another process may hold it; -1 turns metrics off)",
)
MODEL_CONFIG = Rule("config/model-config", Code.INVALID_ARGUMENT)
NO_MODEL_CONFIG = Rule(
    "config/model-config",
    Code.INVALID_ARGUMENT,
    "write its config.pbtxt, or serve with --strict-model-config=false to "
    "complete one from the model's files",
)
MODEL_REPOSITORY_DIR = Rule("config/model-repository", Code.INVALID_ARGUMENT, "--model-repository")
NO_MODEL_REPOSITORY = Rule(
    "config/model-repository",
    Code.INVALID_ARGUMENT,
    "modelyard serve --model-repository DIR (repeatable, as tritonserver's)",
)
MODEL_RESIDENCY = Rule("config/model-residency", Code.INVALID_ARGUMENT)
PARAMETER = Rule("config/parameter", Code.INVALID_ARGUMENT)
RAGGED_BATCH = Rule("config/ragged-batch", Code.INVALID_ARGUMENT)
RATE_LIMITER = Rule("config/rate-limiter", Code.INVALID_ARGUMENT)
REPOSITORY_AGENT = Rule("config/repository-agent", Code.INVALID_ARGUMENT)
RULES_SOURCE = Rule(
    "config/rules-source",
    Code.INVALID_ARGUMENT,
    "pass --service NAME --group GROUP, or --rules-source local",
)
SERVICE_FILE = Rule("config/service-file", Code.INVALID_ARGUMENT)
SERVICE_NAME = Rule(
    "config/service-name",
    Code.INVALID_ARGUMENT,
    "make 'service:' in the file and --service name the same service",
)
SERVICE_NAME_CHANGED = Rule("config/service-name", Code.INVALID_ARGUMENT)
UNSERVED_FIELD = Rule("config/unserved-field", Code.INVALID_ARGUMENT)

# ---- serve

EXIT_ON_ERROR = Rule(
    "serve/exit-on-error",
    Code.INVALID_ARGUMENT,
    "fix the models, or modelyard serve --exit-on-error false",
)
GIL_SWITCH_INTERVAL = Rule("serve/gil-switch-interval", Code.INVALID_ARGUMENT)
HTTP_STOPPED = Rule("serve/http", Code.UNAVAILABLE, "the log's lines before this one say why")
HTTP_LIMITS = Rule("serve/http-limits", Code.INVALID_ARGUMENT)
VERTEX_AI = Rule(
    "serve/vertex-ai",
    Code.INVALID_ARGUMENT,
    "the AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE environment variables, "
    "tritonserver --vertex-ai-default-model",
)
RATE_LIMIT_RESOURCE = Rule(
    "serve/triton-flag",
    Code.INVALID_ARGUMENT,
    "modelyard serve --rate-limit-resource NAME:COUNT[:DEVICE]",
)
TRITON_FLAG = Rule("serve/triton-flag", Code.INVALID_ARGUMENT)

# ---- discovery

EMBEDDED_REGISTRY = Rule(
    "discovery/embedded",
    Code.UNAVAILABLE,
    "check the file's permissions and disk, or pass another --registry embedded:///abs/path",
)
ETCD_UNREACHABLE = Rule(
    "discovery/etcd-unreachable",
    Code.UNAVAILABLE,
    "start etcd, or pass --registry etcd://host:port of a running member",
)
GROUP = Rule(
    "discovery/group", Code.INVALID_ARGUMENT, "pass --group GROUP (where it runs and who owns it)"
)
LEASE = Rule(
    "discovery/lease", Code.FAILED_PRECONDITION, "register the instance again for a new lease"
)
REGISTRY_MISSING = Rule(
    "discovery/registry-missing",
    Code.NOT_FOUND,
    "--registry embedded:///abs/path/registry.db of a platform that runs (modelyard "
    "platform up and modelyard demo make DIR/registry.db in their state directory)",
)
REGISTRY_URL = Rule("discovery/registry-url", Code.INVALID_ARGUMENT)

# ---- protocol

CONTENT_ENCODING = Rule(
    "protocol/content-encoding", Code.INVALID_ARGUMENT, "send the body as gzip, deflate or identity"
)
ENCODED_BODY = Rule(
    "protocol/content-encoding", Code.INVALID_ARGUMENT, "the request body and its Content-Encoding"
)
EMBEDDINGS = Rule("protocol/embeddings", Code.INVALID_ARGUMENT)
EMBEDDINGS_MODEL = Rule(
    "protocol/embeddings",
    Code.INVALID_ARGUMENT,
    "name a text model: one BYTES input, a float embedding output",
)
NO_EMBEDDING_MODEL = Rule(
    "protocol/embeddings",
    Code.NOT_FOUND,
    "modelyard serve --embedding-model NAME (or POST /v1/embeddings with a model)",
)
RESERVED_HEADER = Rule(
    "protocol/header-forwarding",
    Code.INVALID_ARGUMENT,
    "send it as a request parameter, or rename the header",
)
MALFORMED_HTTP = Rule(
    "protocol/http", Code.INVALID_ARGUMENT, "the client's HTTP/1.1 request line and headers"
)
LOAD_FILE_OVERRIDE = Rule("protocol/load-file-override", Code.INVALID_ARGUMENT)
LOG_FILE = Rule(
    "protocol/log-settings", Code.INVALID_ARGUMENT, "modelyard serve --log-file FILE, at start"
)
LOG_SETTINGS = Rule(
    "protocol/log-settings",
    Code.INVALID_ARGUMENT,
    "the logging settings: log_info, log_warning, log_error (true or false), "
    "log_verbose_level (an integer >= 0), log_format (default, ISO8601 or json)",
)
MAX_BODY_SIZE = Rule(
    "protocol/max-body-size", Code.PAYLOAD_TOO_LARGE, "modelyard serve --http-max-body-bytes"
)
MAX_CONNECTIONS = Rule(
    "protocol/max-connections",
    Code.UNAVAILABLE,
    "modelyard serve --http-max-connections, or fewer idle connections in the callers' pools",
)
MAX_HEADER_SIZE = Rule(
    "protocol/max-header-size", Code.HEADERS_TOO_LARGE, "modelyard serve --http-max-header-bytes"
)
RESTRICTED = Rule("protocol/restricted", Code.PERMISSION_DENIED)
ROUTE = Rule(
    "protocol/route",
    Code.NOT_FOUND,
    "the KServe V2 HTTP API: /v2, /v2/health/*, /v2/models/..., /v2/repository/..., "
    "/v2/systemsharedmemory/..., /v2/logging, /v2/trace/setting",
)
TRACE_FILE = Rule(
    "protocol/trace-setting",
    Code.INVALID_ARGUMENT,
    "modelyard serve --trace-config triton,file=PATH (or --trace-config mode=opentelemetry)",
)

# ---- client

ATTEMPT_TIMEOUT = Rule(
    "client/attempt-timeout",
    Code.UNAVAILABLE,
    "the client's attempt_timeout (the gateway's --attempt-timeout); the instance's host and link",
)
ATTEMPT_TIMEOUT_VALUE = Rule(
    "client/attempt-timeout",
    Code.INVALID_ARGUMENT,
    "attempt_timeout=SECS (the gateway's --attempt-timeout SECS), 'auto' (from "
    "the model's observed latency) or 'off': an attempt may take the whole timeout",
)
CONNECTION = Rule(
    "client/connection",
    Code.UNAVAILABLE,
    "the instance's log; the registry lists it until its lease expires",
)
# no answer in time: the caller's wait, not the server's line
DEADLINE = Rule(
    "client/deadline",
    Code.DEADLINE_EXCEEDED,
    "the timeout of infer(), or the instance's queue and model",
)
INPUT_DTYPE = Rule(
    "client/input-dtype",
    Code.INVALID_ARGUMENT,
    "convert the array to a bool, integer, float or bytes dtype",
)
NO_INSTANCE = Rule("client/no-instance", Code.UNAVAILABLE)
NO_INSTANCE_FOR_MODEL = Rule(
    "client/no-instance-for-model",
    Code.NOT_FOUND,
    "load the model on an instance of the service; GET /v2/repository/index "
    "on an instance lists its models",
)
CLIENT_REGISTRY = Rule(
    "client/registry", Code.UNAVAILABLE, "the registry URL, and whether the registry is up"
)
REGISTRY_WATCH = Rule("client/registry-watch", Code.UNAVAILABLE, "the registry backend")
MALFORMED_RESPONSE = Rule(
    "client/response", Code.INTERNAL, "the instance's version; report it with the instance's log"
)
STREAM_INSTANCE_LEFT = Rule(
    "client/stream",
    Code.UNAVAILABLE,
    "retry: the next registry snapshot lists who serves the model",
)
STREAM_NEEDS_GRPC = Rule(
    "client/stream", Code.UNAVAILABLE, "serve the model's instances with a --grpc-port"
)
CLIENT_TRANSPORT = Rule(
    "client/transport", Code.INVALID_ARGUMENT, 'transport="http" or transport="grpc"'
)
TRANSPORT_KIND = Rule(
    "client/transport", Code.INVALID_ARGUMENT, 'Client(transport="http" | "grpc")'
)

# ---- gateway

METADATA_CACHE = Rule(
    "gateway/metadata-cache",
    Code.UNAVAILABLE,
    "retry; the gateway fetches it from an instance as soon as the registry lists the model",
)
GATEWAY_REPOSITORY = Rule(
    "gateway/repository",
    Code.UNIMPLEMENTED,
    "call the repository API on an instance of the service (modelyard serve)",
)
STANDBY = Rule(
    "gateway/standby", Code.INVALID_ARGUMENT, "--status-port PORT (0: any free port) with --standby"
)

# ---- governance

SERVICE_REJECTION = Rule(
    "governance/rejections", Code.NOT_FOUND, "each instance keeps its last 1000 rejections"
)
UNKNOWN_REJECTION = Rule("governance/rejections", Code.NOT_FOUND)

# ---- model-server

LOAD_PAST_DEADLINE = Rule(
    LOAD_TIME_RULE,
    Code.DEADLINE_EXCEEDED,
    "give the request more time, or pin the model (parameters residency)",
)
LOAD_TIME = Rule(LOAD_TIME_RULE, Code.UNAVAILABLE)
MEMORY_BUDGET_BUSY = Rule(
    MEMORY_BUDGET_RULE,
    Code.UNAVAILABLE,
    "raise --memory-budget, unpin a model (parameters residency), or send "
    "the request again once the busy models are idle",
)
MEMORY_BUDGET_EXCEEDED = Rule(
    MEMORY_BUDGET_RULE,
    Code.RESOURCE_EXHAUSTED,
    "modelyard serve --memory-budget, or unload a model (POST /v2/repository/models/NAME/unload)",
)
AMBIGUOUS_MODEL = Rule("model-server/ambiguous-model", Code.INVALID_ARGUMENT)
BLS_DEADLINE = Rule("model-server/bls", Code.DEADLINE_EXCEEDED)
BLS_FROM_EVENT_LOOP = Rule(
    "model-server/bls", Code.INTERNAL, "report this as a bug with the server log"
)
BLS_NOT_RUNNING = Rule(
    "model-server/bls",
    Code.UNAVAILABLE,
    "call other models from execute(), not from initialize() or finalize()",
)
CLIENT_DEADLINE = Rule(
    "model-server/client-deadline",
    Code.DEADLINE_EXCEEDED,
    "raise the client's timeout, or add instances (instance_group.count)",
)
CONTROL_MODE = Rule(
    "model-server/control-mode", Code.UNAVAILABLE, "serve with --model-control-mode explicit"
)
DECOUPLED = Rule(
    "model-server/decoupled",
    Code.UNIMPLEMENTED,
    "stream the request over gRPC ModelStreamInfer (tritonclient: "
    "start_stream and async_stream_infer)",
)
MODEL_CONTROL = Rule(
    "model-server/model-control",
    Code.INVALID_ARGUMENT,
    "the pb_utils.load_model, unload_model or is_model_ready call in the model's model.py",
)
NOT_DECOUPLED = Rule(
    "model-server/decoupled",
    Code.INVALID_ARGUMENT,
    "call it with ModelInfer, or stream it one request at a time",
)
ENSEMBLE = Rule("model-server/ensemble", Code.INVALID_ARGUMENT)
INPUT_VALIDATION = Rule("model-server/input-validation", Code.INVALID_ARGUMENT)
NO_READY_VERSION = Rule(
    "model-server/no-ready-version",
    Code.UNAVAILABLE,
    "GET /v2/repository/index shows each version's state and reason",
)
NO_VERSIONS = Rule("model-server/no-versions", Code.INVALID_ARGUMENT)
# statistics asked of a model or version that is not ready (Triton's INVALID_ARG)
NO_STATISTICS = Rule(
    "model-server/statistics",
    Code.INVALID_ARGUMENT,
    "GET /v2/repository/index shows each version's state and reason",
)
# a request refused at the queue, before it cost an execution (Triton's REJECTED)
QUEUE_FULL = Rule("model-server/queue-full", Code.UNAVAILABLE)
REPOSITORY_REGISTRATION = Rule(
    "model-server/repository-registration",
    Code.INVALID_ARGUMENT,
    "the repository a registration names (SageMaker: the model's url and model_name)",
)
QUEUE_TIMEOUT = Rule("model-server/queue-timeout", Code.UNAVAILABLE)
# an iterative sequence's request the model gave back, whose caller has gone meanwhile
RESCHEDULED_CALLER_GONE = Rule("model-server/reschedule", Code.CANCELLED)
# a sequence whose queued request's caller cancelled it: its queued requests are cancelled
SEQUENCE_CANCELLED = Rule(
    "model-server/sequence-cancelled",
    Code.CANCELLED,
    "the sequence's caller cancelled one of its requests; start it again with sequence_start",
)
SEQUENCE = Rule("model-server/sequence", Code.INVALID_ARGUMENT)
SEQUENCE_ONE_ROW = Rule(
    "model-server/sequence",
    Code.INVALID_ARGUMENT,
    "send one row per request: a sequence's rows follow one another",
)
STOPPING = Rule(
    "model-server/stopping",
    Code.UNAVAILABLE,
    "send it to another instance; this one is shutting down",
)
TEXT_INPUT = Rule("model-server/text", Code.INVALID_ARGUMENT)
TOKENS_OVER_MAX = Rule("model-server/token-length", Code.INVALID_ARGUMENT)
TOKEN_LENGTHS_DIFFER = Rule(
    "model-server/token-length",
    Code.INVALID_ARGUMENT,
    "the request: every token input has the same tokens per row",
)
NOT_IN_REPOSITORY = Rule(
    "model-server/unknown-model", Code.NOT_FOUND, "add the model directory to the repository"
)
UNKNOWN_MODEL = Rule("model-server/unknown-model", Code.NOT_FOUND)
UNKNOWN_VERSION = Rule(
    "model-server/unknown-version",
    Code.NOT_FOUND,
    "version_policy in the model's config.pbtxt decides which versions load",
)
UNREAD_RESPONSES = Rule(
    "model-server/unread-responses",
    Code.RESOURCE_EXHAUSTED,
    "read the stream's responses as they come (a reader per stream)",
)
SEQUENCE_VERSION_UNLOADED = Rule(
    "model-server/version-unloading",
    Code.UNAVAILABLE,
    "start the sequence again on the model's next version",
)
VERSION_UNLOADING = Rule(
    "model-server/version-unloading",
    Code.UNAVAILABLE,
    "send the request without a version, or to a ready version",
)

# ---- engine

ENGINE_CONTRACT = Rule("engine/contract", Code.INTERNAL)
EXECUTE = Rule("engine/execute", Code.INTERNAL)
IDENTITY = Rule("engine/identity", Code.INVALID_ARGUMENT)
INPUT_VALUES = Rule("engine/input-values", Code.INVALID_ARGUMENT)
ONNXRUNTIME = Rule("engine/onnxruntime", Code.INVALID_ARGUMENT)
PYTHON_MODEL = Rule("engine/python", Code.INVALID_ARGUMENT)
PYTHON_MODEL_FAILED = Rule("engine/python", Code.INTERNAL)
PYTHON_METRICS = Rule(
    "engine/python-metrics",
    Code.INVALID_ARGUMENT,
    "the model's pb_utils.MetricFamily and Metric calls (names, labels, kinds, how many)",
)
RESCHEDULE = Rule(
    "engine/reschedule",
    Code.INVALID_ARGUMENT,
    "sequence_batching { iterative_sequence: true } in the model's config.pbtxt, or no "
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE in its execute",
)
STUB_ENDED = Rule("engine/python-stub", Code.INTERNAL)
STUB_NOT_RUNNING = Rule("engine/python-stub", Code.UNAVAILABLE)
STUB_REPLACED = Rule(
    "engine/python-stub", Code.INTERNAL, "the server log has what the old one wrote before it ended"
)
STUB_UNLOADING = Rule(
    "engine/python-stub", Code.UNAVAILABLE, "retry: another version or instance answers"
)
PYTORCH = Rule("engine/pytorch", Code.INVALID_ARGUMENT)
PYTORCH_OUTPUT = Rule(
    "engine/pytorch", Code.INTERNAL, "the model's forward() or the outputs in config.pbtxt"
)
TENSORRT_EXECUTE = Rule("engine/tensorrt", Code.INTERNAL)
TENSORRT_INPUT_SHAPE = Rule(
    "engine/tensorrt", Code.INVALID_ARGUMENT, "the request, or the profile the plan was built with"
)
TENSORRT_NEEDS_GPU = Rule(
    "engine/tensorrt",
    Code.FAILED_PRECONDITION,
    "run on a machine with an NVIDIA GPU, or serve the ONNX model instead",
)
TENSORRT_OUTPUT_SHAPE = Rule(
    "engine/tensorrt",
    Code.INVALID_ARGUMENT,
    "the input shapes (within the plan's optimization profile)",
)
TENSORRT_PLAN = Rule("engine/tensorrt", Code.INVALID_ARGUMENT)
UNTRUSTED_PICKLE = Rule(
    "engine/trusted-repository",
    Code.FAILED_PRECONDITION,
    "serve with --trusted-repository (or --trust-model NAME), or save the model as model.skops",
)
UNTRUSTED_TYPES = Rule(
    "engine/trusted-repository",
    Code.FAILED_PRECONDITION,
    "serve with --trusted-repository (or --trust-model NAME) if you "
    "made this file or trust its source",
)

# ---- platform

API_BODY = Rule("platform/api", Code.INVALID_ARGUMENT)
API_LISTEN = Rule("platform/api", Code.UNAVAILABLE, "pick another port with --port")
API_PERCENT_BODY = Rule(
    "platform/api", Code.INVALID_ARGUMENT, 'send a JSON object, e.g. {"percent": 50}'
)
API_POINTS = Rule("platform/api", Code.INVALID_ARGUMENT, "?points=120")
API_REQUEST_ID = Rule(
    "platform/api",
    Code.INVALID_ARGUMENT,
    "a request id is the one a rejection's answer and error line carry",
)
CONTROL_LOCK = Rule(
    "platform/control-lock", Code.FAILED_PRECONDITION, "stop it, or act on it with --control URL"
)
CONTROL_LOCK_HELD = Rule(
    "platform/control-lock",
    Code.FAILED_PRECONDITION,
    "stop it with SIGTERM (Ctrl-C): it stops its instances and gateways",
)
DR_GROUP = Rule("platform/dr", Code.INVALID_ARGUMENT, "SERVICE/GROUP as the spec names them")
DR_PLACE = Rule("platform/dr", Code.INVALID_ARGUMENT)
DR_SPEC = Rule("platform/dr", Code.FAILED_PRECONDITION)
PLATFORM_GATEWAY = Rule("platform/gateway", Code.UNAVAILABLE)
PLATFORM_INTERNAL = Rule(
    "platform/internal",
    Code.INTERNAL,
    "the control plane's log; report it as a bug if the cause is not plain",
)
KUBERNETES_CONNECTING = Rule(
    "platform/kubernetes",
    Code.UNAVAILABLE,
    "try again in a few seconds; its log says if the connection failed",
)
KUBERNETES_REGISTRY = Rule(
    "platform/kubernetes",
    Code.INVALID_ARGUMENT,
    "modelyard platform up --target kubernetes --registry etcd://HOST:2379",
)
KUBERNETES_CLIENT_MISSING = Rule(
    "platform/kubernetes-apply", Code.FAILED_PRECONDITION, "pip install 'modelyard[kubernetes]'"
)
KUBERNETES_KIND = Rule(
    "platform/kubernetes-apply", Code.INVALID_ARGUMENT, "control/kubernetes_apply.py _RESOURCES"
)
KUBERNETES_REFUSED = Rule(
    "platform/kubernetes-apply",
    Code.FAILED_PRECONDITION,
    "the cluster's answer above; kubectl auth can-i patch <resource>",
)
KUBERNETES_UNREACHABLE = Rule(
    "platform/kubernetes-apply",
    Code.UNAVAILABLE,
    "the cluster's API server address (kubeconfig, or the pod's account)",
)
LAUNCH = Rule("platform/launch", Code.UNAVAILABLE)
PLATFORM_REGISTRY = Rule("platform/registry", Code.UNAVAILABLE)
RELEASE_ACTION = Rule("platform/release", Code.NOT_FOUND)
RENDER = Rule("platform/render", Code.INVALID_ARGUMENT)
RENDER_GPU_PRODUCT = Rule(
    "platform/render",
    Code.INVALID_ARGUMENT,
    "modelyard platform render --gpu-product A30-24G=NVIDIA-A30",
)
NO_PLATFORM_REPOSITORY = Rule(
    "platform/repository", Code.INVALID_ARGUMENT, "modelyard platform up --model-repository DIR"
)
PLATFORM_MODELS_MISSING = Rule("platform/repository", Code.NOT_FOUND)
PLATFORM_ROUTE = Rule(
    "platform/route",
    Code.NOT_FOUND,
    "the routes and their methods are in docs/control-api.md; a group is SERVICE/GROUP",
)
PLATFORM_STATE = Rule(
    "platform/state",
    Code.INVALID_ARGUMENT,
    "pass --state DIR, or --control URL of a running control plane",
)
API_UNKNOWN_GROUP = Rule(
    "platform/unknown-group", Code.NOT_FOUND, "GET /api/v1/overview lists the services and groups"
)
UNKNOWN_GROUP = Rule("platform/unknown-group", Code.NOT_FOUND)
SPEC_INVALID = Rule("platform/validate", Code.INVALID_ARGUMENT)

# ---- optimize

EVAL_ROWS = Rule(
    "optimize/input", Code.INVALID_ARGUMENT, "--eval FILE.npz (input name → held-out rows)"
)
EVAL_TEXTS = Rule("optimize/input", Code.INVALID_ARGUMENT, "--eval-texts FILE (one text per line)")
OPTIMIZE_INPUT = Rule("optimize/input", Code.INVALID_ARGUMENT)
TEXT_MODEL_TARGET = Rule("optimize/input", Code.INVALID_ARGUMENT, "--to int8-dynamic or --to fp16")

# ---- tune

TUNE_MODEL = Rule("tune/model", Code.NOT_FOUND, "MODEL and --repository")
TUNE_SERVE = Rule("tune/serve", Code.INTERNAL)
TUNE_VERSIONS = Rule("tune/versions", Code.INVALID_ARGUMENT, "--versions")
