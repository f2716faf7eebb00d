"""A stand-in for the OpenTelemetry collector (``otelcol``) that qa/L0_trace starts.

Triton's test.sh downloads ``otelcol`` 0.91 and its ``opentelemetry_unittest.py`` runs
``./otelcol --config ./trace-config.yaml`` before each test: an OTLP/HTTP receiver
(``receivers.otlp.protocols.http.endpoint``) whose file exporter
(``exporters.file.path``) writes what it receives as JSON lines, which the tests read.
This does the same with what is installed here: each export request the server sends is
written as one line of OTLP's JSON encoding, as the file exporter writes it (field names
in lowerCamelCase, trace and span ids in hex, an empty ``parentSpanId`` written), into a
file emptied when it starts.

Run as ``python -m tests.triton_qa.otel_collector --config FILE``.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

MAX_BODY = 64 * 2**20
_IDS = ("traceId", "spanId", "parentSpanId")


def as_json_line(body: bytes) -> str:
    """One export request, as the collector's file exporter writes it."""
    request = ExportTraceServiceRequest.FromString(body)
    encoded = json_format.MessageToDict(request, including_default_value_fields=True)
    for resource in encoded.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in _IDS:
                    span[key] = base64.b64decode(span.get(key, "")).hex()
    return json.dumps(encoded, separators=(",", ":"))


def serve(config: dict[str, Any], base: Path) -> None:
    endpoint = config["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    host, _, port = endpoint.rpartition(":")
    output = base / config["exporters"]["file"]["path"]
    output.write_text("")  # the file exporter's file holds what this run received
    lock = threading.Lock()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            if self.path != "/v1/traces" or not 0 <= length <= MAX_BODY:
                self.send_error(404 if self.path != "/v1/traces" else 413)
                return
            body = self.rfile.read(length)
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            line = as_json_line(body)
            with lock, output.open("a") as file:
                file.write(line + "\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer((host or "0.0.0.0", int(port)), Receiver).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(prog="otelcol")
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    path = Path(args.config)
    serve(yaml.safe_load(path.read_text()), Path.cwd())


if __name__ == "__main__":
    main()
