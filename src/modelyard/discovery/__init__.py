"""(1) Discovery: service name → live instances that serve the model."""
