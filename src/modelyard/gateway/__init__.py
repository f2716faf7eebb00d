"""(2) The front doors: HTTP and gRPC servers and the guard chain."""
