# Copyright 2024, NVIDIA CORPORATION & AFFILIATES. All rights reserved.
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

import asyncio

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def _execute_a_request(self, request):
        input_tensor = pb_utils.get_input_tensor_by_name(
            request, "WAIT_SECONDS"
        ).as_numpy()
        bls_input_tensor = pb_utils.Tensor("WAIT_SECONDS", input_tensor)
        bls_request = pb_utils.InferenceRequest(
            model_name="async_execute_decouple",
            inputs=[bls_input_tensor],
            requested_output_names=["DUMMY_OUT"],
        )
        bls_responses = await bls_request.async_exec(decoupled=True)
        response_sender = request.get_response_sender()
        for bls_response in bls_responses:
            bls_output_tensor = pb_utils.get_output_tensor_by_name(
                bls_response, "DUMMY_OUT"
            ).as_numpy()
            output_tensor = pb_utils.Tensor("DUMMY_OUT", bls_output_tensor)
            response = pb_utils.InferenceResponse(output_tensors=[output_tensor])
            response_sender.send(response)
        response_sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    async def execute(self, requests):
        async_futures = []
        for request in requests:
            async_future = self._execute_a_request(request)
            async_futures.append(async_future)
        await asyncio.gather(*async_futures)
        return None
