"""(3) The model server: repository, lifecycle, scheduling, dataplane."""
