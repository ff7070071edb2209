"""Helpers for the Kubernetes/Kueue collector: quantities, pod rules, Kueue mapping, watches.

Nothing here imports the ``kubernetes`` client at module level."""
