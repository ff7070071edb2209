"""Real components (Slurm, Prometheus, a Kubernetes API server) started for the tests."""
