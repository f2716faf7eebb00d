"""Triton's response cache, as a Triton user turns it on: --cache-config and the model's
``response_cache { enable: true }``; counted in statistics and metrics as Triton does."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from tests.support.models import simple_add_sub
from tests.support.servers import Served, scrape, server_in_process


@pytest.fixture(scope="module")
def cache_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repository = tmp_path_factory.mktemp("cache") / "models"
    simple_add_sub(repository, "cached", extra_config="response_cache { enable: true }\n")
    simple_add_sub(repository, "uncached")
    with server_in_process(repository, "--cache-config", "local,size=1048576") as server:
        yield server


def _add_sub(client: object, module: object, model: str, first: int) -> np.ndarray:
    inputs = [module.InferInput(n, [1, 16], "INT32") for n in ("INPUT0", "INPUT1")]  # type: ignore[attr-defined]
    inputs[0].set_data_from_numpy(np.arange(first, first + 16, dtype=np.int32).reshape(1, 16))
    inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    result = client.infer(model, inputs)  # type: ignore[attr-defined]
    return result.as_numpy("OUTPUT0")


def _inference_stats(client: httpclient.InferenceServerClient, model: str) -> dict:  # type: ignore[type-arg]
    return client.get_inference_statistics(model)["model_stats"][0]


def test_a_repeated_request_is_answered_from_the_cache_over_http_and_grpc(
    cache_server: Served,
) -> None:
    http = httpclient.InferenceServerClient(cache_server.http_url)
    grpc = grpcclient.InferenceServerClient(cache_server.grpc_url)
    try:
        first = _add_sub(http, httpclient, "cached", 0)
        again = [_add_sub(http, httpclient, "cached", 0), _add_sub(grpc, grpcclient, "cached", 0)]
        other = _add_sub(grpc, grpcclient, "cached", 100)
        for answer in again:
            np.testing.assert_array_equal(answer, first)
        np.testing.assert_array_equal(other, np.arange(101, 117).reshape(1, 16))

        stats = _inference_stats(http, "cached")
        inference = stats["inference_stats"]
        assert inference["cache_hit"]["count"] == 2
        assert inference["cache_miss"]["count"] == 2
        assert inference["success"]["count"] == 4  # hits are successes, as Triton counts
        assert stats["inference_count"] == 2  # ... that computed nothing
        assert inference["compute_infer"]["count"] == 2
        assert int(inference["cache_hit"]["ns"]) > 0

        samples = scrape(cache_server)
        labels = (("model", "cached"), ("version", "1"))
        # the parser reads Triton's counter names with the _total it gives every counter
        assert samples[("nv_cache_num_hits_per_model_total", labels)] == 2
        assert samples[("nv_cache_num_misses_per_model_total", labels)] == 2
        assert samples[("nv_cache_hit_duration_per_model_total", labels)] > 0
        uncached = (("model", "uncached"), ("version", "1"))
        assert ("nv_cache_num_hits_per_model_total", uncached) not in samples
    finally:
        http.close()
        grpc.close()


def test_a_model_that_does_not_enable_the_cache_computes_every_request(
    cache_server: Served,
) -> None:
    client = httpclient.InferenceServerClient(cache_server.http_url)
    try:
        for _ in range(3):
            _add_sub(client, httpclient, "uncached", 5)
        stats = _inference_stats(client, "uncached")
        assert stats["inference_stats"]["cache_hit"]["count"] == 0
        assert stats["inference_count"] == 3
    finally:
        client.close()
