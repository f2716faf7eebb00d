"""Rounds of one inference on ``simple`` over HTTP and one over gRPC, each on a client of
its own, as a round of Triton's C++ ``simple_http_infer_client`` and
``simple_grpc_infer_client`` makes them (test.sh's ``send_inference_requests``; those
binaries are not built here). ``python one_inference_client.py ROUNDS``; ends 0 when every
answer is right."""

from __future__ import annotations

import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient


def infer_once(client_module: object, url: str) -> bool:
    client = client_module.InferenceServerClient(url)  # type: ignore[attr-defined]
    first = np.arange(16, dtype=np.int32).reshape(1, 16)
    second = np.ones((1, 16), dtype=np.int32)
    inputs = []
    for name, data in (("INPUT0", first), ("INPUT1", second)):
        tensor = client_module.InferInput(name, [1, 16], "INT32")  # type: ignore[attr-defined]
        tensor.set_data_from_numpy(data)
        inputs.append(tensor)
    result = client.infer("simple", inputs)
    right = (result.as_numpy("OUTPUT0") == first + second).all() and (
        result.as_numpy("OUTPUT1") == first - second
    ).all()
    client.close()
    return bool(right)


if __name__ == "__main__":
    rounds = int(sys.argv[1])
    wrong = 0
    for _ in range(rounds):
        wrong += not infer_once(httpclient, "localhost:8000")
        wrong += not infer_once(grpcclient, "localhost:8001")
    print(f"{2 * rounds - wrong} of {2 * rounds} answers right")
    sys.exit(1 if wrong else 0)
