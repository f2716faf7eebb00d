"""The control plane: spec, ledger, plan / apply, releases, autoscaling, the API and console."""
