"""(3) The model server: lifecycle, scheduling, batching, the instance's data plane."""
