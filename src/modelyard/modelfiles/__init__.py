"""(5) Model files: config.pbtxt through Triton's schema, the repository layout, load requests."""
