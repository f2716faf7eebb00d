"""(2) An instance's front doors: KServe V2 over HTTP and gRPC, with their connection bounds."""
