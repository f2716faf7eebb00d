#!/usr/bin/env python3

# Copyright 2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.
#
# Redistribution and use in source and binary forms, with or without
# modification, are permitted provided that the following conditions
# are met:
#  * Redistributions of source code must retain the above copyright
#    notice, this list of conditions and the following disclaimer.
#  * Redistributions in binary form must reproduce the above copyright
#    notice, this list of conditions and the following disclaimer in the
#    documentation and/or other materials provided with the distribution.
#  * Neither the name of NVIDIA CORPORATION nor the names of its
#    contributors may be used to endorse or promote products derived
#    from this software without specific prior written permission.
#
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS ``AS IS'' AND ANY
# EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
# IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
# PURPOSE ARE DISCLAIMED.  IN NO EVENT SHALL THE COPYRIGHT OWNER OR
# CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
# EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
# PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
# PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY
# OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
# (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
# OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

import sys

sys.path.append("../common")

import os
import unittest

import numpy as np
import test_util as tu
import tritonclient.grpc as grpcclient
from tritonclient.utils import np_to_triton_dtype


class ScalarIOTest(tu.TestResultCollector):
    def setUp(self):
        self._client = grpcclient.InferenceServerClient(url="localhost:8001")
        self._backends = os.environ.get("BACKENDS", "onnx").split(",")

    def _send_request_and_verify_result(self, input, model_name):
        inputs = []
        inputs.append(
            grpcclient.InferInput("INPUT", input.shape, np_to_triton_dtype(input.dtype))
        )
        inputs[-1].set_data_from_numpy(input)
        result = self._client.infer(inputs=inputs, model_name=model_name)
        output = result.as_numpy("OUTPUT")
        np.testing.assert_allclose(input, output)

    def test_scalar_io(self):
        for backend in self._backends:
            model_name = f"{backend}_scalar_1dim"
            self._send_request_and_verify_result(
                np.asarray([1], dtype=np.float32), model_name
            )

            model_name = f"{backend}_scalar_2dim"
            self._send_request_and_verify_result(
                np.asarray([[1]], dtype=np.float32), model_name
            )


if __name__ == "__main__":
    unittest.main()
