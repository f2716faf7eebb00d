"""(2) Governance: the guard chain every HTTP and gRPC call passes.

auth → rate limit → circuit breaker / degrade → handler. Every rejection is a
``GovernanceError`` that names its rule, its numbers and where to change it.
"""
