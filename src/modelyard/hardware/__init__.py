"""(6) Hardware: where instances are placed, and the host memory models may hold."""
