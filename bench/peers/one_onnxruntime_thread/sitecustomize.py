"""Gives every onnxruntime session of a peer server one thread (put this folder on PYTHONPATH).

infinity-emb creates its sessions through optimum without session options, and onnxruntime
then starts a thread per core and pins it there, outside ``taskset``: the benchmark's
"one core per server" needs each session to compute on its caller's thread, as
modelyard's onnxruntime engine does by default.
"""

import onnxruntime

_InferenceSession = onnxruntime.InferenceSession


class InferenceSession(_InferenceSession):
    def __init__(self, path_or_bytes, sess_options=None, *args, **kwargs):
        options = sess_options or onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        super().__init__(path_or_bytes, options, *args, **kwargs)


onnxruntime.InferenceSession = InferenceSession
