"""Wire formats only: KServe V2 JSON and binary tensors, gRPC messages, status codes."""
