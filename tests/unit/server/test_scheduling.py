"""The scheduler contract: a model that answers once refuses a stream with its error line."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.errors import Code, ModelServerError
from modelyard.server.batcher import BatchingPolicy
from modelyard.server.scheduler import Scheduler
from modelyard.server.scheduling import Submission
from tests.unit.server.test_scheduler_concurrency import AffineEngine


def test_a_stream_asked_of_a_model_that_answers_once_is_refused_with_its_rule() -> None:
    config = text_format.Parse("max_batch_size: 8", mc.ModelConfig())
    scheduler = Scheduler("affine", 1, [AffineEngine()], BatchingPolicy.from_config(config))
    try:
        assert scheduler.decoupled is False
        with pytest.raises(ModelServerError) as refused:
            scheduler.submit_stream(Submission({"x": np.ones((1, 2), np.float32)}, ["y"], 1))
        line = refused.value.line()
        assert refused.value.code is Code.INVALID_ARGUMENT
        assert "rule=model-server/decoupled" in line and "change: call it with ModelInfer" in line
    finally:
        scheduler.close()
        scheduler.join(5)
