"""The V2 HTTP API's routes, in one table: for each path, the methods it takes, what
governance counts a call of it as (interface and model), the category of tritonserver's
--http-restricted-api it is in, and the front door's method that answers it.

``route_of`` finds a path's route; what the front door, governance and the restrictions
ask of a path (``allowed_methods``, ``governed_as``, ``restricted_category``) all read it.
Model routes come first: ``model_route`` reads the hot one (a model's infer call) without
the table, and ``RouteCache`` remembers it per path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelyard import error_rules
from modelyard.errors import ProtocolError, shown
from modelyard.protocol.embeddings import EMBEDDING_PATHS

LOGGING_PATH = "/v2/logging"
LIVE_STATS_PATH = "/v2/modelyard/stats"

GET = ("GET", "HEAD")  # a route that is read answers HEAD too: uvicorn leaves out the body
POST = ("POST",)
GET_OR_POST = ("GET", "HEAD", "POST")

# a model named "stats" is never routed as one: /v2/models/stats is every model's statistics
_MODEL = r"/v2/models/(?P<model>(?!stats(?:/|$))[^/]+)(?:/versions/(?P<version>[^/]+))?"
_MODEL_ROUTE = re.compile(
    f"^{_MODEL}(?P<action>/infer|/ready|/config|/stats|/generate_stream|/generate)?/?$"
)

# model, version, action ("/infer", "/generate", ... or None)
Route = tuple[str, str | None, str | None]


@dataclass(frozen=True, slots=True)
class V2Route:
    pattern: re.Pattern[str]  # matched in full
    methods: tuple[str, ...]
    interface: str  # the governance interface a call of it is
    # the model governance counts it for: "model" (the path's), "*" (every model: it acts
    # for the whole server) or None (no model)
    model: str | None
    category: str | None  # tritonserver's --http-restricted-api category; None: none
    answer: str  # the HttpFrontend method that answers it ("" for infer: the pipeline's)


def _route(
    path: str, methods: tuple[str, ...], interface: str, model: str | None,
    category: str | None, answer: str,
) -> V2Route:  # fmt: skip
    return V2Route(re.compile(path), methods, interface, model, category, answer)


_SHARED_MEMORY = r"/v2/(?P<kind>system|cuda)sharedmemory(?:/region/(?P<region>[^/]+))?"

ROUTES: tuple[V2Route, ...] = (
    _route(f"{_MODEL}/infer/?", POST, "infer", "model", "inference", ""),
    # Triton's generate extension: an infer call in other words (frontdoors/generate.py)
    _route(f"{_MODEL}/generate(?:_stream)?/?", POST, "infer", "model", "inference", ""),
    _route(f"{_MODEL}/ready/?", GET, "health", "model", "health", "_model_ready"),
    _route(f"{_MODEL}/config/?", GET, "metadata", "model", "model-config", "_model_config"),
    _route(f"{_MODEL}/stats/?", GET, "metadata", "model", "statistics", "_model_stats"),
    _route(f"{_MODEL}/?", GET, "metadata", "model", "metadata", "_model_metadata"),
    _route("/v2/health/live", GET, "health", None, "health", "_server_live"),
    _route("/v2/health/ready", GET, "health", None, "health", "_server_ready"),
    _route("/v2/?", GET, "health", None, "metadata", "_server_metadata"),
    _route("/v2/models/stats", GET, "metadata", None, "statistics", "_all_stats"),
    _route("/v2/repository/index", POST, "admin", None, "model-repository", "_repository_index"),
    _route(
        r"/v2/repository/models/(?P<model>[^/]+)/(?P<action>load|unload)", POST, "admin",
        "model", "model-repository", "_repository_action",
    ),
    # what the server records: the model's admin, or every model's
    _route(
        r"/v2(?:/models/(?P<model>[^/]+))?/trace/setting", GET_OR_POST, "admin", "model",
        "trace", "_trace_setting",
    ),
    # the process's log settings: an operator's business
    _route(LOGGING_PATH, GET_OR_POST, "admin", None, "logging", "_logging"),
    # shared memory maps the host's memory: an admin of every model
    _route(f"{_SHARED_MEMORY}/status", GET, "admin", "*", "shared-memory", "_shared_memory"),
    _route(
        f"{_SHARED_MEMORY}/(?P<action>register|unregister)", POST, "admin", "*",
        "shared-memory", "_shared_memory",
    ),
    _route("/v2/modelyard/rules", GET, "admin", None, None, "_rules"),
    # the control plane's poll: monitoring, like /metrics
    _route(LIVE_STATS_PATH, GET, "health", None, None, "_live_stats"),
    _route("/v2/modelyard/rejections(?:/.*)?", GET, "admin", None, None, "_rejections"),
    # an infer call in another API's words (its own governance: frontdoors/embeddings.py)
    *(_route(re.escape(path), POST, "metadata", None, "inference", "") for path in EMBEDDING_PATHS),
)


def route_of(path: str) -> tuple[V2Route, re.Match[str]] | None:
    """The route of a path, and the path's match of it; None: no such route."""
    for route in ROUTES:
        match = route.pattern.fullmatch(path)
        if match is not None:
            return route, match
    return None


def route_error(method: str, path: str) -> ProtocolError:
    return ProtocolError.of(error_rules.ROUTE, f"no route for {shown(method, 20)} {shown(path)}")


def model_route(path: str) -> Route | None:
    """The model, version and action a /v2/models/... path names; None for another path."""
    match = _MODEL_ROUTE.match(path)
    if match is None:
        return None
    return (match["model"], match["version"], match["action"])


class RouteCache:
    """``model_route`` of each path a front door has seen, remembered for its hot path;
    bounded, because paths come from callers. A path's route never goes stale."""

    MAX = 4096
    PATH_CHARS = 512  # longer paths are read anew each time, never kept

    def __init__(self) -> None:
        self._known: dict[str, Route | None] = {}

    def __call__(self, path: str) -> Route | None:
        try:
            return self._known[path]
        except KeyError:
            pass
        route = model_route(path)
        if len(path) <= self.PATH_CHARS:
            if len(self._known) >= self.MAX:
                self._known.clear()
            self._known[path] = route
        return route


def governed_as(path: str) -> tuple[str, str | None, str | None]:
    """The governance interface of an HTTP call, the model and the version it names."""
    found = route_of(path)
    if found is None:  # no route (answered 404): counted by where it points
        if path.startswith(("/v2/repository/", "/v2/modelyard/")):
            return "admin", None, None
        return ("health" if path.startswith("/v2/health/") else "metadata"), None, None
    route, match = found
    model = route.model
    if model == "model":
        model = match["model"] or "*"  # a route that may name none acts for every model
    version = match.groupdict().get("version")
    return route.interface, model, version


def restricted_category(path: str) -> str | None:
    """The category of tritonserver's --http-restricted-api a path is in (None: none)."""
    found = route_of(path)
    if found is None:  # no route (answered 404), but refused first where it points
        return "model-repository" if path.startswith("/v2/repository/") else None
    return found[0].category
