"""(3) The client SDK: ``Client`` and ``AsyncClient`` call a service by name, not an address.

    from modelyard.client import Client

    with Client("com.example.search.ranker", registry="embedded") as client:
        outputs = client.infer("ranker", {"features": features})

The client follows the service's instances in the registry, balances requests
over the instances that have the model READY, ejects failing instances for a
while and retries on another instance within the deadline and a retry budget.
"""

from modelyard.client.balancer import Balancer, Host, OutlierPolicy
from modelyard.client.client import AsyncClient, Client, merge_statistics
from modelyard.client.retry import RetryBudget, RetryPolicy
from modelyard.client.transport import ClientError

__all__ = [
    "AsyncClient",
    "Balancer",
    "Client",
    "ClientError",
    "Host",
    "OutlierPolicy",
    "RetryBudget",
    "RetryPolicy",
    "merge_statistics",
]
